"""The tables under a results file's main one, each read from the same records: the recipe
rule's choice step by step, the seeds rule, each seed against the baseline's run of the same
seed, the baseline against its own first seed, and BLEU per test source."""

import statistics
from typing import Dict, List, Optional, Sequence

from . import claims
from .collect import PRIMARY, ModelResult, Selection, first_run, peak
from .spec import Experiment
from .verdicts import claim_metric


def choice_table(exp: Experiment, by_name: Dict[str, ModelResult]) -> List[str]:
    """The recipe rule (``claims.choose_in_order``) applied to the file's ``choose`` list, step
    by step, on the table's own validation scores (the mean over a candidate's seeds); it
    waits at the first candidate with no finished run, since each step reads the choice
    before it."""
    if not exp.choose:
        return []
    first = by_name[exp.choose[0]].model
    key, floor = claim_metric(first), first.score.noise_floor
    metric = f"{first.generate.subset} {PRIMARY.get(key, key)}"
    scored = []
    for name in exp.choose:
        values = [v for v in seed_scores(by_name[name], key).values() if v is not None]
        if not values:
            break
        scored.append((name, statistics.mean(values), len(values)))
    head = [f"### Chosen by the rule, on {metric}", ""]
    if not scored:
        return head + [f"The rule waits for `{exp.choose[0]}` (no finished run).", ""]
    choice, steps = claims.choose_in_order([(n, v) for n, v, _ in scored], floor)
    lines = head + [
        f"| in order | {metric} | seeds | against the choice so far | gain | the choice after it |",
        "|---|---:|---:|---|---:|---|",
    ]
    for step, (_, _, n) in zip(steps, scored):
        if step.against is None:
            lines.append(f"| `{step.candidate}` | {step.score:.2f} | {n} | – | – | `{step.candidate}`: the first |")
            continue
        after = (
            f"`{step.candidate}`: gains more than {floor:g}"
            if step.taken
            else f"`{step.against}`: `{step.candidate}` gains {floor:g} or less"
        )
        lines.append(f"| `{step.candidate}` | {step.score:.2f} | {n} | `{step.against}` | {step.gain:+.2f} | {after} |")
    rule = (
        f"In the file's order (`choose`), a later candidate replaces the choice only when its {metric} "
        f"beats the choice's by more than the rerun floor, {floor:g} (`mixer_plugin/experiments/claims.py`; "
        "docs/leaderboard.md, \"Recipe\")."
    )
    if len(scored) < len(exp.choose):
        waiting = f"The rule waits for `{exp.choose[len(scored)]}` (no finished run): the choice so far is `{choice}`."
        return lines + ["", f"{waiting} {rule}", ""]
    return lines + ["", f"**Chosen: `{choice}`.** {rule}", ""]


