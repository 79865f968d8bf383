"""The parts the layer benchmarks' markdown tables share: a table with one row per L
(``length_table``), the multiply-add and FLOP-rate cells and their note, the machine-peak line,
megabytes, and the slope of peak memory against L (``mem_exponent``)."""

import math
from typing import Any, Callable, Dict, List, Optional


def mem_exponent(rows: List[Dict[str, Any]], label: str, role: str) -> Optional[float]:
    """Slope of log(peak bytes per sequence) vs log(L), least squares: ~1 linear, ~2 quadratic."""
    pts = [
        (math.log(r["L"]), math.log(r["peak_bytes"] / r["B"]))
        for r in rows
        if r["mixer"] == label and r["role"] == role and r.get("peak_bytes")
    ]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def length_table(rr: List[Dict[str, Any]], present: List[str], cell: Callable[[str, Dict[str, Any]], str]) -> list:
    """Markdown rows: one per L (with its batch), one column per module, ``cell(label, row)``."""
    lines = ["| L | B | " + " | ".join(f"`{lab}`" for lab in present) + " |", "|---:|---:|" + "---:|" * len(present)]
    for L in sorted({r["L"] for r in rr}):
        by = {r["mixer"]: r for r in rr if r["L"] == L}
        cells = [cell(lab, by[lab]) if lab in by else "" for lab in present]
        lines.append(f"| {L} | {next(iter(by.values()))['B']} | " + " | ".join(cells) + " |")
    return lines


def fmt_mb(b: float) -> str:
    return f"{b / 2**20:.1f}"


def flops_cell(lab: str, r: Dict[str, Any]) -> str:
    """Forward multiply-adds per token, achieved GFLOP/s and, against ``attn``, the FLOP
    ceiling (the speed-up at equal FLOP rates) and the share of it reached."""
    head = f"{r['macs_per_token'] / 1e6:.2f}M/tok, {r['gflops']:.0f} GFLOP/s"
    return head if lab == "attn" else f"{head}, ceiling {r['ceiling_vs_attn']:.2f}x, {r['of_ceiling']:.0%}"


FLOPS_NOTE = (
    "Per cell: forward multiply-adds per token (`MixerBase.macs`; stock attn: 4D^2 + scores and value sums "
    "over its keys), the achieved GFLOP/s of forward+backward (3x forward, 2 FLOPs per multiply-add), the "
    "ceiling = attn's multiply-adds / the mixer's (the speed-up if both ran at the same FLOP rate), and the "
    "measured speed-up as a share of that ceiling."
)


def peak_line(meta: Dict[str, Any]) -> str:
    if meta.get("peak_rule") is None:  # runs from before the peak was recorded
        return "Machine peak: not recorded by this run."
    return f"Machine peak: {meta['peak_rule']}."


def mixer_labels(meta: Dict[str, Any]) -> list:
    return [lab for lab, _ in meta["mixers"]]
