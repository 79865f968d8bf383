"""Measuring one layer: one forward + backward step (``step``), and the modules of one (role, L)
timed round-robin with their peak memory, attention kernels and multiply-adds (``bench_group``).
``mixer-bench mixers``, ``heads`` and ``multiscale`` all measure through it, so that their figures
are taken alike; ``mixer-bench mixers --help`` says exactly what is measured and how."""

import argparse
import statistics
import time
from typing import Any, Dict, Iterable, Optional, Set, Tuple

import torch
from torch import nn

from ..mixers.registry import MIXER_REGISTRY, MixerSpecError, Role
from .flops import module_macs
from .layer_modules import DTYPES, MATH, MathSDPA, build, future_mask


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step(m: nn.Module, x: torch.Tensor, g: torch.Tensor, mask: Optional[torch.Tensor]) -> None:
    m.zero_grad(set_to_none=True)
    x.grad = None
    out, _ = m(query=x, key=x, value=x, key_padding_mask=None, need_weights=False, attn_mask=mask)
    out.backward(g)


def peak_cpu(m: nn.Module, x: torch.Tensor, g: torch.Tensor, mask: Optional[torch.Tensor]) -> Tuple[int, Set[str]]:
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


def peak_cuda(
    m: nn.Module, x: torch.Tensor, g: torch.Tensor, mask: Optional[torch.Tensor], device: torch.device
) -> int:
    m.zero_grad(set_to_none=True)
    x.grad = None
    sync(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    step(m, x, g, mask)
    sync(device)
    return torch.cuda.max_memory_allocated(device) - before


def sdpa_ops(m: nn.Module, x: torch.Tensor, g: torch.Tensor, mask: Optional[torch.Tensor]) -> Set[str]:
    """Names of the attention kernels a module's step dispatches to (CPU-side ops)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step(m, x, g, mask)
    return {e.name for e in prof.events() if "scaled_dot_product" in e.name}


def repeats_for(L: int, args: argparse.Namespace) -> int:
    if args.repeats_large is not None and L >= args.large_from:
        return args.repeats_large
    return args.repeats


def bench_group(
    role: Role,
    L: int,
    labelled_specs: Iterable[Tuple[str, str]],
    args: argparse.Namespace,
    device: torch.device,
) -> Dict[str, Dict[str, Any]]:
    """Time and measure every module of one (role, L) round-robin (the method in full:
    ``mixer-bench mixers --help``)."""
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
            "role": role.value,
            "L": L,
            "B": B,
            "tokens": L * B,
            "mixer": label,
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
