"""The claims rule (mixer_plugin/experiments/claims.py): pure functions, so every case is
a line of numbers.  How a verdict is shown in a results table is tested with the report
(tests/test_experiments.py)."""

import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from mixer_plugin.experiments.claims import (
    ALPHA,
    EQUAL_MARGIN,
    MIN_SEEDS,
    SeedTest,
    choose_in_order,
    claim_metric,
    gap_change_test,
    judge,
    seed_test,
    seeds_margin,
    task_of,
    verdict,
    wants_more_seeds,
)

RESULTS = Path(__file__).resolve().parents[1] / "results"


VERDICTS = [  # relation, this row minus the other, p, p of equivalence -> verdict
    (">", 1.5, 0.01, 1.0, "confirmed"),
    (">", -1.5, 0.01, 1.0, "refuted"),
    (">", 1.5, 0.2, 1.0, "inconclusive"),
    ("<", -0.8, 0.001, 1.0, "confirmed"),
    ("<", 0.8, 0.001, 1.0, "refuted"),
    ("~", 0.1, 0.6, 0.01, "confirmed"),  # equivalent within the margin
    ("~", 0.3, 0.4, 0.2, "inconclusive"),  # not different, and not shown equal: absence of evidence
    ("~", -1.2, 0.01, 0.7, "refuted"),
    ("~", 0.4, 0.01, 0.02, "confirmed"),  # different, but by less than the margin: equal as claimed
]


@pytest.mark.parametrize("relation,delta,p,p_equal,expected", VERDICTS)
def test_claim_verdicts(relation, delta, p, p_equal, expected):
    assert verdict(relation, delta, SeedTest(delta, 0.3, 4.0, p, p_equal)) == expected


def test_too_few_seeds_is_an_indication_and_another_task_no_claim():
    """The first amendment's case: a row at 25.72 (one seed) against the transformer's three
    (26.34, 25.82, 25.67).  One seed has no seed variance, so no test: an indication."""
    j = judge(">", [25.72], [26.34, 25.82, 25.67], 0.2, 0.006)
    assert j.verdict == "indication" and j.test is None and j.seeds == (1, 3)
    assert j.delta == pytest.approx(-0.22, abs=0.005)
    assert judge("<", [25.0, 25.1], [26.3, 26.2], 0.1, 0.001).verdict == "indication"  # two a side
    assert judge("<", [25.0, 25.1, 25.2], [26.3, 26.2, 26.4], 0.1, 0.001).verdict == "confirmed"
    assert judge(">", [25.0] * 3, [26.0] * 3, 0.1, 0.001, claimed=False).verdict == "not claimed"


def test_the_claims_task():
    assert task_of(["bleu", "chrf"]) == "translation"
    assert task_of(["rouge", "bleu"]) == "summarization"
    assert task_of(["accuracy"]) == "classification"


def test_the_seed_test_is_welchs_t_and_the_sentences_widen_it():
    """With no sentence variance, seed_test is scipy's Welch t-test, p for p; the sentences'
    variance adds to the seeds' and can only raise p."""
    from scipy import stats

    mine, theirs = [32.80, 32.39, 32.10], [32.50, 33.15, 33.22]  # version 2: interacting, transformer
    t = seed_test(mine, theirs, 0.0)
    assert t.p == pytest.approx(stats.ttest_ind(mine, theirs, equal_var=False).pvalue, rel=1e-9)
    assert seed_test(mine, theirs, 0.2).p > t.p
    assert t.delta == pytest.approx(statistics.mean(mine) - statistics.mean(theirs))


def test_a_gap_that_moved_with_depth_is_one_welch_t_over_four_rows():
    """Version 4's depth rule: the change of a row's gap from the shallower table to the deeper
    is one t over the four rows' seed means.  Where the shallower pair is the same every seed,
    it is scipy's Welch t-test of the deeper pair, shifted by the shallower gap; each depth's
    sentences add their variance; and any row with fewer than MIN_SEEDS makes it no test."""
    from scipy import stats

    deep, deep_base = [31.2, 31.9, 31.5], [32.4, 32.1, 32.9]
    shallow, shallow_base = [30.0] * 3, [30.5] * 3
    t = gap_change_test(deep, deep_base, shallow, shallow_base, (0.0, 0.0))
    gap = lambda a, b: statistics.mean(a) - statistics.mean(b)  # noqa: E731
    shifted = [b + gap(shallow, shallow_base) for b in deep_base]
    assert t.p == pytest.approx(stats.ttest_ind(deep, shifted, equal_var=False).pvalue, rel=1e-9)
    assert t.delta == pytest.approx(gap(deep, deep_base) - gap(shallow, shallow_base))
    assert gap_change_test(deep, deep_base, shallow, shallow_base, (0.2, 0.1)).p > t.p
    assert gap_change_test(deep, deep_base, shallow[:2], shallow_base, (0.0, 0.0)) is None


