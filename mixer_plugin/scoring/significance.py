"""The gap between two rows and its p from one comparison: the paired bootstrap of their
seed means.

A row of a leaderboard is one or more runs (seeds), and its claim reads the gap between two
rows' *means*.  This test resamples the test set's sentences, with the same indices for every
run, so that each run is paired with every other on the same sentences, and recomputes each
run's corpus score on each resample:

    delta   = mean_i score(system_i) - mean_j score(baseline_j)            (the gap shown)
    delta*  = mean_i score(system_i | resample) - mean_j score(baseline_j | resample)
    p       = (#{ |delta*| - mean |delta*| > |delta| } + 1) / (samples + 1)

``p`` is sacrebleu's paired-bootstrap p-value (Koehn 2004, as the Moses script reads it) of
that statistic: with one run a side it *is* sacrebleu's test, the same resamples and the
same p (``tests/test_claims.py`` checks it), except that a gap of exactly zero has p = 1
(sacrebleu's formula gives it its least p, 1/(samples+1), when every resample is zero
too).  It measures how much the gap between the means moves with the choice of test
sentences only: two seeds of one transformer differ at p 0.007 under it.  The claims rule
(``experiments/claims.py``, ``seed_test``) adds how much the gap moves with the seeds, and
takes from here ``sentence_sd``, the standard deviation of the resampled gaps.

Corpus metrics are rebuilt from per-sentence sufficient statistics, so a resample costs a
sum: sacrebleu's own for BLEU and chrF, one F1 per sentence for ROUGE (whose corpus score
is their mean).
"""

from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np

from .metrics import sacre_metric

SEED = 12345  # sacrebleu's default SACREBLEU_SEED, so that one run a side is its test


def sentence_stats(metric: str, hyps: Sequence[str], refs: Sequence[str]) -> Tuple[np.ndarray, Callable]:
    """``(N, k)`` statistics of each sentence, and the function that turns their sum over
    ``n`` sentences into the corpus score."""
    if metric in ("bleu", "chrf"):
        m = sacre_metric(metric)
        stats = np.array(m._extract_corpus_statistics(list(hyps), [list(refs)]), dtype="float32")
        return stats, lambda total, n: float(m._compute_score_from_stats(list(total)).score)
    if metric in ("rouge1", "rouge2", "rougeL"):
        from rouge_score import rouge_scorer

        scorer = rouge_scorer.RougeScorer([metric], use_stemmer=True)
        f1 = [100.0 * scorer.score(r, h)[metric].fmeasure for h, r in zip(hyps, refs)]
        return np.array(f1, dtype="float64")[:, None], lambda total, n: float(total[0]) / n
    raise ValueError(f"the pooled bootstrap scores bleu, chrf, rouge1, rouge2 or rougeL, not {metric!r}")


def pooled_bootstrap(
    systems: Sequence[Sequence[str]],
    baselines: Sequence[Sequence[str]],
    refs: Sequence[str],
    metric: str,
    samples: int = 1000,
    seed: int = SEED,
) -> Dict:
    """The test of this module's docstring: ``systems`` and ``baselines`` are the
    hypotheses of each run of the two rows, all of the same ``refs``.  Returns each run's
    score, ``delta`` (the gap between the means), ``p_value``, the 95% interval of the
    resampled gaps and their standard deviation (``sentence_sd``)."""
    if not systems or not baselines:
        raise ValueError("the pooled bootstrap needs at least one run of each row")
    N = len(refs)
    for hyps in (*systems, *baselines):
        if len(hyps) != N:
            raise ValueError(f"line counts differ: {len(hyps)} hypotheses, {N} references")
    # the same resamples as sacrebleu's paired test draws with this seed
    idx = np.random.default_rng(seed).choice(N, size=(samples, N), replace=True)

    def run_scores(hyps: Sequence[str]) -> Tuple[float, np.ndarray]:
        stats, score_of = sentence_stats(metric, hyps, refs)
        return score_of(stats.sum(0), N), np.array([score_of(stats[i].sum(0), N) for i in idx])

    sys_runs: List[Tuple[float, np.ndarray]] = [run_scores(h) for h in systems]
    base_runs: List[Tuple[float, np.ndarray]] = [run_scores(h) for h in baselines]
    delta = float(np.mean([s for s, _ in sys_runs]) - np.mean([s for s, _ in base_runs]))
    resampled = np.mean([r for _, r in sys_runs], axis=0) - np.mean([r for _, r in base_runs], axis=0)  # (samples,)
    spread = np.abs(resampled)
    p = (int(np.sum(spread - spread.mean() > abs(delta))) + 1) / (samples + 1)
    if delta == 0:  # no gap: sacrebleu's formula gives its least p when every resample is 0 too
        p = 1.0
    lo, hi = np.percentile(resampled, [2.5, 97.5])
    return {
        "metric": metric,
        "system": [round(s, 4) for s, _ in sys_runs],
        "baseline": [round(s, 4) for s, _ in base_runs],
        "delta": round(delta, 4),
        "p_value": round(p, 4),
        "ci95": [round(float(lo), 2), round(float(hi), 2)],
        "sentence_sd": round(float(np.std(resampled, ddof=1)), 4),  # the gap's spread over test sets
        "samples": samples,
        "seed": seed,
    }
