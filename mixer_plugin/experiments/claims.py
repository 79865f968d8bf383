"""The rule that judges a paper's claim: pure functions over scores, nothing read or written.

The protocol (docs/leaderboard.md, "Claims"; this rule since 2026-12-07, issue 94):

Each row carries the paper's claims for it as orderings against another row on the paper's
task: better than (``>``), worse than (``<``) or about equal to (``~``), ``on`` translation,
summarization or classification.  Each is judged on one metric (:func:`claim_metric`: ROUGE-L
where the experiment scores ROUGE, else BLEU, else its first metric), from one comparison of
the two rows over all their seeds: the gap between their seed means, and :func:`seed_test`.

* **The test counts both noises** (Clark et al. 2011: replicate the training, test over the
  replications).  A row's score moves with its training seed and with the test sentences.
  The paired bootstrap over sentences (``scoring/significance.py``) sees only the second, and
  calls two seeds of one transformer different (+0.65 BLEU, p 0.007).  :func:`seed_test` is
  Welch's t over the seed means, its variance the two rows' seed variances over their seed
  counts plus the bootstrap's variance of the gap over test sets, its degrees of freedom
  Welch-Satterthwaite's from the seed terms.  A t, not a bootstrap over seeds: with three
  seeds a side, resampling them cannot show the tails the few seeds leave unknown, and a
  bootstrap that ignores that calls equal rows different more often than its level says.
* **Enough seeds**: ``MIN_SEEDS`` (3) on each side.  One seed has no seed variance; two give
  one degree of freedom a side.  Three is what every protocol here gives a baseline.  A claim
  with fewer is an **indication** with its sign (ahead or behind), never a verdict.
* ``>`` / ``<``: **confirmed** when p < ``ALPHA`` in the claimed direction, **refuted** when
  p < ``ALPHA`` the other way, else **inconclusive**.
* ``~``: **confirmed** only by an equivalence test, two one-sided t-tests against
  ±``EQUAL_MARGIN`` (the margin the protocol fixed before version 1's runs) at ``ALPHA``;
  **refuted** when not equivalent and p < ``ALPHA``; else **inconclusive**.  Not being
  different is not being equal.
* A claim on a task the table does not measure (multi-scale attention's, made on text
  classification, in a translation table) is **not claimed** there: the row is reported, the
  claim not judged.

The converged protocol's two rules of selection live here too, both read on the validation
set before anything is judged on test: which rows get more seeds (:func:`wants_more_seeds`)
and which recipe the table trains (:func:`choose_in_order`).
"""

import math
import statistics
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

ALPHA = 0.05  # the level of every test of the rule
MIN_SEEDS = 3  # seeds each side needs for a verdict
EQUAL_MARGIN = 1.0  # points of the claim's metric within which two rows count as equal
RELATIONS = {">": "better than", "<": "worse than", "~": "about equal to"}
TASKS = ("translation", "summarization", "classification")
VERDICTS = ("confirmed", "refuted", "inconclusive", "indication", "not claimed")
DECIDED = ("confirmed", "refuted")  # the verdicts a table prints in bold


def claim_metric(metrics: Sequence[str]) -> str:
    """The metric a claim is judged on, of an experiment's ``score.metrics``: ROUGE-L where
    it scores ROUGE, else BLEU where it scores BLEU (sacrebleu's, even where tokenized BLEU
    is listed too), else its first metric (accuracy for classification)."""
    if {"rouge", "rougeL"} & set(metrics):
        return "rougeL"
    return "bleu" if "bleu" in metrics else metrics[0]


def task_of(metrics: Sequence[str]) -> str:
    """The task a table measures, of ``TASKS``, by what it scores: classification where it
    scores accuracy, summarization where it scores ROUGE, else translation."""
    key = claim_metric(metrics)
    return "summarization" if key == "rougeL" else "classification" if key == "accuracy" else "translation"


@dataclass(frozen=True)
class SeedTest:
    """:func:`seed_test` of one gap: its standard error and degrees of freedom, p of "no
    gap" (two-sided) and p of "not within ±margin" (the larger of the two one-sided tests)."""

    delta: float
    se: float
    df: float
    p: float
    p_equal: float


