"""An experiment's runs, read from their folders: what each training log says, the scores
of each seed, decoding speed, the benchmarks named under ``speed:``, and the paired
bootstraps (each row's seed mean against its baseline's and against the other row of each
of its claims, one test over every seed; seed by seed against the baseline's run of the
same seed, and a baseline's later seeds against its first), cached beside the hypotheses
they test.

:func:`collect` gives one :class:`ModelResult` per model; :func:`run_bootstraps` adds the
p-values to them.  ``claims`` judges them, ``report`` writes them, ``archive`` keeps each
run's small outputs.
"""

import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .. import scoring
from ..data.workspace import data_root
from ..files import atomic_path
from ..paths import PROJECT, shown
from . import claims
from .argv import flag_value, portable_in, shell, stopping_rule
from .commands import prep_manifest
from .spec import Experiment, Model
from .stages import run_dir
from .trainlog import Selection, hours_to, parse_train_log, stopping_point

# the metrics a results table shows, by the key the scorer gives them, and their names
PRIMARY = {
    "bleu": "BLEU",
    "tok_bleu": "tok. BLEU",
    "chrf": "chrF",
    "ter": "TER",
    "wer": "WER",
    "rouge1": "R-1",
    "rouge2": "R-2",
    "rougeL": "R-L",
    "accuracy": "accuracy",
}


# ------------------------------------------------------------------ logs
def decode_speed(path: Path) -> Optional[float]:
    """sentences/s that fairseq-generate reports for the decoding it timed."""
    if not path.is_file():
        return None
    m = re.findall(r"Translated [\d,]+ sentences .* \(([\d.]+) sentences/s", path.read_text(errors="replace"))
    return float(m[-1]) if m else None


def test_accuracy(path: Path) -> Optional[float]:
    if not path.is_file():
        return None
    m = re.findall(r"valid on '\w+' subset .*\| accuracy ([\d.]+)", path.read_text(errors="replace"))
    return float(m[-1]) if m else None


def bench_speeds(exp: Experiment) -> Dict[str, dict]:
    """The benchmarks named under ``speed:``, read where they exist: kind (train / decode)
    -> {"meta": the run's meta, "rows": model -> its row}.  A decoding benchmark times
    several (L, beam): each model's row is the shortest L at the experiment's beam (its
    first beam when the experiment sets none)."""
    out = {}
    for kind, path in exp.speed.items():
        path = path if path.is_absolute() else PROJECT / path
        if not path.is_file():
            continue
        payload = json.loads(path.read_text())
        rows = payload["rows"]
        if kind == "decode":
            flags = next(iter(exp.models.values())).generate.flags
            beam = int(flag_value(flags, "--beam") or rows[0]["beam"])
            rows = sorted((r for r in rows if r["beam"] == beam), key=lambda r: r["L"])
        picked = {}
        for r in rows:
            picked.setdefault(r["model"], r)
        out[kind] = {"meta": payload["meta"], "rows": picked, "path": path}
    return out


# ------------------------------------------------------------------ runs
@dataclass
class ModelResult:
    model: Model
    runs: List[Path]  # finished run folders, one per seed
    logs: List[dict]
    scores: List[dict]  # score.json of each run (translation) / {"accuracy": x}
    decode: List[Optional[float]]
    distinct: List[Tuple[int, int]] = field(default_factory=list)  # (distinct, all) hypotheses per seed
    extra: Dict = field(default_factory=dict)  # seeds statistics, bootstrap
    records: List[dict] = field(default_factory=list)  # run_record of each run

    @property
    def log(self) -> dict:
        return self.logs[0] if self.logs else {"params": None, "train": [], "valid": [], "last_update": 0}

    def wps(self) -> Optional[float]:
        """Training words/s: the median of fairseq's per-interval figures over every seed's log.
        The median, because an interval that holds a validation, a checkpoint save or a resume
        reads several times lower than the rest, and a mean of one seed's intervals let such
        outliers and a busy hour decide the column (the leaderboard's transformer read 1,009
        words/s on seed 1, which shared the machine with the test suite, and 1,767 on seed 2)."""
        pts = [p["wps"] for log in self.logs for p in log["train"] if "wps" in p]
        return statistics.median(pts) if pts else None


RECORD = "run.json"  # a finished run, as ``run_record`` gives it: what is committed of it, with its hypotheses
# of each train_inner point, what a table or plot reads: the curve, the speed and the step
TRAIN_KEYS = ("num_updates", "loss", "nll_loss", "ppl", "wps", "ups", "wpb", "bsz", "lr", "gnorm", "wall", "train_wall")


