"""The recipes (mixer_plugin/recipes) over mixer_plugin.data: every recipe on a tiny archive laid out like the
real download, and the download / resume / failure rules (no network: ``--downloads``
with ``--offline``, and ``file://`` URLs for the download path itself).

The fixtures are built here from the bundled EN-DE corpus, in the member names and
formats of the real releases (WIT3 tgz with xml sets, statmt.org tgz with sgm sets,
Google's BPE tarball, the WMT17 preprocessed folder, sumdata, DMQA stories).
"""

import gzip
import hashlib
import importlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import E2E_REPO as REPO
from conftest import bundled_lines

from mixer_plugin.data.fetch import Download, fetch
from mixer_plugin.data.pipeline import Parallel, run_pipeline
from mixer_plugin.data.text import read_lines
from mixer_plugin.data.tokenize import clean_pairs, moses_detokenize, moses_tokenize
from mixer_plugin.data.workspace import PrepError, Workspace, common_parser
from mixer_plugin.recipes import asked

EN = bundled_lines("train", "en", 400)
DE = bundled_lines("train", "de", 400)
PAIRS = [(e, d) for e, d in zip(EN, DE) if 2 < len(e.split()) < 40 and 2 < len(d.split()) < 40]


def lines(text_lines):
    return ("\n".join(text_lines) + "\n").encode("utf-8")


def make_tar(path: Path, members: dict):
    """A .tgz / .tar with ``{member name: bytes}``."""
    mode = "w:gz" if str(path).endswith(("gz", "tgz")) else "w"
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def sgm(segs, lang, kind="srcset"):
    body = "".join(
        f'<seg id="{i + 1}">{s.replace("&", "&amp;").replace("<", "&lt;")}</seg>\n' for i, s in enumerate(segs)
    )
    doc = f'<doc docid="d" genre="news" origlang="{lang}">'
    return f'<{kind} setid="x" srclang="any">{doc}\n{body}</doc></{kind}>\n'.encode()


