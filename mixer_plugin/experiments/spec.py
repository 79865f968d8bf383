"""The experiment-file schema: the frozen dataclasses an experiment file is loaded into
(:func:`~mixer_plugin.experiments.spec_loader.load`, whose docstring gives the file's keys),
the kinds and metrics a file may name, and the error a bad file raises."""

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

KINDS = ("translation", "classification")
METRICS = ("bleu", "chrf", "ter", "tok_bleu", "rouge", "rougeL", "wer", "accuracy")


class ExperimentError(ValueError):
    """A bad experiment file: one line, naming the file and the key."""


EXECUTORS = ("local", "slurm", "submitit-local")  # where the runs go (``executors``)


@dataclass(frozen=True)
class Cluster:
    """Where the runs go: the file's ``cluster:`` and the command line's ``--executor``,
    ``--slurm-partition``, ``--gpus-per-run``, ``--time-limit`` (which win).  ``local``: this
    machine, as ever; ``slurm``: each training, with its decodes, one SLURM job
    (``executors``); ``submitit-local``: those jobs as processes of this machine (a rehearsal,
    and the CI test)."""

    executor: str = "local"
    partition: Optional[str] = None  # None: the cluster's default partition
    gpus_per_run: int = 0
    time_limit: str = "4h"  # each job's; a run longer than that is requeued and resumes


DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def duration(text: str, where: str) -> float:
    """Seconds of ``2h30m``, ``90m``, ``45s`` or ``5400`` (a bare number: seconds); ``where``
    names the flag or the file's key in the error."""
    t = str(text).strip()
    if t.isdigit():
        return float(t)
    m = DURATION.fullmatch(t)
    if not t or m is None:
        raise ExperimentError(f"{where} takes a duration such as 2h30m, 90m, 45s or 5400, not {text!r}")
    h, mins, secs = (int(g or 0) for g in m.groups())
    return 3600.0 * h + 60.0 * mins + secs


@dataclass(frozen=True)
class Carries:
    """An earlier protocol's file (``path``, relative to this one) whose finished runs of ``rows``
    count as this file's where they are the same run with a larger cap (``archive.stages_here``).
    The rows are named, not inferred: a run's commands do not show a change of the code a row
    runs (version 3's multiNN dropout changed multiNN's computation under the same flags)."""

    path: Path
    rows: List[str]


@dataclass(frozen=True)
class Beside:
    """The experiment file (``path``, relative to this one) that this one is read beside: the
    same protocol one setting apart (version 3's 6+6 table beside its 2+2 one).  Each row of
    this file stands beside the row of the same name there, or the one ``rows`` names for it
    (this row -> that row) where the two files name one question differently.  Only the pages
    read it (``depth``); no run depends on it."""

    path: Path
    rows: Dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Generate:
    subset: str = "test"
    average_last: int = 1  # checkpoints averaged before decoding (1: checkpoint_<checkpoint>.pt)
    # last | best (classification picks the best valid accuracy); with average_last > 1, best
    # averages the last average_last checkpoints up to the best validation's (mixer-average --upto-best)
    checkpoint: str = "last"
    flags: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class Score:
    metrics: List[str] = field(default_factory=lambda: ["bleu", "chrf"])
    baseline: Optional[str] = None  # a model: paired bootstrap of every other model against it
    by_source: bool = True  # per-source scores, where the data has a source per test line
    tokenized: bool = False  # + BLEU on the tokenized text (as the WMT / IWSLT papers report)
    compound_split: bool = False  # with tokenized: split a-b as fairseq's compound_split_bleu.sh
    lowercase: bool = False
    # the least gap of the claim metric that counts as a difference: what two runs of one
    # command and seed differed by (float nondeterminism on another machine; experiments/leaderboard.findings.md)
    noise_floor: float = 0.0


@dataclass(frozen=True)
class Claim:
    """A paper's ordering of one row against another: ``relation`` is ``>`` (better),
    ``<`` (worse) or ``~`` (about equal), on the experiment's primary metric, as the paper
    made it on ``task`` (``claims.TASKS``): a table of another task reports the row and
    judges no such claim."""

    relation: str
    other: str
    task: str

    def __str__(self):
        return f"{'≈' if self.relation == '~' else self.relation} {self.other}"


@dataclass(frozen=True)
class Model:
    name: str
    arch: Optional[str]
    train: List[str]  # flags after the experiment's
    seeds: List[int]
    data: str
    prepare: List[str]
    generate: Generate
    score: Score
    decode_of: Optional[str] = None  # decode that model's checkpoints (no training of its own)
    overrides: Dict = field(default_factory=dict)  # --model-overrides at decoding
    paper: str = ""
    paper_rows: List[str] = field(default_factory=list)  # ARCH, ARCH:TABLE or ARCH@DATASET (paper_figures)
    note: str = ""
    claims: List[Claim] = field(default_factory=list)
    source: str = ""  # the experiment file its row comes from (``from:``); "" where it is defined here


@dataclass(frozen=True)
class Experiment:
    name: str
    path: Path
    title: str
    description: str
    kind: str
    task: List[str]  # flags for fairseq-train and for decoding (after --task and the languages)
    train: List[str]
    models: Dict[str, Model]
    results: Optional[Path]  # the markdown file; None: work/<name>/results.md (nothing tracked)
    jobs: Optional[int]  # runs at a time; None: mixer-run fits it to the machine's cores
    threads: Optional[int]  # threads a run; None: likewise
    samples: int  # source / hypothesis / reference lines printed at the end
    speed: Dict[str, Path] = field(default_factory=dict)  # train / decode -> a benchmark's JSON (SPEED)
    # a recipe chosen on the validation set: candidates in order of added regularisation, which
    # claims.choose_in_order reads (the results file shows the rule applied)
    choose: List[str] = field(default_factory=list)
    cluster: Cluster = field(default_factory=Cluster)
    carries: Optional["Carries"] = None
    beside: Optional["Beside"] = None
    # what the file's verdicts hold for, said with each ("2+2 layers, d=256, 105k pairs"); "" unsaid
    setting: str = ""

    @property
    def datasets(self) -> List[str]:
        return list(dict.fromkeys(m.data for m in self.models.values()))
