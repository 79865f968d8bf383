"""``mixer-average``: average the parameters of the last N checkpoints of a save dir
(fairseq's scripts/average_checkpoints.py logic: element-wise mean of every model
tensor; the rest of the state, optimizer history and config, comes from the newest
one).  fairseq ships that script in its repository, not in the package.

    mixer-average SAVE_DIR --last N --output OUT.pt
    mixer-average SAVE_DIR --last N --upto-best --output OUT.pt
    mixer-average SAVE_DIR --last N --upto-best --log TRAIN_LOG --output OUT.pt

"Last" follows the update count of ``checkpoint_<epoch>_<updates>.pt``
(``--save-interval-updates``), else the epoch of ``checkpoint<epoch>.pt``.
With N = 1 or only one checkpoint it refuses: use that checkpoint directly.
``--upto-best``: the last N at or before the update of ``checkpoint_best.pt``, the
validation's best (fairseq's ``--best-checkpoint-metric``), so a training that ran on
past its peak (``--patience``) is averaged where validation chose, not where it stopped.
The peak's own checkpoint must be among them: save one at every validation
(``--save-interval-updates`` equal to ``--validate-interval-updates``) and keep enough
(``--keep-interval-updates`` at least N plus the validations a training runs past its best).
With ``--log`` (the training's fairseq-train log, every resume appended to it) the best is
read from the log instead, under the stopping rule the training ran with (``--patience``,
``--best-checkpoint-metric``, from ``checkpoint_best.pt``'s config) applied to all of it
(``trainlog.stopping_point``): the same checkpoint for an unbroken training, and for one resumed
after a kill, whose patience count fairseq restarted, the best an unbroken one would have kept.

``resume_point`` is the runner's check before it continues a training: a
``checkpoint_last.pt`` that does not load (a kill or a full disk during fairseq's copy
of it, which unlike its first save is not atomic) is set aside, and the newest
checkpoint of the save dir that loads takes its place.
"""

import argparse
import collections
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .. import compat  # noqa: F401  (the weights_only allowlist for fairseq checkpoints)
from ..files import atomic_path
from .trainlog import parse_train_log, stopping_point


def last_checkpoints(save_dir: Path, n: int, upto: Optional[int] = None) -> List[Path]:
    """The last ``n`` numbered checkpoints of ``save_dir``; with ``upto`` (an update count)
    the last ``n`` at or before it, the one at ``upto`` among them."""
    by_update = []
    by_epoch = []
    for p in save_dir.iterdir():
        m = re.fullmatch(r"checkpoint_(\d+)_(\d+)\.pt", p.name)
        if m:
            by_update.append((int(m.group(2)), p))
        m = re.fullmatch(r"checkpoint(\d+)\.pt", p.name)
        if m:
            by_epoch.append((int(m.group(1)), p))
    found = sorted(by_update) or sorted(by_epoch)
    if upto is not None:
        if upto not in {u for u, _ in by_update}:
            raise SystemExit(
                f"mixer-average: error: {save_dir} has no checkpoint_*_{upto}.pt, the best validation's "
                f"update (save one at every validation: --save-interval-updates equal to "
                f"--validate-interval-updates, and keep those past the best: --keep-interval-updates)"
            )
        found = [(u, p) for u, p in sorted(by_update) if u <= upto]
    if len(found) < n:
        raise SystemExit(
            f"mixer-average: error: {save_dir} has {len(found)} numbered checkpoints"
            f"{f' at or before update {upto}' if upto is not None else ''}, "
            f"--last {n} needs {n} (train with --save-interval-updates and --keep-interval-updates >= {n})"
        )
    return [p for _, p in found[-n:]]


def average(paths: Sequence[Path]) -> Dict[str, Any]:
    total = collections.OrderedDict()
    state = None
    for path in paths:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model = state["model"]
        if total and set(model) != set(total):
            raise SystemExit(f"mixer-average: error: {path} has other parameters than {paths[0]}")
        for k, v in model.items():
            acc = v.double() if v.is_floating_point() else v
            total[k] = acc if k not in total else (total[k] + acc if v.is_floating_point() else v)
    for k, v in total.items():
        ref = state["model"][k]
        total[k] = (v / len(paths)).to(ref.dtype) if ref.is_floating_point() else v
    state["model"] = total
    return state


