"""Forward+backward time and peak memory of the ``multiscale`` mixer against stock
fairseq attention (``attn``) and the same attention with the L x L score matrix
materialised (``attn[math]``), over sequence length, all in one run.

    mixer-bench multiscale               # writes results/bench/bench_multiscale_<device>.{md,json}
    mixer-bench multiscale --quick       # smoke run (seconds), prints only
    mixer-bench multiscale --lengths 512,2048 --md /tmp/x.md --json /tmp/x.json
    mixer-bench multiscale --from-json results/bench/bench_multiscale_cpu.json   # re-render its table, time nothing

A benchmark, not a test: it asserts nothing.  The measuring code (round-robin timing,
peak memory from the CPU allocator's events or CUDA's peak counter, the attn[math]
wrapper) is ``mixer_plugin/bench/layer_measure.py``'s ``bench_group``; ``mixer-bench mixers --help``
says exactly what is measured.  Modules: d=512, 8 heads, float32 (``--dtype``), train mode, dropout 0,
B = tokens // L sequences of length L.

Multi-scale variants (8 heads, scales of the paper's Table 1, omega=width):
  * ``layer1``: eq. (11)-(12) layer 1 with alpha=0.5: 4 heads of scale 1, 2 of 3, one of
    N/16, one of N/8 (the paper's small-scale-heavy first layer);
  * ``top``: the top layer (alpha irrelevant): 2x1, 2x3, 1xN/16, 2xN/8, 1xN/4;
  * ``fixed``: layer 1 of the sequence-labelling set 1,3,5,7,9 with alpha=1.0;
  * ``flex``: MS-Trans-Flex's 3, N/16, N/8, N/4, N/2 spread evenly (its N/2 heads go the
    dense path: a wide window costs as much as full attention).
The decoder runs the same scales with ratios of the prefix (the decoder's reading).
"""

import argparse
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..mixers.multiscale import PAPER_SCALES, Scale, alpha_schedule, format_scales, parse_scales
from ..mixers.registry import Role
from .flops import machine_peak
from .layer_args import add_group_args, setup_group_args
from .layer_measure import bench_group
from .layer_modules import MATH
from .layer_tables import FLOPS_NOTE, flops_cell, fmt_mb, length_table, mem_exponent, mixer_labels, peak_line
from .result_files import rerender, write_outputs
from .run_record import run_meta

DEFAULT_LENGTHS = (128, 256, 512, 1024, 2048)
GOAL_LABEL = "multiscale:layer1"
NAME = "bench_multiscale"  # the stem of the default outputs


def multiscale_variants(heads: int) -> List[Tuple[str, str]]:
    """(label, spec) of the multi-scale variants for ``heads`` heads."""
    paper, _ = parse_scales(PAPER_SCALES)
    labelling, _ = parse_scales("1+3+5+7+9")
    flex, _ = parse_scales("3+n/16+n/8+n/4+n/2")

    def spec(scales: Sequence[Scale], counts: Sequence[int]) -> str:
        return f"multiscale:scales={format_scales(scales, counts)}"

    return [
        ("multiscale:layer1", spec(paper, alpha_schedule(0.5, 2, len(paper), heads)[0])),
        ("multiscale:top", spec(paper, alpha_schedule(0.5, 1, len(paper), heads)[0])),
        ("multiscale:fixed", spec(labelling, alpha_schedule(1.0, 2, len(labelling), heads)[0])),
        ("multiscale:flex", spec(flex, alpha_schedule(0.0, 1, len(flex), heads)[0])),
    ]


def table(
    rows: List[Dict[str, Any]],
    role: str,
    labels: List[str],
    key: str,
    fmt: Callable[[Dict[str, Any], Dict[str, Dict[str, Any]]], str],
) -> List[str]:
    rr = [r for r in rows if r["role"] == role and key in r]
    present = [lab for lab in labels if any(r["mixer"] == lab for r in rr)]
    out = ["| L | B | " + " | ".join(f"`{lab}`" for lab in present) + " |", "|---:|---:|" + "---:|" * len(present)]
    for L in sorted({r["L"] for r in rr}):
        by = {r["mixer"]: r for r in rr if r["L"] == L}
        cells = [fmt(by[lab], by) if lab in by else "" for lab in present]
        out.append(f"| {L} | {next(iter(by.values()))['B']} | " + " | ".join(cells) + " |")
    return out


