"""An experiment's results, rebuilt from its run folders every time.

For each model: parameters, updates, the last validation, the test scores over its
seeds (mean +- sample std), each source's BLEU where the data has sources, the
paired bootstrap p-value against the baseline model (first seed against first seed),
for summarization the number of distinct outputs (a model that ignores its source writes
the same few summaries for every input, and ROUGE alone does not show it), training
words/s and decoding sentences/s (from the idle-machine benchmarks the
experiment names under ``speed:``, else from the logs of its own runs), the
paper's figure for that row, and each of the paper's claims for it marked confirmed,
refuted or inconclusive (``verdict``).  Plots: learning curves (valid loss over updates) and
score against speed.  Then every command that made the numbers.

The results go to ``results: <file>.md`` of the experiment (plots and each run's small
outputs, i.e. scores, hypotheses, the training log and its commands, in the folder
of the same name), or, for an experiment without one, to ``work/<name>/results.md``.
"""

import json
import os
import re
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..data.prep import atomic_path
from ..paths import CHECKOUT, WORK, shown
from .spec import Experiment, Model
from .stages import data_root, flag_value, prep_manifest, run_dir, run_stages, prepare_stage, shell

PRIMARY = {"bleu": "BLEU", "tok_bleu": "tok. BLEU", "chrf": "chrF", "ter": "TER", "wer": "WER", "rouge1": "R-1",
           "rouge2": "R-2", "rougeL": "R-L", "accuracy": "accuracy"}
_KV = re.compile(r"(\w+)=([-\d.e+]+)")


# ------------------------------------------------------------------ logs
def parse_train_log(path: Path) -> dict:
    """What a fairseq-train log says: params, train_inner and valid points (a resumed
    run's log holds several trainings one after another; later points win)."""
    out = {"params": None, "train": {}, "valid": {}}
    if not path.is_file():
        return {"params": None, "train": [], "valid": [], "last_update": 0}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.search(r"num\. (?:shared )?model params: ([\d,]+)", line)
        if m and out["params"] is None:
            out["params"] = int(m.group(1).replace(",", ""))
        if "| train_inner |" in line:
            kv = {k: float(v) for k, v in _KV.findall(line)}
            if "num_updates" in kv:
                out["train"][int(kv["num_updates"])] = kv
        elif "| valid on" in line:
            kv = {k: float(v) for k, v in re.findall(r"(\w+) ([-\d.e+]+)", line.split("|", 3)[-1])}
            if "num_updates" in kv:
                out["valid"][int(kv["num_updates"])] = kv
    train = [out["train"][k] for k in sorted(out["train"])]
    valid = [out["valid"][k] for k in sorted(out["valid"])]
    last = int(max([p["num_updates"] for p in train + valid], default=0))
    return {"params": out["params"], "train": train, "valid": valid, "last_update": last}


def decode_speed(path: Path) -> Optional[float]:
    """sentences/s that fairseq-generate reports for the decoding it timed."""
    if not path.is_file():
        return None
    m = re.findall(r"Translated [\d,]+ sentences .* \(([\d.]+) sentences/s", path.read_text(errors="replace"))
    return float(m[-1]) if m else None


def test_accuracy(path: Path) -> Optional[float]:
    if not path.is_file():
        return None
    m = re.findall(r"valid on '\w+' subset .*\| accuracy ([\d.]+)", path.read_text(errors="replace"))
    return float(m[-1]) if m else None


def bench_speeds(exp: Experiment) -> Dict[str, dict]:
    """The benchmarks named under ``speed:``, read where they exist: kind (train / decode)
    -> {"meta": the run's meta, "rows": model -> its row}.  A decoding benchmark times
    several (L, beam): each model's row is the shortest L at the experiment's beam (its
    first beam when the experiment sets none)."""
    out = {}
    for kind, path in exp.speed.items():
        path = path if path.is_absolute() else CHECKOUT / path
        if not path.is_file():
            continue
        payload = json.loads(path.read_text())
        rows = payload["rows"]
        if kind == "decode":
            flags = next(iter(exp.models.values())).generate.flags
            beam = int(flag_value(flags, "--beam") or rows[0]["beam"])
            rows = sorted((r for r in rows if r["beam"] == beam), key=lambda r: r["L"])
        picked = {}
        for r in rows:
            picked.setdefault(r["model"], r)
        out[kind] = {"meta": payload["meta"], "rows": picked, "path": path}
    return out


