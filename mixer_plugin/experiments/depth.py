"""The depth question of versions 3 and 4 on the pages: each row of the 6+6 table beside its row in the 2+2
table (the deeper file's ``beside:``), as the protocol page's table of both settings and its figure of
each row's gap to its baseline at both, read from the committed records (``archive.kept_record``)
and the verdicts each report kept (``verdicts.VERDICTS``).

The figure is an SVG drawn here, the whole of its file a generated block (``readme.PAGES``), so
``readme --check`` finds it stale as it finds a stale table: a figure in the docs cannot drift
from the records.  matplotlib is not used for it, since its SVG changes with its version and
its fonts, which would make the check fail on a machine that changed nothing.

A row's gap is its seed mean minus its baseline's (``score.baseline``), on the claim metric:
the Δ of the results table's one comparison (``bootstraps.pooled``), whose p the verdicts
carry (``tests/test_depth.py`` holds the two to the records' rounding)."""

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple
from xml.sax.saxutils import escape

from ..paths import CHECKOUT
from . import claims
from .archive import kept_records, results_path
from .collect import PRIMARY, peak, selection
from .pilot import validation_every
from .spec import Claim, Experiment, Model
from .spec_loader import load
from .table import mean_sd, waiting
from .verdicts import claim_metric, kept_verdicts, verdict_cell

# each depth study's deeper file and its figure, an SVG whose whole is the one block named here
# (``readme``): version 3's at d=256 and version 4's at the width its pilot chose
STUDIES = {
    "gap_by_depth": (CHECKOUT / "experiments" / "leaderboard_v3_deep.yaml", CHECKOUT / "docs" / "gap_by_depth.svg"),
    "gap_by_depth_v4": (
        CHECKOUT / "experiments" / "leaderboard_v4_deep.yaml",
        CHECKOUT / "docs" / "gap_by_depth_v4.svg",
    ),
}
DEEP, FIGURE = STUDIES["gap_by_depth"]


@dataclass(frozen=True)
class Side:
    """One row in one table: its model there (None: not a row of that table), its finished
    seeds' scores on the claim metric, its gap to its baseline (None: it is the baseline, or
    either has no finished run) and the verdicts that table's report kept for its claims."""

    exp: Experiment
    model: Optional[Model]
    scores: List[float]
    gap: Optional[float]
    verdicts: Dict[str, dict]
    is_baseline: bool = False  # another row's baseline, or a row with none


def sides(exp: Experiment) -> Dict[str, Side]:
    """model -> its ``Side`` in ``exp``, the rows that decode another's training too."""
    done = kept_records(exp)
    kept = kept_verdicts(results_path(exp))
    scores = {name: [r.scores[claim_metric(exp.models[name])] for r in recs] for name, recs in done.items()}
    baselines = {m.score.baseline for m in exp.models.values()}
    out = {}
    for m in exp.models.values():
        own, base = scores.get(m.name, []), scores.get(m.score.baseline or m.name, [])
        is_baseline = m.name in baselines or m.score.baseline in (None, m.name)
        gap = statistics.mean(own) - statistics.mean(base) if own and base and m.score.baseline != m.name else None
        out[m.name] = Side(exp, m, own, None if is_baseline else gap, kept.get(m.name, {}), is_baseline)
    return out


def pairs(deep: Experiment) -> List[Tuple[Side, Side]]:
    """(its side in the shallower table, its side in ``deep``) of every row of either: the
    shallower file's rows in its order, then the rows only ``deep`` has.  A row stands beside
    its namesake, or the row ``beside.rows`` names for it."""
    if deep.beside is None:
        raise SystemExit(f"depth: {deep.path.name} names no file it is read beside (beside:)")
    shallow = load(deep.path.parent / deep.beside.path)
    partner = {m: deep.beside.rows.get(m, m) for m in deep.models}
    unknown = sorted(theirs for theirs in deep.beside.rows.values() if theirs not in shallow.models)
    if unknown:
        raise SystemExit(f"depth: {deep.path.name}: beside.rows names {unknown[0]!r}, no row of {shallow.path.name}")
    trained = lambda exp: {n: s for n, s in sides(exp).items() if not s.model.decode_of}  # noqa: E731
    mine, theirs = trained(deep), trained(shallow)
    here = {partner[name]: side for name, side in mine.items()}
    absent = lambda exp: Side(exp, None, [], None, {})  # noqa: E731
    out = [(side, here.get(name, absent(deep))) for name, side in theirs.items()]
    return out + [(absent(shallow), side) for name, side in mine.items() if partner[name] not in theirs]


