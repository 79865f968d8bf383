#!/usr/bin/env python
"""Results tables and plots from training logs and generations.

    python scripts/make_results.py RUN_ROOT --configs configs/comparison --out results/comparison.md \\
        [--plots results/comparison] [--baseline cpu_transformer] [--title ...] [--command "..."]

``RUN_ROOT/<config>/seed<k>/`` is what ``scripts/train.sh`` and ``generate.sh`` leave:
``train.log`` (fairseq's simple log), ``command.txt`` and ``gen-<subset>/`` with
``hyp.txt``, ``hyp.tok`` and ``command.txt``.  For every config found there, this

* scores the generations with the config's metrics (``scripts/score.py``; several seeds
  -> mean +- std) and, per dataset, runs sacrebleu's paired bootstrap of every system
  against the ``--baseline`` (first seed vs first seed);
* reads parameters, updates, training speed (updates/s, words/s), wall time and the
  train / valid loss curves from the log;
* writes one markdown table per dataset: our numbers beside the paper row the config
  reproduces, speed ratios against the baseline measured in the same run, the exact
  training, generation and scoring commands; and matplotlib plots: scores per
  architecture, speed ratios, learning curves.
"""

import argparse
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from make_configs import load, score_args  # noqa: E402

PRIMARY = {"bleu": "BLEU", "tok_bleu": "tok. BLEU", "chrf": "chrF", "ter": "TER", "wer": "WER",
           "rouge1": "R-1", "rouge2": "R-2", "rougeL": "R-L", "rougeLsum": "R-Lsum"}


# ------------------------------------------------------------------ logs
_KV = re.compile(r"(\w+)=([-\d.e+]+)")


def parse_log(path: Path) -> dict:
    """What a fairseq-train simple log says: params, train_inner / valid points."""
    out = {"params": None, "train": [], "valid": [], "last_update": 0}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.search(r"num\. (?:shared )?model params: ([\d,]+)", line)
        if m and out["params"] is None:
            out["params"] = int(m.group(1).replace(",", ""))
        if "| train_inner |" in line:
            kv = {k: float(v) for k, v in _KV.findall(line)}
            if "num_updates" in kv:
                out["train"].append(kv)
                out["last_update"] = int(kv["num_updates"])
        elif "| valid on" in line or re.search(r"\| valid \|", line):
            tail = line.split("|", 3)[-1]
            kv = {k: float(v) for k, v in re.findall(r"(\w+) ([-\d.e+]+)", tail)}
            if "num_updates" in kv:
                out["valid"].append(kv)
    return out


def speed(log: dict) -> dict:
    """Mean updates/s and words/s over the train_inner intervals (fairseq's ups/wps)."""
    pts = log["train"]
    if not pts:
        return {}
    return {"ups": statistics.mean(p["ups"] for p in pts if "ups" in p),
            "wps": statistics.mean(p["wps"] for p in pts if "wps" in p)}


# ---------------------------------------------------------------- scoring
def score(cfg, gen_dirs, prep, subset, baseline_dir=None) -> dict:
    from score import main as score_main

    args = score_args(cfg, prep, subset, [str(g) for g in gen_dirs], str(baseline_dir) if baseline_dir else None)
    out = Path(gen_dirs[0]) / ("score_vs_baseline.json" if baseline_dir else "score.json")
    score_main(args + ["--json", str(out)])
    return json.loads(out.read_text())


def shell(argv_file: Path) -> str:
    return argv_file.read_text().strip() if argv_file.is_file() else "(not recorded)"


# ------------------------------------------------------------------ runs
class Run:
    def __init__(self, name, cfg, seeds, subset):
        self.name, self.cfg, self.seeds = name, cfg, seeds
        self.gen = [s / f"gen-{subset}" for s in seeds if (s / f"gen-{subset}" / "hyp.txt").is_file()]
        self.logs = [parse_log(s / "train.log") for s in seeds if (s / "train.log").is_file()]
        self.log = self.logs[0] if self.logs else {"params": None, "train": [], "valid": [], "last_update": 0}
        self.speed = speed(self.log)
        self.train_s = _num(seeds[0] / "train.seconds")
        self.gen_s = _num(seeds[0] / f"gen-{subset}" / "generate.seconds")
        self.scores = {}
        self.bootstrap = {}


def _num(p: Path):
    try:
        return float(p.read_text().strip())
    except (OSError, ValueError):
        return None


def fmt_time(s):
    return "–" if s is None else f"{int(s) // 60}:{int(s) % 60:02d}"


