"""The steps every recipe runs on its text, raw -> tok -> subword -> binarize, each one a
``Workspace.run_step``, and ``prep.json``, which says how to undo them."""

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from ..files import atomic_path
from .binarize import fairseq_preprocess
from .subwords import apply_bpe, apply_spm, learn_bpe, learn_spm
from .text import count_lines, read_lines, write_lines
from .tokenize import clean_pairs, moses_tokenize, train_truecaser, truecase
from .workspace import PrepError, Workspace, say


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
    binarizer: Optional[Callable] = None  # replaces the translation binarize step
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
        ws, spec, args = self.ws, self.spec, self.args
        # the direction too: the same root prepared the other way round reads other files
        raw_info = ws.run_step(
            "raw", {"splits": spec.splits, "src": spec.src, "tgt": spec.tgt, **spec.extra}, lambda: self.raw(write_raw)
        )
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
        tok_info = ws.run_step("tok", tok_opts, self.tok)
        sub_opts = {
            "subword": args.subword,
            "vocab": args.vocab,
            "joint": not args.separate_vocab,
            "spm_type": args.spm_type if args.subword == "spm" else None,
            "presegmented": spec.presegmented,
        }
        ws.run_step("subword", sub_opts, self.subword)
        if not args.no_binarize:
            binarizer = spec.binarizer or (lambda w, s: binarize(w, s, joint=not args.separate_vocab))
            ws.run_step("binarize", {**sub_opts, "splits": list(spec.splits)}, lambda: binarizer(ws, spec))
        return self.manifest(raw_info, tok_info)

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


def binarize(ws: Workspace, spec: Parallel, joint: bool) -> dict:
    sub = ws.dir("subword")
    tests = [s for s in spec.splits if s.startswith("test")]
    with atomic_path(ws.dir("bin")) as tmp:
        tmp.mkdir(parents=True)
        argv = [
            "--source-lang",
            spec.src,
            "--trainpref",
            str(sub / "train"),
            "--destdir",
            str(tmp),
            "--workers",
            str(ws.args.workers),
        ]
        if "valid" in spec.splits:
            argv += ["--validpref", str(sub / "valid")]
        if tests:
            argv += ["--testpref", ",".join(str(sub / t) for t in tests)]
        if spec.monolingual:
            argv += ["--only-source"]
        else:
            argv += ["--target-lang", spec.tgt]
            if joint:
                argv += ["--joined-dictionary"]
        fairseq_preprocess(argv, ws.root / "preprocess.log")
    return {}
