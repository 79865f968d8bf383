"""The arithmetic beside a measured time: what a module's forward multiplies (``module_macs``)
and what the machine could (``machine_peak``), so that a table can set a measured speed-up
against the one equal FLOP rates would give."""

import torch
from fairseq.modules import MultiheadAttention
from torch import nn

from ..mixers.registry import Role
from .layer_modules import MathSDPA


def module_macs(m: nn.Module, L: int, role: Role) -> int:
    """Forward multiply-adds of one length-L sequence: the plugin's mixers declare theirs
    (``MixerBase.macs``, checked against torch's FLOP counter in tests/test_flops.py);
    stock attention is four D x D projections and its scores and value sums over all
    keys (the causal half for decoder self-attention: the flash kernel skips the rest).
    Only the stock module is counted here: a mixer that declares no count raises rather
    than being priced as attention (tests/test_flops.py asks every registered one)."""
    inner = m.inner if isinstance(m, MathSDPA) else m
    if not isinstance(inner, MultiheadAttention):
        return inner.macs(L, L)
    D = inner.embed_dim
    pairs = L * (L + 1) // 2 if role.causal else L * L
    return 4 * L * D * D + 2 * pairs * D


def machine_peak(device: torch.device) -> dict:
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
    return {
        "peak_gflops": peak,
        "peak_rule": f"{cores} cores x {lanes} fp32 lanes ({isa}) x 2 FMA units x 2 FLOPs "
        f"x {mhz / 1e3:.2f} GHz = {peak:.0f} GFLOP/s",
    }