def test_the_depth_rule_holds_its_level_and_finds_a_moved_gap():
    """On simulated trainings (seed sd 0.3, sentence sd 0.15 per depth), a gap of -1.5 at both
    depths is called moved in about ALPHA of the tables, and one that shrinks from -1.5 to 0 in
    nearly all."""
    rng = np.random.default_rng(0)

    def called(change, tables=2000):
        hits = 0
        for _ in range(tables):
            # each seed its own luck; each depth's test set one shift of its gap (what the bootstrap sees)
            rows = [30 + g + rng.normal(0, 0.3, MIN_SEEDS) for g in (-1.5 + change, 0, -1.5, 0)]
            rows[0] += rng.normal(0, 0.15)
            rows[2] += rng.normal(0, 0.15)
            hits += gap_change_test(*map(list, rows), (0.15, 0.15)).p < ALPHA
        return hits / tables

    assert called(0.0) < ALPHA + 0.02
    assert called(1.5) > 0.8


def test_equivalence_is_two_one_sided_tests():
    """p_equal is the larger of the two one-sided t-tests against ±margin: below ALPHA exactly
    when the (1 - 2 ALPHA) interval of the gap lies inside the margin."""
    from scipy import stats

    for mine in ([26.0, 26.1, 26.2], [26.5, 26.9, 26.2], [25.0, 25.4, 25.2]):
        theirs = [26.1, 26.3, 26.0]
        t = seed_test(mine, theirs, 0.1)
        half = stats.t.ppf(1 - ALPHA, t.df) * t.se
        inside = -EQUAL_MARGIN < t.delta - half and t.delta + half < EQUAL_MARGIN
        assert (t.p_equal < ALPHA) == inside


def simulated(rng, gap, seed_sd, sentence_sd, n=MIN_SEEDS):
    """Two rows' seed scores on one test set: each seed draws its own luck, and the test set
    draws one shared shift of the gap (what resampling its sentences estimates)."""
    mine = 30 + gap + rng.normal(0, seed_sd, n) + rng.normal(0, sentence_sd)
    return list(mine), list(30 + rng.normal(0, seed_sd, n))


def seeds_resampled_p(rng, mine, theirs, sentence_sd, samples=1000):
    """The test not chosen: a bootstrap that resamples each row's seeds and adds the sentences'
    noise, its p the share of null-shifted resampled gaps beyond the gap."""
    a, b = np.asarray(mine), np.asarray(theirs)
    resampled = (
        a[rng.integers(0, len(a), (samples, len(a)))].mean(1)
        - b[rng.integers(0, len(b), (samples, len(b)))].mean(1)
        + rng.normal(0, sentence_sd, samples)
    )
    delta = a.mean() - b.mean()
    return (np.sum(np.abs(resampled - resampled.mean()) >= abs(delta)) + 1) / (samples + 1)


def test_two_trainings_of_one_model_are_not_called_different():
    """Runs of one model that differ only in their seed, three a side: the old test over the
    sentences alone calls them different in a large share of comparisons, a bootstrap that
    resamples the seeds too in about twice its level, and seed_test at its level, ALPHA.  Seed
    spread 0.40 and sentence spread 0.2 BLEU, as in version 2's transformer."""
    from scipy import stats

    rng = np.random.default_rng(0)
    runs = [simulated(rng, 0.0, 0.40, 0.2) for _ in range(2000)]
    seeds_counted = np.mean([seed_test(a, b, 0.2).p < ALPHA for a, b in runs])
    sentences_only = np.mean([2 * stats.norm.sf(abs(np.mean(a) - np.mean(b)) / 0.2) < ALPHA for a, b in runs])
    resampled = np.mean([seeds_resampled_p(rng, a, b, 0.2) < ALPHA for a, b in runs])
    assert 0.03 < seeds_counted < 0.07, seeds_counted
    assert resampled > 1.6 * ALPHA, resampled
    assert sentences_only > 0.2, sentences_only


