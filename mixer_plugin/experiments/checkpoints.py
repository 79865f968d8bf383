"""``mixer-average``: average the parameters of the last N checkpoints of a save dir
(fairseq's scripts/average_checkpoints.py logic: element-wise mean of every model
tensor; the rest of the state, optimizer history and config, comes from the newest
one).  fairseq ships that script in its repository, not in the package.

    mixer-average SAVE_DIR --last N --output OUT.pt

"Last" follows the update count of ``checkpoint_<epoch>_<updates>.pt``
(``--save-interval-updates``), else the epoch of ``checkpoint<epoch>.pt``.
With N = 1 or only one checkpoint it refuses: use that checkpoint directly.
"""

import argparse
import collections
import os
import re
from pathlib import Path

import torch

from .. import compat  # noqa: F401  (the weights_only allowlist for fairseq checkpoints)


def last_checkpoints(save_dir: Path, n: int):
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
    if len(found) < n:
        raise SystemExit(f"mixer-average: error: {save_dir} has {len(found)} numbered checkpoints, "
                         f"--last {n} needs {n} (train with --save-interval-updates and --keep-interval-updates >= {n})")
    return [p for _, p in found[-n:]]


def average(paths):
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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("save_dir", type=Path)
    p.add_argument("--last", type=int, required=True)
    p.add_argument("--output", type=Path, required=True)
    a = p.parse_args(argv)
    if a.last < 2:
        raise SystemExit("mixer-average: error: --last must be >= 2")
    paths = last_checkpoints(a.save_dir, a.last)
    state = average(paths)
    tmp = a.output.with_name(f".{a.output.name}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, a.output)
    print(f"averaged {len(paths)} checkpoints ({', '.join(p.name for p in paths)}) -> {a.output}")


if __name__ == "__main__":
    main()