# ------------------------------------------------------------------ runs
@dataclass
class ModelResult:
    model: Model
    runs: List[Path]  # finished run folders, one per seed
    logs: List[dict]
    scores: List[dict]  # score.json of each run (translation) / {"accuracy": x}
    decode: List[Optional[float]]
    distinct: List[Tuple[int, int]] = field(default_factory=list)  # (distinct, all) hypotheses per seed
    extra: Dict = field(default_factory=dict)  # seeds statistics, bootstrap

    @property
    def log(self) -> dict:
        return self.logs[0] if self.logs else {"params": None, "train": [], "valid": [], "last_update": 0}

    def wps(self) -> Optional[float]:
        """Training words/s: the median of fairseq's per-interval figures over every seed's log.
        The median, because an interval that holds a validation, a checkpoint save or a resume
        reads several times lower than the rest, and a mean of one seed's intervals let such
        outliers and a busy hour decide the column (the leaderboard's transformer read 1,009
        words/s on seed 1, which shared the machine with the test suite, and 1,767 on seed 2)."""
        pts = [p["wps"] for log in self.logs for p in log["train"] if "wps" in p]
        return statistics.median(pts) if pts else None


def collect(exp: Experiment) -> List[ModelResult]:
    out = []
    for m in exp.models.values():
        src = exp.models[m.decode_of] if m.decode_of else m
        runs, logs, scores, decode, distinct = [], [], [], [], []
        for seed in m.seeds:
            run = run_dir(exp, m, seed)
            gen = run / f"gen-{m.generate.subset}"
            if exp.kind == "classification":
                acc = test_accuracy(gen / "validate.log")
                if acc is None:
                    continue
                scores.append({"accuracy": acc})
            else:
                if not (gen / "score.json").is_file():
                    continue
                scores.append(json.loads((gen / "score.json").read_text()))
                decode.append(decode_speed(gen / "generate.err"))  # fairseq-generate's log
                if summarizes(m):  # the only tables that show the count
                    hyps = (gen / "hyp.txt").read_text(encoding="utf-8").splitlines()
                    distinct.append((len(set(hyps)), len(hyps)))
            runs.append(run)
            logs.append(parse_train_log(run_dir(exp, src, seed) / "train.log"))
        out.append(ModelResult(m, runs, logs, scores, decode, distinct))
    return out


def keys(exp: Experiment, m: Model) -> List[str]:
    out = []
    for metric in m.score.metrics:
        out += ["rouge1", "rouge2", "rougeL"] if metric == "rouge" else [metric]
    if m.score.tokenized and "tok_bleu" not in out:
        out.insert(0, "tok_bleu")
    return [k for k in out if k in PRIMARY]


def summarizes(m: Model) -> bool:
    return "rouge" in m.score.metrics


def distinct_cell(r: ModelResult) -> str:
    """Distinct hypotheses of the first seed, of all: 14 of 1,930 is a summarizer that
    writes the same synopses whatever the description says."""
    return f"{r.distinct[0][0]:,} of {r.distinct[0][1]:,}" if r.distinct else "–"


def seed_stats(r: ModelResult, key: str):
    values = [s[key] for s in r.scores if key in s]
    if not values:
        return None
    if len(values) == 1:
        return values[0], None, values
    return statistics.mean(values), statistics.stdev(values), values


def fmt_score(r: ModelResult, key: str) -> str:
    st = seed_stats(r, key)
    if st is None:
        return "–"
    mean, std, _ = st
    return f"{mean:.2f}" if std is None else f"{mean:.2f} ± {std:.2f}"


def bootstrap(exp: Experiment, results: List[ModelResult]):
    """p-values of each model's first seed against the baseline's (mixer-score's test),
    and against the other row of each of its claims; and of every later seed against the
    baseline's run of the same seed, shown seed by seed beside the claims (which stay on
    the first seeds, the rule fixed before the runs); and of a baseline's later seeds
    against its first (own_seeds)."""
    by_name = {r.model.name: r for r in results}
    for r in results:
        base = by_name.get(r.model.score.baseline)
        if exp.kind != "classification" and base is r:
            own_seeds(r)
        if exp.kind == "classification" or base is None or base is r or not r.runs or not base.runs:
            continue
        i, j = first_run(r), first_run(base)
        if i is not None and j is not None:
            r.extra["bootstrap"], r.extra["bootstrap_command"] = paired_bootstrap(r, base, "bootstrap.json", i, j)
        # seed by seed: each run against the baseline's run of the same seed.  The first
        # seeds' test above is one of these only when both rows list the same first seed;
        # otherwise that run's same-seed test gets a file of its own
        pairs = {}
        base_runs = {run.name: k for k, run in enumerate(base.runs)}
        for k, run in enumerate(r.runs):
            if run.name not in base_runs:
                continue
            if k == i and base_runs[run.name] == j:
                pairs[run.name] = r.extra["bootstrap"]
            else:
                name = "bootstrap.json" if k != i else "bootstrap-same-seed.json"
                pairs[run.name] = paired_bootstrap(r, base, name, k, base_runs[run.name])[0]
        r.extra["seed_pairs"] = pairs
    for r in results:
        for claim in r.model.claims:
            other = by_name[claim.other]
            i, j = first_run(r), first_run(other)
            if i is None or j is None:
                continue
            if other.model.name == r.model.score.baseline:
                boot = r.extra["bootstrap"]
            else:
                boot, _ = paired_bootstrap(r, other, f"bootstrap-vs-{other.model.name}.json", i, j)
            r.extra.setdefault("claims", {})[claim] = boot


