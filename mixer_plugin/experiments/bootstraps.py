"""The tests a results table shows, each cached beside the run it belongs to while it is the
same test (the same runs, their hypotheses unchanged since): of the means (``pooled``: a row
against its baseline and against the other row of each claim, every finished seed of both in
one test) and seed by seed (``paired_bootstrap``, sacrebleu's test).  Each comes with the
``mixer-score`` command that gives it."""

import json
from pathlib import Path
from typing import Callable, List, Tuple

from .. import scoring
from ..data.workspace import data_root
from ..files import atomic_path
from ..paths import shown
from . import claims
from .argv import shell
from .collect import ModelResult, first_run
from .commands import prep_manifest
from .spec import Experiment


def run_bootstraps(exp: Experiment, results: List[ModelResult]) -> None:
    """The comparisons a results table shows.  Of the means (``pooled``): each model against
    its baseline (the table's gap and p) and against the other row of each of its claims
    (the verdicts), every finished seed of both rows in one test.  Seed by seed
    (``paired_bootstrap``, sacrebleu's test): each model's first seed against the baseline's
    (its per-source figures' pair), every later seed against the baseline's run of the same
    seed, and a baseline's later seeds against its first (``own_seeds``)."""
    by_name = {r.model.name: r for r in results}
    for r in results:
        base = by_name.get(r.model.score.baseline)
        if exp.kind != "classification" and base is r:
            own_seeds(r)
        if exp.kind == "classification" or base is None or base is r or not r.runs or not base.runs:
            continue
        i, j = first_run(r), first_run(base)
        if i is not None and j is not None:
            r.extra["bootstrap"], r.extra["bootstrap_command"] = paired_bootstrap(r, base, "bootstrap.json", i, j)
        # seed by seed: each run against the baseline's run of the same seed.  The first
        # seeds' test above is one of these only when both rows list the same first seed;
        # otherwise that run's same-seed test gets a file of its own
        pairs = {}
        base_runs = {run.name: k for k, run in enumerate(base.runs)}
        for k, run in enumerate(r.runs):
            if run.name not in base_runs:
                continue
            if k == i and base_runs[run.name] == j:
                pairs[run.name] = r.extra["bootstrap"]
            else:
                name = "bootstrap.json" if k != i else "bootstrap-same-seed.json"
                pairs[run.name] = paired_bootstrap(r, base, name, k, base_runs[run.name])[0]
        r.extra["seed_pairs"] = pairs
    # the comparison of the means (the table's gap and p, the claims): every finished seed
    # of both rows, once both first seeds have finished (the seed each row names first)
    ready = lambda x: x.runs and first_run(x) is not None  # noqa: E731
    for r in results:
        base = by_name.get(r.model.score.baseline)
        if exp.kind != "classification" and base is not None and base is not r and ready(r) and ready(base):
            r.extra["pooled"], r.extra["pooled_command"] = pooled(r, base)
        for claim in r.model.claims:
            other = by_name[claim.other]
            if ready(r) and ready(other):
                rec = r.extra["pooled"] if other is base else pooled(r, other)[0]
                r.extra.setdefault("claims", {})[claim] = rec


def pooled(r: ModelResult, other: ModelResult) -> Tuple[dict, str]:
    """The gap between r's and other's seed means on the claim metric and its p, from one
    comparison over every finished run of both rows (``significance.pooled_bootstrap``),
    with each side's seeds; cached in r's work folder while it is the same test (the same
    runs, their hypotheses unchanged since).  Also the ``mixer-score`` command that gives it."""
    from ..scoring.significance import pooled_bootstrap

    key = claims.claim_metric(r.model.score.metrics)
    root = data_root(r.model.data, r.model.prepare)
    subset = r.model.generate.subset
    ref = root / prep_manifest(root)["references"][subset]["detok"]
    mine, theirs = ([run / f"gen-{subset}" / "hyp.txt" for run in x.runs] for x in (r, other))
    cached = r.runs[0].parent / f"pooled-{key}-vs-{other.model.name}.json"
    names = {"system_runs": [shown_run(h) for h in mine], "baseline_runs": [shown_run(h) for h in theirs]}
    argv = [str(mine[0]), str(ref), "--metrics", key] + (["--seed-hyps", *map(str, mine[1:])] if mine[1:] else [])
    argv += ["--baseline", str(theirs[0])] + (["--baseline-seed-hyps", *map(str, theirs[1:])] if theirs[1:] else [])
    argv += ["--pooled"]
    same = lambda rec: "sentence_sd" in rec and all(rec.get(k) == v for k, v in names.items())  # noqa: E731
    if not cache_holds(cached, same, mine + theirs):
        rec = pooled_bootstrap(
            [scoring.read_lines(h, "hypothesis") for h in mine],
            [scoring.read_lines(h, "baseline") for h in theirs],
            scoring.read_lines(ref, "reference"),
            key,
        )
        rec.update(names, system_seeds=[run.name for run in r.runs], baseline_seeds=[run.name for run in other.runs])
        with atomic_path(cached) as tmp:
            tmp.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
    return json.loads(cached.read_text()), "mixer-score " + shell(argv)


