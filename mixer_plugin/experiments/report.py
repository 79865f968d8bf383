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
import time
from pathlib import Path
from typing import Dict, List, Optional

from ..data.workspace import data_root
from ..files import atomic_path
from ..paths import shown
from . import claims
from .archive import keep_run_outputs, kept_folders, results_path
from .argv import placed_in, shell
from .bootstraps import run_bootstraps
from .collect import PRIMARY, ModelResult, collect, keys
from .commands import prep_manifest
from .plots import make_plots
from .seed_tables import by_source_table, choice_table, own_seeds_table, seed_pairs_table, seeds_rule_table
from .spec import Experiment
from .stages import prepare_stage, run_stages
from .table import columns, fmt_score, render, shape
from .verdicts import VERDICTS, claim_metric, verdicts, verdicts_beside

STAMP = "- rebuilt: "


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
    s = shape(exp, results)
    md = [f"# {exp.title}", ""]
    if exp.description:
        md += [exp.description, ""]
    by_name = {r.model.name: r for r in results}
    md += render(columns(exp, s), results)
    md.append("")
    md += choice_table(exp, by_name)
    for name in s.baselines:
        md += seed_pairs_table([r for r in results if r.model.score.baseline == name], by_name[name])
        md += own_seeds_table(by_name[name])
        if s.chooser:
            md += seeds_rule_table(
                [r for r in results if r.model.score.baseline == name], by_name[name], s.chooser, s.baselines
            )
    md += verdicts_beside(exp, judged, out)
    md += by_source_table(results)
    sig = next((s.get("bleu_signature") for r in results for s in r.scores if s.get("bleu_signature")), None)
    notes = (
        [
            "- seeds: mean ± sample standard deviation over the seeds listed; Δ, p: the gap between the row's "
            "mean and its baseline's, and its p from one test that counts both noises, the seeds and the test "
            f"sentences (Welch's t over the seed means, the sentences' variance from a paired bootstrap, "
            f"`mixer_plugin/experiments/claims.py`); no p where a side has fewer than {claims.MIN_SEEDS} seeds"
        ]
        if s.baselines
        else []
    )
    if s.with_claims:
        notes.append(
            "- the paper's claims"
            + (f", judged at {exp.setting} and holding there only" if exp.setting else "")
            + f", on {PRIMARY[claim_metric(first)]}, with {claims.MIN_SEEDS} or more seeds a side: > and < are "
            f"confirmed when that test gives p < {claims.ALPHA} in the claimed direction, refuted when it does "
            "the other way, else inconclusive; ≈ is confirmed only by an equivalence test (two one-sided tests, "
            f"margin ±{claims.EQUAL_MARGIN:g} point), refuted when not equivalent and p < {claims.ALPHA}, else "
            f"inconclusive. With fewer seeds a claim is an indication with its sign, not a verdict; a claim the "
            "paper made on another task is reported, not judged; seed pairs: the sign of each pair's gap (the "
            "same seed where both rows have several, else the one seed against each of the other's)"
        )
    if s.summary:
        notes.append(
            "- distinct outputs: how many of the first seed's summaries differ from one another; a model "
            "that has not learned to read its source writes the same few for every input"
        )
    if s.chooser:
        notes.append(
            f"- peak update: the last validation with the best valid {PRIMARY.get(s.chooser.metric, s.chooser.metric)} "
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
    carried = [f"`{rec.model}` seed {rec.seed}" for r in results for rec in r.records if rec.experiment != exp.name]
    if carried:
        notes.append(
            f"- carried over from `{exp.carries.path}` (their own stopping rule ended them before its cap, so this "
            f"file's larger cap gives the same runs; its commands and decode are theirs): {', '.join(carried)}"
        )
    if sig:
        notes.append(f"- BLEU signature: `{sig}`")
    notes += speed_notes(exp, s.speeds, out)
    md += notes + [""]
    if plots:
        md += ["## Plots", ""] + [f"![{p.stem}]({p.relative_to(out.parent)})" for p in plots] + [""]
    md += commands(exp, results)
    md += [
        "",
        f"{STAMP}{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `mixer-run {shown(exp.path)}`; "
        + kept_at(exp, results, out),
    ]
    return "\n".join(md) + "\n"


def kept_at(exp: Experiment, results: List[ModelResult], out: Path) -> str:
    """Where the records the page reads are committed (``archive.kept_folders``), linked from the
    page ``out``."""
    records = [rec for r in results for rec in r.records]
    links = [Path(os.path.relpath(f, out.parent)).as_posix() for f in kept_folders(exp, records)]
    if not links:
        return "no run's record is committed yet"
    return "each run's record (scores, curves, speeds, commands) and hypotheses: " + ", ".join(
        f"[`{link}/`]({link}/)" for link in links
    )


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
        ran = r.first.stages if r.first else {}
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
