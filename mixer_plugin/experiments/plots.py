"""A results file's plots: every seed's learning curves with each run's peak marked, and the
score against speed (the speed-ups of the benchmarks the experiment names, else the runs' own
training words/s), one style per row in both."""

from pathlib import Path
from typing import Dict, List, Tuple

from .collect import PRIMARY, ModelResult, bench_speeds, peak, seed_stats, selection
from .spec import Experiment
from .verdicts import claim_metric


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
            for i, (run, record) in enumerate(zip(r.runs, r.records)):
                valid = [p for p in record.valid if key in p]
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
                if chosen and key == chosen.metric and (top := peak(record, chosen)):
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
