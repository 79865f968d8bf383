"""The machinery every data recipe shares.

A recipe (one small module per dataset in ``mixer_plugin/recipes/``) declares what it downloads
and how its raw splits are read; this module does the rest, the same way for every
dataset:

    fetch     each download to ``<name>.part``, verified (size, sha256 when known, the
              archive read to its end), then renamed; or taken from ``--downloads DIR``
    raw       the recipe's own reader writes ``raw/<split>.<lang>`` (one segment a line)
    tok       Moses-style normalisation + tokenisation with sacremoses (optional
              lowercasing, truecasing), length cleaning of train (clean-corpus-n rules)
    subword   subword-nmt BPE or sentencepiece, joint or one model per language
    binarize  fairseq-preprocess into ``bin/``

Every step writes into temporary names and renames at the end, then leaves a marker
in ``.steps/<step>.json`` with the options it ran with.  A rerun skips finished steps,
redoes unfinished ones from scratch, and refuses to mix steps done with different
options (``--force`` starts over).  Nothing half-written is ever taken for finished.

``prep.json`` in the output root tells the generate/score scripts how to undo the
preprocessing (subword model, tokeniser, case) and where the references are.
"""

import argparse
import gzip
import hashlib
import html
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, TextIO, Tuple

from ..files import atomic_path, sweep_leftovers
from ..paths import SHARED_DATA, WORK, shown  # noqa: F401  (SHARED_DATA: the recipes' default)


class PrepError(Exception):
    """A one-line, user-facing failure (bad input, failed download, missing file)."""


def say(msg: str) -> None:
    print(f"[mixer-prepare {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ----------------------------------------------------------------------- files
def write_lines(path: Path, lines: Iterable[str]) -> int:
    n = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")
            n += 1
    return n


def open_text(path: Path) -> TextIO:
    path = Path(path)
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="strict", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def read_lines(path: Path) -> List[str]:
    """Lines without their newline; splits on \\n only (not on U+2028 and friends).  A \\r
    inside a line becomes a space: fairseq-preprocess reads with universal newlines, where
    a lone \\r ends a line, so one left in a sentence would shift every later line of
    that side against the other."""
    try:
        with open_text(path) as f:
            return [line.rstrip("\n").rstrip("\r").replace("\r", " ") for line in f]
    except FileNotFoundError:
        raise PrepError(f"missing file {path}") from None
    except (UnicodeDecodeError, EOFError, OSError, zlib.error) as e:
        raise PrepError(f"cannot read {path}: {e}") from None


def count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


_SEG = re.compile(r"<seg[^>]*>(.*?)</seg>", re.IGNORECASE)


def sgm_segments(text: str) -> List[str]:
    """The ``<seg id=..>text</seg>`` contents of a WMT .sgm or IWSLT .xml file, unescaped."""
    return [html.unescape(m.group(1)).strip() for m in _SEG.finditer(text)]


# ------------------------------------------------------------------- downloads
@dataclass
class Download:
    """One file to fetch: its name on disk, where it can come from, how to check it."""

    name: str
    urls: Sequence[str]
    sha256: Optional[str] = None
    note: str = ""  # how to get it by hand when no URL works (licence walls, Drive)


def verify(path: Path, name: Optional[str] = None) -> Optional[str]:
    """None if the file is complete, else why not.  Archives are read to their end,
    which is what catches a truncated download that still has a plausible size."""
    try:
        if path.stat().st_size == 0:
            return "the file is empty"
        name = (name or path.name).lower()  # a download in progress is <name>.part
        if name.endswith((".gz", ".tgz")):
            # the whole gzip stream first: a cut transfer ends before its end-of-stream marker
            # (tarfile alone may stop at the last complete member and call that the end)
            with gzip.open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
        if name.endswith((".tgz", ".tar.gz", ".tar", ".tar.bz2", ".tbz2", ".tar.xz")):
            with tarfile.open(path) as tf:
                members = 0
                for m in tf:
                    members += 1
                    if m.isfile():
                        with tf.extractfile(m) as f:
                            while f.read(1 << 20):
                                pass
            if members == 0:
                return "the archive has no members"
        elif name.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                bad = zf.testzip()
                if bad is not None:
                    return f"member {bad} is corrupt"
        elif name.endswith(".gz"):
            pass  # read to its end above
        else:
            with open(path, "rb") as f:
                head = f.read(512).lstrip().lower()
            if head.startswith((b"<!doctype html", b"<html")) and not name.endswith((".html", ".xml", ".sgm")):
                return "it is an HTML page, not the data (a login or confirmation page?)"
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, gzip.BadGzipFile, zlib.error) as e:
        return f"it is corrupt or truncated ({type(e).__name__}: {e})"
    return None