def label(a: Side, b: Side) -> str:
    """A row's name, both where the two tables name it differently."""
    names = list(dict.fromkeys(s.model.name for s in (a, b) if s.model is not None))
    return " · ".join(names)


def score_cell(s: Side) -> str:
    if s.model is None:
        return ""  # not a row of that table
    if not s.scores:
        return "–"
    return mean_sd(s.scores) + (f" ({len(s.scores)} seeds)" if len(s.scores) > 1 else "")


def verdict_cells(s: Side, cell: Callable[[Claim, Optional[dict]], str] = lambda c, v: verdict_cell(v)) -> str:
    """Each claim's kept verdict as ``cell`` says it (default: with the gap and p of its one
    comparison, or "–" while it waits), "baseline" or "no claim"."""
    if s.model is None:
        return ""
    if s.is_baseline:
        return "baseline"
    if not s.model.claims:
        return "no claim"
    cells = [(str(c), cell(c, s.verdicts.get(str(c)))) for c in s.model.claims]
    if len(cells) == 1:
        return cells[0][1]
    return "; ".join(f"{claim}: {cell}" for claim, cell in cells)


def side_by_side(deep_path: Path = DEEP) -> str:
    """The two-depth table (docs/leaderboard.md, version 3): every row at both settings, its test
    score over its finished seeds and each claim's verdict there, then the rows and seeds of each
    table not finished yet."""
    deep = load(deep_path)
    rows = pairs(deep)
    a, b = rows[0][0].exp, rows[0][1].exp
    metric = metric_name(next(iter(a.models.values())))
    at_a, at_b = (f"{exp.setting or exp.name}: {metric}" for exp in (a, b))
    lines = [
        f"| row | the paper's claim | {at_a} | verdict | {at_b} | verdict |",
        "|---|---|---:|---|---:|---|",
    ]
    for x, y in rows:
        claims = ", ".join(dict.fromkeys(str(c) for s in (x, y) if s.model is not None for c in s.model.claims))
        cells = [f"`{label(x, y)}`".replace(" · ", "` · `"), claims]
        cells += [score_cell(x), verdict_cells(x), score_cell(y), verdict_cells(y)]
        lines.append("| " + " | ".join(cells) + " |")
    finished = [{s.model.name: len(s.scores) for s in side if s.model is not None} for side in zip(*rows)]
    below = ["Blank: not a row of that table."]
    below += [line for line in map(waiting_line, (a, b), finished) if line]
    return "\n".join([*lines, "", " ".join(below)]) + "\n"


def landing(deep_path: Path, svg: Path) -> str:
    """A depth study on the landing page: its two-depth table and its figure (``svg``, in
    docs/) once a run has finished, else one line naming the run that comes first (the
    shallower file's first row)."""
    deep = load(deep_path)
    shallow = load(deep.path.parent / deep.beside.path)
    if not any(kept_records(exp) for exp in (shallow, deep)):
        first = next(iter(shallow.models.values()))
        return (
            f"No run has finished yet; the first is `mixer-run experiments/{shallow.path.name} "
            f"--only {first.name} --seeds {first.seeds[0]}`.\n"
        )
    return side_by_side(deep_path) + f"\n![Each row's gap to its baseline at both depths](docs/{svg.name})\n"


