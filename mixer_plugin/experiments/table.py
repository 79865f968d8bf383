"""A results file's main table, built as data and then rendered: a list of ``Columns``, each a
group of adjacent columns with its headers and the function that gives a row's cells, chosen
by what the experiment has (``Shape``: a stopping rule gives the peak's columns, summaries the
distinct outputs, baselines the gap and its p, claims the verdicts); ``render`` writes any
such list as markdown, one line per row."""

import statistics
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from . import claims
from .argv import flag_value
from .collect import (
    PRIMARY,
    ModelResult,
    Selection,
    bench_speeds,
    keys,
    peak,
    seed_stats,
    selection,
    summarizes,
    train_flags,
)
from .paper_refs import paper_figures
from .record import RunRecord
from .spec import Experiment, Model
from .verdicts import claim_cells, claim_metric


@dataclass
class Columns:
    """Adjacent columns of the table: their headers, and one row's cells (as many)."""

    headers: List[str]
    cells: Callable[[ModelResult], List[str]]


@dataclass
class Shape:
    """What an experiment's rows have, which decides the table's columns and its notes."""

    metrics: List[str]  # the score keys of the first row (``collect.keys``)
    selected: Dict[str, Optional[Selection]]  # row -> its stopping rule's selection, if it has one
    chooser: Optional[Selection]  # the first row's selection: the peak's columns
    summary: bool  # summarization: the distinct outputs
    baselines: List[str]  # the rows others are compared with, in order
    base: Optional[str]  # the one baseline that names the gap's column, when there is one
    with_claims: bool  # a row states a paper's claim
    speeds: Dict[str, dict]  # the benchmarks the experiment names (``collect.bench_speeds``)


def shape(exp: Experiment, results: List[ModelResult]) -> Shape:
    first = results[0].model
    selected = {r.model.name: selection(exp, r.model) for r in results}
    baselines = list(dict.fromkeys(r.model.score.baseline for r in results if r.model.score.baseline))
    return Shape(
        metrics=keys(exp, first),
        selected=selected,
        chooser=next((s for s in selected.values() if s), None),
        summary=summarizes(first),
        baselines=baselines,
        # one baseline names the column; rows with baselines of their own (interacting_heads'
        # 16-head rows against 16-head MHA) name theirs in the cell
        base=baselines[0] if len(baselines) == 1 else None,
        with_claims=any(r.model.claims for r in results),
        speeds=bench_speeds(exp),
    )


def columns(exp: Experiment, s: Shape) -> List[Columns]:
    """The main table's columns, in order."""

    def valid_loss(r: ModelResult) -> List[str]:
        valid = [p for p in r.first.valid if "loss" in p] if r.first else []
        return [f"{valid[-1]['loss']:.3f}" if valid else "–"]

    cols = [
        Columns(["model"], lambda r: [f"`{r.model.name}`"]),
        Columns(["params"], lambda r: [f"{r.first.params:,}" if r.first and r.first.params else "–"]),
        Columns(["updates"], lambda r: [f"{r.first.last_update:,}" if r.first else "–"]),
        Columns(["seeds"], lambda r: [str(len(r.runs))]),
        Columns(["valid loss"], valid_loss),
    ]
    if s.chooser:  # trained until validation stopped improving: where each seed peaked, and when
        cols.append(
            Columns(
                ["peak update", f"valid {PRIMARY.get(s.chooser.metric, s.chooser.metric)} at peak", "hours to peak"],
                lambda r: peak_cells(r.records, s.selected[r.model.name], cap(exp, r.model)),
            )
        )
    cols.append(Columns([PRIMARY[k] for k in s.metrics], lambda r: [fmt_score(r, k) for k in s.metrics]))
    if s.summary:
        cols.append(Columns(["distinct outputs"], lambda r: [distinct_cell(r)]))
    if s.baselines and exp.kind != "classification":
        header = f"Δ, p vs {s.base}" if s.base else "Δ, p vs the row's baseline"
        cols.append(Columns([header], lambda r: [gap_cell(r, s)]))
    speed_heads = ["train words/s (x)", "decode sent/s (x)"] if exp.speed else ["train wps", "decode sent/s"]
    cols.append(Columns(speed_heads, lambda r: speed_cells(r, s.speeds, exp)))
    cols.append(Columns(["paper"], lambda r: [paper_cell(r.model)]))
    if s.with_claims:
        cols.append(Columns(["the paper's claim: this run"], lambda r: [claim_cells(r) if r.runs else ""]))
    return cols


