"""The options both decoding benchmarks (``mixer-bench decode``, ``decode-ops``) take: the data
folder, the languages and the outputs; and the checks of the data folder and ``--mixers``."""

import argparse
from pathlib import Path
from typing import List

from .decode_models import MODELS


def add_common_args(ap: argparse.ArgumentParser) -> None:
    """The options every decoding benchmark takes: data, languages, outputs."""
    ap.add_argument("data", help="a fairseq-preprocess output folder (its test split and dictionaries)")
    ap.add_argument("--source-lang", default="en")
    ap.add_argument("--target-lang", default="de")
    ap.add_argument("--md")
    ap.add_argument("--json")


def check_data(args: argparse.Namespace, prog: str) -> None:
    if not (Path(args.data) / f"dict.{args.target_lang}.txt").is_file():
        raise SystemExit(f"{prog}: error: {args.data} is not a fairseq data folder (no dict.{args.target_lang}.txt)")


def checked_labels(args: argparse.Namespace, prog: str, transformer_first: bool) -> List[str]:
    """The data folder and ``--mixers`` checked -> the model labels, in order."""
    check_data(args, prog)
    labels = [m for m in args.mixers.split(",") if m]
    unknown = [m for m in labels if m not in MODELS]
    if unknown or not labels or (transformer_first and labels[0] != "transformer"):
        first = "the first must be transformer, " if transformer_first else ""
        raise SystemExit(f"{prog}: error: --mixers: {first}labels from {', '.join(MODELS)} (got {args.mixers})")
    return labels
