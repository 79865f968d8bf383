"""An experiment's results file: one table row per model (parameters, updates, the last
validation, the scores over its seeds as mean +- sample std, each source's BLEU where the
data has sources, the paired bootstrap's p against the baseline, for summarization the
number of distinct outputs, training and decoding speed, the paper's figure and each of its
claims with ``claims``' verdict), the seed-by-seed tables, the plots (learning curves, score
against speed), and every command that made the numbers.

A model that ignores its source writes the same few summaries for every input, and ROUGE
alone does not show it: hence the distinct outputs.  Speeds come from the idle-machine
benchmarks the experiment names under ``speed:``, else from the logs of its own runs.

The results go to ``results: <file>.md`` of the experiment (plots and each run's kept
outputs in the folder of the same name, ``archive``), or, for an experiment without one,
to ``work/<name>/results.md``.
"""

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..data.workspace import data_root
from ..files import atomic_path
from ..paths import shown
from . import claims
from .archive import keep_run_outputs, results_path
from .collect import (
    PRIMARY,
    ModelResult,
    Selection,
    bench_speeds,
    collect,
    first_run,
    keys,
    peak,
    run_bootstraps,
    seed_stats,
    selection,
    summarizes,
    train_flags,
)
from .spec import Claim, Experiment, Model, load, paper_figures
from .stages import flag_value, placed_in, prep_manifest, prepare_stage, run_stages, shell


def distinct_cell(r: ModelResult) -> str:
    """Distinct hypotheses of the first seed, of all: 14 of 1,930 is a summarizer that
    writes the same synopses whatever the description says."""
    return f"{r.distinct[0][0]:,} of {r.distinct[0][1]:,}" if r.distinct else "–"


def fmt_score(r: ModelResult, key: str) -> str:
    st = seed_stats(r, key)
    if st is None:
        return "–"
    mean, std, _ = st
    return f"{mean:.2f}" if std is None else f"{mean:.2f} ± {std:.2f}"


def judgement(r: ModelResult, claim: Claim) -> Optional[claims.Judgement]:
    """A row's claim judged (``claims.judge``) on its one comparison with the other row
    (``collect.pooled``: every seed's score and the p of the gap between the means), or
    None while either row has no finished run."""
    rec = r.extra.get("claims", {}).get(claim)
    if rec is None:
        return None
    return claims.judge(claim.relation, rec["system"], rec["baseline"], rec["p_value"], r.model.score.noise_floor)


def signs(rec: dict) -> str:
    """The seed pairs' signs of a comparison (``claims.seed_signs``), or "" for one pair."""
    s = claims.seed_signs(rec["system"], rec["baseline"], rec["system_seeds"], rec["baseline_seeds"])
    return s if len(s) > 1 else ""


def claim_cells(r: ModelResult) -> str:
    """Each claim of a row: its verdict, the gap, the seed pairs' signs and the p-value of
    that gap, or what it waits for."""
    key = claim_metric(r.model)
    cells = []
    for claim in r.model.claims:
        j = judgement(r, claim)
        if j is None:
            cells.append(f"{claim}: waiting for runs")
            continue
        pairs = signs(r.extra["claims"][claim])
        cells.append(
            f"{claim}: **{j.verdict}** ({PRIMARY[key]} {j.delta:+.2f}"
            + (f" over {j.seeds[0]} and {j.seeds[1]} seeds" if j.seeds != (1, 1) else "")
            + (f", seed pairs {pairs}" if pairs else "")
            + (f", spread {j.spread:.2f}" if j.spread is not None else "")
            + (f", rerun floor {j.floor:.2f}" if j.floor else "")
            + f", p {j.p:.3f})"
        )
    return "; ".join(cells)


