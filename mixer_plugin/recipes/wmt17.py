#!/usr/bin/env python
"""wmt17_<src>_<tgt>: the WMT'17 news translation pairs (de, fi, lv, ru, tr, cs, zh <-> en).

    python -m mixer_plugin.recipes.wmt17 --src en --tgt de [--variant preprocessed|ihead]
    mixer-prepare wmt17_en_de                      # the same, by recipe name

Variants:

* ``preprocessed`` (default; the hard-retrieval paper, Table 5): the organisers'
  preprocessed data (data.statmt.org/wmt17/translation-task/preprocessed/<x>-en/:
  ``corpus.tc.<l>.gz``, Moses-tokenized and truecased, and ``dev.tgz`` with the dev sets
  processed the same way).  Valid ``--valid`` [newstest2016; newsdev2017 for lv and zh],
  test ``--test`` [newstest2017].  WMT17's ``dev.tgz`` was packed before newstest2017 was
  released; a set it lacks is taken from WMT18's preprocessed ``dev.tgz`` of the pair
  (saved as ``dev-wmt18.tgz``; the same Moses pipeline, truecased with WMT18's model),
  which carries newstest2017 for every WMT18 pair (cs, de, fi, ru, tr, zh).  Joint BPE (``--vocab``, 32k; the paper's
  merge count was lost from our copy).  Scored with tokenized case-sensitive BLEU on the
  detruecased tokens, as the paper does.  The raw reference in ``ref/`` is rebuilt by
  detruecasing and detokenizing the release's text (there is no raw copy in it).
* ``ihead`` (the interacting-head paper's WMT17 EN-DE and EN-CS, Tables 4-5, §4.1):
  the raw WMT17 corpora (EN-DE: Europarl v7, Common Crawl, News Commentary v12, Rapid
  2016: 5.85M pairs; EN-CS: the same without Rapid and CzEng, the paper's 1M pairs),
  Moses tokenisation, pairs longer than 100 (EN-DE) / 80 (EN-CS) tokens dropped,
  truecasing, sentencepiece BPE: one shared 80k vocabulary for EN-DE, one model per
  language for EN-CS (size not given; 40k each here).  Valid newstest2013, tests
  newstest2014, 2015, 2016, 2017 (fairseq splits test, test1, test2, test3).
"""

import sys
from pathlib import Path
from typing import List, Optional

from mixer_plugin.data.archives import archive_names, member_lines
from mixer_plugin.data.fetch import Download, fetch
from mixer_plugin.data.pipeline import Parallel, run_pipeline
from mixer_plugin.data.text import read_lines, write_lines
from mixer_plugin.data.tokenize import detruecase, moses_detokenize
from mixer_plugin.data.wmt import write_wmt_raw
from mixer_plugin.data.workspace import (
    PrepError,
    Workspace,
    add_subword_args,
    common_parser,
    main_wrapper,
    resolve_root,
)

LANGS = ("de", "fi", "lv", "ru", "tr", "cs", "zh")
RECIPES = {f"wmt17_{s}_{t}": ["--src", s, "--tgt", t] for x in LANGS for s, t in (("en", x), (x, "en"))}
PRE = "http://data.statmt.org/wmt17/translation-task/preprocessed"
PRE18 = "http://data.statmt.org/wmt18/translation-task/preprocessed"
WMT18_PAIRS = ("cs", "de", "fi", "ru", "tr", "zh")  # x-en pairs of WMT18's preprocessed release
IHEAD_CORPORA = {
    "de": [
        ("training-parallel-europarl-v7.tgz", "europarl-v7.de-en"),
        ("training-parallel-commoncrawl.tgz", "commoncrawl.de-en"),
        ("training-parallel-nc-v12.tgz", "news-commentary-v12.de-en"),
        ("rapid2016.tgz", "rapid2016.de-en"),
    ],
    "cs": [
        ("training-parallel-europarl-v7.tgz", "europarl-v7.cs-en"),
        ("training-parallel-commoncrawl.tgz", "commoncrawl.cs-en"),
        ("training-parallel-nc-v12.tgz", "news-commentary-v12.cs-en"),
    ],
}
IHEAD_MAX_LEN = {"de": 100, "cs": 80}


