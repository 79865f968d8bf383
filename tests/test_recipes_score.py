"""mixer-score (mixer_plugin/scoring/): every metric against hand-computed values on
tiny cases, the compound split, seeds (mean +- std), paired bootstrap, per-source
scores, and the command line (``mixer-score HYP REF --json OUT``) with its errors."""

import json
import lzma
import math
import subprocess
import sys
from pathlib import Path

import pytest

from mixer_plugin import scoring as score

REPO = Path(__file__).resolve().parents[1]


def write(path, lines):
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return str(path)


def run(tmp_path, hyp, ref, *extra):
    out = tmp_path / "s.json"
    score.main([write(tmp_path / "hyp.txt", hyp), write(tmp_path / "ref.txt", ref), "--json", str(out), *extra])
    return json.loads(out.read_text())


def test_bleu_hand_computed(tmp_path):
    # one segment, equal lengths (BP = 1): n-gram precisions 4/5, 3/4, 2/3, 1/2
    want = 100 * (0.8 * 0.75 * (2 / 3) * 0.5) ** 0.25  # 66.87
    s = run(
        tmp_path,
        ["a b c d e"],
        ["a b c d f"],
        "--metrics",
        "bleu",
        "--ref-tok",
        write(tmp_path / "r.tok", ["a b c d f"]),
        "--hyp-tok",
        write(tmp_path / "h.tok", ["a b c d e"]),
    )
    assert s["bleu"] == pytest.approx(want, abs=0.01)
    assert s["tok_bleu"] == pytest.approx(want, abs=0.01)
    assert s["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|")
    assert "tok:none|smooth:none" in s["tok_bleu_signature"]  # multi-bleu.perl


def test_compound_split_as_fairseq(tmp_path):
    # perl s///g semantics
    assert score.metrics.compound_split("a-b-c d-e -x") == "a ##AT##-##AT## b-c d ##AT##-##AT## e -x"
    hyp, ref = ["p q x-y z"], ["p q x-y w"]
    args = (
        "--metrics",
        "bleu",
        "--ref-tok",
        write(tmp_path / "r.tok", ref),
        "--hyp-tok",
        write(tmp_path / "h.tok", hyp),
    )
    assert run(tmp_path, hyp, ref, *args)["tok_bleu"] == 0.0  # no 4-gram match, no smoothing
    split = run(tmp_path, hyp, ref, *args, "--compound-split")
    # split: p q x ##AT##-##AT## y z vs ... w: precisions 5/6, 4/5, 3/4, 2/3
    assert split["tok_bleu"] == pytest.approx(100 * (5 / 6 * 4 / 5 * 3 / 4 * 2 / 3) ** 0.25, abs=0.01)
    assert split["tok_bleu_signature"].endswith("|compound-split")


def test_chrf_ter_wer(tmp_path):
    s = run(tmp_path, ["a b c d", "d"], ["a b c e", "d e"], "--metrics", "chrf,ter,wer")
    # TER: 1 substitution + 1 deletion over 6 reference words
    assert s["ter"] == pytest.approx(100 * 2 / 6, abs=0.01)
    # WER, corpus level: (1 substitution + 1 deletion) / 6 reference words
    assert s["wer"] == pytest.approx(100 * 2 / 6, abs=0.01)
    assert run(tmp_path, ["the same line"], ["the same line"], "--metrics", "chrf")["chrf"] == 100.0
    w = run(tmp_path, ["a b c d"], ["a x c"], "--metrics", "wer")  # substitution + insertion over 3
    assert w["wer"] == pytest.approx(100 * 2 / 3, abs=0.01)


def test_rouge_hand_computed(tmp_path):
    s = run(tmp_path, ["the cat on the mat"], ["the cat sat on the mat"], "--metrics", "rouge")
    f = lambda p, r: 2 * p * r / (p + r)  # noqa: E731
    assert s["rouge1"] == pytest.approx(100 * f(1.0, 5 / 6), abs=0.01)  # 5 of 5 / 5 of 6 unigrams
    assert s["rouge2"] == pytest.approx(100 * f(3 / 4, 3 / 5), abs=0.01)  # the cat, on the, the mat
    assert s["rougeL"] == pytest.approx(100 * f(1.0, 5 / 6), abs=0.01)  # LCS 5
    # Lsum splits on the separator (sentence-level LCS union); the separator is no word
    two = run(tmp_path, ["c d <q> a b"], ["a b <q> c d"], "--metrics", "rouge", "--rouge-sent-sep", "<q>")
    assert two["rougeL"] == pytest.approx(50.0) and two["rougeLsum"] == pytest.approx(100.0)
    assert two["rouge1"] == pytest.approx(100.0)