def verdicts(results: List[ModelResult]) -> Dict[str, Dict[str, dict]]:
    """Every judged claim as a small record, row -> claim (as the table writes it) -> its
    verdict, the gap between the means, p and the seeds of each side: what another table of
    the same rows (``verdicts_beside``) reads, kept beside the results (``VERDICTS``)."""
    out: Dict[str, Dict[str, dict]] = {}
    for r in results:
        for claim in r.model.claims:
            j = judgement(r, claim)
            if j is not None:
                out.setdefault(r.model.name, {})[str(claim)] = {
                    "metric": claim_metric(r.model),
                    "verdict": j.verdict,
                    "delta": round(j.delta, 4),
                    "p": j.p,
                    "seeds": list(j.seeds),
                }
    return out


def claims_beside(
    exp: Experiment, mine: Dict[str, Dict[str, dict]]
) -> Dict[Tuple[str, Path], List[Tuple[str, str, Any, Any]]]:
    """For the rows taken from another experiment file (``from:``), each claim's verdict
    there beside its verdict here: (source file, its results file) -> (row, claim, theirs,
    mine), where either verdict is None while that table has not judged it.  The converged
    leaderboard against the 3,750-update one, whose rows it runs again; theirs read from that
    file's ``VERDICTS``."""
    out: Dict[Tuple[str, Path], List[Tuple[str, str, Any, Any]]] = {}
    for source in dict.fromkeys(m.source for m in exp.models.values() if m.source and m.claims):
        theirs_at = results_path(load(exp.path.parent / source))
        theirs_file = theirs_at.with_suffix("") / VERDICTS
        theirs = json.loads(theirs_file.read_text(encoding="utf-8")) if theirs_file.is_file() else {}
        out[source, theirs_at] = [
            (m.name, str(claim), theirs.get(m.name, {}).get(str(claim)), mine.get(m.name, {}).get(str(claim)))
            for m in exp.models.values()
            if m.source == source
            for claim in m.claims
        ]
    return out


def moved(theirs: dict, mine: dict) -> bool:
    """Whether a claim's verdict moved between two tables: the results file's "claims beside"
    and the README's paragraph both read it here."""
    return theirs["verdict"] != mine["verdict"]


def moved_cell(theirs: Optional[dict], mine: Optional[dict]) -> str:
    if theirs is None or mine is None:
        return "–"
    return "**moved**" if moved(theirs, mine) else "same"


def verdicts_beside(exp: Experiment, mine: Dict[str, Dict[str, dict]], out: Path) -> List[str]:
    """The results file's table of ``claims_beside``: each claim's verdict in the other file
    and here, and whether it moved."""
    md = []
    for (source, theirs_at), pairs in claims_beside(exp, mine).items():
        rows = [
            f"| `{name}` | {claim} | {verdict_cell(a)} | {verdict_cell(b)} | {moved_cell(a, b)} |"
            for name, claim, a, b in pairs
            if a is not None or b is not None
        ]
        if rows:
            link = os.path.relpath(theirs_at, out.parent)
            md += [
                f"### The claims beside [{theirs_at.name}]({link}) (`{source}`, the rows' own file)",
                "",
                f"| row | the paper's claim | [{theirs_at.stem}]({link}) | this table | verdict |",
                "|---|---|---|---|---|",
                *rows,
                "",
            ]
    return md


def verdict_cell(v: Optional[dict]) -> str:
    if v is None:
        return "–"
    return f"{v['verdict']} ({PRIMARY.get(v['metric'], v['metric'])} {v['delta']:+.2f}, p {v['p']:.3f})"


def peak_cells(logs: List[dict], chosen: Optional[Selection], cap: Optional[int]) -> List[str]:
    """Peak update, the validation metric there and the hours of training to it, each seed's
    (``a / b / c``), from the seeds' training logs (or their run records, which hold the same
    points).  A run that trained to the cap (``--max-update``) did not stop by its own rule,
    so its peak is marked: it may not have converged."""
    peaks = [peak(log, chosen) for log in logs] if chosen else []
    if not any(peaks):
        return ["–"] * 3
    capped = [
        cap is not None and p is not None and p.stopped is None and log["last_update"] >= cap
        for p, log in zip(peaks, logs)
    ]

    def each(cell: Callable[[Any], str]) -> str:
        return " / ".join("–" if p is None else cell(p) for p in peaks)

    return [
        " / ".join("–" if p is None else f"{p.update:,}" + (" (cap)" if c else "") for p, c in zip(peaks, capped)),
        each(lambda p: f"{p.value:.2f}"),
        each(lambda p: "–" if p.hours is None else f"{p.hours:.1f}"),
    ]