def sha256sum(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check(path: Path, dl: Download) -> Optional[str]:
    if dl.sha256 and sha256sum(path) != dl.sha256:
        return f"its sha256 is not {dl.sha256}"
    return verify(path, dl.name)


def fetch(dl: Download, ws: "Workspace") -> Path:
    """The verified local file for ``dl``: from ``--downloads`` dirs, an earlier
    finished download, or the network (to ``.part``, verified, then renamed)."""
    for d in ws.user_downloads:
        path = Path(d) / dl.name
        if path.is_file():
            why = _check(path, dl)
            if why:
                raise PrepError(f"{path} (given with --downloads) is unusable: {why}; fetch it again")
            say(f"using {path}")
            return path
    path = ws.downloads / dl.name
    if path.is_file():
        why = _check(path, dl)
        if why is None:
            return path
        say(f"{path} is unusable ({why}); fetching it again")
        path.unlink()
    hint = f" {dl.note}" if dl.note else ""
    if ws.offline or not dl.urls:
        where = " or ".join(dl.urls) or "its source"
        raise PrepError(f"missing {dl.name}: download it from {where} and pass its folder with --downloads DIR{hint}")
    ws.downloads.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    errors = []
    for url in dl.urls:
        say(f"downloading {url}")
        try:
            _download(url, part)
            why = _check(part, dl)
            if why is None:
                os.replace(part, path)
                return path
            errors.append(f"{url}: {why}")
        except (urllib.error.URLError, OSError, ValueError) as e:
            errors.append(f"{url}: {getattr(e, 'reason', e)}")
        finally:
            if part.exists():
                part.unlink()  # a partial file is never kept
    raise PrepError(
        f"download of {dl.name} failed ({'; '.join(errors)}); nothing was kept. "
        f"Fetch it by hand and pass its folder with --downloads DIR{hint}"
    )


def _download(url: str, out: Path) -> None:
    req = urllib.request.Request(url, headers={"User-Agent": "mixer-plugin-data-prep"})
    with urllib.request.urlopen(req, timeout=60) as r, open(out, "wb") as f:
        want = r.headers.get("Content-Length")
        got = 0
        for block in iter(lambda: r.read(1 << 20), b""):
            f.write(block)
            got += len(block)
    if want is not None and got != int(want):
        raise ValueError(f"got {got} of {want} bytes")


# -------------------------------------------------------------------- archives
def archive_names(archive: Path) -> List[str]:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            return zf.namelist()
    with tarfile.open(archive) as tf:
        return tf.getnames()


def find_member(archive: Path, *suffixes: str) -> str:
    """The one member whose path ends with one of ``suffixes`` (first suffix wins)."""
    names = archive_names(archive)
    for suffix in suffixes:
        hits = [n for n in names if n == suffix or n.endswith("/" + suffix)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise PrepError(f"{archive}: several members end with {suffix}: {hits[:4]}")
    shown = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
    raise PrepError(f"{archive} has no member {' or '.join(suffixes)} (it has: {shown})")


def read_member(archive: Path, member: str) -> bytes:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            return zf.read(member)
    with tarfile.open(archive) as tf:
        f = tf.extractfile(member)
        if f is None:
            raise PrepError(f"{archive}: {member} is not a file")
        return f.read()


def member_lines(archive: Path, member: str) -> List[str]:
    data = read_member(archive, member)
    if member.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8").split("\n")[:-1] if data.endswith(b"\n") else data.decode("utf-8").split("\n")


# ------------------------------------------------------------------- workspace
class Workspace:
    """The output root of one recipe run, with its step markers."""

    def __init__(self, root: Path, args: argparse.Namespace, recipe: str):
        self.root = Path(root)
        self.recipe = recipe
        self.args = args
        self.downloads = Path(args.download_dir) if args.download_dir else self.root / "downloads"
        self.user_downloads = list(args.downloads or [])
        self.offline = args.offline
        self.steps = self.root / ".steps"
        self.command = " ".join(["python", shown(sys.argv[0]), *map(shlex.quote, sys.argv[1:])])
        if args.force and self.root.exists():
            for name in ("raw", "tok", "subword", "bin", "ref", ".steps", "prep.json"):
                p = self.root / name
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        for folder in (self.root, self.steps):
            sweep_leftovers(folder)
        self.steps.mkdir(parents=True, exist_ok=True)

    def dir(self, name: str) -> Path:
        return self.root / name

    def run_step(self, name: str, options: dict, fn: Callable[[], Optional[dict]]) -> dict:
        """Run ``fn`` unless ``name`` finished before with the same options."""
        marker = self.steps / f"{name}.json"
        if marker.is_file():
            done = json.loads(marker.read_text())
            stored = done.get("options") or {}
            # as the marker stores them (a tuple reads back as a list), less the options added
            # since the marker was written
            wanted = {k: v for k, v in json.loads(json.dumps(options)).items() if k in stored}
            if stored != wanted:
                raise PrepError(
                    f"step {name} in {self.root} was done with other options "
                    f"({stored} vs {options}); pass --force or another --root"
                )
            say(f"{name}: done before, skipped")
            return done.get("info") or {}
        say(f"{name}: start")
        t0 = time.time()
        info = fn() or {}
        with atomic_path(marker) as tmp:
            tmp.write_text(
                json.dumps({"options": options, "info": info, "seconds": round(time.time() - t0, 1)}, indent=1)
            )
        say(f"{name}: done in {time.time() - t0:.0f} s")
        return info


def common_parser(recipe: str, doc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"mixer-prepare {recipe}", description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--root", type=Path, help=f"output folder [work/data/{recipe}]")
    p.add_argument(
        "--downloads",
        action="append",
        metavar="DIR",
        help="a folder holding files you downloaded already (repeatable); used as they are",
    )
    p.add_argument("--download-dir", help="where fetched files go [ROOT/downloads]")
    p.add_argument("--offline", action="store_true", help="never use the network: every file must be there")
    p.add_argument("--force", action="store_true", help="redo every step (downloads are kept)")
    p.add_argument(
        "--workers",
        type=int,
        default=max(1, min(8, os.cpu_count() or 1)),
        help="processes for tokenisation, BPE and fairseq-preprocess",
    )
    p.add_argument("--no-binarize", action="store_true", help="stop after the subword step")
    return p


def add_subword_args(
    p: argparse.ArgumentParser,
    *,
    kind: str,
    vocab: int,
    joint: bool = True,
    spm_type: str = "bpe",
    lowercase: bool = False,
) -> None:
    g = p.add_argument_group("subwords")
    g.add_argument(
        "--subword",
        choices=("bpe", "spm"),
        default=kind,
        help="bpe: subword-nmt joint BPE (merge operations = --vocab); spm: sentencepiece",
    )
    g.add_argument("--vocab", type=int, default=vocab, help="BPE merges or sentencepiece vocabulary size")
    g.add_argument("--spm-type", choices=("bpe", "unigram"), default=spm_type, help="sentencepiece model type")
    g.add_argument(
        "--separate-vocab",
        action="store_true",
        default=not joint,
        help="one subword model and dictionary per language instead of a joint one",
    )
    g.add_argument(
        "--lowercase",
        action=argparse.BooleanOptionalAction,
        default=lowercase,
        help="lowercase all text (Edunov et al.'s IWSLT14 setup does)",
    )
    g.add_argument(
        "--moses-escape",
        action="store_true",
        help="escape & < > ' \" | [ ] as tokenizer.perl does by default (off: plain characters)",
    )


# --------------------------------------------------------- tokenisation (Moses)
_MOSES = {}


def _moses(lang: str):
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    if lang not in _MOSES:
        _MOSES[lang] = (
            MosesPunctNormalizer(lang=lang, pre_replace_unicode_punct=True, post_remove_control_chars=True),
            MosesTokenizer(lang=lang),
        )
    return _MOSES[lang]


def _tok_chunk(job: Tuple[str, Sequence[str], bool, bool, bool, bool]) -> List[str]:
    lang, lines, lowercase, escape, aggressive, normalize = job
    norm, tok = _moses(lang)
    out = []
    for line in lines:
        # normalize-punctuation + remove-non-printing-char (the WMT scripts; not
        # prepare-iwslt14.sh), then tokenizer -a (aggressive hyphen splitting: "a-b" ->
        # "a @-@ b", as the WMT scripts of fairseq/tensor2tensor)
        text = tok.tokenize(
            norm.normalize(line) if normalize else line,
            aggressive_dash_splits=aggressive,
            return_str=True,
            escape=escape,
        )
        text = " ".join(text.split())
        out.append(text.lower() if lowercase else text)
    return out


def _chunks(lines: Sequence[str], size: int = 5000) -> Iterator[Sequence[str]]:
    for i in range(0, len(lines), size):
        yield lines[i : i + size]


def pool_map(fn: Callable[[Any], Any], jobs: Iterable[Any], workers: int) -> List[Any]:
    jobs = list(jobs)
    if workers <= 1 or len(jobs) <= 1:
        return [fn(j) for j in jobs]
    import multiprocessing as mp

    with mp.get_context("spawn" if sys.platform == "darwin" else "fork").Pool(workers) as pool:
        return pool.map(fn, jobs)


def moses_tokenize(
    lines: Sequence[str],
    lang: str,
    *,
    lowercase: bool = False,
    escape: bool = False,
    aggressive: bool = True,
    normalize: bool = True,
    workers: int = 1,
) -> List[str]:
    parts = pool_map(_tok_chunk, [(lang, c, lowercase, escape, aggressive, normalize) for c in _chunks(lines)], workers)
    return [line for part in parts for line in part]


def moses_detokenize(lines: Sequence[str], lang: str) -> List[str]:
    from sacremoses import MosesDetokenizer

    detok = MosesDetokenizer(lang=lang)
    # undo the aggressive hyphen split first ("a @-@ b" -> "a-b")
    return [detok.detokenize(re.sub(r" (@-@|##AT##-##AT##) ", "-", line).split(), unescape=True) for line in lines]


def clean_pairs(src: List[str], tgt: List[str], min_len: int = 1, max_len: int = 250, ratio: float = 1.5) -> List[int]:
    """Indices of the pairs Moses' clean-corpus-n.perl keeps: both sides within
    [min_len, max_len] tokens and neither more than ``ratio`` times the other."""
    keep = []
    for i, (s, t) in enumerate(zip(src, tgt)):
        ls, lt = len(s.split()), len(t.split())
        if min_len <= ls <= max_len and min_len <= lt <= max_len and ls <= ratio * lt and lt <= ratio * ls:
            keep.append(i)
    return keep


def train_truecaser(lines: Sequence[str], model: Path) -> None:
    from sacremoses import MosesTruecaser

    tc = MosesTruecaser()
    tc.train([line.split() for line in lines], save_to=None)
    with atomic_path(model) as tmp:
        tc.save_model(str(tmp))


def truecase(lines: Sequence[str], model: Path) -> List[str]:
    from sacremoses import MosesTruecaser

    tc = MosesTruecaser(load_from=str(model))
    return [" ".join(tc.truecase(line, return_str=False)) if line.strip() else "" for line in lines]


def detruecase(lines: Iterable[str]) -> List[str]:
    """Moses detruecase.perl: the first word of a sentence capitalised again."""
    from sacremoses import MosesDetruecaser

    d = MosesDetruecaser()
    return [d.detruecase(line, return_str=True) for line in lines]


# ------------------------------------------------------------------- subwords
_BPE = {}


def _bpe_chunk(job: Tuple[str, Sequence[str]]) -> List[str]:
    codes, lines = job
    if codes not in _BPE:
        from subword_nmt.apply_bpe import BPE

        with open(codes, encoding="utf-8") as f:
            _BPE[codes] = BPE(f)
    bpe = _BPE[codes]
    return [bpe.process_line(line) for line in lines]


def learn_bpe(train_files: Sequence[Path], merges: int, codes: Path) -> None:
    from subword_nmt.learn_bpe import learn_bpe as _learn

    parts = []
    for f in train_files:  # joint: all files at once
        with open_text(f) as fh:
            parts.append(fh.read())
    text = "".join(parts)
    with atomic_path(codes) as tmp, open(tmp, "w", encoding="utf-8") as out:
        _learn(io.StringIO(text), out, merges, min_frequency=2)


def apply_bpe(lines: Sequence[str], codes: Path, workers: int = 1) -> List[str]:
    parts = pool_map(_bpe_chunk, [(str(codes), c) for c in _chunks(lines)], workers)
    return [line for part in parts for line in part]


def learn_spm(train_files: Sequence[Path], vocab: int, prefix: Path, model_type: str = "bpe", workers: int = 1) -> None:
    """Writes ``<prefix>.model`` and ``<prefix>.vocab`` (callers write into a temporary folder)."""
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        input=[str(f) for f in train_files],
        model_prefix=str(prefix),
        vocab_size=vocab,
        model_type=model_type,
        character_coverage=1.0,
        input_sentence_size=10_000_000,
        shuffle_input_sentence=True,
        num_threads=workers,
        hard_vocab_limit=False,
        bos_id=-1,
        eos_id=-1,
        pad_id=-1,
        unk_id=0,  # fairseq adds its own specials
        minloglevel=2,
    )


def apply_spm(lines: Sequence[str], model: Path) -> List[str]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(model))
    return [" ".join(p) for p in sp.encode(list(lines), out_type=str)]


def decode_subword(lines: Iterable[str], kind: str, model: Optional[Path]) -> List[str]:
    """Undo BPE (``@@ `` joins) or sentencepiece (pieces -> text)."""
    if kind == "bpe":
        return [re.sub(r"@@( |$)", "", line).strip() for line in lines]
    if kind == "spm":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(model))
        return [sp.decode_pieces(line.split()) for line in lines]
    if kind == "none":
        return list(lines)
    raise PrepError(f"unknown subword kind {kind!r}")


