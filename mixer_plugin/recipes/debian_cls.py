#!/usr/bin/env python
"""debian_cls: the Debian package-section classification corpus (cls-section) of the
shared data folder, in fairseq's ``sentence_prediction`` layout.

Input: the synopsis, " . ", then the long description (``*.input0``); label: the
package's archive section (``*.label``, 41 classes).  54,909 / 1,730 / 2,741 examples.
Read from ``--corpus``; nothing to download.  One sentencepiece unigram model of 8k
pieces on the training input, then ``bin/input0`` (fairseq-preprocess --only-source)
and ``bin/label`` (the labels' own dictionary), the folders ``--task
sentence_prediction`` reads.  Scored by accuracy (fairseq-validate on ``test``).
"""

import sys
from typing import List, Optional

from mixer_plugin.data.binarize import fairseq_preprocess
from mixer_plugin.data.debian import shared_corpus_main
from mixer_plugin.data.pipeline import Parallel
from mixer_plugin.data.workspace import Workspace, main_wrapper
from mixer_plugin.files import atomic_path

RECIPE = "debian_cls"
RECIPES = {RECIPE: []}
SPLITS = ("train", "valid", "test")


def binarize(ws: Workspace, spec: Parallel) -> dict:
    """fairseq-preprocess --only-source twice, input0/ (the text) and label/, into bin/, then prep.json"""
    sub, raw = ws.dir("subword"), ws.dir("raw")
    with atomic_path(ws.dir("bin")) as tmp:
        tmp.mkdir(parents=True)
        for name, folder in (("input0", sub), ("label", raw)):
            fairseq_preprocess(
                [
                    "--only-source",
                    "--source-lang",
                    name,
                    "--trainpref",
                    str(folder / "train"),
                    "--validpref",
                    str(folder / "valid"),
                    "--testpref",
                    str(folder / "test"),
                    "--destdir",
                    str(tmp / name),
                    "--workers",
                    str(ws.args.workers),
                ],
                ws.root / f"preprocess.{name}.log",
            )
            for split in SPLITS:  # sentence_prediction reads <split>.bin / .idx, not <split>.<lang>-None.<lang>
                for ext in ("bin", "idx"):
                    (tmp / name / f"{split}.{name}-None.{name}.{ext}").rename(tmp / name / f"{split}.{ext}")
            (tmp / name / f"dict.{name}.txt").rename(tmp / name / "dict.txt")
    return {}


def main(argv: Optional[List[str]] = None) -> None:
    shared_corpus_main(RECIPE, __doc__, argv, "cls-section", ("input0", "label"), monolingual=True, binarizer=binarize)


if __name__ == "__main__":
    main_wrapper(RECIPE, lambda: main(sys.argv[1:]))