def render(cols: List[Columns], rows: List[Any]) -> List[str]:
    """The markdown table: the headers, the rule, one line per row."""
    head = [h for c in cols for h in c.headers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [cell for c in cols for cell in c.cells(r)]
        assert len(cells) == len(head), (head, cells)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def gap_cell(r: ModelResult, s: Shape) -> str:
    """The row's gap to its baseline and that gap's p, "baseline" for a baseline, "–" before both have runs."""
    own = r.model.score.baseline
    if own == r.model.name or (own is None and r.model.name in s.baselines):
        return "baseline"
    p = gap_p_cell(r.extra["pooled"], claim_metric(r.model)) if "pooled" in r.extra else ""
    if not p:
        return "–"
    return p if s.base else f"{p} vs `{own}`"


def distinct_cell(r: ModelResult) -> str:
    """Distinct hypotheses of the first seed, of all: 14 of 1,930 is a summarizer that
    writes the same synopses whatever the description says."""
    return f"{r.distinct[0][0]:,} of {r.distinct[0][1]:,}" if r.distinct else "–"


def mean_sd(values: List[float], digits: int = 2) -> str:
    """One seed: its score; several: mean ± sample standard deviation."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def waiting(exp: Experiment, finished: Dict[str, int]) -> List[str]:
    """The rows of ``exp`` with seeds not finished (``finished``: model -> how many of its seeds
    have, the first ones of the file's seed order), each with those seeds where it has several."""
    out = []
    for m in exp.models.values():
        left = m.seeds[finished.get(m.name, 0) :]
        if left and not m.decode_of:
            seeds = f" (seed{'s' if len(left) > 1 else ''} {', '.join(map(str, left))})"
            out.append(f"`{m.name}`" + (seeds if len(m.seeds) > 1 else ""))
    return out


def fmt_score(r: ModelResult, key: str) -> str:
    st = seed_stats(r, key)
    if st is None:
        return "–"
    mean, std, _ = st
    return f"{mean:.2f}" if std is None else f"{mean:.2f} ± {std:.2f}"


def peak_cells(records: List[RunRecord], chosen: Optional[Selection], cap: Optional[int]) -> List[str]:
    """Peak update, the validation metric there and the hours of training to it, each seed's
    (``a / b / c``), from the seeds' records.  A run that trained to the cap
    (``--max-update``) did not stop by its own rule, so its peak is marked: it may not have
    converged."""
    peaks = [peak(r, chosen) for r in records] if chosen else []
    if not any(peaks):
        return ["–"] * 3
    capped = [
        cap is not None and p is not None and p.stopped is None and r.last_update >= cap for p, r in zip(peaks, records)
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
    the paper's module: ``paper_refs.paper_figures``)."""
    figures = [f for ref in m.paper_rows for f in paper_figures(ref)]
    return m.paper + (f" ({'; '.join(figures)})" if figures else "")


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


def gap_p_cell(rec: dict, key: str) -> str:
    """The gap to the baseline and its p, one comparison (``claims.seed_test``, which counts the
    seeds and the test sentences): "BLEU -0.53, p 0.210 (3 and 3 seeds)", or without a p where a
    side has fewer seeds than the test needs: "BLEU -1.73 (1 and 3 seeds: no p)"."""
    a, b = len(rec["system"]), len(rec["baseline"])
    test = claims.seed_test(rec["system"], rec["baseline"], rec["sentence_sd"])
    gap = f"{PRIMARY.get(key, key)} {rec['delta']:+.2f}"
    return f"{gap}, p {test.p:.3f} ({a} and {b} seeds)" if test else f"{gap} ({a} and {b} seeds: no p)"
