"""The Debian corpora (en-de, sum-en, cls-section): split files read as they are, one
joint sentencepiece model (mixer_plugin/recipes/debian_*.py).

A corpus folder holds ``{train,valid,test}.<side>``, plain or xz-compressed
(``train.en.xz``: the copy of the EN-DE corpus bundled in ``data/debian-en-de``).
Where it says which source each test line comes from (``test.source``, or the shared
folder's ``by-source/<source>/test.<side>``), that list is kept for per-source scores.
"""

import argparse
import lzma
import shutil
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from ..paths import CHECKOUT, SHARED_DATA
from .pipeline import Parallel, run_pipeline
from .text import write_lines
from .workspace import PrepError, Workspace, add_subword_args, common_parser, resolve_root

BUNDLED = CHECKOUT / "data"  # the corpora that ship with the repository


def default_corpus(folder: str, bundled: str) -> Path:
    """The shared folder's corpus where it exists (beside a checkout of this project's
    workplace), else the copy bundled with the repository."""
    shared = SHARED_DATA / folder
    return shared if shared.is_dir() else BUNDLED / bundled


def corpus_file(corpus: Path, name: str) -> Optional[Path]:
    for path in (corpus / name, corpus / f"{name}.xz"):
        if path.is_file():
            return path
    return None


def copy_split_files(corpus: Path, out: Path, names: Sequence[str]) -> None:
    """Copy ``names`` (file names in ``corpus``, plain or .xz) into ``out``; one clear
    error if any is missing."""
    missing = [n for n in names if corpus_file(corpus, n) is None]
    if missing:
        raise PrepError(f"--corpus {corpus} lacks {', '.join(missing)} (plain or .xz)")
    for n in names:
        src = corpus_file(corpus, n)
        if src.suffix == ".xz":
            with lzma.open(src, "rb") as f, open(out / n, "wb") as g:
                shutil.copyfileobj(f, g)
        else:
            shutil.copyfile(src, out / n)


def read_text_lines(path: Path) -> List[str]:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def test_sources(corpus: Path, side: str) -> Optional[List[str]]:
    """The source of every test line: ``test.source``, or worked out from the
    ``by-source/<name>/test.<side>`` files (each one a contiguous block of the test set)."""
    listed = corpus_file(corpus, "test.source")
    if listed is not None:
        return read_text_lines(listed)
    folder = corpus / "by-source"
    test = corpus_file(corpus, f"test.{side}")
    if not folder.is_dir() or test is None:
        return None
    lines = read_text_lines(test)
    where = {}
    for line_no, line in enumerate(lines):
        where.setdefault(line, line_no)
    sources = [None] * len(lines)
    for src_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        block = read_text_lines(src_dir / f"test.{side}")
        start = where.get(block[0]) if block else None
        if start is None:
            raise PrepError(f"{src_dir}/test.{side} is not a block of {test}")
        for i in range(len(block)):
            sources[start + i] = src_dir.name
    if any(s is None for s in sources):
        raise PrepError(f"{folder}: some test lines belong to no source")
    return sources


def shared_corpus_main(
    recipe: str,
    doc: str,
    argv: Optional[List[str]],
    folder: str,
    sides: Sequence[str],
    extra_args: Optional[Callable[[argparse.ArgumentParser], object]] = None,
    **spec_options,
) -> None:
    """The Debian corpora: ``{train,valid,test}.<side>`` read from ``--corpus``, raw text,
    one joint sentencepiece unigram model of 8k pieces (the CPU size of this repo)."""
    p = common_parser(recipe, doc)
    p.add_argument(
        "--corpus",
        type=Path,
        default=default_corpus(folder, spec_options.pop("bundled", folder)),
        help=f"folder with {{train,valid,test}}.{{{','.join(sides)}}} (plain or .xz) [the shared "
        f"data folder's {folder}, else the copy in data/]",
    )
    if extra_args:
        extra_args(p)
    add_subword_args(p, kind="spm", vocab=8000, spm_type="unigram")
    args = p.parse_args(argv)
    if not args.corpus.is_dir():
        p.error(
            f"--corpus {args.corpus}: no such folder (without the shared data folder beside the checkout, "
            "only data/debian-en-de is bundled)"
        )
    src, tgt = spec_options.pop("direction", lambda a: sides)(args)
    ws = Workspace(resolve_root(args, recipe, argv), args, recipe)
    sources = test_sources(args.corpus, src) if not spec_options.get("monolingual") else None
    extra = {"corpus": str(args.corpus), **({"sources": {"test": "raw/test.source"}} if sources else {})}
    spec = Parallel(
        src, tgt, {"train": "train", "valid": "valid", "test": "test"}, tokenize="none", extra=extra, **spec_options
    )

    def write_raw(out: Path):
        copy_split_files(args.corpus, out, [f"{s}.{side}" for s in spec.splits for side in sides])
        if sources:
            write_lines(out / "test.source", sources)

    run_pipeline(ws, spec, write_raw)
