"""Decoding speed of hard retrieval attention through the stock ``fairseq-generate``
(the paper's Table 3 headline: 1.43x sentences/s with hard decoder attention).

    mixer-bench hard-decode DATA_BIN \\
        --model attn=ckpt/attn.pt --model hard_dec=ckpt/hard_dec.pt ... \\
        [--override 'hard_dec+retrieved=hard_dec:{"decoder_mixers": "hard:values=retrieved"}'] \\
        --beam 4 --length 30 --batch-size 64 --rounds 3 --md results/bench_hard_decode_cpu.md

This is a benchmark, not a test.  Every model decodes the same sentences with the
same beam and batch size, and the output length is pinned (``--max-len-a 0
--max-len-b N --min-len N``), so each one does exactly the same number of decoder
steps whatever its weights.  The speed is fairseq-generate's own figure (its
``gen_timer``: time inside ``SequenceGenerator``, so start-up and data loading are
out); the models are run round-robin, the order rotated each round, and the median
over rounds is reported, with the ratio against the first ``--model`` (the baseline)
measured in the same run.
"""

import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from ..paths import CHECKOUT
from .mixers import command_line

SPEED = re.compile(
    r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s \(([\d.]+) sentences/s, ([\d.]+) tokens/s\)"
)


def die(msg):
    print(f"bench_hard_decode.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_pairs(values, flag):
    out = {}
    for item in values or []:
        label, eq, value = item.partition("=")
        if not eq or not label or not value:
            die(f"{flag} expects LABEL=VALUE, got {item!r}")
        if label in out:
            die(f"{flag}: label {label!r} given twice")
        out[label] = value
    return out


def checkpoint_params(path):
    """Number of parameters in a fairseq checkpoint's model state, as model.parameters() counts
    them: tied embeddings once (torch.save keeps their shared storage), buffers such as the
    `version` counters left out."""
    import torch

    import mixer_plugin  # noqa: F401  (the weights_only allowlist for fairseq checkpoints)

    state = torch.load(path, map_location="cpu", weights_only=True)
    seen, total = set(), 0
    for key, t in state["model"].items():
        if not t.is_floating_point() or key.endswith(".version"):
            continue
        ptr = t.untyped_storage().data_ptr()
        if ptr not in seen:
            seen.add(ptr)
            total += t.numel()
    return total


def generate(args, checkpoint, overrides):
    argv = [
        sys.executable, "-m", "fairseq_cli.generate", args.data, "--user-dir", "mixer_plugin",
        "--task", "translation", "--source-lang", args.source_lang, "--target-lang", args.target_lang,
        "--path", checkpoint, "--gen-subset", args.subset, "--beam", str(args.beam), "--nbest", "1",
        "--batch-size", str(args.batch_size), "--required-batch-size-multiple", "1",
        "--max-len-a", "0", "--max-len-b", str(args.length), "--min-len", str(args.length),
        "--quiet", "--seed", "1",
    ]  # fmt: skip
    if overrides:
        argv += ["--model-overrides", overrides]
    argv += args.extra
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=str(CHECKOUT))
    wall = time.perf_counter() - t0
    log = proc.stdout + proc.stderr
    m = SPEED.search(log)
    if proc.returncode != 0 or not m:
        die(f"fairseq-generate failed for {checkpoint} (exit {proc.returncode}):\n{log[-3000:]}")
    return {
        "sentences": int(m.group(1).replace(",", "")),
        "tokens": int(m.group(2).replace(",", "")),
        "gen_s": float(m.group(3)),
        "sent_per_s": float(m.group(4)),
        "tok_per_s": float(m.group(5)),
        "wall_s": wall,
        "command": " ".join(argv[1:]).replace(sys.executable, "python"),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="fairseq-preprocess output directory")
    ap.add_argument("--model", action="append", metavar="LABEL=CHECKPOINT", required=True,
                    help="a checkpoint to time; the first one is the baseline of the ratios")
    ap.add_argument("--override", action="append", metavar="LABEL=MODEL:DICT",
                    help="an extra row: model LABEL decoded with --model-overrides DICT")
    ap.add_argument("--source-lang", default="en")
    ap.add_argument("--target-lang", default="de")
    ap.add_argument("--subset", default="test")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--length", type=int, default=30, help="every hypothesis has exactly this many tokens")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--md", help="markdown output")
    ap.add_argument("--json", help="json output")
    ap.add_argument("--note", default="", help="a line for the markdown (e.g. how the checkpoints were made)")
    ap.add_argument("extra", nargs="*", help="after --: more fairseq-generate flags (e.g. --fp16)")
    args = ap.parse_args(argv)
    if not os.path.isfile(os.path.join(args.data, f"dict.{args.target_lang}.txt")):
        die(f"not a fairseq data directory (no dict.{args.target_lang}.txt): {args.data}")

    models = parse_pairs(args.model, "--model")
    rows = {label: (path, None) for label, path in models.items()}
    for label, value in parse_pairs(args.override, "--override").items():
        base, colon, overrides = value.partition(":")
        if not colon or base not in models:
            die(f"--override {label}: expected MODEL:DICT with MODEL one of {', '.join(models)}, got {value!r}")
        rows[label] = (models[base], overrides)
    for label, (path, _) in rows.items():
        if not os.path.isfile(path):
            die(f"--model {label}: checkpoint not found: {path}")

    labels = list(rows)
    baseline = labels[0]
    load_start = " ".join(f"{v:.2f}" for v in os.getloadavg())
    runs = {label: [] for label in labels}
    t_start = time.time()
    for r in range(args.rounds):
        k = r % len(labels)
        for label in labels[k:] + labels[:k]:  # rotate the order each round
            path, overrides = rows[label]
            res = generate(args, path, overrides)
            runs[label].append(res)
            print(f"round {r + 1} {label:28s} {res['sent_per_s']:9.2f} sent/s  ({res['gen_s']:.1f}s in the "
                  f"generator, {res['wall_s']:.1f}s wall)", flush=True)

    summary = {}
    for label in labels:
        speeds = [x["sent_per_s"] for x in runs[label]]
        summary[label] = {
            "median_sent_per_s": statistics.median(speeds),
            "sent_per_s": speeds,
            "params": checkpoint_params(rows[label][0]),
            "sentences": runs[label][0]["sentences"],
            "tokens": runs[label][0]["tokens"],
            "checkpoint": rows[label][0],
            "overrides": rows[label][1],
            "command": runs[label][0]["command"],
        }
    base = summary[baseline]["median_sent_per_s"]
    for label in labels:
        s = summary[label]
        s["speedup"] = s["median_sent_per_s"] / base
        # per-round ratios (same round = closest in time), for the spread
        s["round_speedups"] = [a / b for a, b in zip(s["sent_per_s"], summary[baseline]["sent_per_s"])]

    import torch

    meta = {
        "command": command_line(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else
        f"CPU ({os.cpu_count()} cores, {platform.machine()})",
        "torch": torch.__version__,
        "threads": os.environ.get("OMP_NUM_THREADS", "torch default"),
        "load_start": load_start,
        "load_end": " ".join(f"{v:.2f}" for v in os.getloadavg()),
        "wall_s": time.time() - t_start,
        "beam": args.beam, "length": args.length, "batch_size": args.batch_size, "rounds": args.rounds,
        "note": args.note,
    }
    lines = [
        f"# Hard retrieval attention: decoding speed ({meta['device']})", "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; torch {meta['torch']}; OMP_NUM_THREADS: {meta['threads']}; "
        f"load average at start {meta['load_start']}, at end {meta['load_end']}; wall {meta['wall_s']:.0f} s",
        f"- every model: the same {summary[baseline]['sentences']} sentences, beam {args.beam}, batch "
        f"{args.batch_size}, output length pinned to {args.length} tokens (`--max-len-a 0 --max-len-b "
        f"{args.length} --min-len {args.length}`), so equal decoder work",
        "- speed: fairseq-generate's own sentences/s (time inside the generator); median of "
        f"{args.rounds} rounds, models round-robin with the order rotated each round; "
        f"speed-up = model / `{baseline}` from the medians; per-round ratios in brackets",
    ]
    if args.note:
        lines.append(f"- {args.note}")
    lines += ["", "| model | params | sentences/s | speed-up | per round |", "|---|---:|---:|---:|---|"]
    for label in labels:
        s = summary[label]
        params = f"{s['params']:,}" if s["params"] else ""
        per = ", ".join(f"{x:.2f}" for x in s["round_speedups"])
        lines.append(f"| `{label}` | {params} | {s['median_sent_per_s']:.2f} | {s['speedup']:.2f}x | {per} |")
    lines += ["", "Checkpoints and overrides:", ""]
    for label in labels:
        s = summary[label]
        ov = f", `--model-overrides {s['overrides']}`" if s["overrides"] else ""
        lines.append(f"- `{label}`: `{s['checkpoint']}`{ov}")
    lines += ["", f"One generate command in full: `{summary[baseline]['command']}`", ""]
    from .mixers import write_outputs

    write_outputs(args.md, args.json, "\n".join(lines), {"meta": meta, "models": summary, "runs": runs})


if __name__ == "__main__":
    main()