def test_seeds_mean_std(tmp_path):
    ref = write(tmp_path / "ref.txt", ["a b c d f"])
    h1 = write(tmp_path / "h1.txt", ["a b c d f"])
    h2 = write(tmp_path / "h2.txt", ["a b c d e"])
    out = tmp_path / "s.json"
    score.main([h1, ref, "--metrics", "bleu", "--seed-hyps", h2, "--json", str(out)])
    s = json.loads(out.read_text())
    b2 = 100 * 0.2**0.25
    assert s["seeds"]["bleu"]["values"] == [100.0, pytest.approx(b2, abs=0.01)]
    assert s["bleu"] == pytest.approx((100 + b2) / 2, abs=0.01)
    assert s["seeds"]["bleu"]["std"] == pytest.approx(abs(100 - b2) / math.sqrt(2), abs=0.01)


def test_paired_bootstrap(tmp_path):
    ref = [f"sentence number {i} is about topic {i % 7} today" for i in range(40)]
    good = list(ref)
    bad = [" ".join(r.split()[:4]) for r in ref]
    s = run(
        tmp_path,
        good,
        ref,
        "--metrics",
        "bleu,chrf",
        "--baseline",
        write(tmp_path / "b.txt", bad),
        "--bootstrap",
        "200",
    )
    assert s["bootstrap"]["bleu"]["p_value"] < 0.05 and s["bootstrap"]["chrf"]["p_value"] < 0.05
    assert s["bootstrap"]["bleu"]["system"] > s["bootstrap"]["bleu"]["baseline"]
    assert "bs:200" in s["bootstrap"]["bleu"]["signature"]
    # two systems that differ by one sentence each: no significant difference
    one = list(ref)
    one[0] = "something else entirely"
    other = list(ref)
    other[1] = "something else entirely"
    same = run(
        tmp_path, one, ref, "--metrics", "bleu", "--baseline", write(tmp_path / "b.txt", other), "--bootstrap", "200"
    )
    assert same["bootstrap"]["bleu"]["p_value"] > 0.2


def test_per_source_scores(tmp_path):
    ref = ["der hund bellt laut", "die katze schläft", "ein vogel singt", "das auto fährt schnell"]
    hyp = ["der hund bellt laut", "die katze schläft", "ein fisch schwimmt", "das boot fährt"]
    s = run(
        tmp_path, hyp, ref, "--metrics", "bleu,chrf", "--sources", write(tmp_path / "src.txt", ["a", "a", "b", "b"])
    )
    assert s["by_source"]["a"] == {"lines": 2, "bleu": pytest.approx(100.0), "chrf": pytest.approx(100.0)}
    assert s["by_source"]["b"]["lines"] == 2 and s["by_source"]["b"]["bleu"] < 50
    with pytest.raises(SystemExit):
        run(tmp_path, hyp, ref, "--sources", write(tmp_path / "short.txt", ["a"]))


