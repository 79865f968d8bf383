#!/usr/bin/env python
"""iwslt14_de_en: IWSLT'14 German-English in the setup of Edunov et al. (2018), the
multiNN paper's IWSLT DE-EN (Table 1): ~160k training pairs, joint BPE of 10k merges.

What fairseq's prepare-iwslt14.sh does, step for step (Moses tools via sacremoses):

* the TED talks of ``de-en.tgz`` (WIT3, 2014-01): training text from ``train.tags.de-en.*``
  without the ``<url>``, ``<talkid>``, ``<keywords>`` lines and with ``<title>`` /
  ``<description>`` tags stripped; the other sets from the ``<seg>`` lines of the xml files;
* in the xml sets ’ becomes ' (the script's sed); no punctuation normalisation;
* Moses tokenisation (no -a), lowercasing, clean-corpus-n ratio 1.5, 1-175 tokens (train);
* valid = every 23rd pair of the cleaned training text, train = the rest;
* test = dev2010 + TEDX dev2012 + tst2010 + tst2011 + tst2012, concatenated;
* one BPE model of 10k merges learned on train.de + train.en.

Scoring: tokenized (lowercased) BLEU against ``ref/test.tok.en``, as fairseq-generate
prints and the papers report; sacrebleu on the detokenized text besides.
"""

import sys
from typing import List, Optional

from mixer_plugin.data.fetch import Download
from mixer_plugin.data.pipeline import Parallel, run_pipeline
from mixer_plugin.data.ted import write_ted
from mixer_plugin.data.workspace import Workspace, add_subword_args, common_parser, main_wrapper, resolve_root

RECIPE = "iwslt14_de_en"
RECIPES = {RECIPE: []}
ARCHIVE = Download(
    "de-en.tgz",
    [
        "http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz",
        "https://wit3.fbk.eu/archive/2014-01/texts/de/en/de-en.tgz",
    ],
)
TEST_SETS = [
    "IWSLT14.TED.dev2010",
    "IWSLT14.TEDX.dev2012",
    "IWSLT14.TED.tst2010",
    "IWSLT14.TED.tst2011",
    "IWSLT14.TED.tst2012",
]


def main(argv: Optional[List[str]] = None) -> None:
    p = common_parser(RECIPE, __doc__)
    add_subword_args(p, kind="bpe", vocab=10000, lowercase=True)
    args = p.parse_args(argv)
    ws = Workspace(resolve_root(args, RECIPE, argv), args, RECIPE)
    spec = Parallel(
        "de",
        "en",
        {
            "train": "train.tags.de-en (cleaned, without every 23rd pair)",
            "valid": "every 23rd pair of the cleaned train",
            "test": "+".join(TEST_SETS),
        },
        tokenize="moses",
        aggressive_dash=False,
        normalize=False,
        clean=(1, 175, 1.5),
        valid_every=23,
        extra={"xml_apostrophe": True},
    )
    run_pipeline(ws, spec, lambda out: write_ted(ws, out, ARCHIVE, "de", "en", {"test": TEST_SETS}, apostrophe=True))


if __name__ == "__main__":
    main_wrapper(RECIPE, lambda: main(sys.argv[1:]))