def own_seeds(base: ModelResult):
    """Each later seed of a baseline against its first seed: two runs that differ only in
    their seed, under the test the claims' p is.  Where that reads p < 0.05 (the
    summarization transformer's seeds 1 and 2: +1.13 R-L, p 0.002), a one-seed row's p
    says nothing of its recipe."""
    j = first_run(base)
    if j is None:
        return
    base.extra["own_seeds"] = {run.name: paired_bootstrap(base, base, "bootstrap-vs-first-seed.json", k, j)[0]
                               for k, run in enumerate(base.runs) if k != j}


def first_run(r: ModelResult) -> Optional[int]:
    """The index in ``r.runs`` of the model's first seed (the first it lists), None until
    that run has finished.  The p-values and claims compare first seeds; another seed
    standing in for a missing one (a baseline seed being trained again) would change the
    comparison without a word."""
    names = [run.name for run in r.runs]
    first = f"seed{r.model.seeds[0]}"
    return names.index(first) if first in names else None


def paired_bootstrap(r: ModelResult, other: ModelResult, name: str, run: int = 0, other_run: int = 0):
    """mixer-score's paired bootstrap of r's run ``run`` (default: its first seed) against
    other's run ``other_run``, cached in r's generation folder while it is the same test:
    against the same model and seed, on the same metrics, and neither hypothesis file
    changed since."""
    from .. import scoring

    root = data_root(r.model.data, r.model.prepare)
    prep = prep_manifest(root)
    subset = r.model.generate.subset
    gen, other_gen = r.runs[run] / f"gen-{subset}", other.runs[other_run] / f"gen-{subset}"
    argv = [str(gen / "hyp.txt"), str(root / prep["references"][subset]["detok"]), "--metrics",
            ",".join(m for m in r.model.score.metrics if m in ("bleu", "chrf", "ter", "rouge", "rougeL")),
            "--baseline", str(other_gen / "hyp.txt"), "--json", str(gen / name)]
    cached = gen / name
    if not cache_holds(cached, other_gen / "hyp.txt", [gen / "hyp.txt"], argv[argv.index("--metrics") + 1]):
        scoring.main(argv)
    return json.loads(cached.read_text()).get("bootstrap", {}), "mixer-score " + shell(argv)


def cache_holds(cached: Path, baseline: Path, hyps: List[Path], metrics: str) -> bool:
    """Whether a cached bootstrap is the test asked for.  The baseline is compared by its
    last four path parts (<model>/seed<N>/gen-<subset>/hyp.txt), which name the same run on
    any machine (a committed cache comes back with another machine's absolute paths)."""
    if not cached.is_file():
        return False
    try:
        rec = json.loads(cached.read_text())
    except ValueError:
        return False
    return (Path(rec.get("baseline", "")).parts[-4:] == baseline.parts[-4:]
            and rec.get("metrics") == metrics.split(",")
            and cached.stat().st_mtime >= max(p.stat().st_mtime for p in [baseline, *hyps]))


# ---------------------------------------------------------------- claims
ALPHA = 0.05  # the paired bootstrap's significance level
EQUAL_MARGIN = 1.0  # points of the claim's metric within which two rows count as equal


def claim_metric(m) -> str:
    """The metric a claim is judged on: ROUGE-L where the experiment scores ROUGE, else BLEU
    where it scores BLEU (sacrebleu's, even where tokenized BLEU is listed too), else its
    first metric (accuracy for classification)."""
    metrics = m.score.metrics
    if {"rouge", "rougeL"} & set(metrics):
        return "rougeL"
    return "bleu" if "bleu" in metrics else metrics[0]