def test_the_committed_seeds_of_one_model_are_not_called_different():
    """Every baseline with several committed seeds: one seed against another is never a
    verdict (one seed a side), and its three seeds against themselves shifted by nothing
    give p 1."""
    checked = 0
    for name in ("leaderboard", "leaderboard_converged", "leaderboard_sum"):
        runs = sorted((RESULTS / name / "runs" / "transformer").glob("seed*/run.json"))
        scores = [
            json.loads(r.read_text())["scores"][claim_metric(["rouge"] if "sum" in name else ["bleu"])] for r in runs
        ]
        assert len(scores) >= MIN_SEEDS, name
        for i in range(len(scores)):
            for j in range(len(scores)):
                if i != j:
                    assert judge(">", [scores[i]], [scores[j]], 0.2, 0.001).verdict == "indication"
        assert seed_test(scores, scores, 0.2).p == 1.0
        checked += 1
    assert checked == 3


def test_a_planted_gap_the_size_of_the_smallest_decided_one_is_found():
    """Version 2's transformer seeds (test BLEU from the committed records), and the same three
    runs moved down by the smallest gap between two rows of three seeds that the rule decides
    there (transformer_prenorm, the seeds' means from the records): found at ALPHA."""

    def bleu(row):
        runs = sorted((RESULTS / "leaderboard_converged" / "runs" / row).glob("seed*/run.json"))
        return [json.loads(r.read_text())["scores"]["bleu"] for r in runs]

    base, other = bleu("transformer"), bleu("transformer_prenorm")
    gap = statistics.mean(base) - statistics.mean(other)
    assert len(base) == len(other) == 3 and gap > 1.0
    t = seed_test([s - gap for s in base], base, 0.2)
    assert t.p < ALPHA and math.isclose(t.delta, -gap)
    assert verdict("<", t.delta, t) == "confirmed"


def test_the_claim_metric():
    assert claim_metric(["rouge", "bleu"]) == "rougeL"
    assert claim_metric(["tok_bleu", "bleu", "chrf"]) == "bleu"
    assert claim_metric(["accuracy"]) == "accuracy"


def test_bad_input_is_an_error():
    with pytest.raises(ValueError, match="relation"):
        verdict("=", 1.0, None)
    with pytest.raises(ValueError, match="a score of each row"):
        judge(">", [], [26.0], 0.2, 0.01)


@pytest.mark.parametrize(
    "gap, spreads, floor, more",
    [
        (-0.60, [0.31], 0.41, True),  # within twice the spread (0.62), beyond the floor
        (-0.63, [0.31], 0.41, False),
        (0.40, [0.10], 0.41, True),  # twice the spread (0.20) is under the floor: the floor rules
        (0.45, [0.10, 0.15], 0.41, False),  # the larger spread of the two rows: 0.30
        (0.25, [0.10, 0.15], 0.0, True),
        (-0.41, [], 0.41, True),  # no row with seeds yet: the floor alone
    ],
)
def test_the_seeds_rule_gives_more_seeds_within_twice_the_spread_or_the_floor(gap, spreads, floor, more):
    assert wants_more_seeds(gap, spreads, floor) is more
    assert seeds_margin(spreads, floor) == pytest.approx(max([2 * s for s in spreads] + [floor]))


@pytest.mark.parametrize(
    "scores, chosen",
    [
        ([20.0, 20.9, 21.0], "b"),  # c gains 0.1 over the choice b: within the floor
        ([20.0, 20.2, 20.5], "c"),  # b is within the floor of a, c beats a (the choice) by 0.5
        ([20.0, 20.3, 20.35], "a"),  # every step within the floor of the choice ...
        (
            [20.0, 20.41, 20.0],
            "a",
        ),  # ... and a gain of the floor itself is not more than it (20.41 - 20.0 in floats is)
        ([21.0, 20.0, 19.0], "a"),
        ([19.0, 20.0, 21.0], "c"),
    ],
)
def test_the_recipe_rule_keeps_the_choice_unless_a_later_candidate_beats_it_by_more_than_the_floor(scores, chosen):
    choice, steps = choose_in_order(list(zip("abc", scores)), 0.41)
    assert choice == chosen
    assert [s.candidate for s in steps] == ["a", "b", "c"] and steps[0].against is None and steps[0].taken
    assert [s.taken for s in steps[1:]] == [s.gain > 0.41 for s in steps[1:]]
    with pytest.raises(ValueError, match="one candidate"):
        choose_in_order([], 0.41)


