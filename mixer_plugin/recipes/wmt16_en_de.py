#!/usr/bin/env python
"""wmt16_en_de: WMT'16 English-German as Ott et al. (2018) used it (the multiNN paper's
WMT EN-DE, Table 1-3): 4.5M pairs, newstest2013 valid, newstest2014 test, joint BPE 32k.

Variants (``--variant``):

* ``google`` (default; exactly Ott et al.'s data): Google's preprocessed release
  ``wmt16_en_de.tar.gz`` (Moses-tokenized, cleaned, joint BPE of 32k merges), the
  archive fairseq's scaling_nmt README points to.  It lives on Google Drive, which asks
  for a confirmation the script cannot give: download it in a browser and pass its
  folder with ``--downloads``.  Binarized as fairseq's README does
  (``--joined-dictionary --nwordssrc 32768 --nwordstgt 32768``).
* ``raw``: the same corpora rebuilt from statmt.org (Europarl v7, Common Crawl, News
  Commentary v11), Moses normalisation + tokenisation (-a), clean-corpus-n 1.5 / 1-250,
  joint subword-nmt BPE 32k (or ``--subword spm``).  ``--valid newstest2012,newstest2013``
  gives the hard-retrieval paper's WMT14 En-De validation set (§4).

Scoring: tokenized BLEU with compound splitting against ``ref/test.tok.de`` (Ott et al.,
Vaswani et al.) and sacrebleu against the raw ``ref/test.de``.
"""

import sys
from pathlib import Path
from typing import List, Optional

from mixer_plugin.data.archives import find_member, member_lines, read_member
from mixer_plugin.data.fetch import Download, fetch
from mixer_plugin.data.pipeline import Parallel, run_pipeline
from mixer_plugin.data.text import write_lines
from mixer_plugin.data.wmt import write_wmt_raw
from mixer_plugin.data.workspace import (
    PrepError,
    Workspace,
    add_subword_args,
    common_parser,
    main_wrapper,
    resolve_root,
)

RECIPE = "wmt16_en_de"
RECIPES = {RECIPE: []}
GOOGLE = Download(
    "wmt16_en_de.tar.gz",
    ["https://drive.google.com/uc?export=download&id=0B_bZck-ksdkpM25jRUN2X2UxMm8"],
    note="(Google Drive: open the link in a browser, confirm, and save wmt16_en_de.tar.gz)",
)
RAW_CORPORA = [
    ("training-parallel-europarl-v7.tgz", "europarl-v7.de-en"),
    ("training-parallel-commoncrawl.tgz", "commoncrawl.de-en"),
    ("training-parallel-nc-v11.tgz", "news-commentary-v11.de-en"),
]


def google_raw(ws: Workspace, out: Path, src: str = "en", tgt: str = "de") -> dict:
    tar = fetch(GOOGLE, ws)
    files = {
        "train": "train.tok.clean.bpe.32000",
        "valid": "newstest2013.tok.bpe.32000",
        "test": "newstest2014.tok.bpe.32000",
    }
    for split, prefix in files.items():
        for lang in (src, tgt):
            write_lines(out / f"{split}.{lang}", member_lines(tar, find_member(tar, f"{prefix}.{lang}")))
    (out / "ref").mkdir()
    for split, name in (("valid", "newstest2013"), ("test", "newstest2014")):
        write_lines(out / "ref" / f"{split}.{tgt}", member_lines(tar, find_member(tar, f"{name}.{tgt}")))
        write_lines(out / "ref" / f"{split}.tok.{tgt}", member_lines(tar, find_member(tar, f"{name}.tok.{tgt}")))
    (out / "bpe-codes.joint").write_bytes(read_member(tar, find_member(tar, "bpe.32000")))
    return {}


def main(argv: Optional[List[str]] = None) -> None:
    p = common_parser(RECIPE, __doc__)
    p.add_argument("--variant", choices=("google", "raw"), default="google")
    p.add_argument("--valid", default="newstest2013", help="raw variant: comma-separated dev sets [newstest2013]")
    add_subword_args(p, kind="bpe", vocab=32000)
    args = p.parse_args(argv)
    ws = Workspace(resolve_root(args, RECIPE, argv), args, RECIPE)
    valid = args.valid.split(",")
    if args.variant == "google":
        if args.subword != "bpe" or args.vocab != 32000 or args.lowercase or args.valid != "newstest2013":
            raise PrepError(
                "--variant google is Google's BPE-32k data as it is: --subword/--vocab/--lowercase/"
                "--valid need --variant raw"
            )
        spec = Parallel(
            "en",
            "de",
            {"train": "train.tok.clean.bpe.32000", "valid": "newstest2013", "test": "newstest2014"},
            tokenize="pretokenized",
            presegmented=True,
            extra={"variant": "google", "moses_tokenized_input": True},
            # fairseq's scaling_nmt README: a joined dictionary capped at 32768 types
            preprocess_flags=["--nwordssrc", "32768", "--nwordstgt", "32768"],
        )
        run_pipeline(ws, spec, lambda out: google_raw(ws, out))
    else:
        spec = Parallel(
            "en",
            "de",
            {
                "train": "europarl-v7 + commoncrawl + news-commentary-v11",
                "valid": "+".join(valid),
                "test": "newstest2014",
            },
            tokenize="moses",
            clean=(1, 250, 1.5),
            extra={"variant": "raw"},
        )
        run_pipeline(
            ws,
            spec,
            lambda out: write_wmt_raw(
                ws, out, RAW_CORPORA, "en", "de", ["dev-wmt17.tgz"], valid, ["test-full.tgz"], {"test": "newstest2014"}
            ),
        )


if __name__ == "__main__":
    main_wrapper(RECIPE, lambda: main(sys.argv[1:]))