def seeds_rule_table(
    results: List[ModelResult], base_r: Optional[ModelResult], chosen: Selection, baselines: Sequence[str] = ()
) -> List[str]:
    """Which rows the seeds rule (``claims.wants_more_seeds``) gives seeds 2 and 3, read on the
    validation set: each trained row's first seed at its peak against the mean of the
    baseline's seeds there.  Until the baseline has several seeds the rule has no spread to
    read, and the table says it waits.  Not for an experiment whose baseline lists one seed
    (a recipe's screen): the rule is the seeds of a table of claims.  A row in ``baselines``
    (the hard rows' pre-norm transformer) keeps the seeds it lists whatever its gap, since
    other rows' claims read its spread: its cell says so rather than the rule's count."""
    if base_r is None or len(base_r.model.seeds) < 2:
        return []
    name = chosen.metric
    base_peaks = [p.value for p in (peak(rec, chosen) for rec in base_r.records) if p is not None]
    rows = [r for r in results if r is not base_r and not r.model.decode_of and first_run(r) is not None]
    if not rows:
        return []
    # named by its baseline: a table with two baselines (the hard rows' pre-norm one) has two
    head = [f"### Seeds by the rule against `{base_r.model.name}`, on valid {PRIMARY.get(name, name)} at the peak", ""]
    if len(base_peaks) < 2:
        return head + [
            f"The rule waits for `{base_r.model.name}`'s seeds ({len(base_peaks)} of {len(base_r.model.seeds)} "
            "finished): its spread sets the margin.",
            "",
        ]
    floor = base_r.model.score.noise_floor or 0.0
    mean = statistics.mean(base_peaks)
    out = head + [
        f"| row | first seed | gap to `{base_r.model.name}` ({mean:.2f}, {len(base_peaks)} seeds) | margin | "
        "seeds by the rule | seeds listed |",
        "|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        each = [peak(rec, chosen) for rec in r.records]
        first = each[first_run(r)]
        if first is None:
            continue
        peaks = [p.value for p in each if p is not None]
        spreads = [statistics.stdev(v) for v in (base_peaks, peaks) if len(v) > 1]
        gap = first.value - mean
        more = claims.wants_more_seeds(gap, spreads, floor)
        by_rule = "3: within the margin" if more else "1: beyond the margin"
        if r.model.name in baselines:  # docs/leaderboard.md, amendment 2
            by_rule += f"; {len(r.model.seeds)} as a baseline"
        out.append(
            f"| `{r.model.name}` | {first.value:.2f} | {gap:+.2f} | {claims.seeds_margin(spreads, floor):.2f} | "
            f"{by_rule} | {', '.join(map(str, r.model.seeds))} |"
        )
    return out + [
        "",
        "Margin: the larger of twice the larger seed standard deviation and the rerun floor "
        f"({floor:g}); a first seed within it could be the baseline's equal by one seed's luck "
        "(`mixer_plugin/experiments/claims.py`, docs/leaderboard.md, \"Seeds\").",
        "",
    ]


def seed_pairs_table(results: List[ModelResult], base_r: Optional[ModelResult]) -> List[str]:
    """Every seed of the rows with several against the baseline's run of the same seed: the
    main table compares the means, which can hide a gap that one seed makes.  A row with one seed is here
    too when that seed is not the baseline's first (a decode of its seed 2 alone): the main
    table's p pairs it with another training."""
    if base_r is None:
        return []
    j = first_run(base_r)
    first = base_r.runs[j].name if j is not None else None
    rows = [r for r in results if set(r.extra.get("seed_pairs", {})) - {first}]  # a pair besides the first seeds'
    if not rows:
        return []
    key = claim_metric(base_r.model)
    name = PRIMARY[key]
    base_score = seed_scores(base_r, key)
    lines = [
        f"Seed by seed against `{base_r.model.name}` (each seed against the baseline's run of the same "
        "seed; p: their paired bootstrap over the test sentences alone, which no verdict reads, since it "
        "calls runs that differ only in their seed different; the table above and the claims compare the "
        "means with the seeds counted):",
        "",
        f"| model | seed | {name} | `{base_r.model.name}` | Δ | p over sentences |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        score = seed_scores(r, key)
        for seed, boot in r.extra["seed_pairs"].items():
            if seed not in base_score:  # a row whose first seed the baseline does not have
                continue
            lines.append(
                f"| `{r.model.name}` | {seed.removeprefix('seed')} | "
                + gap_cells(score[seed], base_score[seed], boot, key)
            )
    return lines + [""]


def seed_scores(r: ModelResult, key: str) -> Dict[str, float]:
    """seed<N> -> the run's score on ``key``."""
    return {run.name: sc.get(key) for run, sc in zip(r.runs, r.scores)}


def gap_cells(mine: float, theirs: float, boot: Dict, key: str) -> str:
    """The cells `mine | theirs | Δ | p |` of a seed-against-seed row (p: the bootstrap on ``key``)."""
    p = boot.get(key, {}).get("p_value")
    return f"{mine:.2f} | {theirs:.2f} | {mine - theirs:+.2f} | " + (f"{p:.3f}" if p is not None else "–") + " |"


def own_seeds_table(base_r: ModelResult) -> List[str]:
    """The baseline's later seeds against its first (own_seeds): how far two runs of one
    recipe read apart, and what p the paired bootstrap gives that."""
    pairs = base_r.extra.get("own_seeds")
    if not pairs:
        return []
    key = claim_metric(base_r.model)
    score = seed_scores(base_r, key)
    first = base_r.runs[first_run(base_r)].name
    lines = [
        f"`{base_r.model.name}` against its own first seed (one recipe, another seed: the gap between "
        "runs that differ only in their seed, and the p a paired bootstrap over the test sentences alone "
        "gives it, the reason no verdict reads that test):",
        "",
        f"| seed | {PRIMARY[key]} | seed {first.removeprefix('seed')} | Δ | p over sentences |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {seed.removeprefix('seed')} | " + gap_cells(score[seed], score[first], boot, key)
        for seed, boot in pairs.items()
    ]
    return lines + [""]


def by_source_table(results: List[ModelResult]) -> List[str]:
    """BLEU per test source, each row's first seed (the first it lists, as the p-values:
    while that run is missing, another seed would stand in under its name)."""
    firsts = {id(r): r.scores[first_run(r)] for r in results if first_run(r) is not None}
    sources = list(dict.fromkeys(s for sc in firsts.values() for s in sc.get("by_source", {})))
    if not sources:
        return []
    counts = next(sc["by_source"] for sc in firsts.values() if sc.get("by_source"))
    lines = [
        "Test BLEU per source (first seed; lines per source in the header):",
        "",
        "| model | " + " | ".join(f"{s} ({counts[s]['lines']})" for s in sources) + " |",
        "|---|" + "---:|" * len(sources),
    ]
    for r in results:
        bs = firsts.get(id(r), {}).get("by_source", {})
        lines.append(
            f"| `{r.model.name}` | "
            + " | ".join(f"{bs[s]['bleu']:.2f}" if s in bs and "bleu" in bs[s] else "–" for s in sources)
            + " |"
        )
    return lines + [""]
