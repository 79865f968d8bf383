#!/usr/bin/env python
"""wmt14_en_fr: WMT'14 English-French (the hard-retrieval paper's En-Fr, Table 1).

Corpora of fairseq's prepare-wmt14en2fr.sh / Vaswani et al.: Europarl v7, Common Crawl,
UN (undoc 2000), News Commentary v9 and the 10^9 French-English corpus (~36M pairs).
Valid: newstest2012 + newstest2013 ("The concatenation of newstest 2012 and newstest
2013 was used for validation", §4); test: newstest2014 (full).  Moses normalisation +
tokenisation (-a), clean-corpus-n 1.5 / 1-250, joint BPE.  The merge count was lost
from our copy of the paper; 32k is Vaswani et al.'s (wordpiece) size and the default
(``--vocab``).  Everything is held in memory: plan for ~20 GB of RAM for the full set.
"""

import sys
from typing import List, Optional

from mixer_plugin.data.pipeline import Parallel, run_pipeline
from mixer_plugin.data.wmt import write_wmt_raw
from mixer_plugin.data.workspace import Workspace, add_subword_args, common_parser, main_wrapper, resolve_root

RECIPE = "wmt14_en_fr"
RECIPES = {RECIPE: []}
CORPORA = [
    ("training-parallel-europarl-v7.tgz", "europarl-v7.fr-en"),
    ("training-parallel-commoncrawl.tgz", "commoncrawl.fr-en"),
    ("training-parallel-un.tgz", "undoc.2000.fr-en"),
    ("training-parallel-nc-v9.tgz", "news-commentary-v9.fr-en"),
    ("training-giga-fren.tar", "giga-fren.release2.fixed"),
]


def main(argv: Optional[List[str]] = None) -> None:
    p = common_parser(RECIPE, __doc__)
    p.add_argument("--valid", default="newstest2012,newstest2013", help="comma-separated dev sets")
    p.add_argument("--no-giga", action="store_true", help="leave out the 10^9 corpus (for a small machine)")
    add_subword_args(p, kind="bpe", vocab=32000)
    args = p.parse_args(argv)
    ws = Workspace(resolve_root(args, RECIPE, argv), args, RECIPE)
    corpora = CORPORA[:-1] if args.no_giga else CORPORA
    valid = args.valid.split(",")
    spec = Parallel(
        "en",
        "fr",
        {"train": " + ".join(p for _, p in corpora), "valid": "+".join(valid), "test": "newstest2014"},
        tokenize="moses",
        clean=(1, 250, 1.5),
    )
    run_pipeline(
        ws,
        spec,
        lambda out: write_wmt_raw(
            ws, out, corpora, "en", "fr", ["dev-wmt14.tgz"], valid, ["test-full.tgz"], {"test": "newstest2014"}
        ),
    )


if __name__ == "__main__":
    main_wrapper(RECIPE, lambda: main(sys.argv[1:]))
