"""Eq. (5) of multiNN in five formulations, forward + backward: which one the ``ngram`` mixer
should use (docs/benchmarks.md, "Eq. (5): which formulation").

    mixer-bench ngram-forms                       # L = 64 and 2048, encoder and decoder windows

Eq. (5) without its bias and ReLU, for every position t and head k:

    h[t, b, k] = sum_w x[t + w, b, k] @ W^(k)[w]      (W slots: 2n-1 encoder, n decoder)

on the time-major ``(T, B, K*d)`` input the mixer receives, extended by its zero context (d = 64,
8 heads, d_out = 64, 4,096 tokens per batch, as ``mixer-bench mixers``).  Before timing, every
formulation's output and gradients are checked against the grouped convolution in float64.
The formulations are timed round-robin, ``--repeats`` steps each per round, and the table
gives the median over all rounds.
"""

import argparse
import os
import statistics
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

from ..mixers.ngram import window_conv, window_gemm
from .result_files import RESULTS, write_outputs
from .run_record import run_meta

# Each takes ext (T+W-1, B, K*d) and weight (K, W, d, d_out) -> (T, B, K*d_out).


def unfold_bmm(ext: torch.Tensor, weight: torch.Tensor, T: int) -> torch.Tensor:
    """All windows built, ``(K, T*B, W*d)``, then one batched GEMM."""
    K, W, d, d_out = weight.shape
    B = ext.shape[1]
    win = ext.unfold(0, W, 1).reshape(T, B, K, d, W)  # (T, B, K, d, W), a view
    win = win.permute(2, 0, 1, 4, 3).reshape(K, T * B, W * d)  # the copy: W times the input
    return torch.bmm(win, weight.reshape(K, W * d, d_out)).transpose(0, 1).reshape(T, B, K * d_out)


def project_then_shift(ext: torch.Tensor, weight: torch.Tensor, T: int) -> torch.Tensor:
    """Every row through all W slots at once (one GEMM, W times wider output), then the
    shifted slices summed."""
    K, W, d, d_out = weight.shape
    Te, B, _ = ext.shape
    rows = ext.view(Te, B, K, d).permute(2, 0, 1, 3).reshape(K, Te * B, d)
    y = torch.bmm(rows, weight.permute(0, 2, 1, 3).reshape(K, d, W * d_out)).view(K, Te, B, W, d_out)
    h = sum(y[:, w : w + T, :, w] for w in range(W))  # (K, T, B, d_out)
    return h.permute(1, 2, 0, 3).reshape(T, B, K * d_out)


def slot_bmm_autograd(ext: torch.Tensor, weight: torch.Tensor, T: int) -> torch.Tensor:
    """One batched GEMM per slot on shifted slices, with autograd's own backward."""
    K, W, d, d_out = weight.shape
    Te, B, _ = ext.shape
    rows = ext.view(Te, B, K, d).permute(2, 0, 1, 3).contiguous()  # (K, Te, B, d)
    h = sum(torch.bmm(rows[:, w : w + T].reshape(K, T * B, d), weight[:, w]) for w in range(W))
    return h.view(K, T, B, d_out).permute(1, 2, 0, 3).reshape(T, B, K * d_out)


FORMS = {
    "grouped conv1d (kernel=conv)": window_conv,
    "unfold, one bmm": unfold_bmm,
    "project every row by all slots, sum shifted slices": project_then_shift,
    "one bmm per slot, autograd's backward": slot_bmm_autograd,
    "one bmm per slot in place, backward written out (kernel=gemm)": window_gemm,
}