def cap(exp: Experiment, m: Model) -> Optional[int]:
    """A model's ``--max-update`` (a decode's: the training it decodes), None without one."""
    value = flag_value(train_flags(exp, m), "--max-update")
    return int(value) if value is not None else None


def paper_cell(m: Model) -> str:
    """What the paper says of the row, with the figures of the paper rows it names (read from
    the paper's module: ``spec.paper_figures``)."""
    figures = [f for ref in m.paper_rows for f in paper_figures(ref)]
    return m.paper + (f" ({'; '.join(figures)})" if figures else "")


def claim_metric(m: Model) -> str:
    return claims.claim_metric(m.score.metrics)


STAMP = "- rebuilt: "
VERDICTS = "claims.json"  # beside the results file: each judged claim (``verdicts``)


def unstamped(md: str) -> str:
    return "\n".join(line for line in md.split("\n") if not line.startswith(STAMP))


def write(exp: Experiment) -> Optional[Path]:
    results = collect(exp)
    out = results_path(exp)
    if not any(r.runs for r in results) and not out.is_file():
        return None  # (a file whose runs are all gone is written again, empty: its figures are void)
    run_bootstraps(exp, results)
    folder = out.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    keep_run_outputs(exp, results)
    plots = make_plots(exp, results, folder)
    judged = verdicts(results)
    kept = folder / VERDICTS
    text = json.dumps(judged, indent=1, ensure_ascii=False) + "\n"
    if (judged or kept.is_file()) and not (kept.is_file() and kept.read_text(encoding="utf-8") == text):
        with atomic_path(kept) as tmp:
            tmp.write_text(text, encoding="utf-8")
    md = markdown(exp, results, out, plots, judged)
    if out.is_file() and unstamped(out.read_text(encoding="utf-8")) == unstamped(md):
        # nothing but the time changed: the stamp stays that of the last change (and --commit commits nothing)
        return out
    with atomic_path(out) as tmp:  # the jobs write one at a time (Runner.write_results)
        tmp.write_text(md, encoding="utf-8")
    return out