def run_recipe(name, *args, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "mixer_plugin.recipes", name, "--offline", "--workers", "1", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    if check and proc.returncode != 0:
        pytest.fail(f"{name} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}", pytrace=False)
    return proc


def manifest(root):
    return json.loads((root / "prep.json").read_text())


def nlines(path):
    return len(Path(path).read_text(encoding="utf-8").splitlines())


# ------------------------------------------------------------------ IWSLT (WIT3)
def wit3_archive(path, prefix, sets, n_train=120):
    de = [d for _, d in PAIRS[:n_train]]
    en = [e for e, _ in PAIRS[:n_train]]
    head = [
        "<url>http://www.ted.com/talks/x</url>",
        "<keywords>talks</keywords>",
        "<talkid>1</talkid>",
        "<title>Ein Titel</title>",
        "<description>Eine Beschreibung</description>",
    ]
    head_en = [
        "<url>http://www.ted.com/talks/x</url>",
        "<keywords>talks</keywords>",
        "<talkid>1</talkid>",
        "<title>A title</title>",
        "<description>A description</description>",
    ]
    members = {"de-en/train.tags.de-en.de": lines(head + de), "de-en/train.tags.de-en.en": lines(head_en + en)}
    for i, name in enumerate(sets):
        chunk = PAIRS[200 + 10 * i : 210 + 10 * i]
        members[f"de-en/{prefix}.{name}.de-en.de.xml"] = sgm([d for _, d in chunk], "de")
        members[f"de-en/{prefix}.{name}.de-en.en.xml"] = sgm([e for e, _ in chunk], "en", "refset")
    return make_tar(path, members)


def test_iwslt14_edunov_setup(tmp_path):
    dl = tmp_path / "dl"
    dl.mkdir()
    sets = ["TED.dev2010", "TEDX.dev2012", "TED.tst2010", "TED.tst2011", "TED.tst2012"]
    wit3_archive(dl / "de-en.tgz", "IWSLT14", sets)
    root = tmp_path / "out"
    run_recipe("iwslt14_de_en", "--downloads", dl, "--root", root, "--vocab", "200", "--no-binarize")
    m = manifest(root)
    # 2 title/description lines survive the tag filter (tags stripped), 120 + 2 pairs
    total = m["segments"]["train"] + m["segments"]["valid"]
    assert total == 122 - m.get("train_removed_by_length", 0)
    assert m["segments"]["valid"] == total // 23  # every 23rd pair
    assert m["segments"]["test"] == 50  # five sets of 10, concatenated
    train_en = (root / "tok" / "train.en").read_text().splitlines()
    assert not any("<url>" in s or "<title>" in s for s in train_en)
    assert all(s == s.lower() for s in train_en)  # lowercased
    assert "a title" in train_en or "a title" in (root / "tok" / "valid.en").read_text()
    assert (root / "subword" / "bpe-codes.joint").is_file()
    assert any("@@" in s for s in (root / "subword" / "train.de").read_text().splitlines())
    # references: raw text of the test sets and its tokenized, lowercased form
    assert nlines(root / "ref" / "test.en") == nlines(root / "ref" / "test.tok.en") == 50
    assert m["subword"] == "bpe" and m["lowercase"] is True
    # prepare-iwslt14.sh runs no normalize-punctuation.perl (it moves commas into quotes)
    assert json.loads((root / ".steps" / "tok.json").read_text())["options"]["normalize"] is False
    # the same command again skips every step (the length-cleaning options, a tuple, read
    # back from the step marker as a list and made every rerun of a cleaning recipe fail)
    again = run_recipe("iwslt14_de_en", "--downloads", dl, "--root", root, "--vocab", "200", "--no-binarize")
    assert again.stdout.count("done before, skipped") == 3


def test_iwslt16_truecase_sentencepiece(tmp_path):
    dl = tmp_path / "dl"
    dl.mkdir()
    wit3_archive(
        dl / "de-en-2016.tgz", "IWSLT16", ["TED.dev2010", "TEDX.dev2012"] + [f"TED.tst{y}" for y in range(2010, 2015)]
    )
    root = tmp_path / "out"
    run_recipe("iwslt16_de_en", "--downloads", dl, "--root", root, "--vocab", "300", "--no-binarize")
    m = manifest(root)
    assert m["segments"]["valid"] == 20 and m["segments"]["test"] == 50
    assert m["truecase"] and m["subword"] == "spm"
    assert (root / "tok" / "truecase-model.en").is_file()
    assert (root / "subword" / "spm.joint.model").is_file()
    assert "\u2581" in (root / "subword" / "train.en").read_text()


# -------------------------------------------------------------------- WMT
def test_wmt16_google_archive_binarized(tmp_path):
    dl = tmp_path / "dl"
    dl.mkdir()
    tr = PAIRS[:80]
    te = PAIRS[80:100]
    bpe = lambda s: " ".join(w[:3] + "@@ " + w[3:] if len(w) > 5 else w for w in s.split())  # noqa: E731
    members = {}
    for lang, i in (("en", 0), ("de", 1)):
        members[f"train.tok.clean.bpe.32000.{lang}"] = lines([bpe(p[i]) for p in tr])
        members[f"newstest2013.tok.bpe.32000.{lang}"] = lines([bpe(p[i]) for p in te[:10]])
        members[f"newstest2014.tok.bpe.32000.{lang}"] = lines([bpe(p[i]) for p in te[10:]])
        members[f"newstest2013.{lang}"] = lines([p[i] for p in te[:10]])
        members[f"newstest2014.{lang}"] = lines([p[i] for p in te[10:]])
        members[f"newstest2013.tok.{lang}"] = lines([p[i] for p in te[:10]])
        members[f"newstest2014.tok.{lang}"] = lines([p[i] for p in te[10:]])
    members["bpe.32000"] = b"#version: 0.2\nd e\n"
    make_tar(dl / "wmt16_en_de.tar.gz", members)
    root = tmp_path / "out"
    run_recipe("wmt16_en_de", "--downloads", dl, "--root", root)
    m = manifest(root)
    assert m["segments"] == {"train": 80, "valid": 10, "test": 10}
    assert (root / "bin" / "train.en-de.en.bin").is_file() and (root / "bin" / "dict.en.txt").is_file()
    # the archive's own references are kept as they are
    assert (root / "ref" / "test.de").read_text() == lines([p[1] for p in te[10:]]).decode()
    assert m["subword_model"]["de"] == "subword/bpe-codes.joint"
    # the variant takes Google's BPE as it is: other subword options are refused
    bad = run_recipe("wmt16_en_de", "--downloads", dl, "--root", tmp_path / "x", "--vocab", "100", check=False)
    assert bad.returncode == 2 and "--variant raw" in bad.stderr.strip().splitlines()[-1]


def wmt_corpus_tgz(path, pairs, folder, prefix, src, tgt):
    return make_tar(
        path,
        {
            f"{folder}{prefix}.{src}": lines([p[0] for p in pairs]),
            f"{folder}{prefix}.{tgt}": lines([p[1] for p in pairs]),
        },
    )


def test_wmt16_raw_from_statmt_archives(tmp_path):
    dl = tmp_path / "dl"
    dl.mkdir()
    wmt_corpus_tgz(dl / "training-parallel-europarl-v7.tgz", PAIRS[:40], "training/", "europarl-v7.de-en", "en", "de")
    wmt_corpus_tgz(dl / "training-parallel-commoncrawl.tgz", PAIRS[40:60], "", "commoncrawl.de-en", "en", "de")
    wmt_corpus_tgz(
        dl / "training-parallel-nc-v11.tgz",
        PAIRS[60:80],
        "training-parallel-nc-v11/",
        "news-commentary-v11.de-en",
        "en",
        "de",
    )
    v, t = PAIRS[80:90], PAIRS[90:102]
    make_tar(
        dl / "dev-wmt17.tgz",
        {
            "dev/newstest2013-src.en.sgm": sgm([p[0] for p in v], "en"),
            "dev/newstest2013-ref.de.sgm": sgm([p[1] for p in v], "de", "refset"),
            "dev/newstest2012-src.en.sgm": sgm([p[0] for p in v[:4]], "en"),
            "dev/newstest2012-ref.de.sgm": sgm([p[1] for p in v[:4]], "de", "refset"),
        },
    )
    make_tar(
        dl / "test-full.tgz",
        {
            "test-full/newstest2014-deen-src.en.sgm": sgm([p[0] for p in t], "en"),
            "test-full/newstest2014-deen-ref.de.sgm": sgm([p[1] for p in t], "de", "refset"),
        },
    )
    root = tmp_path / "out"
    run_recipe(
        "wmt16_en_de",
        "--variant",
        "raw",
        "--valid",
        "newstest2012,newstest2013",
        "--downloads",
        dl,
        "--root",
        root,
        "--vocab",
        "100",
        "--no-binarize",
    )
    m = manifest(root)
    assert m["segments"]["valid"] == 14 and m["segments"]["test"] == 12
    assert m["segments"]["train"] == 80 - m.get("train_removed_by_length", 0)
    assert (root / "ref" / "test.de").read_text().splitlines() == [p[1] for p in t]
    # Moses -a: hyphenated words are split with @-@ in the tokenized text
    tok = (root / "tok" / "train.de").read_text()
    assert " @-@ " in tok


def test_wmt14_en_fr_with_giga(tmp_path):
    dl = tmp_path / "dl"
    dl.mkdir()
    fr = [(e, d) for e, d in PAIRS]  # German text standing in for French: the layout is what is tested
    wmt_corpus_tgz(dl / "training-parallel-europarl-v7.tgz", fr[:20], "training/", "europarl-v7.fr-en", "en", "fr")
    wmt_corpus_tgz(dl / "training-parallel-commoncrawl.tgz", fr[20:30], "", "commoncrawl.fr-en", "en", "fr")
    wmt_corpus_tgz(dl / "training-parallel-un.tgz", fr[30:40], "un/", "undoc.2000.fr-en", "en", "fr")
    wmt_corpus_tgz(dl / "training-parallel-nc-v9.tgz", fr[40:50], "training/", "news-commentary-v9.fr-en", "en", "fr")
    make_tar(
        dl / "training-giga-fren.tar",
        {
            "giga-fren.release2.fixed.en.gz": gzip.compress(lines([p[0] for p in fr[50:60]])),
            "giga-fren.release2.fixed.fr.gz": gzip.compress(lines([p[1] for p in fr[50:60]])),
        },
    )
    make_tar(
        dl / "dev-wmt14.tgz",
        {
            f"dev/{n}-src.{lang}.sgm": sgm([p[i] for p in fr[60:66]], lang)
            for n in ("newstest2012", "newstest2013")
            for i, lang in ((0, "en"), (1, "fr"))
        },
    )
    make_tar(
        dl / "test-full.tgz",
        {
            "test-full/newstest2014-fren-src.en.sgm": sgm([p[0] for p in fr[70:78]], "en"),
            "test-full/newstest2014-fren-ref.fr.sgm": sgm([p[1] for p in fr[70:78]], "fr", "refset"),
        },
    )
    root = tmp_path / "out"
    run_recipe("wmt14_en_fr", "--downloads", dl, "--root", root, "--vocab", "100", "--no-binarize")
    m = manifest(root)
    assert m["segments"]["valid"] == 12 and m["segments"]["test"] == 8
    assert m["segments"]["train"] == 60 - m.get("train_removed_by_length", 0)


def test_wmt17_preprocessed_release(tmp_path):
    dl = tmp_path / "dl"
    dl.mkdir()
    tc = lambda s: s[:1].lower() + s[1:]  # noqa: E731  (a truecased-looking first word)
    for i, lang in ((0, "en"), (1, "de")):
        (dl / f"corpus.tc.{lang}.gz").write_bytes(gzip.compress(lines([tc(p[i]) for p in PAIRS[:60]])))
    make_tar(
        dl / "dev.tgz",
        {
            f"dev/{n}.tc.{lang}": lines([tc(p[i]) for p in PAIRS[a:b]])
            for n, a, b in (("newstest2016", 60, 70), ("newstest2017", 70, 82))
            for i, lang in ((0, "en"), (1, "de"))
        },
    )
    root = tmp_path / "out"
    run_recipe("wmt17_de_en", "--downloads", dl, "--root", root, "--vocab", "100", "--no-binarize")
    m = manifest(root)
    assert (m["src"], m["tgt"]) == ("de", "en")
    assert m["segments"] == {"train": 60, "valid": 10, "test": 12}
    assert m["truecased_input"] and m["splits"]["test"] == "newstest2017"
    # references: detruecased tokens and a detokenized reconstruction
    ref_tok = (root / "ref" / "test.tok.en").read_text().splitlines()
    assert ref_tok[0][:1].isupper()
    # a set the release does not have: one line naming what it has
    bad = run_recipe(
        "wmt17_de_en",
        "--downloads",
        dl,
        "--root",
        tmp_path / "x",
        "--test",
        "newstest2019",
        "--no-binarize",
        check=False,
    )
    last = bad.stderr.strip().splitlines()[-1]
    assert bad.returncode == 2 and "newstest2019.tc" in last and "newstest2016.tc" in last


def test_wmt17_test_set_from_wmt18_when_the_release_lacks_it(tmp_path):
    """WMT17's preprocessed dev.tgz predates newstest2017 (fetched as the default test set):
    the set comes from WMT18's dev.tgz of the pair, saved as dev-wmt18.tgz."""
    dl = tmp_path / "dl"
    dl.mkdir()
    for i, lang in ((0, "en"), (1, "de")):
        (dl / f"corpus.tc.{lang}.gz").write_bytes(gzip.compress(lines([p[i] for p in PAIRS[:60]])))
    make_tar(
        dl / "dev.tgz",
        {f"dev/newstest2016.tc.{lang}": lines([p[i] for p in PAIRS[60:70]]) for i, lang in ((0, "en"), (1, "de"))},
    )
    make_tar(
        dl / "dev-wmt18.tgz",
        {f"dev/newstest2017.tc.{lang}": lines([p[i] for p in PAIRS[70:82]]) for i, lang in ((0, "en"), (1, "de"))},
    )
    root = tmp_path / "out"
    run_recipe("wmt17_de_en", "--downloads", dl, "--root", root, "--vocab", "100", "--no-binarize")
    assert manifest(root)["segments"] == {"train": 60, "valid": 10, "test": 12}
    assert (root / "raw" / "test.de").read_text() == "".join(p[1] + "\n" for p in PAIRS[70:82])


def test_wmt17_ihead_en_cs_separate_vocab(tmp_path):
    dl = tmp_path / "dl"
    dl.mkdir()
    cs = PAIRS  # German text standing in for Czech
    wmt_corpus_tgz(dl / "training-parallel-europarl-v7.tgz", cs[:30], "training/", "europarl-v7.cs-en", "en", "cs")
    wmt_corpus_tgz(dl / "training-parallel-commoncrawl.tgz", cs[30:45], "", "commoncrawl.cs-en", "en", "cs")
    wmt_corpus_tgz(dl / "training-parallel-nc-v12.tgz", cs[45:60], "training/", "news-commentary-v12.cs-en", "en", "cs")
    dev = {
        "dev/newstest2013.en": lines([p[0] for p in cs[60:66]]),
        "dev/newstest2013.cs": lines([p[1] for p in cs[60:66]]),
        # 2014: one set for both directions; 2015-2016: per direction
        "dev/newstest2014-csen-src.cs.sgm": sgm([p[1] for p in cs[66:70]], "cs"),
        "dev/newstest2014-csen-ref.en.sgm": sgm([p[0] for p in cs[66:70]], "en", "refset"),
    }
    for y, a in ((2015, 70), (2016, 74)):
        dev[f"dev/newstest{y}-encs-src.en.sgm"] = sgm([p[0] for p in cs[a : a + 4]], "en")
        dev[f"dev/newstest{y}-encs-ref.cs.sgm"] = sgm([p[1] for p in cs[a : a + 4]], "cs", "refset")
    make_tar(dl / "dev-wmt17.tgz", dev)
    make_tar(
        dl / "test-wmt17.tgz",
        {
            "test/newstest2017-encs-src.en.sgm": sgm([p[0] for p in cs[78:83]], "en"),
            "test/newstest2017-encs-ref.cs.sgm": sgm([p[1] for p in cs[78:83]], "cs", "refset"),
        },
    )
    root = tmp_path / "out"
    run_recipe(
        "wmt17_en_cs", "--variant", "ihead", "--downloads", dl, "--root", root, "--vocab", "250", "--no-binarize"
    )
    m = manifest(root)
    assert m["segments"]["valid"] == 6
    assert [m["segments"][s] for s in ("test", "test1", "test2", "test3")] == [4, 4, 4, 5]
    assert m["splits"]["test3"] == "newstest2017"
    assert m["subword_model"] == {"en": "subword/spm.en.model", "cs": "subword/spm.cs.model"}  # separate (§4.1)
    assert m["truecase"]


# ---------------------------------------------------------------- summarization
def test_gigaword_sumdata_layout(tmp_path):
    dl = tmp_path / "dl"
    dl.mkdir()
    art = [e.lower() for e, _ in PAIRS[:50]]
    tit = [" ".join(e.lower().split()[:4]) for e, _ in PAIRS[:50]]
    tit[3] = ""  # the release has empty titles
    make_tar(
        dl / "summary.tar.gz",
        {
            "sumdata/train/train.article.txt.gz": gzip.compress(lines(art[:30])),
            "sumdata/train/train.title.txt.gz": gzip.compress(lines(tit[:30])),
            "sumdata/train/valid.article.filter.txt.gz": gzip.compress(lines(art[30:40])),
            "sumdata/train/valid.title.filter.txt.gz": gzip.compress(lines(tit[30:40])),
            "sumdata/Giga/input.txt": lines(art[40:50]),
            "sumdata/Giga/task1_ref0.txt": lines(tit[40:50]),
        },
    )
    root = tmp_path / "out"
    run_recipe("gigaword", "--downloads", dl, "--root", root, "--vocab", "100", "--valid-size", "5", "--no-binarize")
    m = manifest(root)
    assert m["segments"] == {"train": 29, "valid": 5, "test": 10}
    assert (root / "ref" / "test.tgt").read_text().splitlines() == tit[40:50]


def test_cnn_dm_stories_and_url_lists(tmp_path):
    dl = tmp_path / "dl"
    dl.mkdir()
    urls = {s: [f"http://www.cnn.com/{s}/{i}" for i in range(n)] for s, n in (("train", 6), ("val", 2), ("test", 3))}
    stories = {}
    for us in urls.values():
        for i, u in enumerate(us):
            body = " ".join(e for e, _ in PAIRS[i * 3 : i * 3 + 3])
            highlights = "@highlight\n\nFirst Point\n\n@highlight\n\nsecond point.\n"
            text = f"{body}\n\nSecond Paragraph without period\n\n{highlights}"
            stories[hashlib.sha1(u.encode()).hexdigest()] = text
    keys = sorted(stories)
    make_tar(dl / "cnn_stories.tgz", {f"cnn/stories/{k}.story": stories[k].encode() for k in keys[:6]})
    make_tar(dl / "dailymail_stories.tgz", {f"dailymail/stories/{k}.story": stories[k].encode() for k in keys[6:]})
    for s, us in urls.items():
        (dl / f"all_{s}.txt").write_text("\n".join(us) + "\n")
    root = tmp_path / "out"
    run_recipe(
        "cnn_dm", "--downloads", dl, "--root", root, "--vocab", "100", "--max-source-tokens", "20", "--no-binarize"
    )
    m = manifest(root)
    assert m["segments"] == {"train": 6, "valid": 2, "test": 3}
    tgt = (root / "ref" / "test.tgt").read_text().splitlines()
    assert tgt[0] == "first point . <q> second point ."  # missing period fixed, lowercased, joined
    src = (root / "tok" / "train.src").read_text().splitlines()
    assert all(len(s.split()) <= 20 for s in src)
    # a story missing from both archives stops the run with one line
    (dl / "all_test.txt").write_text("\n".join(urls["test"] + ["http://www.cnn.com/missing"]) + "\n")
    bad = run_recipe("cnn_dm", "--downloads", dl, "--root", tmp_path / "x", "--no-binarize", check=False)
    assert bad.returncode == 2 and "1 of the 4 stories of all_test.txt" in bad.stderr.strip().splitlines()[-1]


# --------------------------------------------------------------- shared Debian corpora
def small_corpus(tmp_path, names, n=(60, 10, 12)):
    corpus = tmp_path / "corpus"
    corpus.mkdir(parents=True)
    starts = {"train": 0, "valid": n[0], "test": n[0] + n[1]}
    for split, size in zip(("train", "valid", "test"), n):
        chunk = PAIRS[starts[split] : starts[split] + size]
        for name, i in names.items():
            (corpus / f"{split}.{name}").write_text(
                "".join((p[i] if isinstance(i, int) else i(p)) + "\n" for p in chunk)
            )
    return corpus


def test_debian_en_de_binarized(tmp_path):
    corpus = small_corpus(tmp_path, {"en": 0, "de": 1})
    root = tmp_path / "out"
    run_recipe("debian_en_de", "--corpus", corpus, "--root", root, "--vocab", "150")
    m = manifest(root)
    assert m["segments"] == {"train": 60, "valid": 10, "test": 12}
    assert (root / "bin" / "test.en-de.de.idx").is_file()
    assert (root / "ref" / "test.de").read_text() == (corpus / "test.de").read_text()


def test_a_carriage_return_inside_a_line_ends_no_line(tmp_path):
    """fairseq-preprocess reads with Python's universal newlines, where a lone \\r ends a
    line.  One inside a training sentence survived tokenization and subword-nmt's BPE, so
    the binarized English had one sentence more than the German and every later pair was
    shifted (sentencepiece happened to normalise it away)."""
    corpus = small_corpus(tmp_path, {"en": 0, "de": 1})
    lines = (corpus / "train.en").read_text().split("\n")
    lines[3] = lines[3].replace(" ", " \r", 1)
    (corpus / "train.en").write_bytes("\n".join(lines).encode())
    root = tmp_path / "out"
    run_recipe("debian_en_de", "--corpus", corpus, "--root", root, "--vocab", "150", "--subword", "bpe")
    log = (root / "preprocess.log").read_text()
    assert re.findall(r"subword/train\.(en|de): (\d+) sents", log) == [("en", "60"), ("de", "60")], log
    assert b"\r" not in (root / "subword" / "train.en").read_bytes()


def test_debian_sum_and_cls_layouts(tmp_path):
    corpus = small_corpus(tmp_path, {"src": 0, "tgt": lambda p: " ".join(p[0].split()[:3])})
    root = tmp_path / "sum"
    run_recipe("debian_sum", "--corpus", corpus, "--root", root, "--vocab", "120", "--no-binarize")
    assert manifest(root)["references"]["test"]["detok"] == "ref/test.tgt"
    cls = small_corpus(tmp_path / "c", {"input0": 0, "label": lambda p: "utils" if len(p[0]) % 2 else "libs"})
    root = tmp_path / "cls"
    run_recipe("debian_cls", "--corpus", cls, "--root", root, "--vocab", "120")
    for sub in ("input0", "label"):  # what --task sentence_prediction reads
        for f in ("dict.txt", "train.bin", "valid.idx", "test.bin"):
            assert (root / "bin" / sub / f).is_file(), (sub, f)
    labels = set((root / "bin" / "label" / "dict.txt").read_text().split()[::2])
    assert {x for x in labels if not x.startswith("madeupword")} == {"utils", "libs"}  # + fairseq's padding


def test_debian_cls_labels_must_pair_with_inputs(tmp_path):
    """The classification corpus is one-sided for the tokenizer (only the input is
    subworded) but its labels pair line by line with the inputs: a label file one line
    short shifted every later label onto the wrong input, and the recipe ran to the end."""
    cls = small_corpus(tmp_path, {"input0": 0, "label": lambda p: "utils" if len(p[0]) % 2 else "libs"})
    (cls / "train.label").write_text("".join((cls / "train.label").read_text().splitlines(True)[1:]))
    bad = run_recipe("debian_cls", "--corpus", cls, "--root", tmp_path / "cls", "--vocab", "120", check=False)
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.strip().splitlines()[-1] == (
        "mixer-prepare debian_cls: error: train: the sides have different line counts {'input0': 60, 'label': 59}"
    )
    assert not (tmp_path / "cls" / "prep.json").exists()


# ------------------------------------------------------ downloads, resume, failures
def test_download_verifies_then_renames(tmp_path):
    (tmp_path / "src").mkdir()
    good = make_tar(tmp_path / "src" / "a.tgz", {"x/a.txt": b"hello\n"})
    data = good.read_bytes()
    (tmp_path / "src" / "cut.tgz").write_bytes(data[: len(data) // 2])  # a truncated transfer
    args = common_parser("t", "").parse_args(["--root", str(tmp_path / "root")])
    ws = Workspace(tmp_path / "root", args, "t")
    path = fetch(Download("a.tgz", [good.as_uri()]), ws)
    assert path == ws.downloads / "a.tgz" and path.read_bytes() == data
    with pytest.raises(PrepError, match=r"download of cut.tgz failed .*corrupt or truncated.*nothing was kept"):
        fetch(Download("cut.tgz", [(tmp_path / "src" / "cut.tgz").as_uri()]), ws)
    assert sorted(p.name for p in ws.downloads.iterdir()) == ["a.tgz"]  # no .part, no cut.tgz
    with pytest.raises(PrepError, match="its sha256 is not"):
        fetch(Download("b.tgz", [good.as_uri()], sha256="0" * 64), ws)
    # a finished download that went bad is fetched again
    path.write_bytes(data[:100])
    assert fetch(Download("a.tgz", [good.as_uri()]), ws).read_bytes() == data


def test_partial_user_download_is_one_clear_line(tmp_path):
    dl = tmp_path / "dl"
    dl.mkdir()
    wit3_archive(dl / "full.tgz", "IWSLT14", ["TED.dev2010"])
    data = (dl / "full.tgz").read_bytes()
    (dl / "de-en.tgz").write_bytes(data[: len(data) * 2 // 3])
    root = tmp_path / "out"
    proc = run_recipe("iwslt14_de_en", "--downloads", dl, "--root", root, check=False)
    # one line; before it only the notice fairseq prints on import (fairseq.tasks.text_to_speech)
    err = [line for line in proc.stderr.strip().splitlines() if not line.startswith("INFO:fairseq.tasks")]
    assert proc.returncode == 2 and len(err) == 1, proc.stderr
    assert err[0].startswith("mixer-prepare iwslt14_de_en: error:") and "de-en.tgz" in err[0] and "truncated" in err[0]
    # nothing a rerun would trust: no raw data, no finished step
    assert not (root / "raw").exists() and not list((root / ".steps").iterdir())
    missing = run_recipe("iwslt14_de_en", "--root", tmp_path / "y", check=False)
    assert missing.returncode == 2 and "missing de-en.tgz: download it from" in missing.stderr


def test_steps_resume_and_refuse_mixed_options(tmp_path):
    corpus = small_corpus(tmp_path, {"en": 0, "de": 1})
    root = tmp_path / "out"
    run_recipe("debian_en_de", "--corpus", corpus, "--root", root, "--vocab", "150", "--no-binarize")
    before = (root / "subword" / "train.de").stat().st_mtime_ns
    again = run_recipe("debian_en_de", "--corpus", corpus, "--root", root, "--vocab", "150", "--no-binarize")
    assert again.stdout.count("done before, skipped") == 3
    assert (root / "subword" / "train.de").stat().st_mtime_ns == before
    other = run_recipe(
        "debian_en_de", "--corpus", corpus, "--root", root, "--vocab", "160", "--no-binarize", check=False
    )
    assert other.returncode == 2 and "step subword" in other.stderr and "--force" in other.stderr
    forced = run_recipe(
        "debian_en_de", "--corpus", corpus, "--root", root, "--vocab", "160", "--no-binarize", "--force"
    )
    assert "done before" not in forced.stdout
    # the other direction in the same root: it reused the raw step and wrote a manifest
    # whose references (ref/test.en) had never been written
    back = run_recipe(
        "debian_en_de",
        "--corpus",
        corpus,
        "--root",
        root,
        "--vocab",
        "160",
        "--no-binarize",
        "--src",
        "de",
        check=False,
    )
    assert back.returncode == 2 and "step raw" in back.stderr and "--force" in back.stderr
    # a step whose output is there but whose marker is not (killed in between) is redone
    (root / ".steps" / "subword.json").unlink()
    redone = run_recipe("debian_en_de", "--corpus", corpus, "--root", root, "--vocab", "160", "--no-binarize")
    assert "subword: done in" in redone.stdout and (root / ".steps" / "subword.json").is_file()


def said(proc):
    """What a failed command said on stderr, less fairseq's import chatter."""
    return [line for line in proc.stderr.strip().splitlines() if not line.startswith("INFO:fairseq.tasks")]


def test_the_printed_steps_run_one_by_one_make_what_the_recipe_makes(tmp_path):
    """``--print-steps`` prints one command a step; run in order they make the folder one
    ``mixer-prepare`` run makes (prep.json, bin/); a step before its predecessors is one line,
    and the fairseq-preprocess flags after ``--`` are the ones the binarize step runs."""
    corpus = small_corpus(tmp_path, {"en": 0, "de": 1})
    whole, stepwise = tmp_path / "whole", tmp_path / "steps"
    run_recipe("debian_en_de", "--corpus", corpus, "--root", whole, "--vocab", "150")
    printed = run_recipe("debian_en_de", "--corpus", corpus, "--root", stepwise, "--vocab", "150", "--print-steps")
    assert not stepwise.exists()  # printing touches nothing
    commands = [shlex.split(line) for line in printed.stdout.splitlines() if not line.startswith("#")]
    assert [c[c.index("--step") + 1] for c in commands] == ["raw", "tok", "subword", "binarize"]
    early = subprocess.run([sys.executable, *commands[1][1:]], capture_output=True, text=True, cwd=REPO)
    assert early.returncode == 2 and said(early) == [
        f"mixer-prepare debian_en_de: error: step raw is not done in {stepwise}: run --step raw first (--print-steps)"
    ]
    binarize = commands[-1]
    tail = binarize[binarize.index("--") + 1 :]
    assert tail[0] == "fairseq-preprocess" and "--joined-dictionary" in tail and "--destdir" not in tail
    for command in commands:
        assert command[:3] == ["python", "-m", "mixer_plugin.recipes"]
        subprocess.run([sys.executable, *command[1:]], check=True, capture_output=True, cwd=REPO)
    log = (stepwise / "preprocess.log").read_text().splitlines()[0]
    assert log.startswith(f"$ python -m fairseq_cli.preprocess {shlex.join(tail[1:])} --destdir ")
    assert manifest(stepwise)["segments"] == manifest(whole)["segments"]
    recorded = [asked("debian_en_de", shlex.split(manifest(r)["command"])[2:]) for r in (stepwise, whole)]
    assert recorded[0] == recorded[1] == ["--corpus", str(corpus), "--vocab", "150"]  # not which step ran
    for name in ("dict.en.txt", "test.en-de.de.idx", "train.en-de.en.bin"):
        assert (stepwise / "bin" / name).read_bytes() == (whole / "bin" / name).read_bytes(), name
    # the whole recipe afterwards finds every step done
    again = run_recipe("debian_en_de", "--corpus", corpus, "--root", stepwise, "--vocab", "150")
    assert again.stdout.count("done before, skipped") == 4


def test_the_binarize_step_takes_only_a_fairseq_preprocess_without_destdir(tmp_path):
    corpus = small_corpus(tmp_path, {"en": 0, "de": 1})
    root = tmp_path / "out"
    run_recipe("debian_en_de", "--corpus", corpus, "--root", root, "--vocab", "150", "--no-binarize")
    step = ["debian_en_de", "--corpus", corpus, "--root", root, "--vocab", "150", "--step", "binarize", "--"]
    for tail, expected in (
        (["fairseq-preprocess", "--source-lang", "en", "--destdir", "x"], "--destdir is the binarize step's own"),
        (["ls", "-l"], "takes a fairseq-preprocess command, not ls -l"),
    ):
        out = run_recipe(*step, *tail, check=False)
        assert out.returncode == 2 and len(said(out)) == 1 and expected in said(out)[0], out.stderr
        assert not (root / "bin").exists()
    wrong = run_recipe("debian_en_de", "--corpus", corpus, "--root", root, "--step", "tok", "--", "x", check=False)
    assert wrong.returncode == 2 and "--step binarize --" in wrong.stderr


def test_bundled_corpus_is_the_default_without_the_shared_folder(monkeypatch):
    """A fresh clone has no shared data folder beside it: debian_en_de must read the copy in
    data/debian-en-de (it looked for data/en-de, so the quickstart stopped at its first
    stage), per-source test scores included."""
    from mixer_plugin.data import debian

    seen = {}
    monkeypatch.setattr(debian, "SHARED_DATA", REPO / "no-shared-data")
    monkeypatch.setattr(debian, "run_pipeline", lambda ws, spec, write_raw: seen.update(spec=spec))
    importlib.import_module("mixer_plugin.recipes.debian_en_de").main(["--root", "/tmp/unused"])
    extra = seen["spec"].extra
    assert extra["corpus"] == str(REPO / "data" / "debian-en-de")
    sources = debian.test_sources(Path(extra["corpus"]), "en")
    assert len(sources) == 3147 and sources[0] == "ddtp" and sources[-1] == "handbook"
    with pytest.raises(SystemExit):  # the other Debian corpora are not bundled: one line naming --corpus
        importlib.import_module("mixer_plugin.recipes.debian_sum").main(["--root", "/tmp/unused"])


def test_moses_normalisation_is_an_option():
    line = ['Er sagte: „Das ist gut“, dann "nein".']
    assert moses_tokenize(line, "de", normalize=False) == ['Er sagte : „ Das ist gut “ , dann " nein " .']
    assert "„" not in moses_tokenize(line, "de")[0]  # normalize-punctuation.perl, as the WMT scripts


def test_a_damaged_gzip_is_one_line(tmp_path):
    """A damaged deflate stream raises zlib.error, which is not an OSError: it escaped as a
    traceback instead of the error that names the file."""
    import gzip
    import random
    import zlib

    rnd = random.Random(0)
    data = gzip.compress("".join(" ".join(rnd.choice(EN).split()[:5]) + "\n" for _ in range(3000)).encode())
    for offset in range(40, len(data) - 40):  # find a flip that breaks the stream itself, not just its CRC
        bad = bytearray(data)
        bad[offset : offset + 8] = bytes(8)
        try:
            gzip.decompress(bytes(bad))
        except zlib.error:
            break
        except Exception:  # noqa: BLE001  (a CRC or length error: not the case under test)
            continue
    else:
        pytest.skip("no byte flip gave zlib.error")
    path = tmp_path / "train.en.gz"
    path.write_bytes(bytes(bad))
    with pytest.raises(PrepError, match="train.en.gz"):
        read_lines(path)


def test_failed_step_leaves_no_output(tmp_path):
    args = common_parser("t", "").parse_args(["--root", str(tmp_path / "r")])
    args.subword, args.vocab, args.separate_vocab, args.lowercase, args.moses_escape, args.spm_type = (
        "bpe",
        10,
        False,
        False,
        False,
        "bpe",
    )
    ws = Workspace(tmp_path / "r", args, "t")
    spec = Parallel("en", "de", {"train": "t"})

    def write_raw(out):
        (out / "train.en").write_text("a\n")
        raise PrepError("reader failed half-way")

    with pytest.raises(PrepError, match="half-way"):
        run_pipeline(ws, spec, write_raw)
    assert not (tmp_path / "r" / "raw").exists() and not list((tmp_path / "r" / ".steps").iterdir())
    assert not [p for p in (tmp_path / "r").iterdir() if p.name.startswith(".raw")]


def test_moses_clean_rules():
    src = ["a b c", "a", "a b c d e f g", ""]
    tgt = ["x y z", "x y z", "x y", "x"]
    assert clean_pairs(src, tgt, 1, 5, 1.5) == [0]  # ratio 3, too long (7), empty side
    assert clean_pairs(src, tgt, 1, 80, 9.0) == [0, 1, 2]
    toks = moses_tokenize(["Hello-world, it's A&B now."], "en")
    assert toks == ["Hello @-@ world , it 's A & B now ."]
    assert moses_detokenize(toks, "en") == ["Hello-world, it's A & B now."]  # as detokenizer.perl


def test_postprocess_bpe_moses(tmp_path):
    root = tmp_path / "r"
    (root / "subword").mkdir(parents=True)
    (root / "ref").mkdir()
    (root / "ref" / "test.de").write_text("Hallo-Welt, gut.\nJa!\n")
    (root / "prep.json").write_text(
        json.dumps(
            {
                "tgt": "de",
                "subword": "bpe",
                "tokenize": "moses",
                "subword_model": {"de": "subword/bpe-codes.joint"},
                "segments": {"test": 2},
                "references": {"test": {"detok": "ref/test.de"}},
            }
        )
    )
    log = tmp_path / "gen.txt"
    log.write_text("S-1\tx\nH-1\t-0.5\tJa !\nH-0\t-0.1\tHal@@ lo @-@ Welt , g@@ ut .\nD-0\t-0.1\tignored\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "mixer_plugin.data.postprocess",
            str(log),
            "--prep",
            str(root / "prep.json"),
            "--out-dir",
            str(tmp_path / "o"),
        ],
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "o" / "hyp.tok").read_text() == "Hallo @-@ Welt , gut .\nJa !\n"
    assert (tmp_path / "o" / "hyp.txt").read_text() == "Hallo-Welt, gut.\nJa!\n"
    log.write_text("H-0\t-0.1\tJa\n")
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "mixer_plugin.data.postprocess",
            str(log),
            "--prep",
            str(root / "prep.json"),
            "--out-dir",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "1 hypotheses for 2 sentences" in bad.stderr


def test_a_killed_runs_temporary_folders_are_swept(tmp_path):
    """Every step writes into a hidden sibling (``.<name>.tmp<pid>``) renamed on success; a
    run killed mid-step left it behind for good (on WMT, gigabytes), --force included.  A
    new run removes those of processes that are gone, and leaves a live run's alone."""
    root = tmp_path / "root"
    (root / ".steps").mkdir(parents=True)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    (root / f".raw.tmp{gone}").mkdir()
    (root / f".raw.tmp{gone}" / "train.en").write_text("half\n")
    (root / ".steps" / f".tok.json.tmp{gone}").write_text("{")
    (root / f".tok.tmp{os.getpid()}").mkdir()  # a run still going
    (root / ".keep.tmpfile").write_text("not ours\n")
    for force in ([], ["--force"]):
        args = common_parser("t", "").parse_args(["--root", str(root), *force])
        Workspace(root, args, "t")
        assert sorted(p.name for p in root.iterdir() if p.name.startswith(".")) == [
            ".keep.tmpfile",
            ".steps",
            f".tok.tmp{os.getpid()}",
        ]
        assert not list((root / ".steps").iterdir())
