"""The depth study's pilot on the protocol page, in two generated blocks, so that the width and
the budget the protocol chooses are read from measurements and typed nowhere:

- ``speed_table``: the training speed of each of its rows at 2+2 and 6+6 layers and each width
  tried, in fp32 and in bf16 (``mixer-bench train experiments/depth_pilot.yaml``, one results
  file per precision), and the hours a run of ``PLANNED`` updates takes at that speed;
- ``peak_lines``: where each pilot training on the validation set (``experiments/
  depth_pilot_peak.yaml``) peaked, whether its rule or its cap ended it, and its hours by the
  clock, validations in."""

import json
import re
from pathlib import Path
from typing import Dict, List

from ..paths import CHECKOUT
from .archive import kept_records
from .argv import flag_value
from .collect import peak, selection, train_flags
from .spec_loader import load

PRECISIONS = ("fp32", "bf16")
PILOT = "results/bench/bench_train_depth_pilot_{}_cpu.json"  # the benchmark's files, by precision
ROW = re.compile(r"^(?P<row>\w+?)_(?P<layers>\d+)x(?P=layers)_d(?P<d>\d+)$")  # transformer_6x6_d192
PEAKS = "experiments/depth_pilot_peak.yaml"  # the pilot's trainings to a peak, validation only
PLANNED = 10_000  # updates of the hours column: a 6+6 run's peak and the rule's 2,000 are about that


def measured(root: Path = CHECKOUT) -> Dict[str, dict]:
    """precision -> its benchmark record, for the precisions measured so far."""
    out = {}
    for precision in PRECISIONS:
        path = root / PILOT.format(precision)
        if path.is_file():
            out[precision] = json.loads(path.read_text(encoding="utf-8"))
    return out


def speed_table(root: Path = CHECKOUT) -> str:
    """The pilot's speeds as a table, its rows grouped by width, then depth, then mixer."""
    runs = measured(root)
    if not runs:
        return "Not measured yet (`mixer-bench train experiments/depth_pilot.yaml`)."
    ups: Dict[tuple, Dict[str, float]] = {}
    for precision, record in runs.items():
        for r in record["rows"]:
            m = ROW.match(r["model"])
            if m and r.get("ups"):
                ups.setdefault((int(m["d"]), int(m["layers"]), m["row"]), {})[precision] = r["ups"]
    order: Dict[str, int] = {}  # the mixers in the experiment file's order
    for r in next(iter(runs.values()))["rows"]:
        order.setdefault(r["model"].split("_")[0], len(order))
    head = ["row", "layers", "d", *(f"{p} updates/s" for p in runs), "bf16 ÷ fp32"]
    head.append(f"hours for {PLANNED:,} updates, the faster precision")
    lines: List[str] = ["| " + " | ".join(head) + " |", "|---|---:|---:|" + "---:|" * (len(head) - 3)]
    for (d, layers, row), speed in sorted(ups.items(), key=lambda kv: (-kv[0][0], kv[0][1], order[kv[0][2]])):
        ratio = f"{speed['bf16'] / speed['fp32']:.2f}x" if {"fp32", "bf16"} <= set(speed) else ""
        hours = PLANNED / max(speed.values()) / 3600
        cells = [f"`{row}`", f"{layers}+{layers}", str(d), *(f"{speed[p]:.2f}" if p in speed else "" for p in runs)]
        lines.append("| " + " | ".join([*cells, ratio, f"{hours:.1f}"]) + " |")
    said = "; ".join(
        f"{p}: {rec['meta'].get('cpu', '?')}, {rec['meta']['date']}, {rec['meta']['updates']} updates a row, "
        f"load average {rec['meta']['load_start']} at its start"
        for p, rec in runs.items()
    )
    return "\n".join(
        [
            *lines,
            "",
            f"Measured by `mixer-bench train experiments/depth_pilot.yaml` ({said}); fairseq's own updates/s "
            "over the logged intervals after the first, start-up and validation out. Files: "
            + ", ".join(f"`{PILOT.format(p)}`" for p in runs)
            + ".",
        ]
    )


def peak_lines(root: Path = CHECKOUT) -> str:
    """One line per finished pilot training of ``PEAKS``: its peak on the metric its checkpoints
    are chosen by, what ended it (its rule, or its cap while still improving), and its hours."""
    exp = load(root / PEAKS)
    records = kept_records(exp)
    if not records:
        return f"Not finished yet (`mixer-run {PEAKS}`)."
    lines = []
    for name, runs in records.items():
        chosen = selection(exp, exp.models[name])
        every = int(flag_value(train_flags(exp, exp.models[name]), "--save-interval-updates"))  # validations
        for record in runs:
            top = peak(record, chosen)
            # fairseq's clock since the training's (last) start: validations and saving in
            wall = max((p["wall"] for p in record.train if "wall" in p), default=None)
            if top is None or wall is None:
                continue
            ended = (
                f"its rule ended it at update {top.stopped:,}"
                if top.stopped
                else f"its cap ended it at update {record.last_update:,}, {record.last_update - top.update:,} "
                f"updates after the peak, fewer than the rule's {chosen.patience * every:,}: still improving"
            )
            lines.append(
                f"- `{name}` (seed {record.seed}, {record.params or 0:,} parameters): valid {chosen.metric} "
                f"(greedy) peaked at update {top.update:,} at {top.value:.2f}; {ended}. "
                f"{wall / 3600:.2f} h by the clock to its last update, validations in "
                f"({record.last_update / wall:.2f} updates/s)."
            )
    return "\n".join(lines) + f"\n\nFrom the committed records of `{PEAKS}` (`results/{exp.name}/runs/`)."
