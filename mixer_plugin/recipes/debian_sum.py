#!/usr/bin/env python
"""debian_sum: the Debian headline-generation corpus (sum-en) of the shared data folder.

Source: a package's long description (54 words on average, up to ~400); target: its
one-line synopsis (6.6 words).  57k / 1.3k / 1.9k pairs; see ``shared/data/README.md``.
Read from ``--corpus`` (``{train,valid,test}.{src,tgt}``); nothing to download.

Default setup: raw text, one joint sentencepiece unigram model of 8k pieces (the CPU
size of this repo), fairseq-preprocess --joined-dictionary; scored with ROUGE.
"""

import sys
from typing import List, Optional

from mixer_plugin.data.debian import shared_corpus_main
from mixer_plugin.data.workspace import main_wrapper

RECIPE = "debian_sum"
RECIPES = {RECIPE: []}


def main(argv: Optional[List[str]] = None) -> None:
    shared_corpus_main(RECIPE, __doc__, argv, "sum-en", ("src", "tgt"))


if __name__ == "__main__":
    main_wrapper(RECIPE, lambda: main(sys.argv[1:]))
