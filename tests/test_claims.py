"""The claims rule (mixer_plugin/experiments/claims.py): pure functions, so every case is
a line of numbers.  How a verdict is shown in a results table is tested with the report
(tests/test_experiments.py)."""

import pytest

from mixer_plugin.experiments.claims import (
    EQUAL_MARGIN,
    choose_in_order,
    claim_metric,
    judge,
    seeds_margin,
    verdict,
    wants_more_seeds,
)

VERDICTS = [  # relation, this row minus the other, p, seed spread -> verdict
    (">", 1.5, 0.01, None, "confirmed"),
    (">", -1.5, 0.01, None, "refuted"),
    (">", 1.5, 0.2, None, "inconclusive"),
    ("<", -0.8, 0.001, None, "confirmed"),
    ("<", 0.8, 0.001, None, "refuted"),
    (">", 0.4, 0.01, 0.6, "inconclusive"),  # significant on one seed, but within the seeds' spread
    (">", 0.9, 0.01, 0.6, "confirmed"),
    ("~", 0.3, 0.4, None, "confirmed"),
    ("~", -1.2, 0.01, None, "refuted"),
    ("~", 1.6, 0.08, None, "inconclusive"),  # not significant, but too far apart to call equal
]


@pytest.mark.parametrize("relation,delta,p,spread,expected", VERDICTS)
def test_claim_verdicts(relation, delta, p, spread, expected):
    assert verdict(relation, delta, p, spread) == expected


def test_a_one_seed_row_is_judged_against_the_other_rows_mean_and_spread():
    """The leaderboard's case (the first amendment): against the transformer's first seed
    alone (26.34, the best of 25.82 and 25.67) a row at 25.72 read significantly worse (p
    0.006); against the mean (25.94) and the seed spread (0.35) the gap is noise."""
    j = judge(">", [25.72], [26.34, 25.82, 25.67], 0.006)
    assert j.verdict == "inconclusive" and j.seeds == (1, 3)
    assert j.delta == pytest.approx(-0.22, abs=0.005) and j.spread == pytest.approx(0.35, abs=0.005)
    assert judge(">", [24.9], [26.34, 25.82, 25.67], 0.006).verdict == "refuted"


def test_the_rerun_floor_is_the_least_gap_that_counts():
    """The second amendment: a gap within what a rerun of one command and seed moved (0.41
    BLEU) is no evidence, whatever the bootstrap says; with one seed each, the floor alone."""
    rows = ([25.45], [25.93, 25.82, 25.67], 0.01)
    assert judge("<", *rows).verdict == "confirmed"  # -0.36, beyond the spread 0.13
    assert judge("<", *rows, floor=0.41).verdict == "inconclusive"
    assert judge("<", [25.45], [26.0], 0.01, floor=0.41).verdict == "confirmed"  # -0.55
    assert judge("<", [25.45], [26.0], 0.01).spread is None


def test_equal_means_within_the_margin():
    assert judge("~", [26.0, 26.2], [26.1 + EQUAL_MARGIN - 0.1], 0.3).verdict == "confirmed"
    assert judge("~", [26.0, 26.2], [26.1 + EQUAL_MARGIN + 0.1], 0.3).verdict == "inconclusive"


def test_the_claim_metric():
    assert claim_metric(["rouge", "bleu"]) == "rougeL"
    assert claim_metric(["tok_bleu", "bleu", "chrf"]) == "bleu"
    assert claim_metric(["accuracy"]) == "accuracy"


def test_bad_input_is_an_error():
    with pytest.raises(ValueError, match="relation"):
        verdict("=", 1.0, 0.01)
    with pytest.raises(ValueError, match="a score of each row"):
        judge(">", [], [26.0], 0.01)


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
