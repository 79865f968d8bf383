"""Cost of the interacting-head paper's mixers against stock ``attn`` as the number of
heads grows: forward+backward time and peak memory of ONE module.

    mixer-bench heads                     # full run -> results/bench/bench_heads_<device>.{md,json}
    mixer-bench heads --quick             # smoke run (seconds), prints only
    mixer-bench heads --heads 8,32 --lengths 64 --md /tmp/x.md --json /tmp/x.json
    mixer-bench heads --from-json results/bench/bench_heads_cpu.json   # re-render its table, time nothing

A benchmark, not a test: it asserts nothing.  The measuring code is
``mixer_plugin/bench/layer_measure.py``'s (``bench_group``: warmup, round-robin timing of all
modules of one (role, L, H) with the order rotated each round, median and minimum of
the timed steps, peak memory from the allocator events of one extra step);
``mixer-bench mixers --help`` gives the exact method.  Here it runs once per number of
heads H, with every module built with H heads (the layer's ``--*-attention-heads``), so
each ratio comes from modules timed side by side in the same run:

  * ``attn``: fairseq's MultiheadAttention (the baseline);
  * ``interacting``: Algorithm 1, sum reading, as one SDPA call with the summed query;
  * ``interacting:reading=pairwise``: H^2 score maps and an H^2 d_v x D output map;
  * ``talking_heads``: two H x H maps across heads around the softmax (score maps
    materialised; no fused kernel);
  * ``fixed_head:head_dim=25``: head size fixed at the paper's WMT17 EN-DE mean length.

The modules are the paper's comparison set, named here on purpose (a new mixer is timed by
``mixer-bench mixers``, not here); each spec is checked against the registry before
anything runs, so a renamed mixer or option is an error rather than an empty column.

Goal (issue 4): ``interacting`` <= 1.05x the time of ``attn`` at every H.
"""

import argparse
import os
import time
from typing import Any, Dict, List, Optional, Tuple

from ..mixers.registry import Role
from .flops import machine_peak
from .layer_args import add_group_args, setup_group_args
from .layer_measure import bench_group
from .layer_modules import spec_problem
from .layer_tables import FLOPS_NOTE, flops_cell, fmt_mb, peak_line
from .result_files import rerender, write_outputs
from .run_record import run_meta

GOAL = 1.05
FIXED_HEAD_DIM = 25  # the paper's WMT17 EN-DE mean length (§4.1)
MIXERS = [
    "attn",
    "interacting",
    "interacting:reading=pairwise",
    "talking_heads",
    f"fixed_head:head_dim={FIXED_HEAD_DIM}",
]
ROLES = (Role.ENCODER_SELF, Role.DECODER_SELF)
NAME = "bench_heads"  # the stem of the default outputs


def time_cell(r: Dict[str, Any], lab: str) -> str:
    if "median_s" not in r:
        return ""
    if lab == "attn":
        return f"{1000 * r['median_s']:.1f}"
    # time and forward multiply-adds as multiples of attn's (> 1: slower, more arithmetic)
    return (
        f"{1000 * r['median_s']:.1f} ({1 / r['speedup_vs_attn']:.2f}x [{1 / r['speedup_vs_attn_min']:.2f}x]; "
        f"{1 / r['ceiling_vs_attn']:.2f})"
    )


def mem_cell(r: Dict[str, Any], lab: str) -> str:
    if "peak_bytes" not in r:
        return ""
    if lab == "attn" or r.get("mem_ratio_vs_attn") is None:
        return fmt_mb(r["peak_bytes"])
    return f"{fmt_mb(r['peak_bytes'])} ({r['mem_ratio_vs_attn']:.2f}x)"