def collect(root: Path, config_dir: Path, subset: str):
    runs = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        cfg_path = config_dir / f"{d.name}.yaml"
        seeds = sorted(s for s in d.glob("seed*") if s.is_dir())
        if not cfg_path.is_file() or not seeds:
            continue
        runs.append(Run(d.name, load(cfg_path), seeds, subset))
    return runs


# ------------------------------------------------------------------ output
def metric_keys(run):
    keys = []
    for m in run.cfg["score"]["metrics"]:
        keys += ["rouge1", "rouge2", "rougeL"] if m == "rouge" else [m]
    if run.cfg["score"].get("tokenized_bleu"):
        keys.insert(0, "tok_bleu")
    return [k for k in keys if k in PRIMARY]


def value(run, key):
    s = run.scores
    if key not in s:
        return "–"
    if "seeds" in s and key in s["seeds"]:
        return f"{s['seeds'][key]['mean']:.2f} ± {s['seeds'][key]['std']:.2f}"
    return f"{s[key]:.2f}"


def valid_loss(run):
    """The last validation of the (first seed's) log: label-smoothed loss (base 2) / ppl."""
    v = [p for p in run.log["valid"] if "loss" in p]
    return f"{v[-1]['loss']:.3f} / {v[-1].get('ppl', float('nan')):.1f}" if v else "–"


