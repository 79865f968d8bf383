"""The rule that marks a paper's claim confirmed, refuted or inconclusive: pure functions
over scores and p-values, nothing read or written.

The protocol (docs/leaderboard.md, "Claims"), fixed before the runs:

Each row carries the paper's claims for it as orderings against another row: better than
(``>``), worse than (``<``) or about equal to (``~``).  Each is judged on one metric
(:func:`claim_metric`: ROUGE-L where the experiment scores ROUGE, else BLEU, else its first
metric), from one comparison of the two rows over all their seeds: the gap between their
means and the p of that gap (``mixer_plugin/scoring/significance.py``: a paired bootstrap over the
test sentences, every seed of both rows in each resample).  Until 2026-12-05 p came from the
rows' first seeds alone while the gap was the means', so the two could describe different
comparisons (docs/leaderboard.md, amendment 7); :func:`seed_signs` shows the seed pairs
beside them.

* The gap is the difference of the two rows' means over their seeds (a row of one seed: its
  score).
* It is *significant* when p < ``ALPHA`` and the gap exceeds the larger of the two rows' seed
  standard deviations, where either row has several seeds (a gap one seed's luck can
  produce is not evidence), and the experiment's rerun floor (``score.noise_floor``: what
  two runs of one command and seed differed by, 0.41 BLEU in the leaderboard).
* ``>`` / ``<``: **confirmed** when significant in the claimed direction, **refuted** when
  significant the other way, else **inconclusive**.
* ``~``: **refuted** when significant, **confirmed** when not and the gap is within
  ``EQUAL_MARGIN`` points, else **inconclusive** (too noisy to call the rows equal or not).

Two amendments, both made before the rows they could change had results: a one-seed row is
compared with the other row's mean and judged against that row's seed spread
(2026-11-23), and the rerun floor (2026-11-24).  docs/leaderboard.md tells both.

The converged protocol's two rules of selection live here too, both read on the validation
set before anything is judged on test: which rows get more seeds (:func:`wants_more_seeds`)
and which recipe the table trains (:func:`choose_in_order`).
"""

import statistics
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

ALPHA = 0.05  # the paired bootstrap's significance level
EQUAL_MARGIN = 1.0  # points of the claim's metric within which two rows count as equal
RELATIONS = {">": "better than", "<": "worse than", "~": "about equal to"}


def claim_metric(metrics: Sequence[str]) -> str:
    """The metric a claim is judged on, of an experiment's ``score.metrics``: ROUGE-L where
    it scores ROUGE, else BLEU where it scores BLEU (sacrebleu's, even where tokenized BLEU
    is listed too), else its first metric (accuracy for classification)."""
    if {"rouge", "rougeL"} & set(metrics):
        return "rougeL"
    return "bleu" if "bleu" in metrics else metrics[0]


def verdict(relation: str, delta: float, p: float, spread: Optional[float] = None) -> str:
    """A claim's verdict.  ``delta``: this row's mean minus the other's; ``p``: that gap's
    paired bootstrap; ``spread``: the least gap that counts (the larger seed
    standard deviation and the rerun floor; None when there is neither)."""
    if relation not in RELATIONS:
        raise ValueError(f"a claim's relation is one of {', '.join(RELATIONS)}, not {relation!r}")
    significant = p < ALPHA and (spread is None or abs(delta) > spread)
    if relation == "~":
        if significant:
            return "refuted"
        return "confirmed" if abs(delta) <= EQUAL_MARGIN else "inconclusive"
    if not significant:
        return "inconclusive"
    return "confirmed" if (delta > 0) == (relation == ">") else "refuted"


@dataclass(frozen=True)
class Judgement:
    verdict: str
    delta: float  # mean of this row's seeds minus the other's
    p: float
    spread: Optional[float]  # the larger seed standard deviation of the two rows (None: one seed each)
    floor: float  # the rerun floor the gap had to exceed (0: none)
    seeds: tuple  # (this row's seeds, the other's)


def judge(relation: str, mine: Sequence[float], theirs: Sequence[float], p: float, floor: float = 0.0) -> Judgement:
    """A claim of a row whose seeds scored ``mine`` against a row whose seeds scored
    ``theirs``: means against means, and the seed spread of whichever row has seeds (a
    one-seed row against the three-seed transformer is judged against the transformer's
    mean and spread, not against whichever of its seeds happens to be the first)."""
    if not mine or not theirs:
        raise ValueError("a claim needs a score of each row")
    delta = statistics.mean(mine) - statistics.mean(theirs)
    spreads = [statistics.stdev(s) for s in (mine, theirs) if len(s) > 1]
    least = max([*spreads, floor]) if spreads or floor else None
    return Judgement(
        verdict(relation, delta, p, least), delta, p, max(spreads) if spreads else None, floor, (len(mine), len(theirs))
    )


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