def preprocessed_raw(ws: Workspace, out: Path, src: str, tgt: str, valid: str, test: str) -> dict:
    x = src if tgt == "en" else tgt
    pair = f"{x}-en"
    corpus = {
        lang: fetch(
            Download(f"corpus.tc.{lang}.gz", [f"{PRE}/{pair}/corpus.tc.{lang}.gz"], note=f"(from {PRE}/{pair}/)"), ws
        )
        for lang in (src, tgt)
    }
    dev = fetch(Download("dev.tgz", [f"{PRE}/{pair}/dev.tgz"], note=f"(from {PRE}/{pair}/)"), ws)
    for lang in (src, tgt):
        write_lines(out / f"train.{lang}", read_lines(corpus[lang]))
    names = {n.rsplit("/", 1)[-1]: (dev, n) for n in archive_names(dev)}
    wanted = [f"{name}.tc.{lang}" for name in (valid, test) for lang in (src, tgt)]
    if (
        x in WMT18_PAIRS
        and any(w not in names and w.startswith("newstest2017.") for w in wanted)
        and not any((Path(d) / w).is_file() for d in ws.user_downloads for w in wanted)
    ):
        dev18 = fetch(
            Download(
                "dev-wmt18.tgz",
                [f"{PRE18}/{pair}/dev.tgz"],
                note=f"(WMT18's {PRE18}/{pair}/dev.tgz, saved as dev-wmt18.tgz)",
            ),
            ws,
        )
        names = {**{n.rsplit("/", 1)[-1]: (dev18, n) for n in archive_names(dev18)}, **names}
    (out / "ref").mkdir()
    for split, name in (("valid", valid), ("test", test)):
        for lang in (src, tgt):
            if f"{name}.tc.{lang}" in names:
                lines = member_lines(*names[f"{name}.tc.{lang}"])
            else:
                own = [
                    Path(d) / f"{name}.tc.{lang}"
                    for d in ws.user_downloads
                    if (Path(d) / f"{name}.tc.{lang}").is_file()
                ]
                if not own:
                    have = sorted(n for n in names if ".tc." in n)
                    raise PrepError(
                        f"{dev} has no {name}.tc.{lang} (it has {have[:10]}); choose --valid/--test "
                        f"from those, or put {name}.tc.{lang} (tokenized + truecased like the release) "
                        f"in a --downloads folder"
                    )
                lines = read_lines(own[0])
            write_lines(out / f"{split}.{lang}", lines)
    return {"pair_folder": f"{PRE}/{pair}/"}


def main(argv: Optional[List[str]] = None) -> None:
    p = common_parser("wmt17", __doc__)
    p.add_argument("--src", required=True, choices=("en",) + LANGS)
    p.add_argument("--tgt", required=True, choices=("en",) + LANGS)
    p.add_argument("--variant", choices=("preprocessed", "ihead"), default="preprocessed")
    p.add_argument("--valid", help="preprocessed: dev set [newstest2016; newsdev2017 for lv, zh]")
    p.add_argument("--test", default="newstest2017", help="preprocessed: test set [newstest2017]")
    args, _ = p.parse_known_args(argv)
    x = args.src if args.tgt == "en" else args.tgt
    if "en" not in (args.src, args.tgt) or args.src == args.tgt:
        p.error("one side must be en and the other one of " + ", ".join(LANGS))
    ihead = args.variant == "ihead"
    if ihead and x not in IHEAD_CORPORA:
        p.error(f"--variant ihead covers en-de and en-cs (the interacting-head paper), not {x}")
    if ihead:
        add_subword_args(p, kind="spm", vocab=80000 if x == "de" else 40000, joint=(x == "de"), spm_type="bpe")
    else:
        add_subword_args(p, kind="bpe", vocab=32000)
    args = p.parse_args(argv)
    recipe = f"wmt17_{args.src}_{args.tgt}"
    fixed = ["--src", args.src, "--tgt", args.tgt]
    ws = Workspace(resolve_root(args, recipe, argv, fixed), args, recipe, fixed)
    if ihead:
        tests = {"test": "newstest2014", "test1": "newstest2015", "test2": "newstest2016", "test3": "newstest2017"}
        spec = Parallel(
            args.src,
            args.tgt,
            {"train": " + ".join(c for _, c in IHEAD_CORPORA[x]), "valid": "newstest2013", **tests},
            tokenize="moses",
            clean=(1, IHEAD_MAX_LEN[x], 9.0),
            truecase=True,
            extra={"variant": "ihead"},
        )
        run_pipeline(
            ws,
            spec,
            lambda out: write_wmt_raw(
                ws,
                out,
                IHEAD_CORPORA[x],
                args.src,
                args.tgt,
                ["dev-wmt17.tgz"],
                ["newstest2013"],
                ["dev-wmt17.tgz", "test-wmt17.tgz"],
                tests,
            ),
        )
        return
    valid = args.valid or ("newsdev2017" if x in ("lv", "zh") else "newstest2016")
    spec = Parallel(
        args.src,
        args.tgt,
        {"train": "corpus.tc", "valid": valid, "test": args.test},
        tokenize="pretokenized",
        extra={"variant": "preprocessed", "truecased_input": True, "moses_tokenized_input": True},
    )

    def write_raw(out: Path) -> dict:
        info = preprocessed_raw(ws, out, args.src, args.tgt, valid, args.test)
        for split in ("valid", "test"):
            tok = detruecase(read_lines(out / f"{split}.{args.tgt}"))
            write_lines(out / "ref" / f"{split}.tok.{args.tgt}", tok)
            write_lines(out / "ref" / f"{split}.{args.tgt}", moses_detokenize(tok, args.tgt))
        return info

    run_pipeline(ws, spec, write_raw)


if __name__ == "__main__":
    main_wrapper("wmt17", lambda: main(sys.argv[1:]))