# --------------------------------------------------- the gap and its p, one comparison
def corpus(seed, n=80):
    """References, and hypotheses that keep each word with probability ``keep``."""
    import random

    words = "das ist ein gutes paket für debian und es läuft schnell".split()
    rnd = random.Random(seed)
    refs = [" ".join(rnd.choice(words) for _ in range(9)) for _ in range(n)]

    def hyps(keep, s):
        r = random.Random(s)
        return [" ".join(w if r.random() < keep else "xx" for w in line.split()) for line in refs]

    return refs, hyps


@pytest.mark.parametrize("metric", ["bleu", "chrf"])
def test_one_run_a_side_is_sacrebleus_paired_bootstrap(metric):
    """With one run a side the pooled test is sacrebleu's paired bootstrap: same gap, same p."""
    from mixer_plugin.scoring import bootstrap
    from mixer_plugin.scoring.significance import pooled_bootstrap

    refs, hyps = corpus(0)
    a, b = hyps(0.8, 1), hyps(0.75, 2)
    theirs = bootstrap(a, b, refs, [metric])[metric]
    mine = pooled_bootstrap([a], [b], refs, metric)
    assert mine["p_value"] == theirs["p_value"]
    assert mine["delta"] == pytest.approx(theirs["system"] - theirs["baseline"], abs=0.006)


def test_the_pooled_gap_is_the_gap_between_the_means_and_its_p_reads_every_seed():
    """The interacting row's case: its first seed led the transformer's (+0.30, p 0.078) while
    the means trailed (-0.53); the table printed the mean's gap beside the first seeds' p.
    Here the gap is the means' and p is that gap's, so a row that loses on the mean cannot
    borrow the p of the one seed where it won."""
    from mixer_plugin.scoring import score
    from mixer_plugin.scoring.significance import pooled_bootstrap

    refs, hyps = corpus(1, n=120)
    mine = [hyps(0.78, s) for s in (1, 2)]
    theirs = [hyps(0.80, s) for s in (3, 4, 5)]
    rec = pooled_bootstrap(mine, theirs, refs, "bleu", samples=300)
    means = [sum(score(h, refs, ["bleu"])["bleu"] for h in side) / len(side) for side in (mine, theirs)]
    assert rec["delta"] == pytest.approx(means[0] - means[1], abs=1e-3)
    assert rec["system"] == pytest.approx([score(h, refs, ["bleu"])["bleu"] for h in mine], abs=1e-3)
    assert rec["ci95"][0] <= rec["delta"] <= rec["ci95"][1]
    # the runs of one row, in another order: the same comparison
    again = pooled_bootstrap(mine[::-1], theirs[::-1], refs, "bleu", samples=300)
    assert again["p_value"] == rec["p_value"] and again["delta"] == pytest.approx(rec["delta"], abs=1e-4)


def test_a_zero_gap_has_p_one():
    """sacrebleu's formula gives two identical systems its least p (1/1001): no gap is no evidence."""
    from mixer_plugin.scoring.significance import pooled_bootstrap

    refs, hyps = corpus(2)
    a = hyps(0.8, 1)
    assert pooled_bootstrap([a], [list(a)], refs, "bleu", samples=200)["p_value"] == 1.0


SIGNS = [  # mine, theirs, my seeds, their seeds -> signs
    ([32.80, 32.39, 32.10], [32.50, 33.15, 33.22], ["seed1", "seed2", "seed3"], ["seed1", "seed2", "seed3"], "+−−"),
    ([25.72], [26.34, 25.82, 25.67], ["seed1"], ["seed1", "seed2", "seed3"], "−−+"),  # one seed: against each
    ([2.0, 1.0], [1.0, 2.0, 3.0], ["seed2", "seed3"], ["seed1", "seed2", "seed3"], "=−"),  # same seeds paired
    ([1.0], [1.0], ["seed1"], ["seed1"], "="),
]


@pytest.mark.parametrize("mine,theirs,my_seeds,their_seeds,expected", SIGNS)
def test_seed_pairs_signs(mine, theirs, my_seeds, their_seeds, expected):
    from mixer_plugin.experiments.claims import seed_signs

    assert seed_signs(mine, theirs, my_seeds, their_seeds) == expected
