"""Forward+backward time and peak memory of ONE token-mixer module, every registered
mixer against the stock fairseq ``MultiheadAttention`` (``attn``), over sequence length.

    mixer-bench mixers                      # full run, writes results/bench/bench_mixers_<device>.{md,json}
    mixer-bench mixers --quick              # smoke run (seconds), prints only
    mixer-bench mixers --device cuda        # GPU: cuda.synchronize + max_memory_allocated
    mixer-bench mixers --lengths 64,1024 --tokens 8192 --md /tmp/x.md
    mixer-bench mixers --from-json results/bench/bench_mixers_cpu.json   # re-render its table and plot, time nothing

This is a benchmark, not a test: it asserts nothing about speed.  The measuring code is
``mixer_plugin/bench/layer_measure.py``'s (``bench_group``), shared with ``heads`` and ``multiscale``.

What is measured, per (role, L, mixer):
  * one module, d=512, 8 heads, n=5 (the mixers' window), float32 (``--dtype``), train mode,
    dropout 0 (``--dropout``); input x of shape (L, B, 512) with requires_grad;
    one step = ``out, _ = m(query=x, key=x, value=x, key_padding_mask=None,
    need_weights=False, attn_mask=mask)`` then ``out.backward(g)`` with a fixed random
    g; parameter and input grads are set to None before every step (as
    ``optimizer.zero_grad(set_to_none=True)`` does).
  * decoder_self: every module gets the float future mask (-inf above the diagonal,
    as fairseq's ``buffered_future_mask``), built once outside the timed/measured
    region (fairseq caches it too).  The plugin's mixers are causal by construction
    and ignore it; stock MHA needs it.
  * batch: constant tokens, ``B = max(1, tokens // L)`` (``--tokens``, default 4096),
    or a fixed ``--batch``.
  * time: ``--warmup`` untimed steps, then the median of ``repeats`` timed steps
    (``time.perf_counter``; ``torch.cuda.synchronize`` on GPU).  The modules of one
    (role, L) are timed round-robin (attn, ngram, ..., attn, ngram, ...) with the order
    rotated each round, so a load spike on a shared machine hits all of them alike and
    the ratios stay comparable.
  * peak memory: bytes allocated during one step above what was allocated before it
    (parameters, x, g and the mask are excluded; activations kept for backward,
    temporaries, and the parameter/input grads are included).
      - CPU: torch has no max_memory_allocated for CPU, so one extra step runs under
        ``torch.profiler.profile(profile_memory=True)``; the CPU allocator reports a
        running ``total_allocated`` with every allocation/free event, and the peak is
        ``max(total_allocated) - total_allocated_before_first_event``.  This counts
        every allocation through c10's CPU allocator (all ATen tensors, incl. SDPA's
        buffers); it does not count oneDNN/MKL internal scratch memory or Python
        objects.  Deterministic, unlike an RSS delta.
      - CUDA: ``torch.cuda.max_memory_allocated() - memory_allocated()`` after
        ``reset_peak_memory_stats()``.
  * ratios, against attn of the same role and L in the same run:
    speedup = attn_time / mixer_time; memory ratio = mixer_peak / attn_peak.
  * ``attn[math]`` (``--no-math-attn`` drops it): the same stock module run under
    ``sdpa_kernel(SDPBackend.MATH)``, i.e. with the L x L score matrix materialised.
    Reference only; ratios are against the stock ``attn``, whichever SDPA kernel
    torch picks for it (recorded in the output).
"""

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..mixers.registry import Role
from .flops import machine_peak
from .layer_args import add_group_args, setup_group_args
from .layer_measure import bench_group
from .layer_modules import MATH, variants
from .layer_tables import FLOPS_NOTE, flops_cell, fmt_mb, length_table, mem_exponent, mixer_labels, peak_line
from .result_files import rerender, write_outputs
from .run_record import run_meta

ROLES = (Role.ENCODER_SELF, Role.DECODER_SELF)
DEFAULT_LENGTHS = (32, 64, 128, 256, 512, 1024, 2048)
NAME = "bench_mixers"  # the stem of the default outputs


