"""The steps every recipe runs on its text, raw -> tok -> subword -> binarize, each one a
``Workspace.run_step``, and ``prep.json``, which says how to undo them.  ``--print-steps``
prints them as commands (``--step NAME`` runs one), which data-prep/prepare-<dataset>.sh runs."""

import json
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from ..files import atomic_path
from ..paths import shown
from .binarize import fairseq_preprocess
from .subwords import apply_bpe, apply_spm, learn_bpe, learn_spm
from .text import count_lines, read_lines, write_lines
from .tokenize import clean_pairs, moses_tokenize, train_truecaser, truecase
from .workspace import ONE_STEP, PrepError, Workspace, say, without

# the options a printed step leaves out: it names its own --root and --step, and a --force
# on every step would redo the ones before it
PLACE_OF_A_STEP = {"--root": 1, "--force": 0, **ONE_STEP}


@dataclass
class Parallel:
    """How a recipe's text goes from raw to subwords."""

    src: str
    tgt: str
    splits: Dict[str, str]  # fairseq split -> what it is ("valid": "newstest2013", ...)
    tokenize: str = "moses"  # moses | none (subwords on raw text: sentencepiece) | pretokenized
    clean: Optional[Tuple[int, int, float]] = None  # train: (min, max, ratio) in tokens
    truecase: bool = False
    monolingual: bool = False  # one-sided (classification): only src
    aggressive_dash: bool = True  # tokenizer.perl -a ("a-b" -> "a @-@ b")
    normalize: bool = True  # normalize-punctuation.perl before tokenizing (the WMT scripts; not IWSLT'14's)
    valid_every: Optional[int] = None  # valid = every k-th pair of the cleaned train (Edunov et al.)
    presegmented: bool = False  # raw text already tokenized and split into subwords (Google's WMT16)
    truncate_src: Optional[int] = None  # keep the first k tokens of every source (See et al.: 400)
    binarizer: Optional[Callable] = None  # replaces the translation binarize step (a classifier's two dictionaries)
    preprocess_flags: List[str] = field(default_factory=list)  # more fairseq-preprocess flags (a capped dictionary)
    extra: dict = field(default_factory=dict)  # recorded in prep.json


def langs(spec: Parallel) -> List[str]:
    return [spec.src] if spec.monolingual else [spec.src, spec.tgt]


def run_pipeline(ws: Workspace, spec: Parallel, write_raw: Callable[[Path], Optional[dict]]) -> dict:
    """raw -> tok -> subword -> binarize, then prep.json.  ``write_raw(dir)`` writes
    ``<split>.<lang>`` (and may write its own references as ``ref/<split>[.tok].<tgt>``)."""
    return Pipeline(ws, spec).run(write_raw)