def load(path: Path) -> Tuple[Optional[dict], Optional[str]]:
    """(its state, None) when ``path`` loads as fairseq loads it to resume (on the CPU, weights
    only, with compat's allowlist), else (None, why not: torch.load's first line)."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001  (truncated zip, zeros, a bad pickle: all one answer)
        return None, (str(e).strip().splitlines() or [type(e).__name__])[0].split(". ")[0]
    if not isinstance(state, dict) or "model" not in state:
        return None, "no model state in it"
    return state, None


def check(path: Path) -> Tuple[Optional[int], Optional[str]]:
    """(its update count, None) when ``path`` loads (``load``), else (None, why not)."""
    state, error = load(path)
    return (None, error) if state is None else (num_updates(state), None)


def num_updates(state: dict) -> int:
    """The update count a loaded checkpoint was saved at."""
    history = state.get("optimizer_history") or [{}]
    return int(history[-1].get("num_updates", 0))


def resume_point(save_dir: Path) -> Optional[str]:
    """Make ``save_dir/checkpoint_last.pt`` one that loads, before fairseq resumes from it.

    Nothing to do (None) when it loads or is absent.  Otherwise it is renamed to
    ``checkpoint_last.pt.damaged-<time>`` (kept, never deleted: a name fairseq's own
    checkpoint patterns do not match, so its clean-up leaves it alone), and so is every
    newer checkpoint that does not load; the newest numbered checkpoint that loads (by
    modification time; else checkpoint_best.pt) is copied in its place (atomically).  With none, the
    training starts over.  Returns the one line that says what happened and why."""
    last = save_dir / "checkpoint_last.pt"
    if not last.is_file():
        return None
    _, error = check(last)
    if error is None:
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = [set_aside(last, stamp)]
    # the numbered checkpoints, newest first; checkpoint_best.pt (a copy of one of them,
    # maybe an old one) only where none of them loads
    numbered = [p for p in save_dir.glob("checkpoint*.pt") if p.name not in (last.name, "checkpoint_best.pt")]
    candidates = [
        *sorted(numbered, key=lambda p: p.stat().st_mtime, reverse=True),
        *[p for p in [save_dir / "checkpoint_best.pt"] if p.is_file()],
    ]
    why = f"checkpoint_last.pt does not load ({error}); kept as {aside[0].name}"
    for p in candidates:
        updates, bad = check(p)
        if bad is not None:
            aside.append(set_aside(p, stamp))
            continue
        with atomic_path(last) as tmp:
            shutil.copyfile(p, tmp)
        more = f" (and {', '.join(a.name for a in aside[1:])}, which do not load either)" if aside[1:] else ""
        return f"{why}{more}; resuming from {p.name} (update {updates})"
    return f"{why}; no other checkpoint loads, so the training starts over"


def set_aside(path: Path, stamp: str) -> Path:
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    path.rename(aside)
    return aside


def best_update(save_dir: Path, log: Optional[Path] = None) -> int:
    """The update of the training's best validation: ``save_dir/checkpoint_best.pt``'s, or with
    ``log`` the one its stopping rule keeps when applied to the whole log (module docstring)."""
    best = save_dir / "checkpoint_best.pt"
    if not best.is_file():
        raise SystemExit(f"mixer-average: error: --upto-best: {best} does not exist (no validation has run)")
    state, error = load(best)
    if state is None:
        raise SystemExit(f"mixer-average: error: --upto-best: {best} does not load ({error})")
    if log is None:
        return num_updates(state)
    if not log.is_file():
        raise SystemExit(f"mixer-average: error: --log: {log} does not exist")
    rule = (state.get("cfg") or {}).get("checkpoint") or {}
    metric, maximize = rule.get("best_checkpoint_metric", "loss"), bool(rule.get("maximize_best_checkpoint_metric"))
    point, _ = stopping_point(parse_train_log(log)["valid"], metric, maximize, rule.get("patience", -1))
    if point is None:
        raise SystemExit(f"mixer-average: error: --log: {log} has no validation with {metric!r} (the metric of {best})")
    return int(point["num_updates"])


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("save_dir", type=Path)
    p.add_argument("--last", type=int, required=True)
    p.add_argument("--upto-best", action="store_true", help="the last N up to checkpoint_best.pt's update")
    p.add_argument(
        "--log", type=Path, help="with --upto-best: the best by the training's stopping rule over its whole log"
    )
    p.add_argument("--output", type=Path, required=True)
    a = p.parse_args(argv)
    if a.last < 2:
        raise SystemExit("mixer-average: error: --last must be >= 2")
    if a.log is not None and not a.upto_best:
        raise SystemExit("mixer-average: error: --log reads the best validation for --upto-best; add --upto-best")
    paths = last_checkpoints(a.save_dir, a.last, best_update(a.save_dir, a.log) if a.upto_best else None)
    state = average(paths)
    tmp = a.output.with_name(f".{a.output.name}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, a.output)
    print(f"averaged {len(paths)} checkpoints ({', '.join(p.name for p in paths)}) -> {a.output}")


if __name__ == "__main__":
    main()