def make_plots(exp: Experiment, results: List[ModelResult], folder: Path) -> List[Path]:
    from ..plotting import pyplot

    plt = pyplot()

    made = []
    style = row_styles([r.model.name for r in results])
    # the loss, and beside it the metric that chooses the checkpoints where one does (valid BLEU
    # of a training run until it stops improving: its peak is the update the table names)
    selected = {r.model.name: selection(exp, r.model) for r in results}
    chooser = next((c for c in selected.values() if c), None)
    panels = [("loss", "valid loss (label-smoothed, base 2)")] + (
        [(chooser.metric, f"valid {chooser.metric}")] if chooser else []
    )
    fig, axs = plt.subplots(1, len(panels), figsize=(8.0 + 4.6 * (len(panels) - 1), 3.8), squeeze=False)
    several = False
    for ax, (key, _) in zip(axs[0], panels):
        for r in results:
            if r.model.decode_of:
                continue
            color, marker, line = style[r.model.name]
            # every seed, because seeds can differ in shape and not only in level (the summarization
            # multiNN's loss drops in a step that came 750 updates later for one seed than for the
            # others); the first seed marked and named, the later ones thin, unnamed in the legend
            for i, (run, log) in enumerate(zip(r.runs, r.logs)):
                valid = [p for p in log["valid"] if key in p]
                if not valid:
                    continue
                several |= i > 0
                look = (
                    dict(marker=marker, ms=3, label=r.model.name)
                    if i == 0
                    else dict(lw=0.8, alpha=0.6, label=f"_{run.name}")
                )
                ax.plot([p["num_updates"] for p in valid], [p[key] for p in valid], color=color, linestyle=line, **look)
                chosen = selected[r.model.name]
                if chosen and key == chosen.metric and (top := peak(log, chosen)):
                    # the update the table names: a reader sees where each run stopped improving
                    ax.plot([top.update], [top.value], color=color, marker="*", ms=11, mec="black", mew=0.5, ls="")
    if axs[0][0].lines:
        for ax, (_, label) in zip(axs[0], panels):
            ax.set_xlabel("updates")
            ax.set_ylabel(label)
        title = f"{exp.name}: learning curves" + (" (every seed; the first marked)" if several else "")
        if chooser:
            fig.suptitle(f"{title}; ★ each run's peak valid {chooser.metric}")
        else:
            axs[0][0].set_title(title)
        # beside the curves, not on them
        axs[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        made.append(folder / "curves.png")
        fig.savefig(made[-1], dpi=110)
    plt.close(fig)

    main_key = claim_metric(results[0].model)  # the figure the verdicts read (R-L, not the file's first, R-1)
    speeds = bench_speeds(exp)
    # x: the benchmarks' speed-ups where the experiment names them (one idle-machine run for
    # every row), else the runs' own training words/s
    gerund = {"train": "training", "decode": "decoding"}
    axes = (
        [
            (
                kind,
                f"{gerund[kind]} speed-up against {speeds[kind]['meta'].get('baseline', first_model(exp))} "
                f"(mixer-bench {kind}, one run)",
            )
            for kind in gerund
            if kind in speeds
        ]
        if exp.speed
        else [(None, "training words/s (same machine, same run)")]
    )
    panels = []
    for kind, label in axes:
        pts = [
            (
                r,
                seed_stats(r, main_key),
                r.wps() if kind is None else speeds[kind]["rows"].get(r.model.name, {}).get("speedup"),
            )
            for r in results
            if r.runs
        ]
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
                ax.errorbar(
                    [x], [mean], yerr=[std] if std else None, color=color, fmt=marker, capsize=3, label=r.model.name
                )
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
        return [
            "- train wps: the median of fairseq's words/s per log interval over every seed's training (a "
            "validation or a resume makes an interval read low); decode sent/s: fairseq-generate's own timing, "
            "the mean over seeds; both measured in these runs, so only ratios within the table compare"
        ]
    notes = []
    for kind in ("train", "decode"):
        if kind not in exp.speed:
            continue
        if kind not in speeds:
            command = SPEED_COMMANDS[kind].format(exp=shown(exp.path), md=exp.speed[kind].with_suffix(".md"))
            notes.append(f"- {kind} speed: not benchmarked yet (`{command}` writes `{exp.speed[kind]}`)")
            continue
        meta = speeds[kind]["meta"]
        what = (
            "fairseq-train's words/s, the experiment's own flags"
            if kind == "train"
            else f"fairseq-generate's sentences/s, {meta.get('sentences', '?')} test sentences a batch, every "
            f"hypothesis pinned to L = {next(iter(speeds[kind]['rows'].values()))['L']} tokens, beam "
            f"{next(iter(speeds[kind]['rows'].values()))['beam']}"
        )
        table = Path(speeds[kind]["path"]).with_suffix(".md")
        notes.append(
            f"- {'train words/s' if kind == 'train' else 'decode sent/s'}: `{meta['command']}` on "
            f"{meta['date']} ([{table.name}]({os.path.relpath(table, out.parent)}), with the machine's "
            f"load): every row in one benchmark run ({what}; median of {meta.get('rounds', '?')} rounds, "
            "models round-robin), the speed-up against the baseline of that run. Not the campaign's own "
            "timings, which depend on the run that shared the machine and on the machine each session had"
        )
    return notes


SPEED_COMMANDS = {
    "train": "mixer-bench train {exp} --md {md}",
    "decode": "mixer-bench decode <data>/bin --experiment {exp} --lengths L --beams B --md {md}",
}


def markdown(
    exp: Experiment, results: List[ModelResult], out: Path, plots: List[Path], judged: Dict[str, Dict[str, dict]]
) -> str:
    """The results file; ``judged``: its claims' verdicts (``verdicts(results)``)."""
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
    selected = {r.model.name: selection(exp, r.model) for r in results}
    chooser = next((s for s in selected.values() if s), None)
    head = ["model", "params", "updates", "seeds", "valid loss"]
    if chooser:  # trained until validation stopped improving: where each seed peaked, and when
        head += ["peak update", f"valid {PRIMARY.get(chooser.metric, chooser.metric)} at peak", "hours to peak"]
    head += [PRIMARY[k] for k in ks]
    if summary:
        head.append("distinct outputs")
    if baselines and exp.kind != "classification":
        head.append(f"Δ, p vs {base}" if base else "Δ, p vs the row's baseline")
    speeds = bench_speeds(exp)
    head += (["train words/s (x)", "decode sent/s (x)"] if exp.speed else ["train wps", "decode sent/s"]) + ["paper"]
    with_claims = any(r.model.claims for r in results)
    if with_claims:
        head.append("the paper's claim: this run")
    by_name = {r.model.name: r for r in results}
    md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        valid = [p for p in r.log["valid"] if "loss" in p]
        cells = [
            f"`{r.model.name}`",
            f"{r.log['params']:,}" if r.log["params"] else "–",
            f"{r.log['last_update']:,}" if r.runs else "–",
            str(len(r.runs)),
            f"{valid[-1]['loss']:.3f}" if valid else "–",
            *(peak_cells(r.logs, selected[r.model.name], cap(exp, r.model)) if chooser else []),
            *[fmt_score(r, k) for k in ks],
        ]
        if summary:
            cells.append(distinct_cell(r))
        if baselines and exp.kind != "classification":
            own = r.model.score.baseline
            p = gap_p_cell(r.extra["pooled"], claim_metric(r.model)) if "pooled" in r.extra else ""
            cells.append(
                "baseline"
                if own == r.model.name or (own is None and r.model.name in baselines)
                else "–"
                if not p
                else p
                if base
                else f"{p} vs `{own}`"
            )
        cells += [*speed_cells(r, speeds, exp), paper_cell(r.model)]
        if with_claims:
            cells.append(claim_cells(r) if r.runs else "")
        md.append("| " + " | ".join(cells) + " |")
    md.append("")
    md += choice_table(exp, by_name)
    for name in baselines:
        md += seed_pairs_table([r for r in results if r.model.score.baseline == name], by_name[name])
        md += own_seeds_table(by_name[name])
        if chooser:
            md += seeds_rule_table(
                [r for r in results if r.model.score.baseline == name], by_name[name], chooser, baselines
            )
    md += verdicts_beside(exp, judged, out)
    md += by_source_table(results)
    sig = next((s.get("bleu_signature") for r in results for s in r.scores if s.get("bleu_signature")), None)
    notes = (
        [
            "- seeds: mean ± sample standard deviation over the seeds listed; Δ, p: the gap between the row's "
            "mean and its baseline's, and that gap's paired bootstrap over the test sentences (1000 resamples, "
            "every seed of both rows in each; `mixer_plugin/scoring/significance.py`), one comparison "
            "(the seed-by-seed table below shows each pair)"
        ]
        if baselines
        else []
    )
    if with_claims:
        notes.append(
            f"- the paper's claims, on {PRIMARY[claim_metric(first)]}: the gap between the two rows' means (a "
            f"one-seed row: its score) is significant when its paired bootstrap (every seed of both rows) gives "
            f"p < {claims.ALPHA} and, where either row has several seeds, the gap exceeds the larger seed "
            "standard deviation"
            + (
                f"; and always when the gap exceeds the rerun floor, {first.score.noise_floor:g} points (what "
                "two runs of one command and seed differed by)"
                if first.score.noise_floor
                else ""
            )
            + "; > and < are confirmed when significant in the claimed direction, "
            "refuted when significant the other way, else inconclusive; ≈ is refuted when significant, "
            f"confirmed when not and within {claims.EQUAL_MARGIN:g} point, else inconclusive; seed pairs: the sign "
            "of each pair's gap (the same seed where both rows have several, else the one seed against each of "
            "the other's)"
        )
    if summary:
        notes.append(
            "- distinct outputs: how many of the first seed's summaries differ from one another; a model "
            "that has not learned to read its source writes the same few for every input"
        )
    if chooser:
        notes.append(
            f"- peak update: the last validation with the best valid {PRIMARY.get(chooser.metric, chooser.metric)} "
            "before fairseq's stopping rule ended the training (its checkpoint_best.pt; for a training resumed after "
            "a kill, the rule applied to the whole log, since fairseq restarts its count), one per seed; the valid "
            "score is fairseq's own during "
            "training (`--eval-bleu`: its decoding flags, not the table's); (cap): the run trained to "
            "`--max-update` without its stopping rule ending it, so it may not have converged; hours to peak: "
            "the time in training steps up to it (fairseq's train_wall summed over the logged intervals, "
            "validation and saving left out, so resumes do not count), on the machines that ran it, added up "
            "where a run resumed in a later session (machines differ: "
            + ("compare speeds in the benchmark columns)" if exp.speed else "compare within one session)")
        )
    if sig:
        notes.append(f"- BLEU signature: `{sig}`")
    notes += speed_notes(exp, speeds, out)
    md += notes + [""]
    if plots:
        md += ["## Plots", ""] + [f"![{p.stem}]({p.relative_to(out.parent)})" for p in plots] + [""]
    md += commands(exp, results)
    md += [
        "",
        f"{STAMP}{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `mixer-run {shown(exp.path)}`; "
        f"each run's record (scores, curves, speeds, commands) and hypotheses: "
        f"[`{out.with_suffix('').name}/runs/`]({out.with_suffix('').name}/runs/)",
    ]
    return "\n".join(md) + "\n"


def gap_p_cell(rec: dict, key: str) -> str:
    """The gap to the baseline and its p, one comparison: "BLEU -0.53, p 0.001 (3 and 3 seeds)"."""
    seeds = (
        f" ({len(rec['system'])} and {len(rec['baseline'])} seeds)"
        if len(rec["system"]) + len(rec["baseline"]) > 2
        else ""
    )
    return f"{PRIMARY.get(key, key)} {rec['delta']:+.2f}, p {rec['p_value']:.3f}{seeds}"


def choice_table(exp: Experiment, by_name: Dict[str, ModelResult]) -> List[str]:
    """The recipe rule (``claims.choose_in_order``) applied to the file's ``choose`` list, step
    by step, on the table's own validation scores (the mean over a candidate's seeds); it
    waits at the first candidate with no finished run, since each step reads the choice
    before it."""
    if not exp.choose:
        return []
    first = by_name[exp.choose[0]].model
    key, floor = claim_metric(first), first.score.noise_floor
    metric = f"{first.generate.subset} {PRIMARY.get(key, key)}"
    scored = []
    for name in exp.choose:
        values = [v for v in seed_scores(by_name[name], key).values() if v is not None]
        if not values:
            break
        scored.append((name, statistics.mean(values), len(values)))
    head = [f"### Chosen by the rule, on {metric}", ""]
    if not scored:
        return head + [f"The rule waits for `{exp.choose[0]}` (no finished run).", ""]
    choice, steps = claims.choose_in_order([(n, v) for n, v, _ in scored], floor)
    lines = head + [
        f"| in order | {metric} | seeds | against the choice so far | gain | the choice after it |",
        "|---|---:|---:|---|---:|---|",
    ]
    for step, (_, _, n) in zip(steps, scored):
        if step.against is None:
            lines.append(f"| `{step.candidate}` | {step.score:.2f} | {n} | – | – | `{step.candidate}`: the first |")
            continue
        after = (
            f"`{step.candidate}`: gains more than {floor:g}"
            if step.taken
            else f"`{step.against}`: `{step.candidate}` gains {floor:g} or less"
        )
        lines.append(f"| `{step.candidate}` | {step.score:.2f} | {n} | `{step.against}` | {step.gain:+.2f} | {after} |")
    rule = (
        f"In the file's order (`choose`), a later candidate replaces the choice only when its {metric} "
        f"beats the choice's by more than the rerun floor, {floor:g} (`mixer_plugin/experiments/claims.py`; "
        "docs/leaderboard.md, \"Recipe\")."
    )
    if len(scored) < len(exp.choose):
        waiting = f"The rule waits for `{exp.choose[len(scored)]}` (no finished run): the choice so far is `{choice}`."
        return lines + ["", f"{waiting} {rule}", ""]
    return lines + ["", f"**Chosen: `{choice}`.** {rule}", ""]


def seeds_rule_table(
    results: List[ModelResult], base_r: Optional[ModelResult], chosen: Selection, baselines: Sequence[str] = ()
) -> List[str]:
    """Which rows the seeds rule (``claims.wants_more_seeds``) gives seeds 2 and 3, read on the
    validation set: each trained row's first seed at its peak against the mean of the
    baseline's seeds there.  Until the baseline has several seeds the rule has no spread to
    read, and the table says it waits.  Not for an experiment whose baseline lists one seed
    (a recipe's screen): the rule is the seeds of a table of claims.  A row in ``baselines``
    (the hard rows' pre-norm transformer) keeps the seeds it lists whatever its gap, since
    other rows' claims read its spread: its cell says so rather than the rule's count."""
    if base_r is None or len(base_r.model.seeds) < 2:
        return []
    name = chosen.metric
    base_peaks = [p.value for p in (peak(log, chosen) for log in base_r.logs) if p is not None]
    rows = [r for r in results if r is not base_r and not r.model.decode_of and first_run(r) is not None]
    if not rows:
        return []
    # named by its baseline: a table with two baselines (the hard rows' pre-norm one) has two
    head = [f"### Seeds by the rule against `{base_r.model.name}`, on valid {PRIMARY.get(name, name)} at the peak", ""]
    if len(base_peaks) < 2:
        return head + [
            f"The rule waits for `{base_r.model.name}`'s seeds ({len(base_peaks)} of {len(base_r.model.seeds)} "
            "finished): its spread sets the margin.",
            "",
        ]
    floor = base_r.model.score.noise_floor or 0.0
    mean = statistics.mean(base_peaks)
    out = head + [
        f"| row | first seed | gap to `{base_r.model.name}` ({mean:.2f}, {len(base_peaks)} seeds) | margin | "
        "seeds by the rule | seeds listed |",
        "|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        each = [peak(log, chosen) for log in r.logs]
        first = each[first_run(r)]
        if first is None:
            continue
        peaks = [p.value for p in each if p is not None]
        spreads = [statistics.stdev(v) for v in (base_peaks, peaks) if len(v) > 1]
        gap = first.value - mean
        more = claims.wants_more_seeds(gap, spreads, floor)
        by_rule = "3: within the margin" if more else "1: beyond the margin"
        if r.model.name in baselines:  # docs/leaderboard.md, amendment 2
            by_rule += f"; {len(r.model.seeds)} as a baseline"
        out.append(
            f"| `{r.model.name}` | {first.value:.2f} | {gap:+.2f} | {claims.seeds_margin(spreads, floor):.2f} | "
            f"{by_rule} | {', '.join(map(str, r.model.seeds))} |"
        )
    return out + [
        "",
        "Margin: the larger of twice the larger seed standard deviation and the rerun floor "
        f"({floor:g}); a first seed within it could be the baseline's equal by one seed's luck "
        "(`mixer_plugin/experiments/claims.py`, docs/leaderboard.md, \"Seeds\").",
        "",
    ]


def seed_pairs_table(results: List[ModelResult], base_r: Optional[ModelResult]) -> List[str]:
    """Every seed of the rows with several against the baseline's run of the same seed: the
    main table compares the means, which can hide a gap that one seed makes.  A row with one seed is here
    too when that seed is not the baseline's first (a decode of its seed 2 alone): the main
    table's p pairs it with another training."""
    if base_r is None:
        return []
    j = first_run(base_r)
    first = base_r.runs[j].name if j is not None else None
    rows = [r for r in results if set(r.extra.get("seed_pairs", {})) - {first}]  # a pair besides the first seeds'
    if not rows:
        return []
    key = claim_metric(base_r.model)
    name = PRIMARY[key]
    base_score = seed_scores(base_r, key)
    lines = [
        f"Seed by seed against `{base_r.model.name}` (each seed's paired bootstrap against the "
        f"baseline's run of the same seed; the table above and the claims compare the means, "
        "every seed in one test):",
        "",
        f"| model | seed | {name} | `{base_r.model.name}` | Δ | p |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        score = seed_scores(r, key)
        for seed, boot in r.extra["seed_pairs"].items():
            if seed not in base_score:  # a row whose first seed the baseline does not have
                continue
            lines.append(
                f"| `{r.model.name}` | {seed.removeprefix('seed')} | "
                + gap_cells(score[seed], base_score[seed], boot, key)
            )
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
    lines = [
        f"`{base_r.model.name}` against its own first seed (one recipe, another seed: the gap a "
        "paired bootstrap finds between runs that differ only in their seed):",
        "",
        f"| seed | {PRIMARY[key]} | seed {first.removeprefix('seed')} | Δ | p |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {seed.removeprefix('seed')} | " + gap_cells(score[seed], score[first], boot, key)
        for seed, boot in pairs.items()
    ]
    return lines + [""]


def by_source_table(results: List[ModelResult]) -> List[str]:
    """BLEU per test source, each row's first seed (the first it lists, as the p-values:
    while that run is missing, another seed would stand in under its name)."""
    firsts = {id(r): r.scores[first_run(r)] for r in results if first_run(r) is not None}
    sources = list(dict.fromkeys(s for sc in firsts.values() for s in sc.get("by_source", {})))
    if not sources:
        return []
    counts = next(sc["by_source"] for sc in firsts.values() if sc.get("by_source"))
    lines = [
        "Test BLEU per source (first seed; lines per source in the header):",
        "",
        "| model | " + " | ".join(f"{s} ({counts[s]['lines']})" for s in sources) + " |",
        "|---|" + "---:|" * len(sources),
    ]
    for r in results:
        bs = firsts.get(id(r), {}).get("by_source", {})
        lines.append(
            f"| `{r.model.name}` | "
            + " | ".join(f"{bs[s]['bleu']:.2f}" if s in bs and "bleu" in bs[s] else "–" for s in sources)
            + " |"
        )
    return lines + [""]


def commands(exp: Experiment, results: List[ModelResult]) -> List[str]:
    """The stock commands of the first seed of every model, as they ran."""
    md = [
        "## Commands",
        "",
        f"Everything above: `mixer-run {shown(exp.path)}` (each stage below is one of its "
        "commands; any of them can be run by hand).",
        "",
    ]
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
        # as the run's record has them: a run restored from another machine (a GPU's, whose
        # commands have no --cpu) ran those, not the ones this machine would
        ran = r.records[0].get("stages", {}) if r.records else {}
        md += ["", f"### `{r.model.name}`" + (f" ({r.model.note})" if r.model.note else ""), ""]
        for stage in ([trained] if trained else []) + stages:
            recorded = ran.get(stage.name, {}).get("commands") if stage is not trained else None
            for argv in [placed_in(r.runs[0], a) for a in recorded] if recorded else stage.commands:
                md.append(f"- {stage.name}: `{shell(argv)}`")
        if "pooled_command" in r.extra:
            md.append(f"- Δ and p against the baseline: `{r.extra['pooled_command']}`")
    return md


def print_samples(exp: Experiment, n: int) -> None:
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