def verdict(relation: str, delta: float, p: float, spread: Optional[float] = None) -> str:
    """A paper's claim against this run.  ``delta``: this row's mean over its seeds minus the
    other's (a row of one seed: its score); ``p``: the paired bootstrap of the first seeds;
    ``spread``: the larger seed standard deviation of the two rows (None when neither has
    several seeds).  A difference is significant when p < ALPHA and, where there are seeds,
    the mean gap exceeds their spread (a gap one seed can produce is not evidence).

    ``>`` / ``<``: confirmed if significant in the claimed direction, refuted if significant
    the other way, else inconclusive.  ``~``: refuted if significant, confirmed if not and
    the gap is within EQUAL_MARGIN, else inconclusive (too noisy to tell)."""
    significant = p < ALPHA and (spread is None or abs(delta) > spread)
    if relation == "~":
        if significant:
            return "refuted"
        return "confirmed" if abs(delta) <= EQUAL_MARGIN else "inconclusive"
    if not significant:
        return "inconclusive"
    return "confirmed" if (delta > 0) == (relation == ">") else "refuted"


def claim_cells(r: ModelResult, by_name: Dict[str, ModelResult]) -> str:
    """Each claim of a row: its verdict, the gap and the p-value, or what it waits for."""
    key = claim_metric(r.model)
    cells = []
    for claim in r.model.claims:
        other = by_name[claim.other]
        boot = r.extra.get("claims", {}).get(claim)
        if boot is None or key not in boot:
            cells.append(f"{claim}: waiting for runs")
            continue
        mine, theirs = seed_stats(r, key), seed_stats(other, key)
        # means against means, and the seed spread of whichever row has seeds: a one-seed row
        # against the three-seed transformer is judged against the transformer's mean and
        # spread, not against whichever of its seeds happens to be the first
        delta = mine[0] - theirs[0]
        spreads = [sd for sd in (mine[1], theirs[1]) if sd is not None]
        # nor a gap smaller than a rerun of one command and seed produced (score.noise_floor)
        floor = r.model.score.noise_floor
        least = max([*spreads, floor]) if spreads or floor else None
        p = boot[key]["p_value"]
        cells.append(f"{claim}: **{verdict(claim.relation, delta, p, least)}** ({PRIMARY[key]} {delta:+.2f}"
                     + (f" over {len(mine[2])} and {len(theirs[2])} seeds, spread {max(spreads):.2f}" if spreads
                        else "")
                     + (f", rerun floor {floor:.2f}" if floor else "")
                     + f", p {p:.3f})")
    return "; ".join(cells)


# ---------------------------------------------------------------- outputs
def results_path(exp: Experiment) -> Path:
    if exp.results is None:
        return WORK / exp.name / "results.md"
    return exp.results if exp.results.is_absolute() else CHECKOUT / exp.results


STAMP = "- rebuilt: "


def unstamped(md: str) -> str:
    return "\n".join(line for line in md.split("\n") if not line.startswith(STAMP))


def write(exp: Experiment) -> Optional[Path]:
    results = collect(exp)
    out = results_path(exp)
    if not any(r.runs for r in results) and not out.is_file():
        return None  # (a file whose runs are all gone is written again, empty: its figures are void)
    bootstrap(exp, results)
    folder = out.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    keep_run_outputs(exp, results)
    plots = make_plots(exp, results, folder)
    md = markdown(exp, results, out, plots)
    if out.is_file() and unstamped(out.read_text(encoding="utf-8")) == unstamped(md):
        return out  # nothing but the time changed: the stamp stays that of the last change (and --commit commits nothing)
    with atomic_path(out) as tmp:  # the jobs write one at a time (Runner.write_results)
        tmp.write_text(md, encoding="utf-8")
    return out


RUN_FILES = ("train.log",)  # kept from a run folder; the rest from its gen-<subset>/
GEN_FILES = ("hyp.txt", "score.json", "bootstrap*.json", "validate.log", "generate.err")


def kept_runs(exp: Experiment) -> Path:
    """Where each run's small outputs are committed: ``results/<name>/runs/``."""
    return results_path(exp).with_suffix("") / "runs"


def keep_run_outputs(exp: Experiment, results: List[ModelResult]):
    """Each run's small outputs beside the results file: scores, hypotheses, its
    training and decoding logs, the commands and the stage records (never checkpoints).
    ``runner.restore`` brings them back on a machine whose ``work/`` is empty."""
    for r in results:
        for run in r.runs:
            dest = kept_runs(exp) / r.model.name / run.name
            gen = run / f"gen-{r.model.generate.subset}"
            # built beside and renamed whole: a copy cut short (a killed runner) is never a
            # committed run's hypotheses beside another training's stage records
            with atomic_path(dest) as tmp:
                tmp.mkdir()
                for src in (*(run / f for f in RUN_FILES),
                            *(p for pattern in GEN_FILES for p in sorted(gen.glob(pattern)))):
                    if src.is_file():
                        shutil.copyfile(src, tmp / src.name)
                stamps = run / ".stages"
                restored = stamps / "restored.json"  # a restored run: the record of the machine that ran it
                record = json.loads(restored.read_text()) if restored.is_file() else {
                    p.stem: json.loads(p.read_text()) for p in sorted(stamps.glob("*.json"))
                    if not p.stem.endswith("begun")}
                if record:
                    (tmp / "stages.json").write_text(json.dumps(record, indent=1) + "\n")


