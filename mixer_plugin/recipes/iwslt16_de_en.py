#!/usr/bin/env python
"""iwslt16_de_en: IWSLT'16 German-English (TED, WIT3 2016-01) as the interacting-head
paper prepared it (§4.1, Tables 3 and 9).

* training text from ``train.tags.de-en.*`` (same tag filtering as IWSLT14);
* valid: ``--valid`` sets [dev2010 + TEDX dev2012]; test: tst2010-tst2014 concatenated
  ("The concatenation of tst2010/2011/2012/2013/2014 was taken as the test set");
* Moses tokenisation, training pairs longer than 80 tokens dropped (clean-corpus-n's
  default ratio 9), a Moses truecaser trained on the cleaned training text and applied
  to every set;
* one shared sentencepiece BPE vocabulary of 40,000 ("a shared vocabulary with
  40,000 ... tokens"; ``--subword bpe`` for subword-nmt instead).

The paper's "181k/12k training/evaluation" does not say where its 12k evaluation pairs
come from (the dev sets hold ~2.4k); ``--valid every23`` takes every 23rd training pair
instead, as the IWSLT14 recipe does.  Scoring: tokenized BLEU (multi-bleu.perl), WER
(pyter -> jiwer here), ROUGE-L, plus sacrebleu.
"""

import sys
from typing import List, Optional

from mixer_plugin.data.fetch import Download
from mixer_plugin.data.pipeline import Parallel, run_pipeline
from mixer_plugin.data.ted import write_ted
from mixer_plugin.data.workspace import Workspace, add_subword_args, common_parser, main_wrapper, resolve_root

RECIPE = "iwslt16_de_en"
RECIPES = {RECIPE: []}
ARCHIVE = Download(
    "de-en-2016.tgz",
    ["https://wit3.fbk.eu/archive/2016-01/texts/de/en/de-en.tgz"],
    note="(WIT3 serves it as de-en.tgz; save it as de-en-2016.tgz, it differs from the 2014 one)",
)
DEV = ["IWSLT16.TED.dev2010", "IWSLT16.TEDX.dev2012"]
TEST = [f"IWSLT16.TED.tst{y}" for y in range(2010, 2015)]


def main(argv: Optional[List[str]] = None) -> None:
    p = common_parser(RECIPE, __doc__)
    p.add_argument(
        "--valid",
        choices=("dev", "every23"),
        default="dev",
        help="dev: dev2010 + TEDX dev2012; every23: every 23rd cleaned training pair",
    )
    add_subword_args(p, kind="spm", vocab=40000, spm_type="bpe")
    args = p.parse_args(argv)
    ws = Workspace(resolve_root(args, RECIPE, argv), args, RECIPE)
    every = 23 if args.valid == "every23" else None
    spec = Parallel(
        "de",
        "en",
        {
            "train": "train.tags.de-en",
            "valid": "every 23rd train pair" if every else "+".join(DEV),
            "test": "+".join(TEST),
        },
        tokenize="moses",
        clean=(1, 80, 9.0),
        truecase=True,
        valid_every=every,
    )
    sets = {"test": TEST} if every else {"valid": DEV, "test": TEST}
    run_pipeline(ws, spec, lambda out: write_ted(ws, out, ARCHIVE, "de", "en", sets))


if __name__ == "__main__":
    main_wrapper(RECIPE, lambda: main(sys.argv[1:]))
