"""Running a stage: its commands under the guard (``guard``) with the run's locks held, its stamp
written when every output is there, a training resumed from its newest intact checkpoint (or
started over in a fresh folder when its command changed), and paused after its next checkpoint
when the runner pauses (``TrainingWatch``)."""

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from ..files import atomic_path, machine
from ..paths import shown
from . import guard
from .argv import flag_value, shell, stopping_rule
from .checkpoints import resume_point
from .commands import command_env, precision_of
from .progress import fmt
from .stages import Stage, StageError, StagePaused, StageTooLong
from .trainlog import new_saves, saved_stop

STOP_POLL = 2.0  # seconds between a training's looks at its log for a new checkpoint (TrainingWatch)


def execute(
    stage: Stage,
    threads: int,
    hold: Sequence[int] = (),
    say: Callable[[str], None] = print,
    pausing: Callable[[], bool] = lambda: False,
    deadline: Optional[float] = None,
) -> float:
    """Run a stage's commands (skipping nothing; the caller checks ``done``); return
    the seconds it took.  On failure: StageError with what the command said last (its
    one-line error, a traceback's last line) and its log.

    Each command runs under ``guard`` (its own process group, which dies with the runner)
    and inherits ``hold``, the run's locks; ``say`` prints the stage's one-line notes.
    A training ends at its next checkpoint once ``pausing()`` (StagePaused), or at its first
    one when it cannot reach its ``--max-update`` by ``deadline`` (``time.monotonic()``'s, the
    runner's ``--stop-after``: StageTooLong); any other stage runs to its end, being minutes long."""
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
            watch = TrainingWatch(stage, args, say, pausing, deadline) if stage.name == "train" else None
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
                if watch.too_long:
                    raise StageTooLong(f"{watch.too_long}; ended after its checkpoint of update {watch.paused:,}")
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
                "precision": precision_of(stage.commands),
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
      checkpoint's update.

    Given a ``deadline`` it also ends the training at its first checkpoint when, at the speed
    of this start so far, it cannot reach its ``--max-update`` in time (``too_long``): a run that
    would be left half-trained when the machine's time ends is not begun beyond its first minutes."""

    def __init__(
        self,
        stage: Stage,
        argv: List[str],
        say: Callable[[str], None],
        pausing: Callable[[], bool],
        deadline: Optional[float] = None,
    ):
        self.log = stage.log
        self.chosen = stopping_rule(argv)
        self.say = say
        self.pausing = pausing
        self.offset = stage.log.stat().st_size if stage.log.is_file() else 0  # what came before is no news
        self.stop: Optional[int] = None
        self.paused: Optional[int] = None
        cap = flag_value(argv, "--max-update")
        before, _ = new_saves(stage.log, 0)  # where this start goes on from (0: a new training)
        # the clock from the command's start: start-up and validation count, as they take the machine's time
        self.timed = None if deadline is None or not cap else (deadline, int(cap), time.monotonic(), max(before or [0]))
        self.too_long: Optional[str] = None

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
        if self.pausing() or self.ends_too_late(saves[-1]):
            self.paused = saves[-1]
            return True
        return False

    def ends_too_late(self, update: int) -> bool:
        """At this start's first checkpoint (once): whether the updates left to its cap, at the
        speed by the clock since the command started, end after the deadline (said in
        ``too_long``)."""
        if self.timed is None:
            return False
        deadline, cap, t0, u0 = self.timed
        self.timed = None
        now = time.monotonic()
        speed = (update - u0) / max(now - t0, 1e-6)
        need, left = (cap - update) / max(speed, 1e-9), deadline - now
        if need <= left:
            return False
        self.too_long = (
            f"cannot end in the time it was given: at {speed:.2f} updates/s (by the clock, start-up and "
            f"validation in) its {cap - update:,} updates to --max-update {cap:,} take about {fmt(need)}, "
            f"and --stop-after leaves {fmt(max(left, 0))}"
        )
        return True

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
