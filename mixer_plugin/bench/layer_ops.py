"""Where one layer's training step goes: forward + backward of a mixer under
``torch.profiler``, op by op, beside stock attention.  The profile behind a gap between a
mixer's measured speed and its FLOP ceiling (``mixer-bench mixers``).

    mixer-bench layer-ops          # ngram readings (both kernels) and local at L=2048
    mixer-bench layer-ops --mixers local --lengths 1024 --md /tmp/local.md

Same modules, sizes and step as ``mixer-bench mixers`` (d=512, 8 heads, n=5, 4,096 tokens
per batch, encoder self-attention).  Each module: ``--warmup`` untimed steps, ``--repeats``
timed steps (median ms), then ``--repeats`` steps under the profiler for the op table
(self time per step: what an op itself costs, not what it calls).
"""

import argparse
import os
import statistics
import time
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from ..mixers.registry import Role
from .flops import machine_peak, module_macs
from .layer_measure import step
from .layer_modules import build, variants
from .result_files import RESULTS, write_outputs
from .run_record import command_line, run_meta


def profile_module(
    m: nn.Module, x: torch.Tensor, g: torch.Tensor, repeats: int, top: int
) -> Tuple[float, List[Tuple[str, float, float]]]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step(m, x, g, None)
        times.append(time.perf_counter() - t0)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(repeats):
            step(m, x, g, None)
    ops = sorted(
        (
            (e.key, e.self_cpu_time_total / 1e3 / repeats, e.count / repeats)
            for e in prof.key_averages()
            if e.self_cpu_time_total > 0
        ),
        key=lambda r: -r[1],
    )
    return statistics.median(times) * 1e3, ops[:top]


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(
        prog="mixer-bench layer-ops", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--mixers",
        default="ngram,ngram:kernel=conv,ngram:proj=slice:out=none,ngram:proj=slice:out=none:kernel=conv,local",
        help="labels of mixer-bench mixers (attn is always run first)",
    )
    ap.add_argument("--lengths", default="2048")
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--md", default=str(RESULTS / "bench_layer_ops_cpu.md"))
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    args.dropout = 0.0
    known = dict(variants())
    labels = ["attn"] + [m for m in args.mixers.split(",") if m and m != "attn"]
    unknown = [m for m in labels if m not in known]
    if unknown:
        raise SystemExit(
            f"mixer-bench layer-ops: error: --mixers: unknown {', '.join(unknown)} (known: {', '.join(known)})"
        )
    device = torch.device("cpu")
    meta = {**run_meta(device), **machine_peak(device), "command": command_line()}
    results = []
    for L in (int(v) for v in args.lengths.split(",")):
        B = max(1, args.tokens // L)
        x = torch.randn(L, B, args.dim, requires_grad=True)
        g = torch.randn(L, B, args.dim)
        for label in labels:
            m = build(known[label], Role.ENCODER_SELF, args)
            for _ in range(args.warmup):
                step(m, x, g, None)
            ms, ops = profile_module(m, x, g, args.repeats, args.top)
            macs = module_macs(m, L, Role.ENCODER_SELF) * B
            results.append(
                {"label": label, "L": L, "B": B, "ms": ms, "macs": macs, "gflops": 3 * 2 * macs / ms / 1e6, "ops": ops}
            )
            print(f"L={L} {label:32s} {ms:8.1f} ms  {results[-1]['gflops']:6.1f} GFLOP/s", flush=True)
    meta["load_end"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    write_outputs(args.md, args.json, markdown(meta, results), {"meta": meta, "results": results})


def markdown(meta: Dict[str, Any], results: List[Dict[str, Any]]) -> str:
    out = [
        f"# Where a layer's training step goes ({meta['device_name']})",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; torch {meta['torch']}, {meta['threads']} threads; load average at start "
        f"{meta['load_start']}, at end {meta['load_end']}",
        "- one encoder self-attention layer, forward + backward, d=512, 8 heads, n=5, 4,096 tokens per batch; "
        "GFLOP/s = 3 x forward multiply-adds x 2 / time (the FLOP accounting of `mixer-bench mixers`); "
        f"machine peak {meta.get('peak_gflops') or 0:.0f} GFLOP/s",
        "",
    ]
    for r in results:
        out += [
            f"## `{r['label']}`, L = {r['L']} (B = {r['B']}): {r['ms']:.1f} ms per step, {r['gflops']:.1f} GFLOP/s",
            "",
            "| op (self time) | ms per step | share | calls |",
            "|---|---:|---:|---:|",
        ]
        out += [f"| `{k}` | {ms:.2f} | {ms / r['ms']:.0%} | {n:.0f} |" for k, ms, n in r["ops"]]
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    main()
