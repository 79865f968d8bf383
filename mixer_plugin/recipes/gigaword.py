#!/usr/bin/env python
"""gigaword: headline generation on Annotated Gigaword as Rush et al. (2015) released
it (the multiNN paper's "headline generation", Table 4): ~3.8M article-sentence /
headline pairs, ~190k valid, the 1,951-pair Gigaword test set.

The release is already tokenized and lowercased (digits as ``#``, rare words ``UNK``),
so the text is used as it is; one joint BPE model of 32k merges (the paper's "joined
vocabulary ... byte pair encoding ... 32K").  Two layouts are read:

* ``summary.tar.gz`` of harvardnlp/sent-summary (``sumdata/train/train.article.txt.gz``,
  ``train.title.txt.gz``, ``valid.{article,title}.filter.txt.gz``, ``sumdata/Giga/input.txt``,
  ``task1_ref0.txt``), the archive Rush et al.'s README points to;
* ``ggw_data.zip``-style ``org_data/{train,dev,test}.{src,tgt}.txt`` (the same data as
  redistributed with UniLM / HuggingFace).

Both are on Google Drive (no direct URL): download one and pass its folder with
``--downloads``.  ``--valid-size`` keeps the first N valid pairs (fairseq validates
every epoch; the full 190k is slow) [all].  Scored with ROUGE-1/2/L F1 on the tokens.
"""

import sys
from pathlib import Path
from typing import List, Optional

from mixer_plugin.data.archives import archive_names, member_lines
from mixer_plugin.data.fetch import Download, fetch
from mixer_plugin.data.pipeline import Parallel, run_pipeline
from mixer_plugin.data.text import write_lines
from mixer_plugin.data.workspace import (
    PrepError,
    Workspace,
    add_subword_args,
    common_parser,
    main_wrapper,
    resolve_root,
)

RECIPE = "gigaword"
RECIPES = {RECIPE: []}
SOURCES = [
    Download("summary.tar.gz", [], note="(https://github.com/harvardnlp/sent-summary: the 'summary.tar.gz' link)"),
    Download("ggw_data.zip", [], note="(the UniLM release of the same data, org_data/)"),
]
LAYOUTS = {
    "summary.tar.gz": {
        "train": ("train.article.txt.gz", "train.title.txt.gz"),
        "valid": ("valid.article.filter.txt.gz", "valid.title.filter.txt.gz"),
        "test": ("Giga/input.txt", "Giga/task1_ref0.txt"),
    },
    "ggw_data.zip": {
        "train": ("org_data/train.src.txt", "org_data/train.tgt.txt"),
        "valid": ("org_data/dev.src.txt", "org_data/dev.tgt.txt"),
        "test": ("org_data/test.src.txt", "org_data/test.tgt.txt"),
    },
}


def write_raw(ws: Workspace, out: Path, valid_size: Optional[int]) -> dict:
    errors = []
    for dl in SOURCES:
        try:
            archive = fetch(dl, ws)
        except PrepError as e:
            errors.append(str(e))
            continue
        names = archive_names(archive)
        info = {"source": dl.name}
        for split, pair in LAYOUTS[dl.name].items():
            sides = []
            for suffix in pair:
                hits = [n for n in names if n.endswith(suffix)]
                if len(hits) != 1:
                    raise PrepError(f"{archive}: expected one member ending with {suffix}, found {hits[:4] or 'none'}")
                sides.append([" ".join(x.split()) for x in member_lines(archive, hits[0])])
            if len(sides[0]) != len(sides[1]):
                raise PrepError(f"{archive}: {split} has {len(sides[0])} articles and {len(sides[1])} titles")
            keep = [i for i in range(len(sides[0])) if sides[0][i] and sides[1][i]]  # empty titles exist
            if split == "valid" and valid_size:
                keep = keep[:valid_size]
            info[f"{split}_dropped_empty"] = len(sides[0]) - len(keep) if split != "valid" else None
            write_lines(out / f"{split}.src", (sides[0][i] for i in keep))
            write_lines(out / f"{split}.tgt", (sides[1][i] for i in keep))
        return info
    raise PrepError("no Gigaword archive: " + " | ".join(errors))


def main(argv: Optional[List[str]] = None) -> None:
    p = common_parser(RECIPE, __doc__)
    p.add_argument("--valid-size", type=int, help="keep the first N valid pairs [all]")
    add_subword_args(p, kind="bpe", vocab=32000)
    args = p.parse_args(argv)
    ws = Workspace(resolve_root(args, RECIPE, argv), args, RECIPE)
    spec = Parallel(
        "src",
        "tgt",
        {"train": "train", "valid": "valid", "test": "Giga test (1951)"},
        tokenize="pretokenized",
        extra={"valid_size": args.valid_size},
    )
    run_pipeline(ws, spec, lambda out: write_raw(ws, out, args.valid_size))


if __name__ == "__main__":
    main_wrapper(RECIPE, lambda: main(sys.argv[1:]))