def markdown(meta: Dict[str, Any], rows: List[Dict[str, Any]]) -> str:
    out = [f"# Heads benchmark: interacting-head attention and its baselines ({meta['device']})\n"]
    out.append(f"- command: `{meta['command']}`")
    out.append(f"- date: {meta['date']}; host: {meta['host']}; git: {meta['git']}")
    out.append(
        f"- torch {meta['torch']}, python {meta['python']}; device: {meta['device_name']}; "
        f"torch threads: {meta['threads']} (os.cpu_count {meta['cpu_count']})"
    )
    out.append(
        f"- load average (1/5/15 min) at start {meta['load_start']}, at end {meta['load_end']}; "
        f"wall time {meta['wall_s']:.0f} s.  Other jobs shared this machine; the round-robin "
        "timing spreads their load over all modules of a group alike"
    )
    out.append(
        f"- one module, d={meta['dim']}, {meta['dtype']}, train mode, dropout {meta['dropout']}; "
        f"batch: constant tokens, B = {meta['tokens']} // L; H heads for every module"
    )
    out.append(
        f"- time: {meta['warmup']} warmup step(s), then the median [minimum] of {meta['repeats']} timed "
        "forward+backward steps (mixer_plugin/bench/layer_measure.py bench_group)"
    )
    out.append(
        "- memory: peak bytes of one step above what was allocated before it (layer_measure.peak_cpu: "
        "the CPU allocator's events; on CUDA max_memory_allocated): activations kept for backward, "
        "temporaries and grads; not parameters or inputs"
    )
    out.append(
        "- `x attn` = module time / attn time of the same (role, L, H) group, so > 1 is slower; "
        "`FLOPs x` = the same ratio of forward multiply-adds per token (`MixerBase.macs`)\n"
    )
    out.append(f"Goal: `interacting` <= {GOAL:.2f}x attn time at every H.\n")
    labels = meta["mixers"]
    for role in [r.value for r in ROLES]:
        for L in meta["lengths"]:
            rr = [r for r in rows if r["role"] == role and r["L"] == L]
            if not rr:
                continue
            out.append(f"## {role}, L = {L} (B = {rr[0]['B']})\n")
            for title, cell in (
                ("Forward+backward time, ms (x attn, median [min]; FLOPs x)", time_cell),
                ("Peak memory of one step, MB (x attn)", mem_cell),
            ):
                out.append(title + "\n")
                out.append("| H | d_k | " + " | ".join(f"`{lab}`" for lab in labels) + " |")
                out.append("|---:|---:|" + "---:|" * len(labels))
                for H in meta["heads"]:
                    by = {r["mixer"]: r for r in rr if r["H"] == H}
                    cells = [cell(by[lab], lab) if lab in by else "" for lab in labels]
                    out.append(f"| {H} | {meta['dim'] // H} | " + " | ".join(cells) + " |")
                out.append("")
    out.append("## Goal check: `interacting` time / `attn` time\n")
    out.append("| role | L | " + " | ".join(f"H={H}" for H in meta["heads"]) + " |")
    out.append("|---|---:|" + "---:|" * len(meta["heads"]))
    for role in [r.value for r in ROLES]:
        for L in meta["lengths"]:
            cells = []
            for H in meta["heads"]:
                r = next(
                    (
                        r
                        for r in rows
                        if r["role"] == role
                        and r["L"] == L
                        and r["H"] == H
                        and r["mixer"] == "interacting"
                        and "speedup_vs_attn" in r
                    ),
                    None,
                )
                if r is None:
                    cells.append("n/a")
                else:
                    ratio = 1 / r["speedup_vs_attn"]
                    cells.append(
                        f"{ratio:.2f}x [{1 / r['speedup_vs_attn_min']:.2f}x] {'ok' if ratio <= GOAL else 'MISS'}"
                    )
            out.append(f"| {role} | {L} | " + " | ".join(cells) + " |")
    out.append("\nMedian [minimum]: the minimum is the step least disturbed by other load.\n")
    out.append("## FLOPs: each mixer against its own ceiling\n")
    out.append(f"{peak_line(meta)}  {FLOPS_NOTE}\n")
    for role in [r.value for r in ROLES]:
        rr = [r for r in rows if r["role"] == role and "median_s" in r]
        if not rr:
            continue
        out.append(f"### {role}\n")
        out.append("| L | H | " + " | ".join(f"`{lab}`" for lab in labels) + " |")
        out.append("|---:|---:|" + "---:|" * len(labels))
        for L in meta["lengths"]:
            for H in meta["heads"]:
                by = {r["mixer"]: r for r in rr if r["L"] == L and r["H"] == H}
                if by:
                    out.append(
                        f"| {L} | {H} | "
                        + " | ".join(flops_cell(lab, by[lab]) if lab in by else "" for lab in labels)
                        + " |"
                    )
        out.append("")
    return "\n".join(out)


def main(argv: Optional[List[str]] = None) -> Optional[Tuple[Dict[str, Any], List[Dict[str, Any]], str]]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_group_args(ap, NAME, "64,256")
    # no separate repeat count for long inputs unless asked (layer_measure.repeats_for)
    ap.set_defaults(repeats_large=None)
    ap.add_argument("--heads", help="comma-separated H (default 4,8,16,32)")
    ap.add_argument("--mixers", help=f"comma-separated specs besides attn (default: {','.join(MIXERS[1:])})")
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: H=4,8 and L=32 unless given, 256 tokens, 1 repeat; prints only"
    )
    args = ap.parse_args(argv)
    if args.from_json:
        return rerender(ap, args, markdown)
    if args.quick:
        args.heads, args.lengths = args.heads or "4,8", args.lengths or "32"
        args.tokens, args.warmup, args.repeats = 256, 1, 1
    args.heads, args.lengths = args.heads or "4,8,16,32", args.lengths or "64,256"
    try:
        heads = [int(h) for h in args.heads.split(",")]
        lengths = [int(v) for v in args.lengths.split(",")]
    except ValueError:
        ap.error("--heads and --lengths take comma-separated integers")
    for H in heads:
        if H < 1 or args.dim % H:
            ap.error(f"argument --heads: {H} does not divide --dim {args.dim}")
    labels = ["attn"] + (args.mixers.split(",") if args.mixers else MIXERS[1:])
    for lab in labels:
        problem = spec_problem(lab, ROLES)
        if problem:
            ap.error(f"--mixers: {problem}")
    device = setup_group_args(ap, args, NAME)

    t0 = time.time()
    meta = {
        **run_meta(device),
        **machine_peak(device),
        "dim": args.dim,
        "dtype": args.dtype,
        "dropout": args.dropout,
        "tokens": args.tokens,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "heads": heads,
        "lengths": lengths,
        "mixers": labels,
    }
    print(f"# {meta['command']}  threads {meta['threads']} load {meta['load_start']}", flush=True)
    rows = []
    for L in lengths:
        for H in heads:
            args.heads = H  # every module of the group gets H heads
            for role in ROLES:
                group = bench_group(role, L, [(lab, lab) for lab in labels], args, device)
                for lab in labels:
                    r = group.get(lab)
                    if r is None:
                        continue
                    r["H"] = H
                    if "speedup_vs_attn" in r:
                        print(
                            f"{role.value:13s} L={L:4d} H={H:3d} {lab:30s} {1000 * r['median_s']:9.1f} ms "
                            f"{1 / r['speedup_vs_attn']:5.2f}x time {fmt_mb(r['peak_bytes']):>8s} MB",
                            flush=True,
                        )
                    rows.append(r)
    meta["load_end"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    meta["wall_s"] = time.time() - t0
    write_outputs(args.md, args.json, markdown(meta, rows), {"meta": meta, "rows": rows})


if __name__ == "__main__":
    main()