def run_record(exp: Experiment, m: Model, seed: int) -> Optional[dict]:
    """A finished run as one small record, or None while it is not finished: its model and
    seed, parameters, the last update, the training points (``TRAIN_KEYS``) and every
    validation, the scores (every metric, per source where the data has sources), decoding
    speed, and each stage's record (its commands relative to the checkout and ``work/``,
    the machine, the time).  A run restored from its committed copy is that record
    (``RECORD`` in its folder); one that ran here is read from its logs.  The tables, the
    plots and the bootstraps need this and the hypotheses, nothing else."""
    run = run_dir(exp, m, seed)
    if (run / RECORD).is_file():
        return json.loads((run / RECORD).read_text(encoding="utf-8"))
    src = exp.models[m.decode_of] if m.decode_of else m  # a decode's training is the run it decodes
    trained = run_dir(exp, src, seed)
    if not decoded_since_trained(run, trained, scored=exp.kind != "classification"):
        return None
    record = read_record(exp, m, seed, trained / "train.log", run / f"gen-{m.generate.subset}")
    if record is not None:  # (the stamps only of a finished run)
        record["stages"] = stage_records(run)
    return record


def decoded_since_trained(run: Path, train_run: Path, scored: bool = True) -> bool:
    """Whether a run folder's decode is of its training as it stands.  The runner stamps a
    training's start (``train.begun.json``) and its end (``train.json``, removed at the start);
    a training started again since its decode (resumed for a longer budget, or begun anew)
    leaves the old decode's scores in place until its own decode replaces them, and those are
    no result of the run the experiment now describes (they showed as one: a run resumed from
    12,500 to a cap of 25,000 read as peaking before the new cap).  A folder no runner trained
    (no start stamp: made by hand) is read as it is.  Read from the stamps' file times: the
    runner never copies a work folder (a restored run is read from its record).  ``scored``:
    the decode ends in a score stage (translation and summarization; a classifier's ends at
    its validation)."""
    stamps = train_run / ".stages"
    if not (stamps / "train.begun.json").is_file():
        return True
    trained = stamps / "train.json"
    last = run / ".stages" / ("score.json" if scored else "generate.json")
    if not trained.is_file() or not last.is_file():
        return False  # trained, or decoded, as we look
    since = trained.stat().st_mtime_ns
    decoded = [run / ".stages" / f"{name}.json" for name in ("average", "generate", "score")]
    return all(p.stat().st_mtime_ns >= since for p in decoded if p.is_file())


def read_record(exp: Experiment, m: Model, seed: int, train_log: Path, gen: Path) -> Optional[dict]:
    """``run_record`` from a run's logs, all but its stage records: its training log and its
    decoding folder (scores, fairseq-generate's or fairseq-validate's log); None without scores."""
    decode = None
    if exp.kind == "classification":
        accuracy = test_accuracy(gen / "validate.log")
        if accuracy is None:
            return None
        scores = {"accuracy": accuracy}
    else:
        if not (gen / "score.json").is_file():
            return None
        scores = {k: v for k, v in json.loads((gen / "score.json").read_text()).items() if k not in ("hyp", "ref")}
        decode = decode_speed(gen / "generate.err")  # fairseq-generate's log
    log = parse_train_log(train_log)
    return {
        "experiment": exp.name,
        "model": m.name,
        "seed": seed,
        "params": log["params"],
        "last_update": log["last_update"],
        "train": [{k: p[k] for k in TRAIN_KEYS if k in p} for p in log["train"]],
        "valid": log["valid"],
        "scores": scores,
        "decode_speed": decode,
    }


def stage_records(run: Path) -> Dict[str, dict]:
    """Each finished stage's stamp, its commands as they read on any machine
    (``argv.portable_in``)."""
    out = {}
    for path in sorted((run / ".stages").glob("*.json")):
        if path.stem.endswith("begun"):
            continue
        stamp = json.loads(path.read_text())
        out[path.stem] = {**stamp, "commands": [portable_in(run, argv) for argv in stamp["commands"]]}
    return out


def collect(exp: Experiment) -> List[ModelResult]:
    out = []
    for m in exp.models.values():
        runs, logs, scores, decode, distinct, records = [], [], [], [], [], []
        for seed in m.seeds:
            record = run_record(exp, m, seed)
            if record is None:
                continue
            run = run_dir(exp, m, seed)
            runs.append(run)
            records.append(record)
            logs.append({k: record[k] for k in ("params", "train", "valid", "last_update")})
            scores.append(record["scores"])
            if exp.kind != "classification":
                decode.append(record["decode_speed"])
                if summarizes(m):  # the only tables that show the count
                    hyps = (run / f"gen-{m.generate.subset}" / "hyp.txt").read_text(encoding="utf-8").splitlines()
                    distinct.append((len(set(hyps)), len(hyps)))
        out.append(ModelResult(m, runs, logs, scores, decode, distinct, records=records))
    return out


