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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..paths import PROJECT
from .argv import flag_value, portable_in, stopping_rule
from .record import FILE, TRAIN_KEYS, RunRecord
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
    records: List[RunRecord]  # the record of each run, in the same order
    distinct: List[Tuple[int, int]] = field(default_factory=list)  # (distinct, all) hypotheses per seed
    extra: Dict = field(default_factory=dict)  # seeds statistics, bootstrap

    @property
    def first(self) -> Optional[RunRecord]:
        """The first finished seed's record (the row's parameters and update count)."""
        return self.records[0] if self.records else None

    @property
    def scores(self) -> List[dict]:
        return [r.scores for r in self.records]

    @property
    def decode(self) -> List[Optional[float]]:
        return [r.decode_speed for r in self.records]

    def wps(self) -> Optional[float]:
        """Training words/s: the median of fairseq's per-interval figures over every seed's log.
        The median, because an interval that holds a validation, a checkpoint save or a resume
        reads several times lower than the rest, and a mean of one seed's intervals let such
        outliers and a busy hour decide the column (the leaderboard's transformer read 1,009
        words/s on seed 1, which shared the machine with the test suite, and 1,767 on seed 2)."""
        pts = [p["wps"] for r in self.records for p in r.train if "wps" in p]
        return statistics.median(pts) if pts else None


def run_record(exp: Experiment, m: Model, seed: int) -> Optional[RunRecord]:
    """A finished run as one small record, or None while it is not finished: its model and
    seed, parameters, the last update, the training points (``TRAIN_KEYS``) and every
    validation, the scores (every metric, per source where the data has sources), decoding
    speed, and each stage's record (its commands relative to the checkout and ``work/``,
    the machine, the time).  A run restored from its committed copy is that record
    (``record.FILE`` in its folder); one that ran here is read from its logs.  The tables, the
    plots and the bootstraps need this and the hypotheses, nothing else."""
    run = run_dir(exp, m, seed)
    if (run / FILE).is_file():
        return RunRecord.load(run / FILE)
    src = exp.models[m.decode_of] if m.decode_of else m  # a decode's training is the run it decodes
    trained = run_dir(exp, src, seed)
    if not decoded_since_trained(run, trained, scored=exp.kind != "classification"):
        return None
    record = read_record(exp, m, seed, trained / "train.log", run / f"gen-{m.generate.subset}")
    # (the stamps only of a finished run)
    return None if record is None else replace(record, stages=stage_records(run))


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


def read_record(exp: Experiment, m: Model, seed: int, train_log: Path, gen: Path) -> Optional[RunRecord]:
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
    return RunRecord(
        experiment=exp.name,
        model=m.name,
        seed=seed,
        params=log["params"],
        last_update=log["last_update"],
        train=[{k: p[k] for k in TRAIN_KEYS if k in p} for p in log["train"]],
        valid=log["valid"],
        scores=scores,
        decode_speed=decode,
    )


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
        runs, records, distinct = [], [], []
        for seed in m.seeds:
            record = run_record(exp, m, seed)
            if record is None:
                continue
            run = run_dir(exp, m, seed)
            runs.append(run)
            records.append(record)
            if summarizes(m):  # the only tables that show the count
                hyps = (run / f"gen-{m.generate.subset}" / "hyp.txt").read_text(encoding="utf-8").splitlines()
                distinct.append((len(set(hyps)), len(hyps)))
        out.append(ModelResult(m, runs, records, distinct))
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


def peak(record: RunRecord, chosen: Selection) -> Optional[Peak]:
    """Where a run peaked: fairseq's checkpoint_best.pt under its stopping rule, applied
    to the whole log (``trainlog.stopping_point``: a training resumed after a kill would
    otherwise train past it), and the hours of training to it."""
    best, stopped = stopping_point(record.valid, chosen.metric, chosen.maximize, chosen.patience)
    if best is None:
        return None
    update = int(best["num_updates"])
    return Peak(update, best[chosen.metric], hours_to(record.train, update), stopped)


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
