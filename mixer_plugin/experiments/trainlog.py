"""What a fairseq-train log says (``parse_train_log``), and the two things fairseq loses when
a training is resumed, read back from the whole log: where its early-stopping rule stops
(``stopping_point``) and how long it has trained (``hours_to``).

The runner appends a resumed training to the same log, so the log holds every validation and
every logged interval since update 0.  fairseq keeps its ``--patience`` count in attributes of
``fairseq_cli.train.should_stop_early``, not in the checkpoint: a resumed training counts from
zero again, against its first validation after the resume rather than the best, so one killed
in its last stretch trains on past the point where an unbroken one stops, and may keep a later
validation as its best.  And it logs its wall clock as 0 after a resume.  Applied to the whole
log, fairseq's rule gives the peak of the unbroken training, and the intervals' own stopwatch
its hours; the converged protocol's table (``collect.peak``) and its averaging
(``mixer-average --upto-best --log``) both read them here, and the runner ends a resumed
training where the unbroken one would have stopped (``saved_stop``).
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

_KV = re.compile(r"(\w+)=([-\d.e+]+)")
# fairseq's checkpoint_utils logs this once a checkpoint and its copies (checkpoint_last.pt) are written
_SAVED = re.compile(r"Saved checkpoint \S+ \(epoch \d+ @ (\d+) updates")


@dataclass(frozen=True)
class Selection:
    """How a training chooses its checkpoints: fairseq's ``--best-checkpoint-metric``, whether
    larger is better, and its ``--patience`` (0 or less: none)."""

    metric: str
    maximize: bool
    patience: int


def parse_train_log(path: Path) -> dict:
    """What a fairseq-train log says: params, train_inner and valid points (a resumed
    run's log holds several trainings one after another; later points win)."""
    out = {"params": None, "train": {}, "valid": {}}
    if not path.is_file():
        return {"params": None, "train": [], "valid": [], "last_update": 0}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.search(r"num\. (?:shared )?model params: ([\d,]+)", line)
        if m and out["params"] is None:
            out["params"] = int(m.group(1).replace(",", ""))
        if "| train_inner |" in line:
            kv = {k: float(v) for k, v in _KV.findall(line)}
            if "num_updates" in kv:
                out["train"][int(kv["num_updates"])] = kv
        elif "| valid on" in line:
            kv = {k: float(v) for k, v in re.findall(r"(\w+) ([-\d.e+]+)", line.split("|", 3)[-1])}
            if "num_updates" in kv:
                out["valid"][int(kv["num_updates"])] = kv
    train = [out["train"][k] for k in sorted(out["train"])]
    valid = [out["valid"][k] for k in sorted(out["valid"])]
    last = int(max([p["num_updates"] for p in train + valid], default=0))
    return {"params": out["params"], "train": train, "valid": valid, "last_update": last}


def stopping_point(
    valid: Sequence[dict], metric: str, maximize: bool, patience: int
) -> Tuple[Optional[dict], Optional[int]]:
    """(the validation point fairseq keeps as ``checkpoint_best.pt``, the update where its
    ``--patience`` rule stops the training or None) for the validations of ``valid`` in
    update order, as one unbroken training would have met them.

    fairseq's two comparisons differ on a tie, and both are kept: the patience count
    (``should_stop_early``) resets only on a strict improvement, while ``checkpoint_best.pt``
    is saved again on an equal score (``checkpoint_utils.save_checkpoint``: ``>=``).  The log
    rounds the metric, so a tie here may have been a hair apart in fairseq's floats.
    ``patience`` <= 0: no stopping rule, the best of the whole log."""
    better = (lambda a, b: a > b) if maximize else (lambda a, b: a < b)
    best, waited = None, 0
    for point in valid:
        if metric not in point:
            continue
        if best is None or better(point[metric], best[metric]):
            best, waited = point, 0
            continue
        if point[metric] == best[metric]:
            best = point  # a tie: a new checkpoint_best.pt, the same count
        waited += 1
        if 0 < patience <= waited:
            return best, int(point["num_updates"])
    return best, None


def hours_to(train: Sequence[dict], update: int) -> Optional[float]:
    """Hours spent in training steps up to ``update``: fairseq's ``train_wall`` (each logged
    interval's own stopwatch) summed over the intervals at or before it.  Not fairseq's
    ``wall``, which a resumed training logs as 0 from the resume on; the updates a resume
    trains again (from its checkpoint to the kill) count once, as in an unbroken training,
    since their later points replace the earlier.  Validation and checkpoint saving are not
    in it.  None when the log has no ``train_wall``."""
    walls = [p["train_wall"] for p in train if "train_wall" in p and p["num_updates"] <= update]
    return sum(walls) / 3600 if walls else None


def saved_stop(path: Path, chosen: Selection) -> Optional[int]:
    """The update where ``chosen``'s stopping rule, applied to the whole log at ``path``, ends
    the training, once fairseq has logged saving that update's checkpoint after validating it;
    else None (no rule, not reached yet, or its checkpoint not yet written).  A resumed training
    counts its patience from zero (module docstring), so it trains on past this point: the
    runner ends it here, as the unbroken training ended itself."""
    if chosen.patience <= 0 or not path.is_file():
        return None
    _, stop = stopping_point(parse_train_log(path)["valid"], chosen.metric, chosen.maximize, chosen.patience)
    if stop is None:
        return None
    # the save must follow the last validation of that update: a training resumed from an
    # older checkpoint validates it again, and only the later save holds what the log says
    validated = saved = -1
    for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines()):
        if "| valid on" in line and re.search(rf"\| num_updates {stop}(?: |$)", line):
            validated = i
        elif (m := _SAVED.search(line)) and int(m.group(1)) == stop:
            saved = i
    return stop if saved > validated >= 0 else None


def new_saves(path: Path, offset: int) -> Tuple[List[int], int]:
    """The updates of the checkpoints fairseq has logged saving in the log at ``path`` past
    byte ``offset`` (whole lines only), and the offset to read on from: a running training's
    saves, read as they come without reading the log again."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            chunk = f.read()
    except FileNotFoundError:
        return [], offset
    end = chunk.rfind(b"\n") + 1
    text = chunk[:end].decode("utf-8", errors="replace")
    return [int(m.group(1)) for m in _SAVED.finditer(text)], offset + end
