"""Operation timings of standard vs hard retrieval attention, like the paper's Table 2:

    compare      S = Q K^T                      (eq. 1, both)
    normalise    softmax(S / sqrt(d))  (eq. 2)  vs  argmax(S)   (eq. 11)
    attend       P V                   (eq. 3)  vs  V[index]    (eq. 6)

    mixer-bench hard-ops [--device cuda] [--md results/bench/bench_hard_ops_cpu.md]

This is a benchmark, not a test.  Shapes (per setting): a decoder step of beam
search (one query per hypothesis: N = batch x beam rows, H heads, T = 1, S keys) and
a whole sequence (T = S = L, as a training or scoring forward).  Each op is timed
with ``torch.utils.benchmark.Timer.blocked_autorange`` (median; it synchronises CUDA),
on the same inputs for both attentions; the hard column of `compare` is the same
op as the standard one and is not re-timed.  The hard ops are the ones the `hard`
mixer runs: ``max(-1).indices`` (the first maximum, as argmax) and ``index_select``
of rows of the time-major value cache.  The alternatives they were chosen over
(``argmax``; ``gather`` on the head-major V with the index expanded over d) are timed
beside them in the same run, so the choice stays a measurement.
"""

import argparse
import datetime
import os
from typing import Any, Dict, List, Optional

import torch
import torch.nn.functional as F
from torch.utils import benchmark

from ..mixers.hard import value_rows
from .result_files import write_outputs
from .run_record import command_line, cpu_label

PAPER = {"compare": (14.40, None), "normalise": (6.22, 2.10), "attend": (12.26, 2.93), "total": (32.88, 19.43)}


def timeit(stmt: str, env: Dict[str, Any], min_run_time: float) -> float:
    t = benchmark.Timer(stmt=stmt, globals=env).blocked_autorange(min_run_time=min_run_time)
    return t.median * 1e3  # ms


# the statements timed: what standard attention runs, what the hard mixer runs, and the
# alternatives the hard mixer was chosen over (each must compute what it replaces)
STANDARD = {"compare": "q @ kt", "normalise": "F.softmax(scores * scale, -1)", "attend": "probs @ v"}
HARD = {"normalise": "scores.max(-1).indices", "attend": "v_rows.index_select(0, rows)"}
NOT_USED = {"normalise": "scores.argmax(-1)", "attend": "torch.gather(v, 2, index_d)"}


def operands(n: int, heads: int, t: int, s: int, d: int, dtype: torch.dtype, device: str) -> Dict[str, Any]:
    g = torch.Generator(device="cpu").manual_seed(0)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)

    q, k, v = rand(n, heads, t, d), rand(n, heads, s, d), rand(n, heads, s, d)  # (N, H, T|S, d)
    scores = q @ k.transpose(-1, -2)  # (N, H, T, S)
    index = scores.argmax(-1)  # (N, H, T)
    # the hard mixer indexes the time-major value cache (S, N, H, d) by row number
    v_cache = v.permute(2, 0, 1, 3).contiguous()
    return {
        "torch": torch, "F": F, "q": q, "kt": k.transpose(-1, -2), "v": v, "scores": scores,
        "scale": d**-0.5, "probs": F.softmax(scores * d**-0.5, -1),
        "v_rows": v_cache.view(-1, d), "rows": value_rows(index, n),
        # gather needs the index spelled out over d: (N, H, T) -> (N, H, T, d)
        "index_d": index.unsqueeze(-1).expand(n, heads, t, d),
    }  # fmt: skip


def setting(
    name: str,
    n: int,
    heads: int,
    t: int,
    s: int,
    d: int,
    dtype: torch.dtype,
    device: str,
    min_run_time: float,
) -> Dict[str, Any]:
    env = operands(n, heads, t, s, d, dtype, device)
    std = {op: timeit(stmt, env, min_run_time) for op, stmt in STANDARD.items()}
    hard = {"compare": std["compare"], **{op: timeit(stmt, env, min_run_time) for op, stmt in HARD.items()}}
    std["total"], hard["total"] = sum(std.values()), sum(hard.values())
    not_used = {op: timeit(stmt, env, min_run_time) for op, stmt in NOT_USED.items()}
    return {
        "setting": name,
        "shape": dict(N=n, H=heads, T=t, S=s, d=d),
        "std_ms": std,
        "hard_ms": hard,
        "not_used_ms": not_used,
    }