def moved_lines(deep_path: Path) -> str:
    """What moved with depth (docs/leaderboard.md, version 4, its rule fixed before its first
    run): a line for each row with a gap at both depths, the change of that gap judged by
    ``claims.gap_change_test`` over the four rows' seeds, each depth's sentences from the
    verdict its report kept for the claim against the baseline; an indication with its sign
    where a row has fewer than ``claims.MIN_SEEDS`` or a kept verdict no bootstrap's sd."""
    rows = pairs(load(deep_path))
    named = {(s.exp.name, s.model.name): s for pair in rows for s in pair if s.model is not None}
    lines, waits = [], []
    for x, y in rows:
        if x.model is None or y.model is None or y.is_baseline:
            continue
        if x.gap is None or y.gap is None:
            waits.append(label(x, y))
            continue
        base = y.model.score.baseline
        bx, by = named[x.exp.name, base], named[y.exp.name, base]
        sds = [against(s, base).get("sentence_sd") for s in (y, x)]
        test = None if None in sds else claims.gap_change_test(y.scores, by.scores, x.scores, bx.scores, tuple(sds))
        change = y.gap - x.gap
        way = f"{'gained on' if change > 0 else 'lost ground to'} `{base}`"
        metric = metric_name(y.model)
        head = (
            f"- `{label(x, y)}`: {metric} gap {x.gap:+.2f} at {setting_of(x.exp)}, "
            f"{y.gap:+.2f} at {setting_of(y.exp)}; change {change:+.2f}"
        )
        # the seeds of the row and of its baseline at each depth
        counted = "seeds " + ", ".join(
            f"{len(a.scores)} and {len(b.scores)} at {setting_of(a.exp)}" for a, b in [(x, bx), (y, by)]
        )
        if test is None:
            needs = f"a reading needs {claims.MIN_SEEDS} of each"
            lines.append(f"{head}: indication, it {way} with depth ({counted}; {needs}).")
        elif test.p < claims.ALPHA:
            lines.append(f"{head}: **moved with depth**, it {way} (p {test.p:.3f}; {counted}).")
        elif test.p_equal < claims.ALPHA:
            lines.append(f"{head}: **did not move** (equivalence p {test.p_equal:.3f}; {counted}).")
        else:
            lines.append(f"{head}: inconclusive (p {test.p:.3f}, equivalence p {test.p_equal:.3f}; {counted}).")
    if not lines:
        lines.append("No row has its gap at both depths yet.")
    if waits:
        lines.append(f"\nWaiting for a gap at both depths: {', '.join(f'`{w}`' for w in waits)}.")
    return "\n".join(lines) + "\n"


def improving_lines(deep_path: Path) -> str:
    """Which finished runs of an equal-budget study were still improving at the budget, read by
    version 3's stopping rule (docs/leaderboard.md, version 4, "Budget"): a better validation
    within the rule's stretch (its patience times its validation interval) before the last
    update.  One line for each kind, runs named by row, seed and depth."""
    v3 = load(STUDIES["gap_by_depth"][0])
    rule_of = next(iter(v3.models.values()))
    stretch = selection(v3, rule_of).patience * validation_every(v3, rule_of.name)
    deep = load(deep_path)
    found: Dict[bool, List[str]] = {True: [], False: []}
    for exp in (load(deep.path.parent / deep.beside.path), deep):
        for name, records in kept_records(exp).items():
            for r in records:
                top = peak(r, selection(exp, exp.models[name]))
                if top is not None:
                    said = (
                        f"`{name}` seed {r.seed} at {setting_of(exp)} (best {top.value:.2f} at update {top.update:,})"
                    )
                    found[r.last_update - top.update < stretch].append(said)
    if not any(found.values()):
        return "No run has finished yet.\n"
    return (
        f"Still improving at the budget by version 3's rule (a better valid BLEU within the last {stretch:,} "
        f"updates): {', '.join(found[True]) or 'none'}. Not improving: {', '.join(found[False]) or 'none'}.\n"
    )


def against(s: Side, base: str) -> dict:
    """The kept verdict of a row's claim against ``base``, {} where it has none."""
    return next((v for c, v in s.verdicts.items() if c.split(" ")[-1] == base), {})


def setting_of(exp: Experiment) -> str:
    """A table's depth as the lines say it ("2+2"), from its setting, else its name."""
    return exp.setting.split(" ")[0] if exp.setting else exp.name


def metric_name(m: Model) -> str:
    key = claim_metric(m)
    return PRIMARY.get(key, key)


def waiting_line(exp: Experiment, finished: Dict[str, int]) -> str:
    left = waiting(exp, finished)
    return f"Not finished yet at {exp.setting or exp.name}: {', '.join(left)}." if left else ""


# the figure's geometry, in pixels; the label and status columns are as wide as their longest
# text, at about _CHAR pixels a character of the 12-pixel sans-serif
_PLOT, _ROW, _TOP, _BOTTOM, _CHAR = 360, 26, 64, 44, 7
_COLOURS = ("#1f77b4", "#d62728")  # the shallower table's marker, the deeper's