# ------------------------------------------------------------ the pipeline
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


def fairseq_preprocess(argv: List[str], log: Path) -> None:
    cmd = [sys.executable, "-m", "fairseq_cli.preprocess", *argv]
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log.read_text().strip().splitlines()[-1:] or ["(no output)"]
        raise PrepError(f"fairseq-preprocess failed (exit {proc.returncode}; see {log}): {tail[0]}")


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


def data_root(recipe: str, prepare: Sequence[str] = ()) -> Path:
    """Where a recipe's data goes: ``work/data/<recipe>``, or ``<recipe>.<hash>`` when it is
    given arguments of its own (an experiment's ``prepare:``), so that each set of
    arguments has a folder of its own and ``mixer-prepare`` and ``mixer-run`` find the same one."""
    if not prepare:
        return WORK / "data" / recipe
    return WORK / "data" / f"{recipe}.{hashlib.sha256(shlex.join(prepare).encode()).hexdigest()[:8]}"


def resolve_root(args: argparse.Namespace, recipe: str) -> Path:
    return args.root or data_root(recipe)


def main_wrapper(recipe: str, fn: Callable[[], None]) -> None:
    """Run a recipe; a PrepError is one line on stderr and exit status 2."""
    try:
        fn()
    except PrepError as e:
        print(f"mixer-prepare {recipe}: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(
            f"mixer-prepare {recipe}: interrupted; finished steps are kept, the rest is redone next time",
            file=sys.stderr,
        )
        sys.exit(130)