def fmt_time(r: Dict[str, Any], by: Dict[str, Dict[str, Any]]) -> str:
    ms = f"{1000 * r['median_s']:.1f}"
    if r["mixer"] == "attn":
        return ms
    return f"{ms} ({r['speedup_vs_attn']:.2f}x)"


def fmt_mem(r: Dict[str, Any], by: Dict[str, Dict[str, Any]]) -> str:
    mb = fmt_mb(r["peak_bytes"])
    if r["mixer"] == "attn":
        return mb
    ratios = f"{r['mem_ratio_vs_attn']:.2f}"
    math = by.get(MATH)
    if r["mixer"] != MATH and math and math.get("peak_bytes"):
        ratios += f" / {r['peak_bytes'] / math['peak_bytes']:.2f}"
    return f"{mb} ({ratios})"


def markdown(meta: Dict[str, Any], rows: List[Dict[str, Any]], labels: List[str]) -> str:
    out = [
        f"# Multi-scale self-attention micro-benchmark ({meta['device']})\n",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; host: {meta['host']}; git: {meta['git']}",
        f"- torch {meta['torch']}, python {meta['python']}; device: {meta['device_name']}; "
        f"torch threads: {meta['threads']} (os.cpu_count {meta['cpu_count']})",
        f"- load average (1/5/15 min) at start {meta['load_start']}, at end {meta['load_end']} "
        f"(other jobs share this machine); wall time {meta['wall_s']:.0f} s",
        f"- one module, d={meta['dim']}, {meta['heads']} heads, {meta['dtype']}, train mode, dropout 0; "
        f"batch: {meta['batch_rule']}; {meta['warmup']} warmup step(s), then the median of "
        f"{meta['repeats_rule']} timed forward+backward steps, modules of one (role, L) round-robin "
        "(`mixer_plugin/bench/layer_measure.py`'s `bench_group`)",
        f"- peak memory: {meta['memory_method']}",
        f"- stock `attn` SDPA kernel(s): {meta['attn_kernels']}",
        "- `attn[math]`: the same stock module on SDPA's math kernel, i.e. dense attention that "
        "stores the L x L scores",
        "- specs: " + "; ".join(f"`{lab}` = `{spec}`" for lab, spec in meta["mixers"] if lab.startswith("multi")),
        "- time cells: ms (speedup = attn time / mixer time); memory cells: MB (mixer / attn "
        "[/ mixer / attn[math]]), same role and L, same run\n",
    ]
    for role in meta["roles"]:
        out += [f"## {role}\n", "Forward+backward time, ms\n"]
        out += table(rows, role, labels, "median_s", fmt_time)
        out += ["", "Peak memory of one step, MB\n"]
        out += table(rows, role, labels, "peak_bytes", fmt_mem)
        exps = [mem_exponent(rows, lab, role) for lab in labels]
        out.append("| exp | | " + " | ".join("" if e is None else f"{e:.2f}" for e in exps) + " |")
        out.append("\n`exp`: slope of log(peak bytes per sequence) against log L (1 linear, 2 quadratic).\n")
    out.append("## FLOPs: each variant against its own ceiling\n")
    out.append(f"{peak_line(meta)}  {FLOPS_NOTE}\n")
    for role in meta["roles"]:
        rr = [r for r in rows if r["role"] == role and "median_s" in r]
        present = [lab for lab in labels if lab != MATH and any(r["mixer"] == lab for r in rr)]
        out += [f"### {role}\n"] + length_table(rr, present, flops_cell) + [""]
    out.append("## Goal check (issue 5)\n")
    out.append(f"`{GOAL_LABEL}` (the paper's small-scale-heavy first layer), encoder and decoder:\n")
    out.append(
        "| role | mem / attn, L=2048 | mem / attn[math], L=2048 (goal <= 0.25) | speedup vs attn, "
        "L=512 / 1024 / 2048 (goal >= 1) | speedup vs attn[math], L=512 / 1024 / 2048 |"
    )
    out.append("|---|---:|---:|---|---|")
    for role in meta["roles"]:
        by = {(r["mixer"], r["L"]): r for r in rows if r["role"] == role and "median_s" in r}
        g = by.get((GOAL_LABEL, 2048))
        m = by.get((MATH, 2048))
        mem_attn = f"{g['mem_ratio_vs_attn']:.2f}" if g else "n/a"
        mem_math = f"{g['peak_bytes'] / m['peak_bytes']:.2f}" if g and m else "n/a"

        def speed(base: str) -> str:
            cells = []
            for L in (512, 1024, 2048):
                r, b = by.get((GOAL_LABEL, L)), by.get((base, L))
                cells.append(f"{b['median_s'] / r['median_s']:.2f}x" if r and b else "n/a")
            return " / ".join(cells)

        out.append(f"| {role} | {mem_attn} | {mem_math} | {speed('attn')} | {speed(MATH)} |")
    out.append("")
    return "\n".join(out)


