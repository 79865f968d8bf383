"""Forward+backward time and peak memory of ONE token-mixer module, every registered
mixer against the stock fairseq ``MultiheadAttention`` (``attn``), over sequence length.

    mixer-bench mixers                      # full run, writes results/bench_mixers_<device>.{md,json}
    mixer-bench mixers --quick              # smoke run (seconds), prints only
    mixer-bench mixers --device cuda        # GPU: cuda.synchronize + max_memory_allocated
    mixer-bench mixers --lengths 64,1024 --tokens 8192 --md /tmp/x.md
    mixer-bench mixers --from-json results/bench_mixers_cpu.json   # re-render its table and plot, time nothing

This is a benchmark, not a test: it asserts nothing about speed.

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
import dataclasses
import datetime
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

from fairseq.modules import MultiheadAttention

from ..experiments.stages import machine
from ..mixers.registry import MIXER_REGISTRY, MixerContext, MixerSpecError, Role, build_mixer, parse_item
from ..paths import CHECKOUT

ROLES = (Role.ENCODER_SELF, Role.DECODER_SELF)
DEFAULT_LENGTHS = (32, 64, 128, 256, 512, 1024, 2048)
# registered variants benchmarked besides each mixer's defaults
# (the kernel=conv rows are eq. 5's grouped-conv formulation, timed beside the default per-slot GEMMs)
EXTRA_VARIANTS = {"ngram": ["ngram:global=1", "ngram:proj=slice:out=none", "ngram:kernel=conv",
                            "ngram:proj=slice:out=none:kernel=conv"], "hard": ["hard:train=soft"],
                  "multiscale": ["multiscale:scales=nx8"]}
MATH = "attn[math]"


# ----------------------------------------------------------------- modules
class MathSDPA(nn.Module):
    """The stock module with SDPA forced onto the math (L x L) kernel."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, **kw):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(SDPBackend.MATH):
            return self.inner(**kw)


def variants():
    """(label, spec string) for every registered mixer, `attn` first."""
    names = sorted(MIXER_REGISTRY, key=lambda n: (n != "attn", n))
    out = []
    for name in names:
        fields = {f.name for f in dataclasses.fields(MIXER_REGISTRY[name].options)}
        spec = f"{name}:n={{n}}" if "n" in fields else name
        out.append((name, spec))
        for extra in EXTRA_VARIANTS.get(name, []):
            out.append((extra, extra.replace(name, spec, 1)))
    return out


def build(spec: str, role: Role, args) -> nn.Module:
    D, H = args.dim, args.heads

    def stock():
        return MultiheadAttention(D, H, dropout=args.dropout, self_attention=True)

    ctx = MixerContext(
        role=role, layer_index=0, embed_dim=D, kv_dim=D, num_heads=H,
        attention_dropout=args.dropout, build_stock=stock,
    )
    flag = role.flag
    return build_mixer(parse_item(flag, spec.format(n=args.n)), ctx)


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPE_SUFFIX = {"bfloat16": "bf16", "float16": "fp16"}


def future_mask(L: int, device, dtype=torch.float32) -> torch.Tensor:
    # fairseq's buffered_future_mask: fill_with_neg_inf(zeros(L, L)).triu(1), in the model's dtype
    return torch.triu(torch.full((L, L), float("-inf"), device=device, dtype=dtype), 1)


# ----------------------------------------------------------------- measuring
def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step(m, x, g, mask):
    m.zero_grad(set_to_none=True)
    x.grad = None
    out, _ = m(query=x, key=x, value=x, key_padding_mask=None, need_weights=False, attn_mask=mask)
    out.backward(g)


def peak_cpu(m, x, g, mask):
    """Peak bytes allocated during one step, from the profiler's allocator events."""
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    m.zero_grad(set_to_none=True)
    x.grad = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step(m, x, g, mask)
    results = prof.profiler.kineto_results
    allocs, stack = [], list(results.experimental_event_tree())
    ops = set()
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.tag == _EventType.Allocation:
            f = node.extra_fields
            if f.device.type == "cpu":
                allocs.append((node.start_time_ns, f.alloc_size, f.total_allocated))
        elif "scaled_dot_product" in node.name or "attention" in node.name:
            ops.add(node.name)
    if not allocs:
        return 0, ops
    allocs.sort()
    base = allocs[0][2] - allocs[0][1]
    return max(a[2] for a in allocs) - base, ops