def make_plots(exp: Experiment, results: List[ModelResult], folder: Path) -> List[Path]:
    from ..plotting import pyplot

    plt = pyplot()

    made = []
    style = row_styles([r.model.name for r in results])
    fig, ax = plt.subplots(figsize=(8.0, 3.8))
    several = False
    for r in results:
        if r.model.decode_of:
            continue
        color, marker, line = style[r.model.name]
        # every seed, because seeds can differ in shape and not only in level (the summarization
        # multiNN's loss drops in a step that came 750 updates later for one seed than for the
        # others); the first seed marked and named, the later ones thin, unnamed in the legend
        for i, (run, log) in enumerate(zip(r.runs, r.logs)):
            valid = [p for p in log["valid"] if "loss" in p]
            if not valid:
                continue
            several |= i > 0
            look = dict(marker=marker, ms=3, label=r.model.name) if i == 0 else dict(
                lw=0.8, alpha=0.6, label=f"_{run.name}")
            ax.plot([p["num_updates"] for p in valid], [p["loss"] for p in valid], color=color,
                    linestyle=line, **look)
    if ax.lines:
        ax.set_xlabel("updates")
        ax.set_ylabel("valid loss (label-smoothed, base 2)")
        ax.set_title(f"{exp.name}: learning curves" + (" (every seed; the first marked)" if several else ""))
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the curves, not on them
        fig.tight_layout()
        made.append(folder / "curves.png")
        fig.savefig(made[-1], dpi=110)
    plt.close(fig)

    main_key = claim_metric(results[0].model)  # the figure the verdicts read (R-L, not the file's first, R-1)
    speeds = bench_speeds(exp)
    # x: the benchmarks' speed-ups where the experiment names them (one idle-machine run for
    # every row), else the runs' own training words/s
    gerund = {"train": "training", "decode": "decoding"}
    axes = ([(kind, f"{gerund[kind]} speed-up against {speeds[kind]['meta'].get('baseline', first_model(exp))} "
                    f"(mixer-bench {kind}, one run)") for kind in gerund if kind in speeds]
            if exp.speed else [(None, "training words/s (same machine, same run)")])
    panels = []
    for kind, label in axes:
        pts = [(r, seed_stats(r, main_key),
                r.wps() if kind is None else speeds[kind]["rows"].get(r.model.name, {}).get("speedup"))
               for r in results if r.runs]
        panels.append(([(r, st, x) for r, st, x in pts if st is not None and x], label))
    if any(len(pts) > 1 for pts, _ in panels):
        # a few rows are named beside their points; more crowd each other's names (the
        # leaderboard's best rows lie within 2 BLEU and 5% of speed), so they get a legend
        crowded = max(len(pts) for pts, _ in panels) > 8
        legend_width = 2.0 if crowded else 0.0  # inches beside the panels
        fig, axs = plt.subplots(1, len(panels), figsize=(6.4 * len(panels) + legend_width, 4), squeeze=False)
        for ax, (pts, label) in zip(axs[0], panels):
            for r, (mean, std, _), x in pts:
                color, marker, _ = style[r.model.name]
                ax.errorbar([x], [mean], yerr=[std] if std else None, color=color, fmt=marker, capsize=3,
                            label=r.model.name)
                if not crowded:
                    ax.annotate(r.model.name, (x, mean), fontsize=7, xytext=(4, 3), textcoords="offset points")
            ax.set_xlabel(label)
            ax.set_ylabel(PRIMARY[main_key])
        fig.suptitle(f"{exp.name}: {PRIMARY[main_key]} against speed")
        if crowded:  # one legend for both panels: a row missing from one (decode-only rows) is in the other
            handles = {}
            for ax in axs[0]:
                handles.update(zip(*reversed(ax.get_legend_handles_labels())))
            fig.legend(list(handles.values()), list(handles), fontsize=7, loc="center right")
        fig.tight_layout(rect=(0, 0, 1 - legend_width / fig.get_figwidth(), 1))
        made.append(folder / "score_vs_speed.png")
        fig.savefig(made[-1], dpi=110)
        plt.close(fig)
    for stale in {folder / "curves.png", folder / "score_vs_speed.png"} - set(made):
        stale.unlink(missing_ok=True)  # a plot of runs that are gone (a recipe found wrong) would stay in the folder
    return made