def markdown(meta: Dict[str, Any], rows: List[Dict[str, Any]], labels: List[str]) -> str:
    out = []
    out.append(f"# Token-mixer micro-benchmark ({meta['device']})\n")
    out.append(f"- command: `{meta['command']}`")
    out.append(f"- date: {meta['date']}; host: {meta['host']}; git: {meta['git']}")
    out.append(
        f"- torch {meta['torch']}, fairseq {meta['fairseq']}, python {meta['python']}; "
        f"device: {meta['device_name']}; torch threads: {meta['threads']} "
        f"(interop {meta['interop_threads']}, os.cpu_count {meta['cpu_count']})"
    )
    out.append(
        f"- load average (1/5/15 min) at start {meta['load_start']}, at end {meta['load_end']}; "
        f"wall time {meta['wall_s']:.0f} s"
    )
    out.append(
        f"- one module, d={meta['dim']}, {meta['heads']} heads, n={meta['n']}, {meta['dtype']}, train mode, "
        f"dropout {meta['dropout']}; batch: {meta['batch_rule']}"
    )
    out.append(
        f"- time: {meta['warmup']} warmup step(s), then the median of {meta['repeats_rule']} "
        "timed forward+backward steps per module, modules of one (role, L) timed round-robin"
    )
    out.append(f"- peak memory: {meta['memory_method']}")
    out.append(
        f"- timing spread: median over modules of (max - min) / median of their timed steps = "
        f"{meta['spread_median']:.0%} (worst {meta['spread_max']:.0%}); the machine's other load "
        "shows up here"
    )
    out.append(f"- stock `attn` SDPA kernel(s): {meta['attn_kernels']}")
    out.append(
        "- speedup = attn time / mixer time; mem = mixer peak / attn peak (both vs stock `attn`, "
        "same role and L, same run)\n"
    )
    out.append(
        "Goals: `ngram` and `local` at >= 1.0x attn speed at L=64 and >= 90% of their FLOP ceiling at "
        "L=1024 and 2048; every attention-like mixer within 5% of attn where its FLOPs equal attn's; "
        "peak memory linear in L for the windowed ones (per-sequence exponent ~1; at constant "
        "tokens per batch, a flat MB column).\n"
    )

    for role in [r.value for r in ROLES]:
        rr = [r for r in rows if r["role"] == role]
        present = [lab for lab in labels if any(r["mixer"] == lab and "median_s" in r for r in rr)]
        if not present:
            continue
        out.append(f"## {role}\n")
        out.append("Forward+backward time, ms (speedup vs attn)\n")

        def time_cell(lab: str, r: Dict[str, Any]) -> str:
            if "median_s" not in r:
                return ""
            ms = f"{1000 * r['median_s']:.1f}"
            return ms if lab == "attn" else f"{ms} ({r['speedup_vs_attn']:.2f}x)"

        def memory_cell(lab: str, r: Dict[str, Any]) -> str:
            if "peak_bytes" not in r:
                return ""
            if lab == "attn" or r.get("mem_ratio_vs_attn") is None:
                return fmt_mb(r["peak_bytes"])
            return f"{fmt_mb(r['peak_bytes'])} ({r['mem_ratio_vs_attn']:.2f})"

        out += length_table(rr, present, time_cell)
        out.append("\nPeak memory of one step, MB (mixer / attn)\n")
        out += length_table(rr, present, memory_cell)
        exps = []
        for lab in present:
            e = mem_exponent(rows, lab, role)
            exps.append("" if e is None else f"{e:.2f}")
        out.append("| exp | | " + " | ".join(exps) + " |")
        out.append(
            "\n`exp`: least-squares slope of log(peak MB per sequence) against log L "
            "(1 = linear in L, 2 = quadratic).\n"
        )
        skipped = sorted({(r["mixer"], r["skipped"]) for r in rr if "skipped" in r})
        for lab, why in skipped:
            out.append(f"- `{lab}` not run as {role}: {why}")
        if skipped:
            out.append("")

    out.append("## FLOPs: each mixer against its own ceiling\n")
    out.append(f"{peak_line(meta)}  {FLOPS_NOTE}\n")
    for role in [r.value for r in ROLES]:
        rr = [r for r in rows if r["role"] == role and "median_s" in r]
        present = [lab for lab in labels if lab != MATH and any(r["mixer"] == lab for r in rr)]
        if not rr:
            continue
        out.append(f"### {role}\n")
        out += length_table(rr, present, flops_cell) + [""]

    out.append("## Goal check\n")
    out.append(
        "Speedup vs stock `attn` from medians, [from minima] (the minimum is the least "
        "disturbed by other load on the machine), and as a share of the FLOP ceiling; "
        "`vs math`: speedup against `attn[math]`.\n"
    )
    out.append(
        "| mixer | role | L=64 (goal >= 1.0) | L=1024: speed-up, ceiling, share (goal >= 90%) "
        "| L=2048: speed-up, ceiling, share (goal >= 90%) | vs math, L=1024 | mem exp (goal ~1) "
        "| mem / attn, L=1024 |"
    )
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for lab in labels:
        if lab in ("attn", MATH):
            continue
        for role in ROLES:
            rr = {r["L"]: r for r in rows if r["mixer"] == lab and r["role"] == role.value and "median_s" in r}
            if not rr:
                continue
            math_rows = {r["L"]: r for r in rows if r["mixer"] == MATH and r["role"] == role.value and "median_s" in r}

            def cell(L: int) -> str:
                r = rr.get(L)
                if not r:
                    return "n/a"
                return f"{r['speedup_vs_attn']:.2f}x [{r['speedup_vs_attn_min']:.2f}x]"

            def ceiling(L: int) -> str:
                r = rr.get(L)
                if not r:
                    return "n/a"
                return f"{cell(L)}, {r['ceiling_vs_attn']:.2f}x, {r['of_ceiling']:.0%}"

            r1k, m1k = rr.get(1024), math_rows.get(1024)
            vs_math = f"{m1k['median_s'] / r1k['median_s']:.2f}x" if r1k and m1k else "n/a"
            mem1k = f"{r1k['mem_ratio_vs_attn']:.2f}" if r1k and r1k.get("mem_ratio_vs_attn") is not None else "n/a"
            e = mem_exponent(rows, lab, role.value)
            out.append(
                f"| `{lab}` | {role.value} | {cell(64)} | {ceiling(1024)} | {ceiling(2048)} | {vs_math} "
                f"| {'' if e is None else f'{e:.2f}'} | {mem1k} |"
            )
    out.append("")
    if "flash" in meta["attn_kernels"] or "efficient" in meta["attn_kernels"]:
        out.append(
            "Memory: stock `attn` ran a fused SDPA kernel (see the kernel line above), which "
            "never stores the L x L scores, so its peak memory is linear in L as well (flat "
            "at constant tokens per batch); the quadratic term only appears in `attn[math]`, "
            "the same module on SDPA's math kernel.\n"
        )
    return "\n".join(out)


