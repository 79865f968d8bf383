"""What every benchmark of ``mixer-bench`` shares, so that each of them is only its own
question and its own table.

* building: :func:`variants` (every registered mixer, with the readings the layer
  benchmark times beside its defaults) and :func:`build` (one mixer for one role, as a
  layer would build it); the stock module on SDPA's math kernel (:data:`MATH`).
* measuring one layer: :func:`step` (forward + backward), :func:`bench_group` (the
  modules of one (role, L) timed round-robin, their peak memory and multiply-adds);
  ``mixer-bench mixers --help`` says exactly what is measured and how.
* FLOPs: :func:`module_macs` (what a module's forward multiplies) and
  :func:`machine_peak` (what the machine could).
* recording: :func:`run_meta` (command, date, host, commit, versions, load),
  :func:`command_line`, :func:`cpu_name`, :func:`cpu_label`; :func:`write_outputs` (the markdown table and
  the JSON it is rendered from, under :data:`RESULTS`) and :func:`rerender`
  (``--from-json``); the options of the layer benchmarks (:func:`add_group_args`).
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
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple, Union

import torch
from fairseq.modules import MultiheadAttention
from torch import nn

from ..files import atomic_path, machine
from ..mixers.registry import MIXER_REGISTRY, MixerContext, MixerSpecError, Role, build_mixer, check_role, parse_item
from ..paths import CHECKOUT
from ..paths import RESULTS as PROJECT_RESULTS

# where every benchmark writes its tables by default: results/bench/<name>_<device>[...].{md,json}
RESULTS = PROJECT_RESULTS / "bench"

# registered variants benchmarked besides each mixer's defaults
# (the kernel=conv rows are eq. 5's grouped-conv formulation, timed beside the default per-slot GEMMs)
EXTRA_VARIANTS = {
    "ngram": [
        "ngram:global=1",
        "ngram:proj=slice:out=none",
        "ngram:kernel=conv",
        "ngram:proj=slice:out=none:kernel=conv",
    ],
    "hard": ["hard:train=soft"],
    "multiscale": ["multiscale:scales=nx8"],
}
MATH = "attn[math]"


# ----------------------------------------------------------------- modules
class MathSDPA(nn.Module):
    """The stock module with SDPA forced onto the math (L x L) kernel."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, **kw) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(SDPBackend.MATH):
            return self.inner(**kw)


def variants() -> List[Tuple[str, str]]:
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


def build(spec: str, role: Role, args: argparse.Namespace) -> nn.Module:
    D, H = args.dim, args.heads

    def stock() -> MultiheadAttention:
        return MultiheadAttention(D, H, dropout=args.dropout, self_attention=True)

    ctx = MixerContext(
        role=role,
        layer_index=0,
        embed_dim=D,
        kv_dim=D,
        num_heads=H,
        attention_dropout=args.dropout,
        build_stock=stock,
    )
    flag = role.flag
    return build_mixer(parse_item(flag, spec.format(n=args.n)), ctx)


def spec_problem(spec: str, roles: Iterable[Role]) -> Optional[str]:
    """Why ``spec`` cannot be built in every one of ``roles`` (an unknown mixer or option, a
    bad value, a role the mixer does not fill), or None: a benchmark's own list of specs is
    checked against the registry before anything is timed."""
    try:
        for role in roles:
            check_role(parse_item(role.flag, spec), role)
    except MixerSpecError as e:
        return str(e)
    return None


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPE_SUFFIX = {"bfloat16": "bf16", "float16": "fp16"}


def future_mask(L: int, device: torch.device, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    # fairseq's buffered_future_mask: fill_with_neg_inf(zeros(L, L)).triu(1), in the model's dtype
    return torch.triu(torch.full((L, L), float("-inf"), device=device, dtype=dtype), 1)


# ----------------------------------------------------------------- measuring
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


# ----------------------------------------------------------------- reporting
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


def rerender(
    ap: argparse.ArgumentParser,
    args: argparse.Namespace,
    render: Callable[[Dict[str, Any], List[Dict[str, Any]]], str],
) -> Tuple[Dict[str, Any], List[Dict[str, Any]], str]:
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


def git_describe() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=str(CHECKOUT), capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "mixer_plugin"], cwd=str(CHECKOUT), capture_output=True, text=True
        ).stdout.strip()
        return head + (" (mixer_plugin/ has uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


def command_line() -> str:
    """How this benchmark was started, as a user types it."""
    return (
        shlex.join(["mixer-bench", *sys.argv[1:]])
        if sys.argv[0].endswith("mixer-bench")
        else shlex.join(["python", "-m", "mixer_plugin.bench", *sys.argv[1:]])
    )


def cpu_name() -> str:
    """The CPU as every training stage's stamp records it (``files.machine``): the model name,
    then the family, model and stepping numbers where known, so a benchmark and a training run
    can be matched to one kind of CPU; ``platform.machine()`` would say only "x86_64"."""
    return ", ".join(str(machine()[key]) for key in ("cpu", "cpu_id") if machine().get(key))


def cpu_label() -> str:
    """How a benchmark names the CPU it ran on: its cores and ``cpu_name``."""
    return f"CPU ({os.cpu_count()} cores, {cpu_name()})"


def run_meta(device: torch.device) -> dict:
    """Where and when a benchmark ran: the command line, date, host, commit, versions,
    device, threads and the load average at the start (every benchmark records it)."""
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
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name(),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "cpu_count": os.cpu_count(),
        "load_start": " ".join(f"{v:.2f}" for v in os.getloadavg()),
    }


def write_outputs(
    md_path: Optional[Union[str, Path]], json_path: Optional[Union[str, Path]], md: str, payload: dict
) -> None:
    """The markdown table (printed instead when there is no path) and the raw JSON, each
    written whole or not at all (a benchmark killed while writing leaves the old table)."""
    if not md_path:
        print(md)
    for path, text in ((md_path, md if md.endswith("\n") else md + "\n"), (json_path, json.dumps(payload, indent=1))):
        if path:
            with atomic_path(Path(path)) as tmp:
                tmp.write_text(text, encoding="utf-8")
            print(f"wrote {path}")


def add_group_args(ap: argparse.ArgumentParser, name: str, default_lengths: str) -> None:
    """The options bench_group() and build() read, shared by every layer benchmark
    (``mixer-bench mixers``, ``heads``, ``multiscale``); `name` names the default outputs."""
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
    ap.add_argument(
        "--dtype",
        choices=list(DTYPES),
        default="float32",
        help="the modules, inputs and masks in this dtype (what --fp16 / --bf16 do to a model)",
    )
    ap.add_argument(
        "--from-json",
        metavar="JSON",
        help="time nothing: re-render a finished run's table (to --md, default beside the JSON)",
    )
    ap.add_argument("--md", help=f"markdown output (default results/bench/{name}_<device>[_<dtype>].md)")
    ap.add_argument("--json", help=f"json output (default results/bench/{name}_<device>[_<dtype>].json)")


def setup_group_args(ap: argparse.ArgumentParser, args: argparse.Namespace, name: str) -> torch.device:
    """Check --device, set the torch threads and, unless --quick, the default outputs."""
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but torch.cuda.is_available() is False")
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    if not args.quick:
        stem = f"{name}_{device.type}" + ("" if args.dtype == "float32" else f"_{DTYPE_SUFFIX[args.dtype]}")
        args.md = args.md or str(RESULTS / f"{stem}.md")
        args.json = args.json or str(RESULTS / f"{stem}.json")
    return device
