#!/usr/bin/env python
"""debian_en_de: the Debian EN->DE corpus (~105k pairs) of the shared data folder.

Human translations from Debian's archive (package descriptions, LibreOffice, GIMP,
GNOME help, the Debian Reference and Handbook); see ``shared/data/README.md``.  There
is nothing to download: the corpus is read from ``--corpus`` (default: the shared
folder beside the checkout).  It was built from Debian bookworm packages with apt;
a copy from another build works the same as long as it has the same layout:
``{train,valid,test}.{en,de}``, aligned line by line.

Default setup (the shared README's CPU baseline): raw text, one joint sentencepiece
unigram model of 8k pieces, fairseq-preprocess --joined-dictionary.
"""

import sys
from typing import List, Optional

from mixer_plugin.data.debian import shared_corpus_main
from mixer_plugin.data.workspace import main_wrapper

RECIPE = "debian_en_de"
RECIPES = {RECIPE: []}  # recipe name -> fixed arguments of this script


def main(argv: Optional[List[str]] = None) -> None:
    shared_corpus_main(
        RECIPE,
        __doc__,
        argv,
        "en-de",
        ("en", "de"),
        bundled="debian-en-de",
        extra_args=lambda p: p.add_argument("--src", default="en", choices=("en", "de")),
        direction=lambda a: (a.src, "de" if a.src == "en" else "en"),
    )


if __name__ == "__main__":
    main_wrapper(RECIPE, lambda: main(sys.argv[1:]))
