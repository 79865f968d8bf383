"""End-to-end training speed: fairseq-train words/s of every model of an experiment file,
one after another on an otherwise idle machine, beside the layer benchmark's ratio.

    mixer-bench train experiments/leaderboard.yaml            # -> results/bench/bench_train_cpu.{md,json}
    PRECISION=bf16 mixer-bench train experiments/leaderboard_v3.yaml   # on a GPU: bench_train_cuda.*
    mixer-bench train experiments/leaderboard.yaml --updates 40 --only transformer,multinn

A benchmark, not a test.  Each model trains ``--updates`` updates with the experiment's
own flags (data prepared by ``mixer-run`` or ``mixer-prepare``), all threads, in a fresh
save dir; fairseq's words/s of every logged interval after the first (start-up and
the first batches out) is averaged.  The models run round-robin over ``--rounds``,
the order rotated each round; the median is reported with the ratio to the first
model.  ``layer ratio``: the same mixer's speed-up against attention in
``results/bench/bench_mixers_<device>.json`` at the length nearest the data's mean (when
that file has the mixer), so a layer-level gain can be read against what it is worth
in a whole model.
"""

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..data.workspace import data_root
from ..experiments.argv import drop_flag, shell
from ..experiments.commands import command_env, prep_manifest, train_command
from ..experiments.spec_loader import load
from . import mixers
from .result_files import RESULTS, write_outputs
from .run_record import command_line, cpu_name

WPS = re.compile(r"\| train_inner \|.*?wps=([\d.]+)")
UPS = re.compile(r"\| train_inner \|.*?ups=([\d.]+)")


def train_speed(argv: List[str], env: Dict[str, str]) -> Tuple[float, float]:
    """fairseq's own (words/s, updates/s) of one training, over its logged intervals after the first."""
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env)
    log = proc.stdout + proc.stderr
    wps, ups = [float(x) for x in WPS.findall(log)], [float(x) for x in UPS.findall(log)]
    if proc.returncode != 0 or len(wps) < 2:
        raise SystemExit(f"mixer-bench train: error: fairseq-train failed or logged too little:\n{log[-2000:]}")
    return statistics.mean(wps[1:]), statistics.mean(ups[1:])  # the first interval holds the start-up


def layer_ratio(spec_flags: List[str], L: float) -> Optional[float]:
    """The layer benchmark's speed-up of the model's first non-attn encoder mixer at the
    length nearest L (None when the model is all attention or the file lacks it)."""
    path = RESULTS / f"{mixers.NAME}_cpu.json"
    mixer = next(
        (
            spec_flags[i + 1].split(":")[0]
            for i, a in enumerate(spec_flags[:-1])
            if a in ("--encoder-mixers", "--decoder-mixers") and spec_flags[i + 1].split(":")[0] != "attn"
        ),
        None,
    )
    if mixer is None or not path.is_file():
        return None
    rows = [
        r
        for r in json.loads(path.read_text())["rows"]
        if r.get("mixer") == mixer and "speedup_vs_attn" in r and r["role"] == "encoder_self"
    ]
    if not rows:
        return None
    return min(rows, key=lambda r: abs(r["L"] - L))["speedup_vs_attn"]