def figure(deep_path: Path = DEEP) -> str:
    """The gap-by-depth figure as SVG: for each row of the deeper table that has a baseline,
    its gap at each setting (a circle, a diamond), joined where both are finished, over the
    band of the rerun floor; at the right, the settings where it has not finished yet."""
    deep = load(deep_path)
    rows = [(x, y) for x, y in pairs(deep) if y.model is not None and not y.is_baseline]
    a, b = rows[0][0].exp, rows[0][1].exp
    floor = max(s.model.score.noise_floor for pair in rows for s in pair if s.model is not None)
    gaps = [s.gap for pair in rows for s in pair if s.gap is not None]
    lo, hi = math.floor(min([-1.0, -floor, *gaps])), math.ceil(max([1.0, floor, *gaps]))
    usual = Counter(y.model.score.baseline for _, y in rows).most_common(1)[0][0]
    names = [
        label(x, y) + ("" if y.model.score.baseline == usual else f" (vs {y.model.score.baseline})") for x, y in rows
    ]
    said = [waiting_for(x, y) for x, y in rows]
    labels = 10 + _CHAR * max(map(len, names))
    x0 = labels + 10
    width = x0 + _PLOT + 12 + _CHAR * max(map(len, said)) + 10
    at = lambda v: x0 + (v - lo) / (hi - lo) * _PLOT  # noqa: E731
    height = _TOP + _ROW * len(rows) + _BOTTOM
    bottom = _TOP + _ROW * len(rows)
    metric = metric_name(rows[0][1].model)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{x0}" y="18" font-size="14">Each row\'s gap to its baseline: test {metric}, seed means</text>',
    ]
    lx = x0
    for i, (exp, shape) in enumerate(((a, "circle"), (b, "diamond"))):
        name = exp.setting or exp.name
        out.append(marker(shape, lx, 40, _COLOURS[i]))
        out.append(f'<text x="{lx + 10}" y="44">{escape(name)}</text>')
        lx += 10 + _CHAR * len(name) + 24
    out.append(
        f'<rect x="{at(-floor):.1f}" y="{_TOP - 6}" width="{at(floor) - at(-floor):.1f}" '
        f'height="{bottom - _TOP + 6}" fill="#eeeeee"/>'
    )
    for t in range(lo, hi + 1):
        out.append(
            f'<line x1="{at(t):.1f}" y1="{_TOP - 6}" x2="{at(t):.1f}" y2="{bottom}" '
            f'stroke="{"#555555" if t == 0 else "#dddddd"}" stroke-width="1"/>'
        )
        tick = f"{t:+d}" if t else "0"
        out.append(f'<text x="{at(t):.1f}" y="{bottom + 16}" text-anchor="middle">{tick}</text>')
    out.append(
        f'<text x="{at((lo + hi) / 2):.1f}" y="{bottom + 34}" text-anchor="middle">'
        f"{metric} gap (grey band: the rerun floor, ±{floor:.2f})</text>"
    )
    for k, (x, y) in enumerate(rows):
        cy = _TOP + _ROW * k + _ROW / 2
        out.append(f'<text x="{labels}" y="{cy + 4:.1f}" text-anchor="end">{escape(names[k])}</text>')
        if x.gap is not None and y.gap is not None:
            out.append(
                f'<line x1="{at(x.gap):.1f}" y1="{cy:.1f}" x2="{at(y.gap):.1f}" y2="{cy:.1f}" '
                'stroke="#888888" stroke-width="2"/>'
            )
        for i, (s, shape) in enumerate(((x, "circle"), (y, "diamond"))):
            if s.gap is not None:
                out.append(marker(shape, at(s.gap), cy, _COLOURS[i]))
        if said[k]:
            out.append(f'<text x="{x0 + _PLOT + 12}" y="{cy + 4:.1f}" fill="#777777">{escape(said[k])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def waiting_for(x: Side, y: Side) -> str:
    """What a row's points wait for, said at the figure's right ("" once both are drawn)."""
    runs = [setting_of(s.exp) for s in (x, y) if s.model is not None and not s.scores]
    base = [setting_of(s.exp) for s in (x, y) if s.scores and s.gap is None]
    said = [f"not finished at {', '.join(runs)}"] if runs else []
    said += [f"at {', '.join(base)}, its baseline not finished"] if base else []
    return "; ".join(said)


def marker(shape: str, x: float, y: float, colour: str) -> str:
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colour}"/>'
    points = " ".join(f"{x + dx:.1f},{y + dy:.1f}" for dx, dy in ((0, -6), (6, 0), (0, 6), (-6, 0)))
    return f'<polygon points="{points}" fill="{colour}"/>'