def plot(meta: Dict[str, Any], rows: List[Dict[str, Any]], labels: List[str], path: Path) -> None:
    """Speed-up over stock ``attn`` against L (top) and the share of each mixer's FLOP
    ceiling it reaches (bottom), one column per role, from the same rows as the tables."""
    from ..plotting import pyplot

    plt = pyplot()
    roles = [r.value for r in ROLES if any(x["role"] == r.value and "median_s" in x for x in rows)]
    shown = [lab for lab in labels if lab not in ("attn", MATH)]
    colours = plt.get_cmap("tab20")
    fig, axes = plt.subplots(2, len(roles), figsize=(5.6 * len(roles), 7.2), squeeze=False, sharex=True)
    for col, role in enumerate(roles):
        top, bottom = axes[0][col], axes[1][col]
        for i, lab in enumerate(shown):
            pts = sorted(
                (r["L"], r["speedup_vs_attn"], r["of_ceiling"])
                for r in rows
                if r["mixer"] == lab and r["role"] == role and "speedup_vs_attn" in r
            )
            if not pts:
                continue
            style = {"color": colours(i % 20), "marker": "o", "ms": 3, "label": lab}
            top.plot([p[0] for p in pts], [p[1] for p in pts], **style)
            bottom.plot([p[0] for p in pts], [100 * p[2] for p in pts], **style)
        top.axhline(1.0, color="black", lw=0.8)
        bottom.axhline(90, color="black", lw=0.8, ls="--")
        top.set_yscale("log")
        top.set_title(f"{role}: speed-up over stock attn (median)", fontsize=9)
        bottom.set_title("share of the FLOP ceiling (%); dashed: the 90% goal", fontsize=9)
        bottom.set_xlabel("sequence length L")
        for ax in (top, bottom):
            ax.set_xscale("log", base=2)
            ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(
        f"One layer, forward + backward, d={meta['dim']}, {meta['heads']} heads, n={meta['n']}, "
        f"{meta.get('dtype', 'float32')} ({meta['device_name']}, {meta['date'][:10]})",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_group_args(ap, NAME, "32,...,2048")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--mixers", help="comma-separated labels to run (default: all; attn is always run)")
    ap.add_argument("--no-math-attn", action="store_true", help="skip the attn[math] reference")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: L=32,64, 256 tokens, 1 warmup, 1 repeat, no attn[math]; prints, writes nothing "
        "unless --md/--json are given",
    )
    args = ap.parse_args(argv)
    if args.from_json:
        meta, rows, md_path = rerender(ap, args, lambda meta, rows: markdown(meta, rows, mixer_labels(meta)))
        return plot(meta, rows, mixer_labels(meta), Path(md_path).with_suffix(".png"))

    if args.quick:
        args.lengths = args.lengths or "32,64"
        args.tokens, args.warmup, args.repeats, args.repeats_large = 256, 1, 1, 1
        args.no_math_attn = True
    lengths = [int(v) for v in args.lengths.split(",")] if args.lengths else list(DEFAULT_LENGTHS)
    labelled = variants()
    if args.mixers:
        keep = set(args.mixers.split(",")) | {"attn"}
        unknown = sorted(keep - {lab for lab, _ in labelled})
        if unknown:  # a stale label would otherwise time attn alone
            ap.error(f"--mixers: unknown {', '.join(unknown)} (known: {', '.join(lab for lab, _ in labelled)})")
        labelled = [(lab, s) for lab, s in labelled if lab in keep]
    if not args.no_math_attn:
        labelled.insert(1, (MATH, "attn"))
    labels = [lab for lab, _ in labelled]
    device = setup_group_args(ap, args, NAME)

    t_start = time.time()
    meta = {
        **run_meta(device),
        **machine_peak(device),
        "dim": args.dim,
        "heads": args.heads,
        "n": args.n,
        "dropout": args.dropout,
        "dtype": args.dtype,
        "lengths": lengths,
        "batch_rule": (f"fixed B={args.batch}" if args.batch else f"constant tokens, B = max(1, {args.tokens} // L)"),
        "warmup": args.warmup,
        "repeats_rule": (f"{args.repeats} (L < {args.large_from}) / {args.repeats_large} (L >= {args.large_from})"),
        "memory_method": (
            "torch.profiler(profile_memory=True) over one extra step; peak = "
            "max(allocator total_allocated) - total before the step's first allocation "
            "(all ATen CPU allocations: activations, temporaries, grads; not parameters, "
            "inputs or the mask; not oneDNN/MKL scratch)"
            if device.type == "cpu"
            else "torch.cuda.max_memory_allocated() - memory_allocated() before the step, "
            "after reset_peak_memory_stats()"
        ),
        "mixers": [(lab, spec.format(n=args.n)) for lab, spec in labelled],
    }
    print(
        f"# {meta['command']}  torch {meta['torch']} threads {meta['threads']} "
        f"device {device.type} load {meta['load_start']}",
        flush=True,
    )

    rows = []
    for L in lengths:
        for role in ROLES:
            group = bench_group(role, L, labelled, args, device)
            for label in labels:
                r = group.get(label)
                if r is None:
                    continue
                rows.append(r)
                if "skipped" in r:
                    continue
                extra = ""
                if "speedup_vs_attn" in r and label != "attn":
                    extra = f" {r['speedup_vs_attn']:5.2f}x time, {r['mem_ratio_vs_attn']:5.2f} mem"
                print(
                    f"{role.value:13s} L={L:5d} B={r['B']:4d} {label:16s} "
                    f"{1000 * r['median_s']:9.1f} ms {fmt_mb(r['peak_bytes']):>8s} MB{extra}",
                    flush=True,
                )

    kernels = sorted({k for r in rows if r["mixer"] == "attn" for k in r.get("sdpa_ops", [])})
    meta["attn_kernels"] = ", ".join(f"`{k}`" for k in kernels) or "none seen"
    spreads = [(max(r["times_s"]) - min(r["times_s"])) / r["median_s"] for r in rows if "times_s" in r]
    meta["spread_median"] = statistics.median(spreads) if spreads else 0.0
    meta["spread_max"] = max(spreads) if spreads else 0.0
    meta["load_end"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    meta["wall_s"] = time.time() - t_start
    write_outputs(args.md, args.json, markdown(meta, rows, labels), {"meta": meta, "rows": rows})
    if args.md:
        plot(meta, rows, labels, Path(args.md).with_suffix(".png"))


if __name__ == "__main__":
    main()
