"""What version 3's full-scale study would cost on a GPU (docs/leaderboard.md, version 3,
"Its cost and the campaign"): every run its files plan, each at its cap, at the speed a GPU
measured for one training alone (``bash scripts/gpu_checks.sh v3speed`` writes
``results/bench/bench_train_<file>_cuda.json``) where one has; until then, what the FLOP count
(``mixer-bench flops``) can say, which is only a floor.  A generated block, so every figure
comes from a committed file."""

import json
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Tuple

from ..paths import CHECKOUT
from .argv import flag_value
from .collect import train_flags
from .spec_loader import load

FILES = ("leaderboard_v3", "leaderboard_v3_deep")  # experiments/<name>.yaml, the full-scale study
FLOPS = "results/bench/bench_flops_{}.json"  # mixer-bench flops experiments/<name>.yaml
SPEED = "results/bench/bench_train_{}_cuda.json"  # PRECISION=bf16 mixer-bench train ..., on a GPU
# NVIDIA's H100 SXM data sheet: 1,979 TFLOP/s of bf16 "with sparsity", half of that dense
H100_BF16_PEAK = 989e12


def planned(root: Path = CHECKOUT) -> List[Tuple[str, str, int, int]]:
    """Every run the files plan: (file, row, its seeds, its cap in updates)."""
    out = []
    for name in FILES:
        exp = load(root / "experiments" / f"{name}.yaml")
        for m in exp.models.values():
            if m.arch:
                out.append((name, m.name, len(m.seeds), int(flag_value(train_flags(exp, m), "--max-update"))))
    return out


def link(pattern: str) -> str:
    """The 2+2 file's results, linked from docs/ (the markdown beside the JSON)."""
    path = pattern.format(FILES[0]).replace(".json", ".md")
    return f"[`{Path(path).name}`](../{path})"


def payload(path: Path) -> dict:
    """A benchmark's JSON (empty where it has not run)."""
    return json.loads(path.read_text()) if path.is_file() else {"meta": {}, "rows": []}


def rows_of(got: dict) -> Dict[str, dict]:
    return {r["model"]: r for r in got["rows"]}


def per_row(
    measured: Dict[str, dict], row: str, key: str, worst: Callable[[Iterable[float]], float]
) -> Tuple[float, bool]:
    """The row's own figure, else the worst of those measured in its file (and True: a stand-in)."""
    if row in measured:
        return measured[row][key], False
    return worst(r[key] for r in measured.values()), True


def lines(root: Path = CHECKOUT) -> str:
    runs = planned(root)
    flops = {name: rows_of(payload(root / FLOPS.format(name))) for name in FILES}
    timed = {name: payload(root / SPEED.format(name)) for name in FILES}
    speed = {name: rows_of(got) for name, got in timed.items()}
    n_runs = sum(seeds for _, _, seeds, _ in runs)
    caps = sorted({cap for *_, cap in runs})
    if not all(flops.values()):
        return f"Waiting for the FLOP count: `mixer-bench flops experiments/{FILES[0]}.yaml` (and the deep file)."
    total = sum(seeds * cap * per_row(flops[f], row, "gflops", max)[0] * 1e9 for f, row, seeds, cap in runs)
    base = [flops[name]["transformer"] for name in FILES]
    count = (
        f"The FLOP count (`mixer-bench flops`, {link(FLOPS)} and "
        f"its deep twin): an update of the transformer is {base[0]['gflops']:.0f} GFLOP at "
        f"{base[0]['layers']} and {base[1]['gflops']:.0f} at {base[1]['layers']}; the {n_runs} runs the two "
        f"files plan, each at its cap of {', '.join(f'{c:,}' for c in caps)} updates, "
        f"{total / 1e15:,.0f} PFLOP in all, which an H100 at its dense bf16 peak would do in "
        f"{total / H100_BF16_PEAK / 60:.0f} minutes."
    )
    if not all(speed.values()):
        return (
            "**On a GPU.** No GPU has yet timed one of these trainings alone (the GPU smoke runs of "
            "models this size, `results/gpu_smoke_bf16.md`, trained eight at once on one H200), so this page "
            "gives no GPU-hours "
            f"for version 3. {count} That is a floor, not an estimate: a model of a few million "
            "parameters is expected to keep a small share of a GPU's peak busy, and only a measured speed says how "
            "small. `bash scripts/gpu_checks.sh v3speed` measures one, and this block then gives the "
            "GPU-hours."
        )
    hours, stood_in = 0.0, []
    for f, row, seeds, cap in runs:
        ups, stand_in = per_row(speed[f], row, "ups", min)
        hours += seeds * cap / ups / 3600
        stood_in += [f"`{row}`"] * stand_in
    device = timed[FILES[0]]["meta"]["device"]
    shares = [
        flops[name][row]["gflops"] * 1e9 * r["ups"] / H100_BF16_PEAK
        for name in FILES
        for row, r in speed[name].items()
        if row in flops[name]
    ]
    return (
        f"**On a GPU** ({device}, one training alone, bf16, `bash scripts/gpu_checks.sh v3speed`; "
        f"{link(SPEED)} and its deep twin): the {n_runs} runs "
        f"the two files plan, each trained to its cap at its row's measured speed "
        f"({', '.join(dict.fromkeys(stood_in)) or 'none'} at the slowest measured at its depth), "
        f"{hours:.0f} GPU-hours, validation and decoding out. {count} The timed rows kept "
        f"{min(shares):.1%}-{max(shares):.1%} of that peak busy."
    )
