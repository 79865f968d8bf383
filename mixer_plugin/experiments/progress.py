"""The runner's progress lines: each stage's end with the elapsed time and an estimate of what is
left, and a training's state every ``HEARTBEAT`` seconds read from its log (updates, speed, and
where its stopping rule ends it unless it improves)."""

import re
import threading
import time
from typing import Dict, List

from .argv import flag_value, stopping_rule
from .stages import Stage
from .trainlog import parse_train_log, stopping_point

HEARTBEAT = 300  # seconds between the progress lines of a training


class Progress:
    """Progress lines with elapsed time and an estimate of what is left."""

    def __init__(self, total: int):
        self.start = time.time()
        self.total, self.finished = total, 0
        self.took: Dict[str, List[float]] = {}  # stage name -> seconds of finished ones
        self.lock = threading.Lock()

    def clock(self) -> str:
        s = int(time.time() - self.start)
        return f"[{time.strftime('%H:%M:%S')} +{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}]"

    def say(self, msg: str) -> None:
        with self.lock:
            print(f"{self.clock()} {msg}", flush=True)

    def finish(self, label: str, stage: Stage, seconds: float, pending: List[str], jobs: int) -> None:
        with self.lock:
            self.finished += 1
            self.took.setdefault(stage.name, []).append(seconds)
            known = {k: sum(v) / len(v) for k, v in self.took.items()}
            left = sum(known.get(name, 0.0) for name in pending) / max(1, jobs)
            unknown = sorted({name for name in pending if name not in known})
            eta = f"ETA {fmt(left)}" + (f" + {', '.join(unknown)} not yet timed" if unknown else "")
            print(
                f"{self.clock()} {label} {stage.name}: done in {fmt(seconds)} "
                f"({self.finished}/{self.total} stages; {eta})",
                flush=True,
            )


def fmt(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def training_status(stage: Stage) -> str:
    """``1500/3750 updates, 2.10 upd/s, about 17:51 left`` from a training's log; for one with
    a stopping rule (``--patience``) also its best validation and where the rule stops it
    unless it improves (``valid bleu 28.01 at 7,500 is the best: stops at 9,500 unless it
    improves, in about 49:45``), read over the whole log as the runner ends it."""
    if not stage.log.is_file():
        return "starting"
    text = stage.log.read_text(encoding="utf-8", errors="replace")
    updates = re.findall(r"num_updates=(\d+)", text)
    ups = re.findall(r"\bups=([\d.]+)", text)
    goal = flag_value(stage.commands[0], "--max-update")
    if not updates:
        return "starting"
    done = int(updates[-1])
    speed = float(ups[-1]) if ups and float(ups[-1]) > 0 else None
    line = f"{done}/{goal or '?'} updates"
    if speed:
        line += f", {speed:.2f} upd/s"
        if goal:
            line += f", about {fmt((int(goal) - done) / speed)} left"
    chosen = stopping_rule([str(a) for a in stage.commands[0]])
    valid = [p for p in parse_train_log(stage.log)["valid"] if chosen.metric in p]
    if chosen.patience > 0 and len(valid) >= 2:
        best, _ = stopping_point(valid, chosen.metric, chosen.maximize, chosen.patience)
        every = int(valid[-1]["num_updates"] - valid[-2]["num_updates"])  # updates between validations
        stop = int(best["num_updates"]) + chosen.patience * every
        if goal:
            stop = min(stop, int(goal))
        line += (
            f"; valid {chosen.metric} {best[chosen.metric]:g} at {int(best['num_updates']):,} is the best: "
            f"stops at {stop:,} unless it improves"
        )
        if speed and stop > done:
            line += f", in about {fmt((stop - done) / speed)}"
    return line