def _t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (the normal where df is infinite)."""
    from scipy import stats

    return float(stats.norm.sf(t) if math.isinf(df) else stats.t.sf(t, df))


def seed_test(
    mine: Sequence[float], theirs: Sequence[float], sentence_sd: float, margin: float = EQUAL_MARGIN
) -> Optional[SeedTest]:
    """Welch's t over the seed means with the test sentences' variance added (the module's
    rule): ``mine`` and ``theirs`` are each seed's score of the two rows on the whole test
    set, ``sentence_sd`` the paired bootstrap's standard deviation of the gap between their
    means (``pooled_bootstrap``).  None when either row has fewer than ``MIN_SEEDS`` seeds."""
    return contrast_test(((1, mine), (-1, theirs)), sentence_sd, margin)


def gap_change_test(
    deep: Sequence[float],
    deep_base: Sequence[float],
    shallow: Sequence[float],
    shallow_base: Sequence[float],
    sentence_sds: Tuple[float, float],
    margin: float = EQUAL_MARGIN,
) -> Optional[SeedTest]:
    """Whether a row's gap to its baseline moved with depth (docs/leaderboard.md, version 4,
    fixed before its first run): :func:`seed_test` of the difference of the two gaps,
    (deep - deep_base) - (shallow - shallow_base), each of the four rows' seed variances over
    its seed count, and each depth's bootstrap variance of its gap (``sentence_sds``: the
    deeper's, the shallower's) summed.  None when any of the four has fewer than ``MIN_SEEDS``."""
    terms = ((1, deep), (-1, deep_base), (-1, shallow), (1, shallow_base))
    return contrast_test(terms, math.hypot(*sentence_sds), margin)


def contrast_test(
    terms: Sequence[Tuple[int, Sequence[float]]], sentence_sd: float, margin: float = EQUAL_MARGIN
) -> Optional[SeedTest]:
    """Welch's t of a signed sum of seed means (``terms``: (+1 or -1, each seed's score)), its
    variance each mean's seed variance plus the sentences' (``sentence_sd`` squared), its
    degrees of freedom Welch-Satterthwaite's from the seed terms (the bootstrap's term is
    known); p of "no difference" and of "not within ±margin".  None when a term has fewer
    than ``MIN_SEEDS`` seeds."""
    if any(len(x) < MIN_SEEDS for _, x in terms):
        return None
    delta = sum(sign * statistics.mean(x) for sign, x in terms)
    parts = [(statistics.variance(x) / len(x), len(x)) for _, x in terms]  # each mean's seed variance
    var = sum(v for v, _ in parts) + sentence_sd**2
    if var == 0:
        return SeedTest(delta, 0.0, math.inf, 1.0 if delta == 0 else 0.0, 0.0 if abs(delta) < margin else 1.0)
    seeds = sum(v**2 / (n - 1) for v, n in parts)
    df = var**2 / seeds if seeds else math.inf
    se = math.sqrt(var)
    p = min(1.0, 2 * _t_sf(abs(delta) / se, df))
    p_equal = max(_t_sf((delta + margin) / se, df), _t_sf((margin - delta) / se, df))
    return SeedTest(delta, se, df, p, p_equal)


def verdict(relation: str, delta: float, test: Optional[SeedTest], claimed: bool = True) -> str:
    """A claim's verdict, of ``VERDICTS``: ``delta``, this row's mean minus the other's;
    ``test``, its :func:`seed_test` (None: too few seeds); ``claimed``, whether the paper made
    the claim on the task this table measures."""
    if relation not in RELATIONS:
        raise ValueError(f"a claim's relation is one of {', '.join(RELATIONS)}, not {relation!r}")
    if not claimed:
        return "not claimed"
    if test is None:
        return "indication"
    if relation == "~":
        if test.p_equal < ALPHA:
            return "confirmed"
        return "refuted" if test.p < ALPHA else "inconclusive"
    if test.p >= ALPHA:
        return "inconclusive"
    return "confirmed" if (delta > 0) == (relation == ">") else "refuted"


def sign(delta: float) -> str:
    """An indication's sign: this row ahead of the other, behind it, or level."""
    return "ahead" if delta > 0 else "behind" if delta < 0 else "level"