def shown_run(hyp: Path) -> str:
    """A hypothesis file by its run: <model>/seed<N>/gen-<subset>/hyp.txt, the same on every machine."""
    return "/".join(hyp.parts[-4:])


def own_seeds(base: ModelResult) -> None:
    """Each later seed of a baseline against its first seed: two runs that differ only in
    their seed, under the test the claims' p is.  Where that reads p < 0.05 (the
    summarization transformer's seeds 1 and 2: +1.13 R-L, p 0.002), a one-seed row's p
    says nothing of its recipe."""
    j = first_run(base)
    if j is None:
        return
    base.extra["own_seeds"] = {
        run.name: paired_bootstrap(base, base, "bootstrap-vs-first-seed.json", k, j)[0]
        for k, run in enumerate(base.runs)
        if k != j
    }


def paired_bootstrap(
    r: ModelResult, other: ModelResult, name: str, run: int = 0, other_run: int = 0
) -> Tuple[dict, str]:
    """The paired bootstrap (``scoring.bootstrap``) of r's run ``run`` (default: its first
    seed) against other's run ``other_run``, cached in r's generation folder while it is the
    same test: against the same model and seed, on the same metrics, and neither hypothesis
    file changed since.  Also the ``mixer-score`` command that gives the same test."""
    root = data_root(r.model.data, r.model.prepare)
    prep = prep_manifest(root)
    subset = r.model.generate.subset
    gen, other_gen = r.runs[run] / f"gen-{subset}", other.runs[other_run] / f"gen-{subset}"
    ref = root / prep["references"][subset]["detok"]
    metrics = [m for m in r.model.score.metrics if m in ("bleu", "chrf", "ter", "rouge", "rougeL")]
    hyp, base, cached = gen / "hyp.txt", other_gen / "hyp.txt", gen / name
    argv = [str(hyp), str(ref), "--metrics", ",".join(metrics), "--baseline", str(base), "--json", str(cached)]
    if not cache_holds(cached, lambda rec: same_test(rec, base, metrics), [hyp, base]):
        lines = [
            scoring.read_lines(p, what) for p, what in ((hyp, "hypothesis"), (base, "baseline"), (ref, "reference"))
        ]
        record = {
            "hyp": shown(hyp),
            "ref": shown(ref),
            "metrics": metrics,
            "baseline": shown(base),
            "bootstrap": scoring.bootstrap(*lines, metrics),
        }
        with atomic_path(cached) as tmp:
            tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return json.loads(cached.read_text()).get("bootstrap", {}), "mixer-score " + shell(argv)


def same_test(rec: dict, baseline: Path, metrics: List[str]) -> bool:
    """Whether a cached paired bootstrap is against ``baseline`` on ``metrics``.  The baseline is
    compared by its last four path parts (<model>/seed<N>/gen-<subset>/hyp.txt), which name the
    same run on any machine (a committed cache comes back with another machine's absolute paths)."""
    return Path(rec.get("baseline", "")).parts[-4:] == baseline.parts[-4:] and rec.get("metrics") == metrics


def cache_holds(cached: Path, same: Callable[[dict], bool], hyps: List[Path]) -> bool:
    """Whether a cached test is the one asked for: its record is the same test (``same``), and no
    hypothesis file it read has changed since it was written."""
    try:
        rec = json.loads(cached.read_text())
    except (OSError, ValueError):
        return False
    return same(rec) and cached.stat().st_mtime >= max(p.stat().st_mtime for p in hyps)