def row_styles(names: List[str]) -> Dict[str, Tuple[str, str, str]]:
    """One (colour, marker, line style) per row, the same in every plot of a results file.
    matplotlib's default cycle repeats its ten colours, so a leaderboard of 17 rows drew
    multiNN and talking heads in one green; the marker and line style change with each pass
    through the colours, which keeps 30 rows apart."""
    return {name: (f"C{i % 10}", "os^"[i // 10 % 3], ("-", "--", ":")[i // 10 % 3]) for i, name in enumerate(names)}


def first_model(exp: Experiment) -> str:
    return next(iter(exp.models))


def speed_cells(r: ModelResult, speeds: Dict[str, dict], exp: Experiment) -> List[str]:
    """The row's training and decoding speed: from the benchmarks the experiment names
    (with the speed-up against the benchmark's baseline), else from its own runs."""
    if not exp.speed:
        wps, dec = r.wps(), [d for d in r.decode if d]
        return [f"{wps:,.0f}" if wps else "–", f"{statistics.mean(dec):.1f}" if dec else "–"]
    cells = []
    for kind, value, fmt_value in (("train", "wps", "{:,.0f}"), ("decode", "sent_per_s", "{:.1f}")):
        row = speeds.get(kind, {}).get("rows", {}).get(r.model.name)
        cells.append(f"{fmt_value.format(row[value])} ({row['speedup']:.2f}x)" if row else "–")
    return cells


def speed_notes(exp: Experiment, speeds: Dict[str, dict], out: Path) -> List[str]:
    if not exp.speed:
        return ["- train wps: the median of fairseq's words/s per log interval over every seed's training (a "
                "validation or a resume makes an interval read low); decode sent/s: fairseq-generate's own timing, "
                "the mean over seeds; both measured in these runs, so only ratios within the table compare"]
    notes = []
    for kind in ("train", "decode"):
        if kind not in exp.speed:
            continue
        if kind not in speeds:
            command = SPEED_COMMANDS[kind].format(exp=shown(exp.path), md=exp.speed[kind].with_suffix(".md"))
            notes.append(f"- {kind} speed: not benchmarked yet (`{command}` writes `{exp.speed[kind]}`)")
            continue
        meta = speeds[kind]["meta"]
        what = ("fairseq-train's words/s, the experiment's own flags" if kind == "train" else
                f"fairseq-generate's sentences/s, {meta.get('sentences', '?')} test sentences a batch, every "
                f"hypothesis pinned to L = {next(iter(speeds[kind]['rows'].values()))['L']} tokens, beam "
                f"{next(iter(speeds[kind]['rows'].values()))['beam']}")
        table = Path(speeds[kind]["path"]).with_suffix(".md")
        notes.append(f"- {'train words/s' if kind == 'train' else 'decode sent/s'}: `{meta['command']}` on "
                     f"{meta['date']} ([{table.name}]({os.path.relpath(table, out.parent)}), with the machine's "
                     f"load): every row in one benchmark run ({what}; median of {meta.get('rounds', '?')} rounds, "
                     "models round-robin), the speed-up against the baseline of that run. Not the campaign's own "
                     "timings, which depend on the run that shared the machine and on the machine each session had")
    return notes


SPEED_COMMANDS = {"train": "mixer-bench train {exp} --md {md}",
                  "decode": "mixer-bench decode <data>/bin --experiment {exp} --lengths L --beams B --md {md}"}


def markdown(exp: Experiment, results: List[ModelResult], out: Path, plots: List[Path]) -> str:
    first = results[0].model
    ks = keys(exp, first)
    baselines = list(dict.fromkeys(r.model.score.baseline for r in results if r.model.score.baseline))
    # one baseline names the column; rows with baselines of their own (interacting_heads'
    # 16-head rows against 16-head MHA) name theirs in the cell
    base = baselines[0] if len(baselines) == 1 else None
    md = [f"# {exp.title}", ""]
    if exp.description:
        md += [exp.description, ""]
    summary = summarizes(first)
    head = ["model", "params", "updates", "seeds", "valid loss"] + [PRIMARY[k] for k in ks]
    if summary:
        head.append("distinct outputs")
    if baselines and exp.kind != "classification":
        head.append(f"p vs {base}" if base else "p vs the row's baseline")
    speeds = bench_speeds(exp)
    head += (["train words/s (x)", "decode sent/s (x)"] if exp.speed else ["train wps", "decode sent/s"]) + ["paper"]
    with_claims = any(r.model.claims for r in results)
    if with_claims:
        head.append("the paper's claim: this run")
    by_name = {r.model.name: r for r in results}
    md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        valid = [p for p in r.log["valid"] if "loss" in p]
        cells = [f"`{r.model.name}`", f"{r.log['params']:,}" if r.log["params"] else "–",
                 str(r.log["last_update"]) if r.runs else "–", str(len(r.runs)),
                 f"{valid[-1]['loss']:.3f}" if valid else "–", *[fmt_score(r, k) for k in ks]]
        if summary:
            cells.append(distinct_cell(r))
        if baselines and exp.kind != "classification":
            boot = r.extra.get("bootstrap", {})
            own = r.model.score.baseline
            p = ", ".join(f"{PRIMARY.get(k, k)} {v['p_value']:.3f}" for k, v in boot.items()
                          if k in ("bleu", "rouge1", "rougeL"))
            cells.append("baseline" if own == r.model.name or (own is None and r.model.name in baselines)
                         else "–" if not p else p if base else f"{p} vs `{own}`")
        cells += [*speed_cells(r, speeds, exp), r.model.paper or ""]
        if with_claims:
            cells.append(claim_cells(r, by_name) if r.runs else "")
        md.append("| " + " | ".join(cells) + " |")
    md.append("")
    for name in baselines:
        md += seed_pairs_table([r for r in results if r.model.score.baseline == name], by_name[name])
        md += own_seeds_table(by_name[name])
    md += by_source_table(results)
    sig = next((s.get("bleu_signature") for r in results for s in r.scores if s.get("bleu_signature")), None)
    notes = ["- seeds: mean ± sample standard deviation over the seeds listed; p: paired bootstrap resampling "
             "(1000 samples), each model's first seed against the baseline's"] if baselines else []
    if with_claims:
        notes.append(f"- the paper's claims, on {PRIMARY[claim_metric(first)]}: a gap is significant when the paired "
                     f"bootstrap's p < {ALPHA} (first seeds) and, where either row has several seeds, the gap between "
                     "the means (a one-seed row: its score) exceeds the larger seed standard deviation"
                     + (f"; and always when the gap exceeds the rerun floor, {first.score.noise_floor:g} points (what "
                        "two runs of one command and seed differed by)" if first.score.noise_floor else "")
                     + "; > and < are confirmed when significant in the claimed direction, "
                     "refuted when significant the other way, else inconclusive; ≈ is refuted when significant, "
                     f"confirmed when not and within {EQUAL_MARGIN:g} point, else inconclusive")
    if summary:
        notes.append("- distinct outputs: how many of the first seed's summaries differ from one another; a model "
                     "that has not learned to read its source writes the same few for every input")
    if sig:
        notes.append(f"- BLEU signature: `{sig}`")
    notes += speed_notes(exp, speeds, out)
    md += notes + [""]
    if plots:
        md += ["## Plots", ""] + [f"![{p.stem}]({p.relative_to(out.parent)})" for p in plots] + [""]
    md += commands(exp, results)
    md += ["", f"{STAMP}{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `mixer-run {shown(exp.path)}`; "
           f"each run's scores, hypotheses, training log and stage records: "
           f"[`{out.with_suffix('').name}/runs/`]({out.with_suffix('').name}/runs/)"]
    return "\n".join(md) + "\n"


def seed_pairs_table(results: List[ModelResult], base_r: Optional[ModelResult]) -> List[str]:
    """Every seed of the rows with several against the baseline's run of the same seed: the
    main table's p compares first seeds only, so a first seed that happens to be a row's
    worst (or the baseline's best) would otherwise go unseen."""
    rows = [r for r in results if len(r.extra.get("seed_pairs", {})) > 1]
    if base_r is None or not rows:
        return []
    key = claim_metric(base_r.model)
    name = PRIMARY[key]
    base_score = seed_scores(base_r, key)
    lines = [f"Seed by seed against `{base_r.model.name}` (each seed's paired bootstrap against the "
             f"baseline's run of the same seed; the claims above use the first seeds, the rule fixed "
             "before the runs):", "",
             f"| model | seed | {name} | `{base_r.model.name}` | Δ | p |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        score = seed_scores(r, key)
        for seed, boot in r.extra["seed_pairs"].items():
            if seed not in base_score:  # a row whose first seed the baseline does not have
                continue
            lines.append(f"| `{r.model.name}` | {seed.removeprefix('seed')} | "
                         + gap_cells(score[seed], base_score[seed], boot, key))
    return lines + [""]


def seed_scores(r: ModelResult, key: str) -> Dict[str, float]:
    """seed<N> -> the run's score on ``key``."""
    return {run.name: sc.get(key) for run, sc in zip(r.runs, r.scores)}


def gap_cells(mine: float, theirs: float, boot: Dict, key: str) -> str:
    """The cells `mine | theirs | Δ | p |` of a seed-against-seed row (p: the bootstrap on ``key``)."""
    p = boot.get(key, {}).get("p_value")
    return f"{mine:.2f} | {theirs:.2f} | {mine - theirs:+.2f} | " + (f"{p:.3f}" if p is not None else "–") + " |"


def own_seeds_table(base_r: ModelResult) -> List[str]:
    """The baseline's later seeds against its first (own_seeds): how far two runs of one
    recipe read apart, and what p the paired bootstrap gives that."""
    pairs = base_r.extra.get("own_seeds")
    if not pairs:
        return []
    key = claim_metric(base_r.model)
    score = seed_scores(base_r, key)
    first = base_r.runs[first_run(base_r)].name
    lines = [f"`{base_r.model.name}` against its own first seed (one recipe, another seed: the gap a "
             "paired bootstrap finds between runs that differ only in their seed):", "",
             f"| seed | {PRIMARY[key]} | seed {first.removeprefix('seed')} | Δ | p |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {seed.removeprefix('seed')} | " + gap_cells(score[seed], score[first], boot, key)
              for seed, boot in pairs.items()]
    return lines + [""]


def by_source_table(results: List[ModelResult]) -> List[str]:
    """BLEU per test source, each row's first seed (the first it lists, as the p-values:
    while that run is missing, another seed would stand in under its name)."""
    firsts = {id(r): r.scores[first_run(r)] for r in results if first_run(r) is not None}
    sources = list(dict.fromkeys(s for sc in firsts.values() for s in sc.get("by_source", {})))
    if not sources:
        return []
    counts = next(sc["by_source"] for sc in firsts.values() if sc.get("by_source"))
    lines = ["Test BLEU per source (first seed; lines per source in the header):", "",
             "| model | " + " | ".join(f"{s} ({counts[s]['lines']})" for s in sources) + " |",
             "|---|" + "---:|" * len(sources)]
    for r in results:
        bs = firsts.get(id(r), {}).get("by_source", {})
        lines.append(f"| `{r.model.name}` | " + " | ".join(
            f"{bs[s]['bleu']:.2f}" if s in bs and "bleu" in bs[s] else "–" for s in sources) + " |")
    return lines + [""]


def commands(exp: Experiment, results: List[ModelResult]) -> List[str]:
    """The stock commands of the first seed of every model, as they ran."""
    md = ["## Commands", "", f"Everything above: `mixer-run {shown(exp.path)}` (each stage below is one of its "
                             "commands; any of them can be run by hand).", ""]
    shown_data = set()
    for r in results:
        m = r.model
        if (m.data, tuple(m.prepare)) not in shown_data:
            shown_data.add((m.data, tuple(m.prepare)))
            stage = prepare_stage(m.data, m.prepare)
            md += [f"- data `{m.data}`: `{shell(stage.commands[0])}`"]
    for r in results:
        if not r.runs:
            continue
        seed = int(r.runs[0].name.removeprefix("seed"))
        trained = None
        if r.model.decode_of:
            src = exp.models[r.model.decode_of]
            trained = run_stages(exp, src, seed, prepare_stage(src.data, src.prepare), None)[0]
        stages = run_stages(exp, r.model, seed, prepare_stage(r.model.data, r.model.prepare), trained)
        md += ["", f"### `{r.model.name}`" + (f" ({r.model.note})" if r.model.note else ""), ""]
        for stage in ([trained] if trained else []) + stages:
            for argv in stage.commands:
                md.append(f"- {stage.name}: `{shell(argv)}`")
        if "bootstrap_command" in r.extra:
            md.append(f"- bootstrap: `{r.extra['bootstrap_command']}`")
    return md


def print_samples(exp: Experiment, n: int):
    """A few source / hypothesis / reference lines of each model's first run."""
    for r in collect(exp):
        if not r.runs:
            continue
        m = r.model
        root = data_root(m.data, m.prepare)
        prep = prep_manifest(root)
        subset = m.generate.subset
        src = root / "raw" / f"{subset}.{prep['src']}"
        ref = root / prep["references"][subset]["detok"]
        hyp = r.runs[0] / f"gen-{subset}" / "hyp.txt"
        lines = [p.read_text(encoding="utf-8").split("\n") for p in (src, hyp, ref)]
        score = fmt_score(r, keys(exp, m)[0])
        print(f"\n== {m.name} ({PRIMARY[keys(exp, m)[0]]} {score}): the first {n} test sentences")
        for i in range(min(n, len(lines[1]))):
            print(f"  source:     {lines[0][i]}\n  hypothesis: {lines[1][i]}\n  reference:  {lines[2][i]}\n")