def markdown(meta: Dict[str, Any], results: List[Dict[str, Any]]) -> str:
    out = [f"# Hard retrieval attention: operation timings ({meta['device']})", ""]
    out.append(f"- command: `{meta['command']}`")
    out.append(
        f"- date: {meta['date']}; torch {meta['torch']}; dtype {meta['dtype']}; torch threads "
        f"{meta['threads']}; load average at start {meta['load_start']}, at end {meta['load_end']}"
    )
    out.append(
        "- median of `torch.utils.benchmark.Timer.blocked_autorange`, milliseconds per call; ratio = standard / hard"
    )
    out.append(
        "- paper (Table 2: GTX 1080 Ti, forward passes over the WMT14 En-De dev set, seconds in total): "
        "compare 14.40; normalise 6.22 vs argmax 2.10; attend 12.26 vs index 2.93; total 32.88 vs 19.43"
    )
    out.append("")
    for r in results:
        sh = r["shape"]
        out.append(f"## {r['setting']}: N={sh['N']}, H={sh['H']}, T={sh['T']}, S={sh['S']}, d={sh['d']}")
        out.append("")
        out.append("| operation | standard (ms) | hard (ms) | standard / hard | paper std / hard |")
        out.append("|---|---:|---:|---:|---:|")
        names = {
            "compare": "compare (eq. 1)",
            "normalise": "softmax (eq. 2) vs argmax (eq. 11)",
            "attend": "P V (eq. 3) vs index (eq. 6)",
            "total": "total",
        }
        for op, label in names.items():
            s, h = r["std_ms"][op], r["hard_ms"][op]
            ps, ph = PAPER[op]
            paper = f"{ps / ph:.2f}" if ph else "(same op)"
            ratio = f"{s / h:.2f}" if op != "compare" else "(same op)"
            out.append(f"| {label} | {s:.4f} | {h:.4f} | {ratio} | {paper} |")
        out.append("")
        out.append("The hard ops against the alternatives the mixer does not use (same inputs, same run):")
        out.append("")
        out.append("| operation | used | ms | not used | ms | not used / used |")
        out.append("|---|---|---:|---|---:|---:|")
        for op, stmt in NOT_USED.items():
            h, a = r["hard_ms"][op], r["not_used_ms"][op]
            out.append(f"| {op} | `{HARD[op]}` | {h:.4f} | `{stmt}` | {a:.4f} | {a / h:.2f} |")
        out.append("")
    return "\n".join(out)


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--batch", type=int, default=64, help="sentences per batch")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--src-len", type=int, default=30, help="keys of a decoder step's cross-attention")
    ap.add_argument("--seq-len", type=int, default=30, help="T = S of the whole-sequence setting")
    ap.add_argument("--min-run-time", type=float, default=1.0, help="seconds per op measurement")
    ap.add_argument("--md")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but torch.cuda.is_available() is False")
    dtype = getattr(torch, args.dtype)
    load_start = " ".join(f"{v:.2f}" for v in os.getloadavg())
    H, d = args.heads, args.head_dim
    results = [
        setting(
            "decoder step, cross-attention",
            args.batch * args.beam,
            H,
            1,
            args.src_len,
            d,
            dtype,
            args.device,
            args.min_run_time,
        ),
        setting("whole sequence", args.batch, H, args.seq_len, args.seq_len, d, dtype, args.device, args.min_run_time),
    ]
    meta = {
        "command": command_line(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": torch.cuda.get_device_name(0) if args.device == "cuda" else
        cpu_label(),
        "torch": torch.__version__, "dtype": args.dtype, "threads": torch.get_num_threads(),
        "load_start": load_start, "load_end": " ".join(f"{v:.2f}" for v in os.getloadavg()),
    }  # fmt: skip
    write_outputs(args.md, args.json, markdown(meta, results), {"meta": meta, "results": results})


if __name__ == "__main__":
    main()