@dataclass(frozen=True)
class Judgement:
    verdict: str
    delta: float  # mean of this row's seeds minus the other's
    test: Optional[SeedTest]  # None: fewer than MIN_SEEDS seeds on a side
    sentences_p: float  # the paired bootstrap's p over sentences alone (what the rule used before)
    seeds: tuple  # (this row's seeds, the other's)
    sentence_sd: float = 0.0  # the paired bootstrap's sd of the gap (the depth rule reads it back)


def judge(
    relation: str,
    mine: Sequence[float],
    theirs: Sequence[float],
    sentence_sd: float,
    sentences_p: float,
    claimed: bool = True,
) -> Judgement:
    """A claim of a row whose seeds scored ``mine`` against a row whose seeds scored
    ``theirs``, on the gap between their means (``seed_test``); ``sentence_sd`` and
    ``sentences_p`` from the paired bootstrap of that gap over the test sentences."""
    if not mine or not theirs:
        raise ValueError("a claim needs a score of each row")
    delta = statistics.mean(mine) - statistics.mean(theirs)
    test = seed_test(mine, theirs, sentence_sd)
    seeds = (len(mine), len(theirs))
    return Judgement(verdict(relation, delta, test, claimed), delta, test, sentences_p, seeds, sentence_sd)


def seed_signs(
    mine: Sequence[float], theirs: Sequence[float], my_seeds: Sequence[str], their_seeds: Sequence[str]
) -> str:
    """The sign of each seed pair's gap, this row's run minus the other's: the runs of the
    same seed where both rows have several, else a one-seed row's run against each of the
    other's ("+--": ahead of one, behind two).  What a mean hides: a gap one seed makes."""
    if len(mine) > 1 and len(theirs) > 1:
        pairs = [(a, theirs[their_seeds.index(s)]) for a, s in zip(mine, my_seeds) if s in their_seeds]
    else:
        pairs = [(a, b) for a in mine for b in theirs]
    return "".join("+" if a > b else "−" if a < b else "=" for a, b in pairs)


def seeds_margin(spreads: Sequence[float], floor: float = 0.0) -> float:
    """The gap within which a one-seed row gets seeds 2 and 3: the larger of twice the larger
    seed standard deviation (``spreads``: of the rows with several seeds) and the rerun floor."""
    return max([2 * s for s in spreads] + [floor])


def wants_more_seeds(gap: float, spreads: Sequence[float], floor: float = 0.0) -> bool:
    """The converged protocol's seeds rule (docs/leaderboard.md, "Seeds"; fixed before its runs):
    a row's first seed whose gap to the baseline's mean (valid BLEU at the peak) is within
    :func:`seeds_margin` could be the baseline's equal or its better by one seed's luck, so
    it gets seeds 2 and 3; a row beyond it keeps one seed, said plainly."""
    return abs(gap) <= seeds_margin(spreads, floor)


@dataclass(frozen=True)
class Step:
    """One candidate of :func:`choose_in_order`: its score, the choice it was read against
    (None for the first, which is the choice until a later one wins) and whether it won."""

    candidate: str
    score: float
    against: Optional[str]
    gain: Optional[float]  # score minus the choice's, to two decimals; None for the first
    taken: bool


def choose_in_order(scores: Sequence[Tuple[str, float]], floor: float) -> Tuple[str, List[Step]]:
    """The converged protocol's recipe rule (docs/leaderboard.md, "Recipe" and amendment 4,
    fixed before the recipe's results): ``scores`` are the candidates' valid scores in the
    order of the experiment file's ``choose``, each adding regularisation to what comes
    before.  The first is the choice; a later candidate replaces the choice only when it beats
    it by more than ``floor`` (the rerun floor: a change needs a gain that a second run of one
    command would not give).  So the highest score wins when its lead is clear, and a
    candidate within the floor of the choice never displaces it.  Returns the choice and the
    steps that led to it."""
    if not scores:
        raise ValueError("the rule needs at least one candidate")
    (choice, best), steps = scores[0], []
    steps.append(Step(choice, best, None, None, True))
    for name, score in scores[1:]:
        gain = round(score - best, 2)  # as the table shows it: 20.41 - 20.00 is not more than 0.41
        taken = gain > floor
        steps.append(Step(name, score, choice, gain, taken))
        if taken:
            choice, best = name, score
    return choice, steps
