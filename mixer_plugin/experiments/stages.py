"""The stages of one run (one model, one seed) and the commands they run.

    prepare   mixer-prepare RECIPE                   -> work/data/<recipe>/{bin,ref,prep.json}
    train     fairseq-train (torchrun with NGPU > 1)  -> <run>/checkpoint*.pt, train.log
    average   mixer-average                           -> <run>/averaged_last<N>[_upto_best].pt (average_last > 1)
    generate  fairseq-generate + mixer-postprocess    -> <run>/gen-<subset>/{hyp.txt,hyp.tok}
              (classification: fairseq-validate on the test subset -> <run>/test.log)
    score     mixer-score                             -> <run>/gen-<subset>/score.json

Every stage is a list of stock command lines, each written at the head of the stage's
log (``$ python -m fairseq_cli.train ...``) and listed in the results' Commands, so
that each can be copied and run by hand.  A stage leaves a stamp
``<run>/.stages/<stage>.json`` with its commands and a hash of what it was given (its
commands and the stamps it depends on); a rerun skips a stage whose stamp matches.  Training is
the exception that makes long runs resumable: a killed ``fairseq-train`` is started
again with the same save dir and continues from ``checkpoint_last.pt`` (or, where that
does not load, from the newest checkpoint that does: ``checkpoints.resume_point``), and a changed
``--max-update`` (a longer budget) continues too; any other change to the training
command starts the run over (the old folder is kept as ``<run>.stale-<time>``).
"""

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from ..data.workspace import data_root
from ..files import atomic_path, machine
from ..paths import PLUGIN, PYTHON, WORK, shown
from . import guard
from .checkpoints import resume_point
from .spec import Experiment, Model
from .trainlog import Selection, new_saves, saved_stop


class StageError(RuntimeError):
    """A stage's command failed: one line naming the stage, the command and its log."""


class StagePaused(StageError):
    """A training the runner ended at a checkpoint because it is pausing (``TrainingWatch``):
    unfinished, so unstamped, and continued from that checkpoint by the next run."""


@dataclass
class Stage:
    name: str  # prepare | train | average | generate | score
    commands: List[List[str]]
    log: Path  # stdout + stderr of the commands
    outputs: List[Path]  # what must exist afterwards
    after: List["Stage"] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    stamp: Optional[Path] = None
    cwd: Optional[Path] = None

    def inputs(self) -> str:
        """What the stage was given: its commands (without ``--max-update`` for training,
        which may grow) and the stamps of what it depends on."""
        parts = [
            json.dumps(self.commands if self.name != "train" else [drop_flag(c, "--max-update") for c in self.commands])
        ]
        parts += [s.stamp.read_text() if s.stamp and s.stamp.is_file() else "" for s in self.after]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

    def record(self) -> Optional[dict]:
        if self.stamp and self.stamp.is_file():
            return json.loads(self.stamp.read_text())
        return None

    def done(self) -> bool:
        """Stamped with today's commands and inputs, its outputs there, and every stage it
        depends on done too: its inputs hash only the stamps next to it, so a decode two
        steps from a training that runs again would read as done until the step between
        had run again (the runner checks each stage as it comes, but a dry run and the
        count of stages to run read them all at the start)."""
        rec = self.record()
        return (
            bool(rec)
            and rec["inputs"] == self.inputs()
            and rec["commands"] == self.commands
            and all(p.exists() for p in self.outputs)
            and all(s.done() for s in self.after)
        )