def table(runs, baseline):
    lines = []
    keys = metric_keys(runs[0])
    base = next((r for r in runs if r.name == baseline), runs[0])
    head = ["config", "reproduces (paper row)", "params", "updates", "seeds", "valid loss / ppl"] + [PRIMARY[k] for k in keys] + [
        "p vs baseline", "train upd/s", "speed vs baseline", "train time", "generate time"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in runs:
        p = "baseline" if r is base else ", ".join(
            f"{PRIMARY.get(k, k)} {v['p_value']:.3f}" for k, v in r.bootstrap.items() if k in ("bleu", "tok_bleu", "rouge1", "rougeL"))
        ratio = (r.speed.get("ups", 0) / base.speed["ups"]) if base.speed.get("ups") and r.speed.get("ups") else None
        lines.append("| " + " | ".join([
            f"`{r.name}`", r.cfg["reproduces"], f"{r.log['params']:,}" if r.log["params"] else "–",
            str(r.log["last_update"]), str(len(r.gen)), valid_loss(r), *[value(r, k) for k in keys], p or "–",
            f"{r.speed['ups']:.3f}" if r.speed.get("ups") else "–", f"{ratio:.2f}x" if ratio else "–",
            fmt_time(r.train_s), fmt_time(r.gen_s)]) + " |")
    return lines


def plots(groups, out_dir: Path, baseline):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    made = []

    def save(fig, name: str) -> None:
        made.append(out_dir / name)
        fig.tight_layout()
        fig.savefig(made[-1], dpi=110)
        plt.close(fig)

    for data, runs in groups.items():
        keys = [k for k in metric_keys(runs[0]) if k in ("bleu", "tok_bleu", "chrf", "rouge1", "rouge2", "rougeL")]
        fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(runs), 3.2))
        width = 0.8 / max(1, len(keys))
        for i, k in enumerate(keys):
            xs = [j + i * width for j in range(len(runs))]
            ys = [r.scores.get("seeds", {}).get(k, {}).get("mean", r.scores.get(k, 0)) for r in runs]
            err = [r.scores.get("seeds", {}).get(k, {}).get("std", 0) for r in runs]
            bars = ax.bar(xs, ys, width, yerr=err if any(err) else None, label=PRIMARY[k])
            ax.bar_label(bars, fmt="%.1f", fontsize=7)
        ax.set_xticks([j + width * (len(keys) - 1) / 2 for j in range(len(runs))])
        ax.set_xticklabels([r.name for r in runs], rotation=20, ha="right", fontsize=8)
        ax.set_title(f"{data}: test scores")
        ax.legend(fontsize=7)
        save(fig, f"{data}_scores.png")

        base = next((r for r in runs if r.name in baseline), runs[0])
        if base.speed.get("ups"):
            fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(runs), 3))
            ratios = [r.speed.get("ups", 0) / base.speed["ups"] for r in runs]
            bars = ax.bar([r.name for r in runs], ratios)
            ax.bar_label(bars, fmt="%.2fx", fontsize=7)
            ax.axhline(1.0, color="grey", lw=0.8)
            ax.set_ylabel(f"train updates/s vs {base.name}")
            ax.tick_params(axis="x", labelrotation=20, labelsize=8)
            ax.set_title(f"{data}: training speed (same machine, same session)")
            save(fig, f"{data}_speed.png")

        fig, ax = plt.subplots(figsize=(6, 3.6))
        for r in runs:
            pts = r.log["train"]
            if pts:
                line, = ax.plot([p["num_updates"] for p in pts], [p["loss"] for p in pts], label=f"{r.name} train")
                v = [p for p in r.log["valid"] if "loss" in p]
                if v:
                    ax.plot([p["num_updates"] for p in v], [p["loss"] for p in v], "o--", color=line.get_color(),
                            label=f"{r.name} valid")
        ax.set_xlabel("updates")
        ax.set_ylabel("label-smoothed loss (base 2)")
        ax.set_title(f"{data}: learning curves")
        ax.legend(fontsize=6)
        save(fig, f"{data}_curves.png")
    return made


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", type=Path, help="RUN_ROOT/<config>/seed<k>/")
    p.add_argument("--configs", type=Path, required=True, help="the folder of the runs' configs")
    p.add_argument("--out", type=Path, required=True, help="the markdown file")
    p.add_argument("--plots", type=Path, help="folder for the PNG plots [next to --out, named after it]")
    p.add_argument("--baseline", action="append", default=[],
                   help="the config the others of its dataset are compared with (repeatable: one per dataset) "
                        "[the first of each dataset]")
    p.add_argument("--subset", default="test")
    p.add_argument("--prep", type=Path, help="the recipe's prep.json for every run [from each config's data_bin]")
    p.add_argument("--title", default="Results")
    p.add_argument("--command", help="the command that produced the runs, for the record")
    p.add_argument("--note", action="append", default=[], help="a line for the notes (repeatable)")
    args = p.parse_args(argv)

    runs = collect(args.root, args.configs, args.subset)
    if not runs:
        raise SystemExit(f"make_results.py: error: no runs with a config of {args.configs} under {args.root}")
    groups = defaultdict(list)
    order = lambda r: (args.baseline.index(r.name) if r.name in args.baseline else len(args.baseline), r.name)  # noqa: E731
    for r in sorted(runs, key=order):  # baselines first, datasets in the order of their baselines
        groups[r.cfg["data"]].append(r)
    prep_for = {}
    for data, rs in groups.items():
        prep = args.prep or REPO / Path(rs[0].cfg["data_bin"]).parent / "prep.json"
        prep_for[data] = prep
        base = next((r for r in rs if r.name in args.baseline), rs[0])
        for r in rs:
            if r.gen:
                r.scores = score(r.cfg, r.gen, prep, args.subset)
            if r is not base and r.gen and base.gen:
                r.bootstrap = score(r.cfg, r.gen[:1], prep, args.subset, base.gen[0]).get("bootstrap", {})
    plot_dir = args.plots or args.out.with_suffix("")
    made = plots(groups, plot_dir, args.baseline)

    md = [f"# {args.title}", ""]
    for note in args.note:
        md.append(note)
    if args.note:
        md.append("")
    for data, rs in groups.items():
        md += [f"## {data}", "", *table(rs, next((r.name for r in rs if r.name in args.baseline), rs[0].name)), ""]
        sig = {k: rs[0].scores.get(f"{k}_signature") for k in ("bleu", "chrf", "ter", "tok_bleu", "rouge")}
        md += [f"- {k} signature: `{v}`" for k, v in sig.items() if v]
        where = prep_for[data].parent
        md.append(f"- references: `{where.relative_to(REPO) if where.is_relative_to(REPO) else where}/ref/`"
                  f" (made by `{json.loads(prep_for[data].read_text()).get('command', '?')}`)")
        boot = next((r.bootstrap for r in rs if r.bootstrap), None)
        if boot:
            any_sig = next(iter(boot.values()))["signature"]
            md.append(f"- p: paired bootstrap resampling (1000 samples) against the baseline (`{any_sig}`)")
        md.append("")
        for r in rs:
            md += [f"### `{r.name}`", "",
                   f"- train: `{shell(r.seeds[0] / 'command.txt')}`",
                   f"- generate: `{shell(r.seeds[0] / f'gen-{args.subset}' / 'command.txt')}`",
                   f"- score: `python scripts/score.py {' '.join(score_args(r.cfg, prep_for[data], args.subset, [str(g) for g in r.gen] or ['GEN'])).replace(str(REPO) + '/', '')}`",
                   ""]
    md += ["## Plots", ""] + [f"![{m.stem}]({m.relative_to(args.out.parent) if m.is_relative_to(args.out.parent) else m})"
                              for m in made] + [""]
    md += [f"- made by: `python scripts/make_results.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
           f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"]
    if args.command:
        md.append(f"- runs: `{args.command}`")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(f".{args.out.name}.tmp")
    tmp.write_text("\n".join(md) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    print(f"wrote {args.out} and {len(made)} plots in {plot_dir}")


if __name__ == "__main__":
    main()