class Pipeline:
    """The steps of :func:`run_pipeline`, each one a ``Workspace.run_step``."""

    def __init__(self, ws: Workspace, spec: Parallel):
        self.ws, self.spec, self.args = ws, spec, ws.args
        self.L = langs(spec)
        # Edunov et al.'s valid split is cut from the cleaned train in the tok step
        self.raw_splits = [s for s in spec.splits if not (s == "valid" and spec.valid_every)]
        # one subword model for all languages, or one per language
        self.groups = [self.L] if not self.args.separate_vocab else [[lang] for lang in self.L]

    def run(self, write_raw: Callable[[Path], Optional[dict]]) -> dict:
        ws, args = self.ws, self.args
        steps = self.steps(write_raw)
        if args.print_steps:
            print(self.printed(steps))
            return {}
        names = [name for name, *_ in steps]
        if args.step and args.step not in names:
            raise PrepError(f"--step {args.step}: this run has no such step (--no-binarize stops after subword)")
        target = args.step or names[-1]
        info = {}
        for name, options, fn, _ in steps[: names.index(target) + 1]:
            info[name] = ws.run_step(name, options, fn, done_only=bool(args.step) and name != target)
        return self.manifest(info["raw"], info["tok"]) if target == names[-1] else {}

    def steps(self, write_raw: Callable[[Path], Optional[dict]]) -> List[Tuple[str, dict, Callable[[], dict], str]]:
        """(name, the options its marker records, what runs it, what it does in words) of each step."""
        spec, args = self.spec, self.args
        # the direction too: the same root prepared the other way round reads other files
        raw_opts = {"splits": spec.splits, "src": spec.src, "tgt": spec.tgt, **spec.extra}
        tok_opts = {
            "tokenize": spec.tokenize,
            "lowercase": args.lowercase,
            "clean": spec.clean,
            "truecase": spec.truecase,
            "escape": args.moses_escape,
            "aggressive": spec.aggressive_dash,
            "normalize": spec.normalize,
            "valid_every": spec.valid_every,
            "truncate_src": spec.truncate_src,
        }
        sub_opts = {
            "subword": args.subword,
            "vocab": args.vocab,
            "joint": not args.separate_vocab,
            "spm_type": args.spm_type if args.subword == "spm" else None,
            "presegmented": spec.presegmented,
        }
        out = [
            ("raw", raw_opts, lambda: self.raw(write_raw), self.said_raw()),
            ("tok", tok_opts, self.tok, self.said_tok()),
            ("subword", sub_opts, self.subword, self.said_subword()),
        ]
        if not args.no_binarize:
            out.append(
                (
                    "binarize",
                    {**sub_opts, "splits": list(spec.splits)},
                    self.binarize,
                    (spec.binarizer.__doc__ or "the recipe's own fairseq-preprocess commands").strip()
                    if spec.binarizer
                    else "fairseq-preprocess into bin/ (the step adds --destdir: bin/ is written whole or not at all)"
                    + ", then prep.json",
                )
            )
        return out

    # ------------------------------------------------------------- printed
    def printed(self, steps: List[Tuple[str, dict, Callable[[], dict], str]]) -> str:
        """The steps as commands a user can run one by one, each after a comment saying what it
        does; the binarize step carries its fairseq-preprocess command after ``--``."""
        ws, args = self.ws, self.args
        root = str(args.root) if args.root else shown(ws.root)
        mine = {**PLACE_OF_A_STEP, **{flag: 1 for flag in ws.fixed if flag.startswith("--")}}
        base = [
            "python",
            "-m",
            "mixer_plugin.recipes",
            ws.recipe,
            *without(args.argv, mine),
            "--root",
            root,
        ]
        lines, force = [], ["--force"] if args.force else []  # redoes the steps once, from the first
        for name, _, _, said in steps:
            tail, force = force, []
            if name == "binarize" and not self.spec.binarizer:
                tail += ["--", "fairseq-preprocess", *self.preprocess_argv(Path(root))]
            lines += [f"# {name}: {said}", shlex.join([*base, "--step", name, *tail])]
        return "\n".join(lines)

    def said_raw(self) -> str:
        spec = self.spec
        splits = "; ".join(f"{split} = {what}" for split, what in spec.splits.items())
        return f"the text as released, one segment a line in raw/<split>.<lang> ({splits})"

    def said_tok(self) -> str:
        spec, args = self.spec, self.args
        words = {
            "moses": "Moses tokenizer (sacremoses)"
            + (", punctuation normalised" if spec.normalize else "")
            + (", -a" if spec.aggressive_dash else ""),
            "none": "no tokenizer (the subword model reads raw text)",
            "pretokenized": "the release's own tokenization, kept",
        }[spec.tokenize]
        more = [
            args.lowercase and "lowercased",
            spec.truecase and "truecased (a model learned on train)",
            spec.clean and "train cleaned to {}-{} tokens, length ratio {}".format(*spec.clean),
            spec.valid_every and f"valid = one pair in {spec.valid_every} of train",
            spec.truncate_src and f"sources cut to {spec.truncate_src} tokens",
        ]
        return "; ".join([words, *[m for m in more if m]])

    def said_subword(self) -> str:
        spec, args = self.spec, self.args
        if spec.presegmented:
            return "the release's own BPE, kept"
        kind = (
            f"BPE (subword-nmt), {args.vocab} merges"
            if args.subword == "bpe"
            else f"sentencepiece {args.spm_type}, {args.vocab} pieces"
        )
        return f"{kind}, {'one model per language' if args.separate_vocab else 'one joint model'}, learned on train"

    # ------------------------------------------------------------------ steps
    def raw(self, write_raw: Callable[[Path], Optional[dict]]) -> dict:
        with atomic_path(self.ws.dir("raw")) as tmp:
            tmp.mkdir(parents=True)
            info = write_raw(tmp) or {}
            # every side pairs line by line, a one-sided corpus's labels too (only its input
            # is tokenized, but a label file one line short would shift every later label)
            sides = [self.spec.src, self.spec.tgt] if self.spec.tgt else self.L
            for split in self.raw_splits:
                counts = {}
                for lang in sides:
                    if not (tmp / f"{split}.{lang}").is_file():
                        raise PrepError(f"the recipe wrote no {split}.{lang}")
                    counts[lang] = count_lines(tmp / f"{split}.{lang}")
                if len(set(counts.values())) != 1:
                    raise PrepError(f"{split}: the sides have different line counts {counts}")
                if not next(iter(counts.values())):
                    raise PrepError(f"{split}: no segments were read")
                info[split] = next(iter(counts.values()))
        return info

    def tokenize(self, lines: List[str], lang: str) -> List[str]:
        args = self.args
        if self.spec.tokenize == "moses":
            return moses_tokenize(
                lines,
                lang,
                lowercase=args.lowercase,
                escape=args.moses_escape,
                aggressive=self.spec.aggressive_dash,
                normalize=self.spec.normalize,
                workers=args.workers,
            )
        return [(t.lower() if args.lowercase else t) for t in lines]

    def split_train(
        self, out: Dict[str, List[str]], text: Dict[str, List[str]], info: dict
    ) -> Dict[str, Tuple[Dict[str, List[str]], Dict[str, List[str]]]]:
        """Length cleaning of the training pairs, then (Edunov et al.) every k-th pair to valid.
        ``out``/``text``: {lang: tokenized / raw lines} -> {split: (tokenized, raw)}."""
        spec, L = self.spec, self.L
        if spec.clean:
            keep = clean_pairs(out[spec.src], out[spec.tgt], *spec.clean)
            info["train_removed_by_length"] = len(out[spec.src]) - len(keep)
            out = {lang: [out[lang][i] for i in keep] for lang in L}
            text = {lang: [text[lang][i] for i in keep] for lang in L}
        if not spec.valid_every:
            return {"train": (out, text)}
        k = spec.valid_every

        # 1-based: pairs k, 2k, ... go to valid
        def pick(d: Dict[str, List[str]], to_valid: bool) -> Dict[str, List[str]]:
            return {lang: [x for i, x in enumerate(d[lang], 1) if (i % k == 0) == to_valid] for lang in L}

        info["valid"] = len(pick(out, True)[spec.src])
        return {"train": (pick(out, False), pick(text, False)), "valid": (pick(out, True), pick(text, True))}

    def write_refs(self, rtmp: Path, split: str, tokenized: List[str], text: List[str]) -> None:
        """References for scoring: the raw text (detokenized BLEU, ROUGE) and the tokenized
        one (tokenized BLEU, as the WMT/IWSLT papers report); the recipe's own (raw/ref/) win."""
        tgt = self.spec.tgt
        raw_ref = [x.lower() for x in text] if self.args.lowercase else text  # a lowercased task
        for kind, lines in (("", raw_ref), ("tok.", tokenized)):
            own = self.ws.dir("raw") / "ref" / f"{split}.{kind}{tgt}"
            if own.is_file():
                shutil.copyfile(own, rtmp / own.name)
            else:
                write_lines(rtmp / f"{split}.{kind}{tgt}", lines)

    def tok(self) -> dict:
        spec, L, raw = self.spec, self.L, self.ws.dir("raw")
        info = {}
        with atomic_path(self.ws.dir("tok")) as tmp, atomic_path(self.ws.dir("ref")) as rtmp:
            tmp.mkdir(parents=True)
            rtmp.mkdir(parents=True)
            for split in self.raw_splits:
                text = {lang: read_lines(raw / f"{split}.{lang}") for lang in L}
                out = {lang: self.tokenize(text[lang], lang) for lang in L}
                if spec.truncate_src:
                    out[spec.src] = [" ".join(t.split()[: spec.truncate_src]) for t in out[spec.src]]
                parts = {split: (out, text)}
                if split == "train" and not spec.monolingual:
                    parts = self.split_train(out, text, info)
                for name, (o, t) in parts.items():
                    for lang in L:
                        write_lines(tmp / f"{name}.{lang}", o[lang])
                    if name != "train" and not spec.monolingual:
                        self.write_refs(rtmp, name, o[spec.tgt], t[spec.tgt])
            info["train"] = count_lines(tmp / f"train.{spec.src}")
            if spec.truecase:  # the truecaser learns from the cleaned training text only
                for lang in L:
                    model = tmp / f"truecase-model.{lang}"
                    train_truecaser(read_lines(tmp / f"train.{lang}"), model)
                    for split in spec.splits:
                        write_lines(tmp / f"{split}.{lang}", truecase(read_lines(tmp / f"{split}.{lang}"), model))
        return info

    def model_name(self, group: List[str]) -> str:
        return "joint" if not self.args.separate_vocab else group[0]

    def subword(self) -> dict:
        args, spec, tok = self.args, self.spec, self.ws.dir("tok")
        with atomic_path(self.ws.dir("subword")) as tmp:
            tmp.mkdir(parents=True)
            if spec.presegmented:  # the download's own BPE: its codes come with it
                for split in spec.splits:
                    for lang in self.L:
                        shutil.copyfile(tok / f"{split}.{lang}", tmp / f"{split}.{lang}")
                shutil.copyfile(self.ws.dir("raw") / "bpe-codes.joint", tmp / "bpe-codes.joint")
                return {}
            for group in self.groups:
                name = self.model_name(group)
                files = [tok / f"train.{lang}" for lang in group]
                if args.subword == "bpe":
                    learn_bpe(files, args.vocab, tmp / f"bpe-codes.{name}")
                    apply = lambda lines: apply_bpe(lines, tmp / f"bpe-codes.{name}", args.workers)  # noqa: E731
                else:
                    learn_spm(files, args.vocab, tmp / f"spm.{name}", args.spm_type, args.workers)
                    apply = lambda lines: apply_spm(lines, tmp / f"spm.{name}.model")  # noqa: E731
                for lang in group:
                    for split in spec.splits:
                        write_lines(tmp / f"{split}.{lang}", apply(read_lines(tok / f"{split}.{lang}")))
        return {}

    def preprocess_argv(self, root: Path) -> List[str]:
        """fairseq-preprocess's flags for this data in ``root``, less --destdir (the binarize step's own)."""
        spec, sub = self.spec, root / "subword"
        tests = [s for s in spec.splits if s.startswith("test")]
        argv = ["--source-lang", spec.src]
        if not spec.monolingual:
            argv += ["--target-lang", spec.tgt]
        argv += ["--trainpref", str(sub / "train")]
        if "valid" in spec.splits:
            argv += ["--validpref", str(sub / "valid")]
        if tests:
            argv += ["--testpref", ",".join(str(sub / t) for t in tests)]
        if spec.monolingual:
            argv += ["--only-source"]
        elif not self.args.separate_vocab:
            argv += ["--joined-dictionary"]
        return [*argv, *spec.preprocess_flags, "--workers", str(self.args.workers)]

    def binarize(self) -> dict:
        """fairseq-preprocess into bin/: the recipe's own binarizer, else the command after ``--``
        (``--step binarize -- fairseq-preprocess FLAGS``), else ``preprocess_argv``."""
        ws, spec, given = self.ws, self.spec, self.args.preprocess
        if spec.binarizer:
            if given:
                raise PrepError(f"{ws.recipe} binarizes with commands of its own: give none after --")
            return spec.binarizer(ws, spec)
        argv = preprocess_flags(given) if given else self.preprocess_argv(ws.root)
        with atomic_path(ws.dir("bin")) as tmp:
            tmp.mkdir(parents=True)
            fairseq_preprocess([*argv, "--destdir", str(tmp)], ws.root / "preprocess.log")
        return {"preprocess": shlex.join(argv)} if given else {}

    # ---------------------------------------------------------------- manifest
    def manifest(self, raw_info: dict, tok_info: dict) -> dict:
        ws, spec, args = self.ws, self.spec, self.args
        model = {}
        for group in self.groups:
            name = self.model_name(group)
            for lang in group:
                model[lang] = f"subword/bpe-codes.{name}" if args.subword == "bpe" else f"subword/spm.{name}.model"
        manifest = {
            "recipe": ws.recipe,
            "command": ws.command,
            "src": spec.src,
            "tgt": None if spec.monolingual else spec.tgt,
            "splits": spec.splits,
            # train and an Edunov-style valid are counted after cleaning, the rest as read
            "segments": {
                k: (tok_info if k in ("train", "valid") and k in tok_info else raw_info).get(k) for k in spec.splits
            },
            "tokenize": spec.tokenize,
            "moses_escape": args.moses_escape,
            "lowercase": args.lowercase,
            "truecase": spec.truecase,
            "subword": args.subword,
            "subword_model": model,
            "bin": None if args.no_binarize else "bin",
            "references": {}
            if spec.monolingual
            else {
                s: {"detok": f"ref/{s}.{spec.tgt}", "tok": f"ref/{s}.tok.{spec.tgt}"}
                for s in spec.splits
                if s != "train"
            },
            **{k: v for k, v in tok_info.items() if k not in spec.splits},
            **spec.extra,
        }
        with atomic_path(ws.root / "prep.json") as tmp:
            tmp.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
        say(f"finished: {ws.root}/prep.json" + ("" if args.no_binarize else f", binarized data in {ws.root}/bin"))
        return manifest


def preprocess_flags(command: List[str]) -> List[str]:
    """The flags of the fairseq-preprocess command given after ``--``."""
    for program in (["fairseq-preprocess"], ["python", "-m", "fairseq_cli.preprocess"]):
        if command[: len(program)] == program:
            flags = command[len(program) :]
            if any(f.split("=")[0] == "--destdir" for f in flags):
                raise PrepError("--destdir is the binarize step's own (bin/ of --root, written whole): leave it out")
            return flags
    said = shlex.join(command[:3])
    raise PrepError(f"after --, the binarize step takes a fairseq-preprocess command, not {said} ...")