def drop_flag(argv: List[str], flag: str) -> List[str]:
    """``argv`` without ``flag VALUE`` and ``flag=VALUE``."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == flag:
            skip = True
        elif not a.startswith(flag + "="):
            out.append(a)
    return out


def flag_value(argv: List[str], flag: str) -> Optional[str]:
    """The last value of ``flag``, given as ``flag VALUE`` or ``flag=VALUE`` (argparse: the
    last one wins)."""
    value = None
    for a, b in zip([*argv, None], [*argv[1:], None]):
        if a == flag and b is not None:
            value = b
        elif a is not None and a.startswith(flag + "="):
            value = a[len(flag) + 1 :]
    return value


def stopping_rule(argv: List[str]) -> Selection:
    """The checkpoint choice and early stop a fairseq-train command asks for: its
    ``--best-checkpoint-metric`` (fairseq's default: the loss), whether larger is better, and its
    ``--patience`` (fairseq's default -1: none).  A ``--patience`` that is no integer is no
    rule: fairseq's argparse rejects it in one line naming the flag when the training starts."""
    patience = flag_value(argv, "--patience") or "-1"
    return Selection(
        flag_value(argv, "--best-checkpoint-metric") or "loss",
        "--maximize-best-checkpoint-metric" in argv,
        int(patience) if re.fullmatch(r"[-+]?\d+", patience) else -1,
    )


def portable(argv: List[str], checkout: str, work: str) -> List[str]:
    """A command as it reads on any machine: the interpreter as ``python`` and paths
    under the work folder or the checkout relative to them."""
    out = []
    for i, a in enumerate(map(str, argv)):
        if i == 0:  # wherever the interpreter lives, a virtualenv inside the checkout too
            a = re.sub(r"^python[\d.]*$", "python", Path(a).name)
        elif a.startswith(work + "/"):
            a = "<work>/" + a[len(work) + 1 :]
        elif a.startswith(checkout + "/"):
            a = "<checkout>/" + a[len(checkout) + 1 :]
        out.append(a)
    return out


def portable_in(run: Path, argv: List[str]) -> List[str]:
    """``portable`` for a command of the run folder ``run`` (``work/<exp>/<model>/seed<N>``):
    its checkout is the plugin's, its work folder the one the run lies in."""
    return portable(argv, str(PLUGIN.parent), str(run.parents[2]))


def placed_in(run: Path, argv: List[str]) -> List[str]:
    """A recorded (``portable``) command of the run folder ``run`` as it reads here: the
    inverse of ``portable_in``."""
    places = {"<work>/": f"{run.parents[2]}/", "<checkout>/": f"{PLUGIN.parent}/"}
    return [next((here + a[len(p) :] for p, here in places.items() if a.startswith(p)), a) for a in map(str, argv)]


def shell(argv: List[str]) -> str:
    """A command as a user types it: this interpreter as ``python``, paths inside the
    checkout relative to it."""
    return shlex.join("python" if str(a) == PYTHON else shown(a) if os.path.isabs(str(a)) else str(a) for a in argv)


# --------------------------------------------------------------------- layout
def run_dir(exp: Experiment, model: Model, seed: int) -> Path:
    return WORK / exp.name / model.name / f"seed{seed}"


def prep_manifest(root: Path) -> dict:
    path = root / "prep.json"
    return json.loads(path.read_text()) if path.is_file() else {}


# ------------------------------------------------------------------- commands
def fairseq(tool: str) -> List[str]:
    """``fairseq-<tool>`` as a module of this interpreter (the console scripts may be
    missing from PATH in a virtualenv that is not activated)."""
    return [PYTHON, "-m", f"fairseq_cli.{tool}"]


def ngpu() -> int:
    """``NGPU=N`` (else the GPUs torch sees): N > 1 trains with fairseq's DDP via torchrun."""
    value = os.environ.get("NGPU")
    if value:
        if not value.isdigit():
            raise ValueError(f"NGPU must be a number of GPUs, not {value!r}")
        return int(value)
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001  (no torch: CPU)
        return 0


# glibc's allocator, as fairseq's CPU training needs it.  By default glibc serves large
# blocks with mmap and hands freed memory back to the kernel, so every training step
# faults its buffers in again, page by page.  A fixed 32 MiB mmap threshold (glibc's
# maximum) and no trimming keep the freed blocks for the next step: 3.3x fewer page
# faults and kernel time for the CPU-size transformer, 1.05-1.18x its training speed,
# and 1.4x multiNN's (results/bench/bench_allocator_cpu.md).  Set in the environment of every
# command the runner starts; a value the user exported wins.
ALLOCATOR_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(4 << 30),
    "MALLOC_TOP_PAD_": str(256 << 20),
}


def command_env(threads: Optional[int] = None, **extra: str) -> Dict[str, str]:
    """The environment of a stock fairseq command the runner or a benchmark starts:
    the allocator settings above unless already set, ``threads`` OpenMP / MKL threads
    (None: the library's default, all cores), unbuffered output, then ``extra``."""
    env = {**ALLOCATOR_ENV, **os.environ, "PYTHONUNBUFFERED": "1"}
    if threads is None:
        env.pop("OMP_NUM_THREADS", None)
        env.pop("MKL_NUM_THREADS", None)
    else:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    env.update(extra)
    return env


PRECISIONS = {"fp32": [], "fp16": ["--fp16"], "bf16": ["--bf16"]}


# the flags that say where a command runs, not what it computes: a run trained in bf16 on a GPU
# is the same run to a CPU machine, whose commands carry --cpu instead (and decode in fp32),
# as a run is the same on another CPU or with other threads, whose rounding differs too
DEVICE_FLAGS = frozenset({"--cpu", *(flag for flags in PRECISIONS.values() for flag in flags)})


def beside_device(argv: List[str]) -> List[str]:
    """``argv`` without ``DEVICE_FLAGS``: what a committed run and today's command must share."""
    return [a for a in argv if a not in DEVICE_FLAGS]


def precision() -> List[str]:
    """``PRECISION=fp16|bf16``: fairseq's --fp16 / --bf16 for training and decoding (on
    a GPU; fairseq-train --fp16 --cpu asserts CUDA)."""
    value = os.environ.get("PRECISION", "fp32")
    if value not in PRECISIONS:
        raise ValueError(f"PRECISION must be one of {', '.join(PRECISIONS)}, not {value!r}")
    return PRECISIONS[value]


def task_flags(exp: Experiment, prep: dict) -> List[str]:
    """The plugin, the task of the experiment's kind and the data's languages, then the
    experiment's own task flags: what training and decoding both need."""
    if exp.kind == "classification":
        return ["--user-dir", str(PLUGIN), "--task", "sentence_prediction", *exp.task]
    # before the data is prepared (a dry run) the languages are not known yet
    return [
        "--user-dir",
        str(PLUGIN),
        "--task",
        "translation",
        "--source-lang",
        prep.get("src", "SRC"),
        "--target-lang",
        prep.get("tgt", "TGT"),
        *exp.task,
    ]


def train_command(exp: Experiment, model: Model, seed: int, root: Path, save: Path) -> List[str]:
    flags = [
        *task_flags(exp, prep_manifest(root)),
        *exp.train,
        "--arch",
        model.arch,
        *model.train,
        "--seed",
        str(seed),
        "--save-dir",
        str(save),
        *precision(),
    ]
    gpus = ngpu()
    if gpus == 0 and "--cpu" not in flags:
        flags.append("--cpu")
    if gpus > 1:
        # fairseq's own DDP; --update-freq divided so the tokens per update stay the same
        update_freq = int(flag_value(flags, "--update-freq") or 1)
        flags += ["--update-freq", str(max(1, update_freq // gpus))]
        return [
            "torchrun",
            "--standalone",
            "--nproc_per_node",
            str(gpus),
            shutil.which("fairseq-train") or "fairseq-train",
            str(root / "bin"),
            *flags,
        ]
    return [*fairseq("train"), str(root / "bin"), *flags]


def checkpoint(model: Model, save: Path) -> Path:
    if model.generate.average_last > 1:
        upto = "_upto_best" if model.generate.checkpoint == "best" else ""
        return save / f"averaged_last{model.generate.average_last}{upto}.pt"
    return save / f"checkpoint_{model.generate.checkpoint}.pt"


def decode_commands(exp: Experiment, model: Model, root: Path, save: Path, out: Path) -> List[List[str]]:
    prep = prep_manifest(root)
    subset = model.generate.subset
    overrides = ["--model-overrides", repr(model.overrides)] if model.overrides else []
    cpu = ["--cpu"] if ngpu() == 0 else precision()
    if exp.kind == "classification":
        return [
            [
                *fairseq("validate"),
                str(root / "bin"),
                *task_flags(exp, prep),
                "--path",
                str(checkpoint(model, save)),
                "--valid-subset",
                subset,
                *model.generate.flags,
                *overrides,
                *cpu,
            ]
        ]
    return [
        # --required-batch-size-multiple 1: with fairseq's default 8 the last batch of a
        # subset whose size is not a multiple of 8 is dropped (facebookresearch/fairseq#5036)
        [
            *fairseq("generate"),
            str(root / "bin"),
            *task_flags(exp, prep),
            "--path",
            str(checkpoint(model, save)),
            "--gen-subset",
            subset,
            "--nbest",
            "1",
            "--required-batch-size-multiple",
            "1",
            *model.generate.flags,
            *overrides,
            *cpu,
            "--results-path",
            str(out),
        ],
        [
            PYTHON,
            "-m",
            "mixer_plugin.data.postprocess",
            str(out / f"generate-{subset}.txt"),
            "--prep",
            str(root / "prep.json"),
            "--split",
            subset,
            "--out-dir",
            str(out),
        ],
    ]


def score_command(exp: Experiment, model: Model, root: Path, out: Path) -> List[str]:
    prep = prep_manifest(root)
    subset = model.generate.subset
    ref = prep.get("references", {}).get(subset, {"detok": f"ref/{subset}.TGT", "tok": f"ref/{subset}.tok.TGT"})
    argv = [
        PYTHON,
        "-m",
        "mixer_plugin.scoring",
        str(out / "hyp.txt"),
        str(root / ref["detok"]),
        "--metrics",
        ",".join(m for m in model.score.metrics if m != "tok_bleu"),
        "--json",
        str(out / "score.json"),
        "--label",
        model.name,
    ]
    if model.score.tokenized or "tok_bleu" in model.score.metrics:
        argv += ["--hyp-tok", str(out / "hyp.tok"), "--ref-tok", str(root / ref["tok"])]
        if model.score.compound_split:
            argv.append("--compound-split")
    if model.score.lowercase:
        argv.append("--lowercase")
    sources = prep.get("sources", {}).get(subset)
    if model.score.by_source and sources:
        argv += ["--sources", str(root / sources)]
    return argv


# --------------------------------------------------------------------- stages
def prepare_stage(recipe: str, prepare: List[str]) -> Stage:
    from ..recipes import command

    root = data_root(recipe, prepare)
    return Stage(
        "prepare",
        [command(recipe, [*prepare, "--root", str(root)])],
        root / "prepare.log",
        [root / "prep.json"],
        stamp=root / ".stages" / "prepare.json",
    )


def run_stages(exp: Experiment, model: Model, seed: int, prepared: Stage, trained: Optional[Stage]) -> List[Stage]:
    """The stages of one (model, seed); ``trained``: the train stage of ``decode_of``."""
    root = prepared.outputs[0].parent
    run = run_dir(exp, model, seed)
    stamps = run / ".stages"
    save = trained.outputs[0].parent if trained is not None else run
    stages = []
    if trained is None:
        trained = Stage(
            "train",
            [train_command(exp, model, seed, root, run)],
            run / "train.log",
            [run / "checkpoint_last.pt"],
            [prepared],
            stamp=stamps / "train.json",
        )
        stages.append(trained)
    last = trained
    if model.generate.average_last > 1:
        n = model.generate.average_last
        last = Stage(
            "average",
            [
                [
                    PYTHON,
                    "-m",
                    "mixer_plugin.experiments.checkpoints",
                    str(save),
                    "--last",
                    str(n),
                    # the best by the training's stopping rule over its whole log (a resumed
                    # training's own count restarted: trainlog)
                    *(["--upto-best", "--log", str(trained.log)] if model.generate.checkpoint == "best" else []),
                    "--output",
                    str(checkpoint(model, save)),
                ]
            ],
            stamps / "average.log",
            [checkpoint(model, save)],
            [trained],
            stamp=stamps / "average.json",
        )
        stages.append(last)
    out = run / f"gen-{model.generate.subset}"
    if exp.kind == "classification":
        gen = Stage(
            "generate",
            decode_commands(exp, model, root, save, out),
            out / "validate.log",
            [out / "validate.log"],
            [last, prepared],
            stamp=stamps / "generate.json",
        )
        stages.append(gen)
        return stages
    gen = Stage(
        "generate",
        decode_commands(exp, model, root, save, out),
        out / "generate.err",
        [out / "hyp.txt"],
        [last, prepared],
        stamp=stamps / "generate.json",
    )
    score = Stage(
        "score",
        [score_command(exp, model, root, out)],
        out / "score.log",
        [out / "score.json"],
        [gen],
        stamp=stamps / "score.json",
    )
    return stages + [gen, score]


# -------------------------------------------------------------------- running
STOP_POLL = 2.0  # seconds between a training's looks at its log for a new checkpoint (TrainingWatch)


def execute(
    stage: Stage,
    threads: int,
    hold: Sequence[int] = (),
    say: Callable[[str], None] = print,
    pausing: Callable[[], bool] = lambda: False,
) -> float:
    """Run a stage's commands (skipping nothing; the caller checks ``done``); return
    the seconds it took.  On failure: StageError with what the command said last (its
    one-line error, a traceback's last line) and its log.

    Each command runs under ``guard`` (its own process group, which dies with the runner)
    and inherits ``hold``, the run's locks; ``say`` prints the stage's one-line notes.
    A training ends at its next checkpoint once ``pausing()`` (StagePaused); any other
    stage runs to its end, being minutes long."""
    if stage.name == "train":
        restart_if_changed(stage, say)
        note = resume_point(stage.outputs[0].parent)
        if note:
            say(note)
    stage.log.parent.mkdir(parents=True, exist_ok=True)
    if stage.stamp:
        stage.stamp.parent.mkdir(parents=True, exist_ok=True)
        stage.stamp.unlink(missing_ok=True)
    env = command_env(threads, **stage.env)
    start = time.time()
    mode = "a" if stage.name == "train" else "w"  # a resumed training appends to its log
    with open(stage.log, mode, encoding="utf-8") as log:
        for argv in stage.commands:
            args = [str(a) for a in argv]
            watch = TrainingWatch(stage, args, say, pausing) if stage.name == "train" else None
            if watch is not None and watch.rule_ended():
                continue  # the rule had ended this training before the runner was stopped
            log.write(f"$ {shell(argv)}\n")
            log.flush()
            code = guard.run(
                args,
                hold=hold,
                until=watch,
                every=STOP_POLL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=stage.cwd,
            )
            if code != 0:
                # what the command said last names the cause; its command line heads the log
                said = last_line(stage.log) or shell(argv)
                raise StageError(f"{stage.name} failed (exit {code}): {said}  (log: {shown(stage.log)})")
            if watch is not None and watch.paused is not None:
                watch.ended()
                raise StagePaused(f"paused after its checkpoint of update {watch.paused:,} (log: {shown(stage.log)})")
    missing = [p for p in stage.outputs if not p.exists()]
    if missing:
        raise StageError(f"{stage.name} left no {shown(missing[0])} (log: {shown(stage.log)})")
    seconds = time.time() - start
    if stage.stamp:
        write_json(
            stage.stamp,
            {
                "inputs": stage.inputs(),
                "commands": stage.commands,
                "seconds": round(seconds, 1),
                "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "threads": threads,
                "machine": machine(),
            },
        )
    return seconds


class TrainingWatch:
    """``guard.run``'s ``until`` for a training, asked every STOP_POLL seconds: it reads the
    checkpoints fairseq has saved since it last looked, and says True (end the training) only
    right after one, the moment a training ends losing nothing, when

    - its stopping rule, applied to the whole log, has ended it (``saved_stop``): fairseq
      restarts its ``--patience`` count on a resume and would train on past the point where
      the unbroken training stopped, up to the rule's whole stretch, and its
      ``--keep-interval-updates`` could then delete the checkpoints that end at the best; or
    - the runner is pausing (``pausing()``: SIGUSR1, ``--stop-after``); ``paused`` is then that
      checkpoint's update."""

    def __init__(self, stage: Stage, argv: List[str], say: Callable[[str], None], pausing: Callable[[], bool]):
        self.log = stage.log
        self.chosen = stopping_rule(argv)
        self.say = say
        self.pausing = pausing
        self.offset = stage.log.stat().st_size if stage.log.is_file() else 0  # what came before is no news
        self.stop: Optional[int] = None
        self.paused: Optional[int] = None

    def rule_ended(self) -> bool:
        """Whether the stopping rule, read from the whole log, has ended the training (said once)."""
        if self.chosen.patience <= 0:
            return False
        stop = saved_stop(self.log, self.chosen)
        if stop is not None and self.stop is None:
            self.stop = stop
            self.say(f"{shown(self.log)}: stopped at update {stop}, where its stopping rule ends it over the whole log")
        return stop is not None

    def __call__(self) -> bool:
        saves, self.offset = new_saves(self.log, self.offset)
        if not saves:
            return False
        if self.rule_ended():
            return True
        if self.pausing():
            self.paused = saves[-1]
            return True
        return False

    def ended(self) -> None:
        """The training has ended: a checkpoint it saved after the last look (one saving
        faster than the runner looks, before the SIGTERM landed) is where it continues from."""
        saves, self.offset = new_saves(self.log, self.offset)
        if saves and self.paused is not None:
            self.paused = saves[-1]


def last_line(log: Path) -> str:
    """What a failed command said last (a one-line error, or a traceback's last line)."""
    with open(log, "rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
        lines = [line.strip() for line in f.read().decode(errors="replace").splitlines()]
    return next((line for line in reversed(lines) if line and not line.startswith("$ ")), "")[:500]


def write_json(path: Path, record: dict) -> None:
    """Whole or not at all: a stamp cut short by a kill would stop every later run of the
    experiment on its JSON error."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record, indent=1) + "\n")


def restart_if_changed(stage: Stage, say: Callable[[str], None] = print) -> None:
    """A run folder trained with another command (other than its budget) is moved aside;
    one with the same command, finished or killed, is continued by fairseq itself."""
    run = stage.outputs[0].parent
    begun = run / ".stages" / "train.begun.json"
    if begun.is_file() and json.loads(begun.read_text())["inputs"] != stage.inputs():
        stale = run.with_name(f"{run.name}.stale-{time.strftime('%Y%m%d-%H%M%S')}")
        run.rename(stale)
        say(f"{shown(run)} was trained with other flags: moved to {shown(stale)}")
    begun.parent.mkdir(parents=True, exist_ok=True)
    write_json(begun, {"inputs": stage.inputs()})