def main(argv: Optional[List[str]] = None) -> Optional[Tuple[Dict[str, Any], List[Dict[str, Any]], str]]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_group_args(ap, NAME, "128,...,2048")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--roles", default="encoder_self,decoder_self")
    ap.add_argument("--variants", help="comma-separated labels of the multi-scale variants (default: all)")
    ap.add_argument("--quick", action="store_true", help="L=128,256, 512 tokens, 1 repeat; prints only")
    args = ap.parse_args(argv)
    if args.from_json:
        return rerender(ap, args, lambda meta, rows: markdown(meta, rows, mixer_labels(meta)))
    if args.quick:
        args.lengths = args.lengths or "128,256"
        args.tokens, args.repeats, args.repeats_large = 512, 1, 1
    lengths = [int(v) for v in args.lengths.split(",")] if args.lengths else list(DEFAULT_LENGTHS)
    device = setup_group_args(ap, args, NAME)
    roles = [Role(r) for r in args.roles.split(",")]

    ms = multiscale_variants(args.heads)
    if args.variants:
        keep = {f"multiscale:{v.split(':')[-1]}" for v in args.variants.split(",")}
        ms = [(lab, spec) for lab, spec in ms if lab in keep]
    labelled = [("attn", "attn"), (MATH, "attn")] + ms
    labels = [lab for lab, _ in labelled]

    t0 = time.time()
    meta = {
        **run_meta(device),
        **machine_peak(device),
        "dim": args.dim,
        "heads": args.heads,
        "dtype": args.dtype,
        "lengths": lengths,
        "roles": [r.value for r in roles],
        "batch_rule": f"fixed B={args.batch}" if args.batch else f"constant tokens, B = max(1, {args.tokens} // L)",
        "warmup": args.warmup,
        "repeats_rule": f"{args.repeats} (L < {args.large_from}) / {args.repeats_large}",
        "memory_method": (
            "torch.profiler allocator events over one extra step (all ATen CPU allocations "
            "of the step; not parameters, inputs or the decoder's future mask)"
            if device.type == "cpu"
            else "torch.cuda.max_memory_allocated() above the step's start"
        ),
        "mixers": labelled,
    }
    print(f"# {meta['command']}  device {device.type} threads {meta['threads']} load {meta['load_start']}", flush=True)
    rows = []
    for L in lengths:
        for role in roles:
            group = bench_group(role, L, labelled, args, device)
            for label in labels:
                r = group.get(label)
                if r is None or "skipped" in r:
                    continue
                rows.append(r)
                extra = (
                    "" if label == "attn" else f" {r['speedup_vs_attn']:5.2f}x time {r['mem_ratio_vs_attn']:5.2f} mem"
                )
                print(
                    f"{role.value:13s} L={L:5d} B={r['B']:4d} {label:18s} {1000 * r['median_s']:9.1f} ms "
                    f"{fmt_mb(r['peak_bytes']):>8s} MB{extra}",
                    flush=True,
                )
    kernels = sorted({k for r in rows if r["mixer"] == "attn" for k in r.get("sdpa_ops", [])})
    meta["attn_kernels"] = ", ".join(f"`{k}`" for k in kernels) or "none seen"
    meta["load_end"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    meta["wall_s"] = time.time() - t0
    write_outputs(args.md, args.json, markdown(meta, rows, labels), {"meta": meta, "rows": rows})


if __name__ == "__main__":
    main()