def peak_cuda(m, x, g, mask, device):
    m.zero_grad(set_to_none=True)
    x.grad = None
    sync(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    step(m, x, g, mask)
    sync(device)
    return torch.cuda.max_memory_allocated(device) - before


def sdpa_ops(m, x, g, mask):
    """Names of the attention kernels a module's step dispatches to (CPU-side ops)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step(m, x, g, mask)
    return {e.name for e in prof.events() if "scaled_dot_product" in e.name}


def repeats_for(L, args):
    if args.repeats_large is not None and L >= args.large_from:
        return args.repeats_large
    return args.repeats


def bench_group(role, L, labelled_specs, args, device):
    """Time and measure every module of one (role, L) round-robin."""
    B = args.batch or max(1, args.tokens // L)
    torch.manual_seed(0)
    mods, skipped = {}, {}
    for label, spec in labelled_specs:
        base = "attn" if label == MATH else label.split(":")[0]
        if role not in MIXER_REGISTRY[base].roles:
            continue
        try:
            mod = build("attn" if label == MATH else spec, role, args)
        except MixerSpecError as e:
            skipped[label] = str(e)
            continue
        if label == MATH:
            mod = MathSDPA(mod)
        # the whole module in one dtype, as fairseq's --fp16 / --bf16 cast the model
        mods[label] = mod.to(device=device, dtype=DTYPES[args.dtype]).train()
    x = torch.randn(L, B, args.dim, device=device, dtype=DTYPES[args.dtype], requires_grad=True)
    g = torch.randn(L, B, args.dim, device=device, dtype=DTYPES[args.dtype])
    mask = future_mask(L, device, DTYPES[args.dtype]) if role.causal else None

    labels = list(mods)
    for label in labels:
        for _ in range(args.warmup):
            step(mods[label], x, g, mask)
    sync(device)
    times = {label: [] for label in labels}
    for r in range(repeats_for(L, args)):
        k = r % len(labels)
        for label in labels[k:] + labels[:k]:  # rotate the order each round
            m = mods[label]
            sync(device)
            t0 = time.perf_counter()
            step(m, x, g, mask)
            sync(device)
            times[label].append(time.perf_counter() - t0)

    rows = {}
    for label in labels:
        m = mods[label]
        if device.type == "cpu":
            peak, _ = peak_cpu(m, x, g, mask)
        else:
            peak = peak_cuda(m, x, g, mask, device)
        kernels = sorted(sdpa_ops(m, x, g, mask)) if label in ("attn", MATH) else []
        macs = module_macs(m, L, role)
        rows[label] = {
            "role": role.value, "L": L, "B": B, "tokens": L * B, "mixer": label,
            "times_s": times[label],
            "median_s": statistics.median(times[label]),
            "min_s": min(times[label]),
            "peak_bytes": int(peak),
            "sdpa_ops": kernels,
            "params": sum(p.numel() for p in m.parameters()),
            "macs_per_token": macs / L,
            # forward + backward ~ 3x the forward multiply-adds, 2 FLOPs each
            "gflops": 6 * macs * B / statistics.median(times[label]) / 1e9,
        }
    for label, why in skipped.items():
        rows[label] = {"role": role.value, "L": L, "B": B, "mixer": label, "skipped": why}
    for label in labels:
        base = rows.get("attn")
        r = rows[label]
        if base and "median_s" in base:
            r["speedup_vs_attn"] = base["median_s"] / r["median_s"]
            r["speedup_vs_attn_min"] = base["min_s"] / r["min_s"]
            r["ceiling_vs_attn"] = base["macs_per_token"] / r["macs_per_token"]  # equal FLOP rates
            r["of_ceiling"] = r["speedup_vs_attn"] / r["ceiling_vs_attn"]
            r["mem_ratio_vs_attn"] = r["peak_bytes"] / base["peak_bytes"] if base["peak_bytes"] else None
    del mods, x, g, mask
    return rows


# ----------------------------------------------------------------- reporting
def mem_exponent(rows, label, role):
    """Slope of log(peak bytes per sequence) vs log(L), least squares: ~1 linear, ~2 quadratic."""
    pts = [(math.log(r["L"]), math.log(r["peak_bytes"] / r["B"]))
           for r in rows if r["mixer"] == label and r["role"] == role and r.get("peak_bytes")]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def module_macs(m, L: int, role) -> int:
    """Forward multiply-adds of one length-L sequence: the plugin's mixers declare theirs
    (``MixerBase.macs``, checked against torch's FLOP counter in tests/test_flops.py);
    stock attention is four D x D projections and its scores and value sums over all
    keys (the causal half for decoder self-attention: the flash kernel skips the rest)."""
    inner = m.inner if isinstance(m, MathSDPA) else m
    if hasattr(inner, "macs"):
        return inner.macs(L, L)
    D = inner.embed_dim
    pairs = L * (L + 1) // 2 if role.causal else L * L
    return 4 * L * D * D + 2 * pairs * D


def machine_peak(device) -> dict:
    """Peak fp32 FLOP/s: cores x FMA lanes x 2 FMA units x 2 FLOPs x clock (CPU, from
    /proc/cpuinfo; two FMA pipes per core is an assumption that holds for current x86
    server cores).  None where it cannot be read (CUDA: see the device's data sheet)."""
    if device.type != "cpu":
        return {"peak_gflops": None, "peak_rule": "not computed for this device"}
    try:
        info = open("/proc/cpuinfo").read()
    except OSError:
        return {"peak_gflops": None, "peak_rule": "no /proc/cpuinfo"}
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    mhz = next((float(line.split(":", 1)[1]) for line in info.splitlines() if line.startswith("cpu MHz")), None)
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags and "fma" in flags else 4
    cores = torch.get_num_threads()
    if mhz is None:
        return {"peak_gflops": None, "peak_rule": "no clock in /proc/cpuinfo"}
    peak = cores * lanes * 2 * 2 * mhz / 1e3
    isa = "AVX-512" if lanes == 16 else "AVX2+FMA" if lanes == 8 else "SSE"
    return {"peak_gflops": peak, "peak_rule": f"{cores} cores x {lanes} fp32 lanes ({isa}) x 2 FMA units x 2 FLOPs "
                                               f"x {mhz / 1e3:.2f} GHz = {peak:.0f} GFLOP/s"}


def length_table(rr, present, cell) -> list:
    """Markdown rows: one per L (with its batch), one column per module, ``cell(label, row)``."""
    lines = ["| L | B | " + " | ".join(f"`{lab}`" for lab in present) + " |", "|---:|---:|" + "---:|" * len(present)]
    for L in sorted({r["L"] for r in rr}):
        by = {r["mixer"]: r for r in rr if r["L"] == L}
        cells = [cell(lab, by[lab]) if lab in by else "" for lab in present]
        lines.append(f"| {L} | {next(iter(by.values()))['B']} | " + " | ".join(cells) + " |")
    return lines


def fmt_mb(b):
    return f"{b / 2**20:.1f}"


def flops_cell(lab, r) -> str:
    """Forward multiply-adds per token, achieved GFLOP/s and, against ``attn``, the FLOP
    ceiling (the speed-up at equal FLOP rates) and the share of it reached."""
    head = f"{r['macs_per_token'] / 1e6:.2f}M/tok, {r['gflops']:.0f} GFLOP/s"
    return head if lab == "attn" else f"{head}, ceiling {r['ceiling_vs_attn']:.2f}x, {r['of_ceiling']:.0%}"


FLOPS_NOTE = ("Per cell: forward multiply-adds per token (`MixerBase.macs`; stock attn: 4D^2 + scores and value sums "
              "over its keys), the achieved GFLOP/s of forward+backward (3x forward, 2 FLOPs per multiply-add), the "
              "ceiling = attn's multiply-adds / the mixer's (the speed-up if both ran at the same FLOP rate), and the "
              "measured speed-up as a share of that ceiling.")


def peak_line(meta) -> str:
    if meta.get("peak_rule") is None:  # runs from before the peak was recorded
        return "Machine peak: not recorded by this run."
    return f"Machine peak: {meta['peak_rule']}."


def markdown(meta, rows, labels):
    out = []
    out.append(f"# Token-mixer micro-benchmark ({meta['device']})\n")
    out.append(f"- command: `{meta['command']}`")
    out.append(f"- date: {meta['date']}; host: {meta['host']}; git: {meta['git']}")
    out.append(f"- torch {meta['torch']}, fairseq {meta['fairseq']}, python {meta['python']}; "
               f"device: {meta['device_name']}; torch threads: {meta['threads']} "
               f"(interop {meta['interop_threads']}, os.cpu_count {meta['cpu_count']})")
    out.append(f"- load average (1/5/15 min) at start {meta['load_start']}, at end {meta['load_end']}; "
               f"wall time {meta['wall_s']:.0f} s")
    out.append(f"- one module, d={meta['dim']}, {meta['heads']} heads, n={meta['n']}, {meta['dtype']}, train mode, "
               f"dropout {meta['dropout']}; batch: {meta['batch_rule']}")
    out.append(f"- time: {meta['warmup']} warmup step(s), then the median of {meta['repeats_rule']} "
               "timed forward+backward steps per module, modules of one (role, L) timed round-robin")
    out.append(f"- peak memory: {meta['memory_method']}")
    out.append(f"- timing spread: median over modules of (max - min) / median of their timed steps = "
               f"{meta['spread_median']:.0%} (worst {meta['spread_max']:.0%}); the machine's other load "
               "shows up here")
    out.append(f"- stock `attn` SDPA kernel(s): {meta['attn_kernels']}")
    out.append("- speedup = attn time / mixer time; mem = mixer peak / attn peak (both vs stock `attn`, "
               "same role and L, same run)\n")
    out.append("Goals: `ngram` and `local` at >= 1.0x attn speed at L=64 and >= 90% of their FLOP ceiling at "
               "L=1024 and 2048; every attention-like mixer within 5% of attn where its FLOPs equal attn's; "
               "peak memory linear in L for the windowed ones (per-sequence exponent ~1; at constant "
               "tokens per batch, a flat MB column).\n")

    for role in [r.value for r in ROLES]:
        rr = [r for r in rows if r["role"] == role]
        present = [lab for lab in labels if any(r["mixer"] == lab and "median_s" in r for r in rr)]
        if not present:
            continue
        out.append(f"## {role}\n")
        out.append("Forward+backward time, ms (speedup vs attn)\n")

        def time_cell(lab, r):
            if "median_s" not in r:
                return ""
            ms = f"{1000 * r['median_s']:.1f}"
            return ms if lab == "attn" else f"{ms} ({r['speedup_vs_attn']:.2f}x)"

        def memory_cell(lab, r):
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
        out.append("\n`exp`: least-squares slope of log(peak MB per sequence) against log L "
                   "(1 = linear in L, 2 = quadratic).\n")
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
    out.append("Speedup vs stock `attn` from medians, [from minima] (the minimum is the least "
               "disturbed by other load on the machine), and as a share of the FLOP ceiling; "
               "`vs math`: speedup against `attn[math]`.\n")
    out.append("| mixer | role | L=64 (goal >= 1.0) | L=1024: speed-up, ceiling, share (goal >= 90%) "
               "| L=2048: speed-up, ceiling, share (goal >= 90%) | vs math, L=1024 | mem exp (goal ~1) "
               "| mem / attn, L=1024 |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for lab in labels:
        if lab in ("attn", MATH):
            continue
        for role in ROLES:
            rr = {r["L"]: r for r in rows
                  if r["mixer"] == lab and r["role"] == role.value and "median_s" in r}
            if not rr:
                continue
            math_rows = {r["L"]: r for r in rows
                         if r["mixer"] == MATH and r["role"] == role.value and "median_s" in r}

            def cell(L):
                r = rr.get(L)
                if not r:
                    return "n/a"
                return f"{r['speedup_vs_attn']:.2f}x [{r['speedup_vs_attn_min']:.2f}x]"

            def ceiling(L):
                r = rr.get(L)
                if not r:
                    return "n/a"
                return f"{cell(L)}, {r['ceiling_vs_attn']:.2f}x, {r['of_ceiling']:.0%}"

            r1k, m1k = rr.get(1024), math_rows.get(1024)
            vs_math = f"{m1k['median_s'] / r1k['median_s']:.2f}x" if r1k and m1k else "n/a"
            mem1k = (f"{r1k['mem_ratio_vs_attn']:.2f}"
                     if r1k and r1k.get("mem_ratio_vs_attn") is not None else "n/a")
            e = mem_exponent(rows, lab, role.value)
            out.append(f"| `{lab}` | {role.value} | {cell(64)} | {ceiling(1024)} | {ceiling(2048)} | {vs_math} "
                       f"| {'' if e is None else f'{e:.2f}'} | {mem1k} |")
    out.append("")
    if "flash" in meta["attn_kernels"] or "efficient" in meta["attn_kernels"]:
        out.append(
            "Memory: stock `attn` ran a fused SDPA kernel (see the kernel line above), which "
            "never stores the L x L scores, so its peak memory is linear in L as well (flat "
            "at constant tokens per batch); the quadratic term only appears in `attn[math]`, "
            "the same module on SDPA's math kernel.\n")
    return "\n".join(out)


def mixer_labels(meta) -> list:
    return [lab for lab, _ in meta["mixers"]]


def plot(meta, rows, labels, path) -> None:
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
            pts = sorted((r["L"], r["speedup_vs_attn"], r["of_ceiling"]) for r in rows
                         if r["mixer"] == lab and r["role"] == role and "speedup_vs_attn" in r)
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
    fig.suptitle(f"One layer, forward + backward, d={meta['dim']}, {meta['heads']} heads, n={meta['n']}, "
                 f"{meta.get('dtype', 'float32')} ({meta['device_name']}, {meta['date'][:10]})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def rerender(ap, args, render):
    """A finished run's table re-rendered from its JSON (``--from-json``), nothing timed:
    for a change of presentation, so the committed figures stay the ones measured.
    ``render(meta, rows)`` is the benchmark's markdown; returns (meta, rows, md path)."""
    if not os.path.isfile(args.from_json):
        ap.error(f"--from-json: no such file {args.from_json}")
    payload = json.loads(Path(args.from_json).read_text())
    meta, rows = payload["meta"], payload["rows"]
    meta.setdefault("dtype", "float32")  # files written before --dtype existed were fp32
    md_path = args.md or str(Path(args.from_json).with_suffix(".md"))
    write_outputs(md_path, None, render(meta, rows), payload)
    return meta, rows, md_path


def git_describe():
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=str(CHECKOUT),
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "mixer_plugin"], cwd=str(CHECKOUT),
                               capture_output=True, text=True).stdout.strip()
        return head + (" (mixer_plugin/ has uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


def command_line() -> str:
    """How this benchmark was started, as a user types it."""
    return shlex.join(["mixer-bench", *sys.argv[1:]]) if sys.argv[0].endswith("mixer-bench") else shlex.join(
        ["python", "-m", "mixer_plugin.bench", *sys.argv[1:]])


def cpu_label() -> str:
    """How a benchmark names the CPU it ran on: the model name that every training stage's
    stamp records too (``stages.machine``), so a benchmark and a training run can be matched
    to one machine; ``platform.machine()`` would say only "x86_64"."""
    return f"CPU ({os.cpu_count()} cores, {machine()['cpu']})"


def run_meta(device) -> dict:
    """Where and when a benchmark ran: the command line, date, host, commit, versions,
    device, threads and the load average at the start (every bench_* script records it)."""
    import fairseq

    return {
        "command": command_line(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host": platform.node(),
        "git": git_describe(),
        "torch": torch.__version__,
        "fairseq": fairseq.__version__,
        "python": platform.python_version(),
        "device": device.type,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else machine()["cpu"],
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "cpu_count": os.cpu_count(),
        "load_start": " ".join(f"{v:.2f}" for v in os.getloadavg()),
    }


def write_outputs(md_path, json_path, md: str, payload: dict):
    """The markdown table (printed instead when there is no path) and the raw JSON."""
    if not md_path:
        print(md)
    for path, text in ((md_path, md if md.endswith("\n") else md + "\n"), (json_path, None)):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w") as f:
                if text is None:
                    json.dump(payload, f, indent=1)
                else:
                    f.write(text)
            print(f"wrote {path}")


def add_group_args(ap: argparse.ArgumentParser, name: str, default_lengths: str) -> None:
    """The options bench_group() and build() read, shared by every layer benchmark
    (bench_mixers, bench_heads, bench_multiscale); `name` names the default outputs."""
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--lengths", help=f"comma-separated L (default: {default_lengths})")
    ap.add_argument("--tokens", type=int, default=4096, help="B = max(1, tokens // L) (default 4096)")
    ap.add_argument("--batch", type=int, default=0, help="fixed batch size instead of --tokens")
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("-n", type=int, default=5, help="window parameter n of the mixers that have one")
    ap.add_argument("--dropout", type=float, default=0.0, help="attention dropout of every module")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps per module")
    ap.add_argument("--repeats", type=int, default=7, help="timed steps per module")
    ap.add_argument("--repeats-large", type=int, default=5, help="timed steps at L >= --large-from")
    ap.add_argument("--large-from", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: os.cpu_count())")
    ap.add_argument("--dtype", choices=list(DTYPES), default="float32",
                    help="the modules, inputs and masks in this dtype (what --fp16 / --bf16 do to a model)")
    ap.add_argument("--from-json", metavar="JSON",
                    help="time nothing: re-render a finished run's table (to --md, default beside the JSON)")
    ap.add_argument("--md", help=f"markdown output (default results/{name}_<device>[_<dtype>].md)")
    ap.add_argument("--json", help=f"json output (default results/{name}_<device>[_<dtype>].json)")


def setup_group_args(ap: argparse.ArgumentParser, args, name: str) -> torch.device:
    """Check --device, set the torch threads and, unless --quick, the default outputs."""
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but torch.cuda.is_available() is False")
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    if not args.quick:
        stem = f"{name}_{device.type}" + ("" if args.dtype == "float32" else f"_{DTYPE_SUFFIX[args.dtype]}")
        args.md = args.md or os.path.join(str(CHECKOUT), "results", f"{stem}.md")
        args.json = args.json or os.path.join(str(CHECKOUT), "results", f"{stem}.json")
    return device


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_group_args(ap, "bench_mixers", "32,...,2048")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--mixers", help="comma-separated labels to run (default: all; attn is always run)")
    ap.add_argument("--no-math-attn", action="store_true", help="skip the attn[math] reference")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: L=32,64, 256 tokens, 1 warmup, 1 repeat, no attn[math]; prints, writes nothing "
                         "unless --md/--json are given")
    args = ap.parse_args(argv)
    if args.from_json:
        meta, rows, md_path = rerender(ap, args, lambda meta, rows: markdown(meta, rows, mixer_labels(meta)))
        return plot(meta, rows, mixer_labels(meta), Path(md_path).with_suffix(".png"))

    if args.quick:
        args.lengths = args.lengths or "32,64"
        args.tokens, args.warmup, args.repeats, args.repeats_large = 256, 1, 1, 1
        args.no_math_attn = True
    lengths = [int(v) for v in args.lengths.split(",")] if args.lengths else list(DEFAULT_LENGTHS)
    device = setup_group_args(ap, args, "bench_mixers")

    labelled = variants()
    if args.mixers:
        keep = set(args.mixers.split(",")) | {"attn"}
        labelled = [(lab, s) for lab, s in labelled if lab in keep]
    if not args.no_math_attn:
        labelled.insert(1, (MATH, "attn"))
    labels = [lab for lab, _ in labelled]

    t_start = time.time()
    meta = {
        **run_meta(device),
        **machine_peak(device),
        "dim": args.dim, "heads": args.heads, "n": args.n, "dropout": args.dropout, "dtype": args.dtype,
        "lengths": lengths,
        "batch_rule": (f"fixed B={args.batch}" if args.batch
                       else f"constant tokens, B = max(1, {args.tokens} // L)"),
        "warmup": args.warmup,
        "repeats_rule": (f"{args.repeats} (L < {args.large_from}) / {args.repeats_large} "
                         f"(L >= {args.large_from})"),
        "memory_method": (
            "torch.profiler(profile_memory=True) over one extra step; peak = "
            "max(allocator total_allocated) - total before the step's first allocation "
            "(all ATen CPU allocations: activations, temporaries, grads; not parameters, "
            "inputs or the mask; not oneDNN/MKL scratch)"
            if device.type == "cpu" else
            "torch.cuda.max_memory_allocated() - memory_allocated() before the step, "
            "after reset_peak_memory_stats()"),
        "mixers": [(lab, spec.format(n=args.n)) for lab, spec in labelled],
    }
    print(f"# {meta['command']}  torch {meta['torch']} threads {meta['threads']} "
          f"device {device.type} load {meta['load_start']}", flush=True)

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
                print(f"{role.value:13s} L={L:5d} B={r['B']:4d} {label:16s} "
                      f"{1000 * r['median_s']:9.1f} ms {fmt_mb(r['peak_bytes']):>8s} MB{extra}",
                      flush=True)

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