def check(heads: int = 3, d: int = 4, d_out: int = 5) -> None:
    """Every formulation against the grouped convolution, output and both gradients."""
    for W in (1, 3, 5):
        g = torch.Generator().manual_seed(W)
        T, B = 6, 2
        ext = torch.randn(T + W - 1, B, heads * d, generator=g, dtype=torch.float64)
        weight = torch.randn(heads, W, d, d_out, generator=g, dtype=torch.float64)
        grad = torch.randn(T, B, heads * d_out, generator=g, dtype=torch.float64)
        ref = None
        for name, form in FORMS.items():
            e, w = ext.clone().requires_grad_(), weight.clone().requires_grad_()
            out = form(e, w, T)
            got = [out, *torch.autograd.grad(out, (e, w), grad)]
            if ref is None:
                ref = got
            for a, b in zip(got, ref):
                torch.testing.assert_close(a, b, msg=lambda m: f"{name}, {W} slots: {m}")


def time_forms(W: int, causal: bool, L: int, args: argparse.Namespace) -> Tuple[int, Dict[str, float]]:
    B = max(1, args.tokens // L)
    K, d = args.heads, args.dim // args.heads
    x = torch.randn(L, B, K * d, requires_grad=True)
    weight = (torch.randn(K, W, d, d) / (W * d) ** 0.5).requires_grad_()
    grad = torch.randn(L, B, K * d)
    left = W - 1 if causal else W // 2  # the decoder's window ends at t, the encoder's is centred

    def step(form: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]) -> None:
        ext = F.pad(x, (0, 0, 0, 0, left, W - 1 - left))  # (L+W-1, B, K*d): the zero context
        torch.relu(form(ext, weight, L)).backward(grad)

    times = {name: [] for name in FORMS}
    for form in FORMS.values():
        for _ in range(args.warmup):
            step(form)
    for _ in range(args.rounds):
        for name, form in FORMS.items():
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                step(form)
                times[name].append(time.perf_counter() - t0)
    return B, {name: statistics.median(t) * 1e3 for name, t in times.items()}


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(
        prog="mixer-bench ngram-forms", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--lengths", default="64,2048")
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("-n", type=int, default=5, help="window: 2n-1 slots (encoder) and n (decoder)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="timed steps per formulation per round")
    ap.add_argument("--md", default=str(RESULTS / "bench_ngram_forms_cpu.md"))
    ap.add_argument("--json", default=str(RESULTS / "bench_ngram_forms_cpu.json"))
    args = ap.parse_args(argv)
    check()
    meta = run_meta(torch.device("cpu"))
    rows = []
    for role, W in (("encoder", 2 * args.n - 1), ("decoder", args.n)):
        for L in (int(v) for v in args.lengths.split(",")):
            B, ms = time_forms(W, role == "decoder", L, args)
            rows.append({"role": role, "slots": W, "L": L, "B": B, "ms": ms})
            print(role, f"L={L}", " ".join(f"{v:.1f}" for v in ms.values()), flush=True)
    meta["load_end"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    write_outputs(args.md, args.json, markdown(meta, rows, args), {"meta": meta, "rows": rows})


def markdown(meta: Dict[str, Any], rows: List[Dict[str, Any]], args: argparse.Namespace) -> str:
    cols = [f"{r['role']} ({r['slots']} slots), L = {r['L']} (B = {r['B']})" for r in rows]
    out = [
        f"# multiNN eq. (5): five formulations, forward + backward ({meta['device_name']})",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; git: {meta['git']}; torch {meta['torch']}, {meta['threads']} threads; "
        f"load average at start {meta['load_start']}, at end {meta['load_end']}",
        f"- eq. (5) without bias, then ReLU and backward; {args.heads} heads of {args.dim // args.heads} "
        f"features in and out, {args.tokens} tokens per batch, float32; every formulation checked "
        "against the grouped convolution in float64 first",
        f"- ms per step: the median of {args.rounds} rounds x {args.repeats} steps, formulations "
        "timed round-robin; in brackets, the speed-up over the grouped convolution",
        "",
        "| formulation | " + " | ".join(cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    base = next(iter(FORMS))
    for name in FORMS:
        out.append(
            f"| {name} | "
            + " | ".join(f"{r['ms'][name]:.1f} ({r['ms'][base] / r['ms'][name]:.2f}x)" for r in rows)
            + " |"
        )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
