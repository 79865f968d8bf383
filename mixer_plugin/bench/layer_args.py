"""The command-line options of the layer benchmarks (``mixer-bench mixers``, ``heads``,
``multiscale``): what ``build`` and ``bench_group`` read, the device and threads, and the default
outputs, which name the device and dtype."""

import argparse
import os

import torch

from .layer_modules import DTYPE_SUFFIX, DTYPES
from .result_files import RESULTS


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