def mean_length(root: Path) -> float:
    """Mean source length (subword tokens, EOS included) of the binarized training split."""
    from fairseq.data import data_utils

    prep = prep_manifest(root)
    ds = data_utils.load_indexed_dataset(str(root / "bin" / f"train.{prep['src']}-{prep['tgt']}.{prep['src']}"))
    return float(ds.sizes.mean())


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(
        prog="mixer-bench train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("experiment")
    ap.add_argument("--updates", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", help="comma-separated models")
    ap.add_argument("--md")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    exp = load(args.experiment)
    models = [m for m in exp.models.values() if m.arch and (not args.only or m.name in args.only.split(","))]
    import torch

    # fairseq-train takes the GPU where there is one (the commands add --cpu only where not)
    device = f"GPU ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else "CPU"
    env = command_env()  # all threads, the runner's allocator settings
    t0, load_start = time.time(), " ".join(f"{v:.2f}" for v in os.getloadavg())
    speeds = {m.name: [] for m in models}
    updates = {m.name: [] for m in models}
    commands = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            k = r % len(models)
            for m in models[k:] + models[:k]:
                root = data_root(m.data, m.prepare)
                if not (root / "prep.json").is_file():
                    raise SystemExit(
                        f"mixer-bench train: error: {root} is not prepared (run mixer-run "
                        f"{args.experiment} or mixer-prepare {m.data} first)"
                    )
                save = Path(tmp) / f"{m.name}_{r}"
                cmd = train_command(exp, m, 1, root, save)
                cmd = drop_flag(cmd, "--max-update") + [
                    "--max-update",
                    str(args.updates),
                    "--log-interval",
                    "10",
                    "--save-interval-updates",
                    "0",
                    "--no-save",
                ]
                # as a user types it on any machine: python, paths relative to the checkout, the
                # throwaway save folder as $TMPDIR
                commands[m.name] = shell(cmd).replace(tmp, "$TMPDIR")
                wps, ups = train_speed(cmd, env)
                speeds[m.name].append(wps)
                updates[m.name].append(ups)
                print(f"round {r + 1} {m.name:28s} {wps:9.0f} words/s {ups:6.2f} updates/s", flush=True)
    base = statistics.median(speeds[models[0].name])
    mean_len = mean_length(data_root(models[0].data, models[0].prepare))
    rows = []
    for m in models:
        wps = statistics.median(speeds[m.name])
        rows.append(
            {
                "model": m.name,
                "wps": wps,
                "ups": statistics.median(updates[m.name]),
                "rounds": speeds[m.name],
                "speedup": wps / base,
                "layer_ratio": layer_ratio(m.train, mean_len),
            }
        )
    meta = {
        "command": command_line(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": torch.__version__,
        "precision": os.environ.get("PRECISION", "fp32"),
        "cpu": cpu_name(),
        "device": device,
        "threads": torch.get_num_threads(),
        "load_start": load_start,
        "load_end": " ".join(f"{v:.2f}" for v in os.getloadavg()),
        "wall_s": time.time() - t0,
        "updates": args.updates,
        "rounds": args.rounds,
        "experiment": str(exp.path),
    }
    lines = [
        f"# End-to-end training speed: {exp.name} ({device})",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; {meta['cpu']}; torch {meta['torch']}, {meta['threads']} threads, "
        f"{meta['precision']}; load average at start "
        f"{meta['load_start']}, at end {meta['load_end']}; wall {meta['wall_s']:.0f} s",
        f"- each model: the experiment's own fairseq-train flags, {args.updates} updates, fairseq's words/s "
        f"averaged over the logged intervals after the first; median of {args.rounds} rounds, models "
        "round-robin; speed-up against the first model",
        "",
        f"- layer ratio: `mixer-bench mixers`' encoder speed-up of the model's mixer at the L nearest the "
        f"training data's mean source length ({mean_len:.1f} tokens)",
        "",
        "| model | train words/s | updates/s | speed-up | per round | layer ratio |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        lr = f"{r['layer_ratio']:.2f}x" if r["layer_ratio"] else ""
        lines.append(
            f"| `{r['model']}` | {r['wps']:,.0f} | {r['ups']:.2f} | {r['speedup']:.2f}x | "
            f"{', '.join(f'{x:,.0f}' for x in r['rounds'])} | {lr} |"
        )
    lines += ["", f"One command in full: `{commands[models[0].name]}`", ""]
    out_md = args.md or str(RESULTS / f"bench_train_{'cpu' if device == 'CPU' else 'cuda'}.md")
    write_outputs(
        out_md, args.json or str(Path(out_md).with_suffix(".json")), "\n".join(lines), {"meta": meta, "rows": rows}
    )


if __name__ == "__main__":
    main()
