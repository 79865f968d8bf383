#!/usr/bin/env python
"""cnn_dm: CNN/DailyMail summarization, non-anonymized, as See et al. (2017) prepared it
(the multiNN paper's "document summarization", Table 4).

* stories from ``cnn_stories.tgz`` and ``dailymail_stories.tgz`` (Cho's DMQA release),
  split by See et al.'s URL lists ``all_train.txt`` / ``all_val.txt`` / ``all_test.txt``
  (abisee/cnn-dailymail; a story's file name is the SHA1 of its URL):
  287,226 / 13,368 / 11,490 pairs;
* a story's lines before the first ``@highlight`` are the article, each line after an
  ``@highlight`` one summary sentence; a line without final punctuation gets " ." (See
  et al.'s fix_missing_period); stories with an empty article are skipped (as theirs);
* Moses tokenisation (See et al. used Stanford CoreNLP) and lowercasing (theirs too),
  the article cut to its first 400 tokens (their truncation), the summary sentences
  joined with `` <q> `` so ROUGE-Lsum can split them again;
* one joint BPE model of 32k merges (the paper's).

Scored with ROUGE-1/2/L (and Lsum) F1 on the tokenized lowercased text.
"""

import hashlib
import sys
import tarfile
from pathlib import Path
from typing import List, Optional, Tuple

from mixer_plugin.data.fetch import Download, fetch
from mixer_plugin.data.pipeline import Parallel, run_pipeline
from mixer_plugin.data.text import read_lines, write_lines
from mixer_plugin.data.tokenize import moses_tokenize
from mixer_plugin.data.workspace import (
    PrepError,
    Workspace,
    add_subword_args,
    common_parser,
    main_wrapper,
    resolve_root,
)

RECIPE = "cnn_dm"
RECIPES = {RECIPE: []}
DMQA = "(https://cs.nyu.edu/~kcho/DMQA/, the 'Stories' links)"
STORIES = [Download("cnn_stories.tgz", [], note=DMQA), Download("dailymail_stories.tgz", [], note=DMQA)]
URLS = "https://raw.githubusercontent.com/abisee/cnn-dailymail/master/url_lists"
LISTS = {"train": "all_train.txt", "valid": "all_val.txt", "test": "all_test.txt"}
END = (".", "!", "?", "...", "'", "`", '"', "\u2019", "\u201d", ")")
SEP = "<q>"


def split_story(text: str) -> Tuple[List[str], List[str]]:
    """(article lines, highlight lines) of a .story file."""
    article, highlights, next_is_highlight = [], [], False
    for line in (x.strip() for x in text.split("\n")):
        if not line:
            continue
        if line.startswith("@highlight"):
            next_is_highlight = True
            continue
        if not line.endswith(END):
            line += " ."  # fix_missing_period
        (highlights if next_is_highlight else article).append(line)
    return article, highlights


def write_raw(ws: Workspace, out: Path, lowercase: bool, workers: int, max_src: int) -> dict:
    stories = {}  # sha1 -> story text; one pass over each archive (a tar has no index)
    for dl in STORIES:
        with tarfile.open(fetch(dl, ws)) as tf:
            for m in tf:
                if m.isfile() and m.name.endswith(".story"):
                    stories[m.name.rsplit("/", 1)[-1][: -len(".story")]] = tf.extractfile(m).read().decode("utf-8")
    info = {}
    for split, listing in LISTS.items():
        urls = read_lines(fetch(Download(listing, [f"{URLS}/{listing}"]), ws))
        src, tgt, missing, empty = [], [], 0, 0
        for url in urls:
            key = hashlib.sha1(url.strip().encode()).hexdigest()
            if key not in stories:
                missing += 1
                continue
            article, highlights = split_story(stories[key])
            if not article:
                empty += 1
                continue
            src.append(" ".join(article))
            tgt.append(highlights)
        if missing:
            raise PrepError(
                f"{missing} of the {len(urls)} stories of {listing} are in neither archive "
                f"(incomplete cnn_stories.tgz / dailymail_stories.tgz?)"
            )
        src = [" ".join(s.split()[:max_src]) for s in moses_tokenize(src, "en", lowercase=lowercase, workers=workers)]
        flat = moses_tokenize([h for hs in tgt for h in hs], "en", lowercase=lowercase, workers=workers)
        joined, i = [], 0
        for hs in tgt:
            joined.append(f" {SEP} ".join(flat[i : i + len(hs)]))
            i += len(hs)
        write_lines(out / f"{split}.src", src)
        write_lines(out / f"{split}.tgt", joined)
        info[f"{split}_empty_articles_skipped"] = empty
    return info


def main(argv: Optional[List[str]] = None) -> None:
    p = common_parser(RECIPE, __doc__)
    p.add_argument("--max-source-tokens", type=int, default=400, help="article truncation [400, See et al.]")
    add_subword_args(p, kind="bpe", vocab=32000, lowercase=True)
    args = p.parse_args(argv)
    ws = Workspace(resolve_root(args, RECIPE, argv), args, RECIPE)
    spec = Parallel(
        "src",
        "tgt",
        {"train": "all_train", "valid": "all_val", "test": "all_test"},
        tokenize="pretokenized",
        extra={
            "sentence_separator": SEP,
            "max_source_tokens": args.max_source_tokens,
            "lowercase_at_raw": args.lowercase,
        },
    )
    # lowercasing and tokenisation happen while the stories are read (the separator must
    # not be tokenized); the tok step then only copies
    lowercase = args.lowercase
    run_pipeline(ws, spec, lambda out: write_raw(ws, out, lowercase, args.workers, args.max_source_tokens))


if __name__ == "__main__":
    main_wrapper(RECIPE, lambda: main(sys.argv[1:]))