# ------------------------------------------------------------ selection
@dataclass(frozen=True)
class Peak:
    """Where a run's validation peaked on the metric its checkpoints are chosen by."""

    update: int
    value: float
    hours: Optional[float]  # hours in training steps to it (trainlog.hours_to; None: not logged)
    stopped: Optional[int]  # the update where the stopping rule ended the training, None: it did not


def selection(exp: Experiment, m: Model) -> Optional[Selection]:
    """How a model's training chooses its checkpoints when it does so on a validation metric
    other than the loss (``--best-checkpoint-metric`` with ``--maximize-best-checkpoint-metric``,
    e.g. ``bleu`` from ``--eval-bleu``), else None.  A decode reads the training it decodes."""
    chosen = stopping_rule(train_flags(exp, m))
    return None if chosen.metric == "loss" else chosen


def train_flags(exp: Experiment, m: Model) -> List[str]:
    """The fairseq-train flags of a model's training (a decode's: the training it decodes)."""
    src = exp.models[m.decode_of] if m.decode_of else m
    return [*exp.train, *src.train]


def peak(log: dict, chosen: Selection) -> Optional[Peak]:
    """Where a run's log peaked: fairseq's checkpoint_best.pt under its stopping rule, applied
    to the whole log (``trainlog.stopping_point``: a training resumed after a kill would
    otherwise train past it), and the hours of training to it."""
    best, stopped = stopping_point(log["valid"], chosen.metric, chosen.maximize, chosen.patience)
    if best is None:
        return None
    update = int(best["num_updates"])
    return Peak(update, best[chosen.metric], hours_to(log["train"], update), stopped)


def keys(exp: Experiment, m: Model) -> List[str]:
    out = []
    for metric in m.score.metrics:
        out += ["rouge1", "rouge2", "rougeL"] if metric == "rouge" else [metric]
    if m.score.tokenized and "tok_bleu" not in out:
        out.insert(0, "tok_bleu")
    return [k for k in out if k in PRIMARY]


def summarizes(m: Model) -> bool:
    return "rouge" in m.score.metrics


def seed_stats(r: ModelResult, key: str) -> Optional[Tuple[float, Optional[float], List[float]]]:
    values = [s[key] for s in r.scores if key in s]
    if not values:
        return None
    if len(values) == 1:
        return values[0], None, values
    return statistics.mean(values), statistics.stdev(values), values


def first_run(r: ModelResult) -> Optional[int]:
    """The index in ``r.runs`` of the model's first seed (the first it lists), None until
    that run has finished.  The comparisons of the means wait for it: without it, another
    seed standing in for a missing one (a baseline seed being trained again) would change
    the comparison without a word."""
    names = [run.name for run in r.runs]
    first = f"seed{r.model.seeds[0]}"
    return names.index(first) if first in names else None


# ------------------------------------------------------------ bootstraps
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
    if not (cached.is_file() and pooled_holds(cached, names, mine + theirs)):
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


def pooled_holds(cached: Path, names: Dict[str, List[str]], hyps: List[Path]) -> bool:
    try:
        rec = json.loads(cached.read_text())
    except ValueError:
        return False
    same = all(rec.get(k) == v for k, v in names.items())
    return same and cached.stat().st_mtime >= max(p.stat().st_mtime for p in hyps)


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
    if not cache_holds(cached, base, [hyp], ",".join(metrics)):
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


def cache_holds(cached: Path, baseline: Path, hyps: List[Path], metrics: str) -> bool:
    """Whether a cached bootstrap is the test asked for.  The baseline is compared by its
    last four path parts (<model>/seed<N>/gen-<subset>/hyp.txt), which name the same run on
    any machine (a committed cache comes back with another machine's absolute paths)."""
    if not cached.is_file():
        return False
    try:
        rec = json.loads(cached.read_text())
    except ValueError:
        return False
    return (
        Path(rec.get("baseline", "")).parts[-4:] == baseline.parts[-4:]
        and rec.get("metrics") == metrics.split(",")
        and cached.stat().st_mtime >= max(p.stat().st_mtime for p in [baseline, *hyps])
    )