def test_command_line_and_errors(tmp_path):
    hyp = write(tmp_path / "hyp.txt", ["Das ist gut.", "Ja"])
    ref = write(tmp_path / "ref.txt", ["Das ist gut.", "Nein"])
    out = tmp_path / "o.json"
    proc = subprocess.run(
        [sys.executable, "-m", "mixer_plugin.scoring", hyp, ref, "--json", str(out)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    s = json.loads(out.read_text())
    for key in ("bleu", "chrf", "bleu_signature", "chrf_signature", "bleu_detail", "lines"):
        assert key in s
    assert "BLEU = " in proc.stdout and "chrF2 = " in proc.stdout
    for argv, msg in (
        ([hyp, write(tmp_path / "r3.txt", ["a", "b", "c"])], "line counts differ"),
        ([hyp, ref, "--metrics", "bleu,meteor"], "unknown metric 'meteor'"),
        ([hyp, ref, "--compound-split"], "--compound-split applies to tokenized BLEU"),
        ([hyp, str(tmp_path / "nope.txt")], "reference file not found"),
    ):
        bad = subprocess.run([sys.executable, "-m", "mixer_plugin.scoring", *argv], capture_output=True, text=True)
        # one line; before it only the notice fairseq prints on import, as every fairseq tool
        # does (fairseq.tasks.text_to_speech configures logging at import)
        err = [line for line in bad.stderr.strip().splitlines() if not line.startswith("INFO:fairseq.tasks")]
        assert bad.returncode == 2 and len(err) == 1 and err[0].startswith("mixer-score: error:") and msg in err[0], (
            bad.stderr
        )


def test_rouge_paired_bootstrap(tmp_path):
    ref = [f"package {i} provides tools for topic {i % 7}" for i in range(40)]
    bad = [" ".join(r.split()[:2]) for r in ref]
    s = run(
        tmp_path, ref, ref, "--metrics", "rouge", "--baseline", write(tmp_path / "b.txt", bad), "--bootstrap", "200"
    )
    assert set(s["bootstrap"]) == {"rouge1", "rouge2", "rougeL"}
    assert s["bootstrap"]["rouge1"]["system"] == 100.0 and s["bootstrap"]["rouge1"]["p_value"] < 0.05
    one, other = list(ref), list(ref)
    one[0] = other[1] = "something else"
    same = run(
        tmp_path, one, ref, "--metrics", "rouge", "--baseline", write(tmp_path / "b.txt", other), "--bootstrap", "200"
    )
    assert same["bootstrap"]["rouge1"]["p_value"] > 0.2


def test_the_library_functions_agree_with_the_command_line(tmp_path):
    """``score()`` and ``bootstrap()`` over lists of lines are what the command line
    prints; the results tables call them directly, so a bad input is an exception the
    runner reports, not the command line's ``sys.exit(2)`` inside a results write."""
    refs = ["the cat sat on the mat", "a dog ran in the park", "birds sing at dawn", "it rains today"]
    hyps = ["the cat sat on a mat", "a dog ran in a park", "birds sing at noon", "it rains"]
    base = ["a cat sat", "the dog runs", "birds sing", "rain today"]
    cli = run(
        tmp_path,
        hyps,
        refs,
        "--metrics",
        "bleu,chrf,rouge",
        "--baseline",
        write(tmp_path / "base.txt", base),
        "--bootstrap",
        "100",
    )
    options = score.Options(samples=100)
    mine = score.score(hyps, refs, ["bleu", "chrf", "rouge"], options=options)
    assert {k: round(v, 2) for k, v in mine.items() if isinstance(v, float)} == {
        k: v for k, v in cli.items() if k in mine and isinstance(v, float)
    }
    assert score.bootstrap(hyps, base, refs, ["bleu", "chrf", "rouge"], options=options) == cli["bootstrap"]
    with pytest.raises(score.ScoreError, match="line counts differ: 3 hypotheses, 4 baseline, 4 references"):
        score.bootstrap(hyps[:3], base, refs, ["bleu"])
    with pytest.raises(score.ScoreError, match="unknown metric 'blue'"):
        score.score(hyps, refs, ["blue"])


def test_pooled_gap_on_the_command_line(tmp_path):
    """``--pooled``: the gap between the seed means and its p, each row's seeds named by
    --seed-hyps and --baseline-seed-hyps; the console script exits 0 (it exited 1, printing
    the scores' dict, because its function returned them)."""
    from mixer_plugin.scoring import cli

    ref = [f"das paket {i} ist gut und läuft" for i in range(30)]
    sys_a = write(tmp_path / "a1.txt", ref)
    sys_b = write(tmp_path / "a2.txt", [r.replace("gut", "schlecht") for r in ref])
    base = [write(tmp_path / f"b{i}.txt", [r.replace("läuft", "x") for r in ref]) for i in (1, 2)]
    s = run(
        tmp_path, ref, ref, "--seed-hyps", sys_b, "--baseline", base[0], "--baseline-seed-hyps", base[1], "--pooled"
    )
    pooled = s["pooled"]["bleu"]
    assert len(pooled["system"]) == 2 and len(pooled["baseline"]) == 2
    assert pooled["delta"] == pytest.approx(s["bleu"] - s["bootstrap"]["bleu"]["baseline"], abs=0.01)
    with pytest.raises(SystemExit):  # --pooled without a baseline: one line, exit 2
        score.main([sys_a, write(tmp_path / "ref.txt", ref), "--pooled"])
    assert cli([sys_a, str(tmp_path / "ref.txt")]) is None


def test_kept_hypotheses_are_read_through_xz(tmp_path):
    """A committed run keeps its hypotheses as hyp.txt.xz (experiments/archive.py): mixer-score
    reads them as the text they hold, and a damaged file is one line naming it."""
    lines = ["das ist ein Test", "zweite Zeile \u2028 mit Trenner", ""]
    plain, packed = tmp_path / "hyp.txt", tmp_path / "hyp.txt.xz"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    packed.write_bytes(lzma.compress(plain.read_bytes()))
    assert score.read_lines(packed, "hypothesis") == score.read_lines(plain, "hypothesis") == lines
    packed.write_bytes(b"not xz")
    with pytest.raises(score.ScoreError, match="not a valid xz file: .*hyp.txt.xz"):
        score.read_lines(packed, "hypothesis")
