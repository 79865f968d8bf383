"""The README's numbers, and the docs pages' that show a table, generated from the committed
run records (``results/<name>/runs/``, ``collect.run_record``), so that a figure is typed
nowhere by hand.  Each generated block of a page (``PAGES``) sits between
``<!-- generated: NAME -->`` and ``<!-- end generated -->``; the text around the blocks is
written by hand and quotes no figure a block shows.

    python -m mixer_plugin.experiments.readme                  # rewrite the blocks of every page
    python -m mixer_plugin.experiments.readme --check          # exit 1: a page is stale, or types a figure
    python -m mixer_plugin.experiments.readme --allow-current  # shrink docs/figures.allowed.json

``--check`` also fails on a result figure typed by hand outside a block, on every page a reader
is sent to (``FIGURE_PAGES``), beyond the legacy figures docs/figures.allowed.json still allows
(``figures``: what a figure is, what is exempt, and the allowance that only shrinks).

The p-values and the verdicts on the papers' claims need the bootstrap over the test set's
references: a block shows them only as the report judged them (its ``claims.json`` beside the
results file), never computed here.  ``mixer-run --commit`` rewrites the blocks its records
change (``publish.refresh_pages``).
"""

import argparse
import re
import sys
from functools import partial
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional

from ..files import atomic_path
from ..paths import CHECKOUT, shown
from . import depth, figures, findings, gpu_cost, layout, pilot
from .archive import kept_records, results_path
from .collect import PRIMARY, peak, selection
from .figures import BLOCK
from .spec import Experiment
from .spec_loader import load
from .table import cap, mean_sd, peak_cells, waiting
from .verdicts import claims_beside, kept_verdicts, moved, said

README = CHECKOUT / "README.md"
# the pages with generated blocks: the landing page, the protocol page that keeps the tables of the
# leaderboard's earlier versions, the picture of the layers (``layout``), the campaigns' findings
# (``findings``) and the protocol page's figures of the depth studies, SVGs each one block (``depth``)
PAGES = (
    README,
    CHECKOUT / "docs" / "leaderboard.md",
    CHECKOUT / "docs" / "layers.md",
    *findings.pages(),
    *(svg for _, svg in depth.STUDIES.values()),
)
# the pages ``figures`` reads for figures typed by hand: every page a reader is sent to
FIGURE_PAGES = (README, *sorted((CHECKOUT / "docs").glob("*.md")), *findings.pages())


def score_table(name: str, metrics: Dict[str, str]) -> str:
    """Every trained row of ``experiments/<name>.yaml`` with a finished run: its seeds and
    scores (``metrics``: record key -> column), and its results file for everything else,
    the rows that decode another row's training otherwise (a paper's decoding switches) too.
    An experiment that trains until validation stops improving shows where each seed peaked
    and the validation score there (the results file's columns, read from the same records),
    so a reader sees that every row converged; otherwise the last validation loss.  Below
    the table, the rows and seeds of the file not finished yet, while there are any."""
    exp = load(CHECKOUT / "experiments" / f"{name}.yaml")
    chosen = {m.name: selection(exp, m) for m in exp.models.values()}
    until_best = next((c for c in chosen.values() if c), None)
    head = ["row", "seeds"]
    if until_best:
        head += ["peak update", f"valid {PRIMARY.get(until_best.metric, until_best.metric)} at peak"]
    head += list(metrics.values()) + ([] if until_best else ["valid loss"])
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    done = kept_records(exp)
    for model, recs in done.items():
        m = exp.models[model]
        if m.decode_of:
            continue
        cells = [f"`{model}`" + (f": {m.note}" if m.note else ""), str(len(recs))]
        if until_best:
            peaks = [p for p in (peak(r, chosen[model]) for r in recs) if p is not None] if chosen[model] else []
            update = peak_cells(recs, chosen[model], cap(exp, m))[0]
            cells += [update, mean_sd([p.value for p in peaks]) if peaks else "–"]
        cells += [mean_sd([r.scores[k] for r in recs]) for k in metrics]
        if not until_best:
            cells.append(mean_sd([r.valid[-1]["loss"] for r in recs if r.valid], digits=3))
        lines.append("| " + " | ".join(cells) + " |")
    left = waiting(exp, {name: len(recs) for name, recs in done.items()})
    if left:  # a campaign under way: the rows to come, so a short table is not read as the whole
        lines += ["", f"Not finished yet: {', '.join(left)}."]
    return "\n".join(lines) + "\n"


def landing_table(name: str) -> str:
    """The README's results table: every trained row of ``experiments/<name>.yaml`` with its
    paper's claims, seeds, test score (mean ± std over its seeds), its gap to its baseline's seed
    mean, and each claim's verdict as the report kept it (``verdicts.said``); then the rows not
    finished yet, while there are any."""
    exp = load(CHECKOUT / "experiments" / f"{name}.yaml")
    metric = depth.metric_name(next(iter(exp.models.values())))
    lines = [
        f"| row | the paper's claim | seeds | {metric} | Δ, seed means | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    sides = {n: s for n, s in depth.sides(exp).items() if not s.model.decode_of and s.scores}
    for row, side in sides.items():
        m = side.model
        gap = "baseline" if side.gap is None else f"{side.gap:+.2f} vs `{m.score.baseline}`"
        claims = ", ".join(str(c) for c in m.claims)
        cells = [f"`{row}`", claims, str(len(side.scores)), mean_sd(side.scores), gap, landing_verdicts(side)]
        lines.append("| " + " | ".join(cells) + " |")
    left = waiting(exp, {n: len(s.scores) for n, s in sides.items()})
    if left:
        lines += ["", f"Not finished yet: {', '.join(left)}."]
    return "\n".join(lines) + "\n"


def landing_verdicts(side: depth.Side) -> str:
    """A row's claims as its report judged them, each without the gap where the claim is against
    the row's baseline (the Δ column has it) and without the seeds rule (said below the table)."""
    baseline = side.model.score.baseline
    return depth.verdict_cells(side, lambda c, v: "–" if v is None else said(v, gap=c.other != baseline, rule=False))


def verdicts_moved(exp: Experiment) -> str:
    """Each paper claim judged both in ``exp`` and in the file its rows come from (``from:``),
    as one paragraph, however many claims there are: those whose verdict moved (the verdict
    there → the verdict here), then those whose verdict stayed.  The gaps and p-values
    stay in the results file's "claims beside" table, read from the same ``VERDICTS`` records."""
    mine = kept_verdicts(results_path(exp))
    changed: List[str] = []
    same: List[str] = []
    for pairs in claims_beside(exp, mine).values():
        for row, claim, a, b in pairs:
            if a is None or b is None:  # judged in one table only, so far
                continue
            if moved(a, b):
                changed.append(f"`{row}` {claim} ({a['verdict']} → {b['verdict']})")
            else:
                same.append(f"`{row}` {claim} ({b['verdict']})")
    parts = [f"{label}: {', '.join(claims)}." for label, claims in (("Moved", changed), ("Same", same)) if claims]
    return " ".join(parts or ["None judged in both yet."]) + "\n"


def quickstart() -> str:
    [record] = kept_records(load(CHECKOUT / "experiments" / "quickstart.yaml"))["multinn"]
    s = record.scores
    return (
        f"**{s['bleu']:.2f} BLEU / {s['chrf']:.2f} chrF** after {record.last_update:,} updates "
        f"([results/quickstart.md](results/quickstart.md), with what it printed)\n"
    )


SUM_METRICS = {"rouge1": "R-1", "rouge2": "R-2", "rougeL": "R-L", "bleu": "BLEU"}
BLOCKS: Dict[str, Callable[[], str]] = {
    "quickstart": quickstart,
    "leaderboard": lambda: score_table("leaderboard", {"bleu": "BLEU", "chrf": "chrF"}),
    "leaderboard_converged": lambda: score_table("leaderboard_converged", {"bleu": "BLEU", "chrf": "chrF"}),
    "leaderboard_converged_landing": lambda: landing_table("leaderboard_converged"),
    "verdicts_moved": lambda: verdicts_moved(load(CHECKOUT / "experiments" / "leaderboard_converged.yaml")),
    # versions 3 and 4: their two depths side by side, and the figure of each row's gap at both (``depth``)
    "leaderboard_v3_depths": depth.side_by_side,
    "leaderboard_v4_depths": partial(depth.side_by_side, depth.STUDIES["gap_by_depth_v4"][0]),
    "leaderboard_v4_landing": partial(depth.landing, *depth.STUDIES["gap_by_depth_v4"]),
    "leaderboard_v4_moved": partial(depth.moved_lines, depth.STUDIES["gap_by_depth_v4"][0]),
    "leaderboard_v4_improving": partial(depth.improving_lines, depth.STUDIES["gap_by_depth_v4"][0]),
    **{name: partial(depth.figure, deep) for name, (deep, _) in depth.STUDIES.items()},
    # the depth study's pilot: speeds by depth, width and precision (``pilot``)
    "depth_pilot_speed": pilot.speed_table,
    "depth_pilot_peak": pilot.peak_lines,
    "depth_pilot_rule": pilot.rule_lines,
    "depth_pilot_recipe": pilot.recipe_lines,
    "depth_v4_cost": pilot.cost_lines,
    "v3_gpu_cost": gpu_cost.lines,
    "layers": layout.layers_block,
    "run_flow": layout.run_flow_block,
    # the campaigns' findings pages (``findings``)
    "leaderboard_long": lambda: score_table("leaderboard_long", {"bleu": "BLEU", "chrf": "chrF"}),
    "leaderboard_sum": lambda: score_table("leaderboard_sum", SUM_METRICS),
    "compare_fixed_head": lambda: findings.compared(
        "leaderboard_converged", "fixed_head/seed1", "transformer/seed1", (4000, 10000, 16000)
    ),
    **{
        f"{name}_{kind}": (lambda name=name, block=block: block(name))
        for name in ("leaderboard", "leaderboard_long", "leaderboard_sum", "leaderboard_converged", "leaderboard_v3")
        for kind, block in (("claims", findings.claims_table), ("rule_moved", findings.rule_moved))
    },
}


def render(text: str) -> str:
    def block(m: re.Match) -> str:
        if m.group(2) not in BLOCKS:
            raise SystemExit(f"readme: a page has a block nobody generates: {m.group(2)!r}")
        return m.group(1) + BLOCKS[m.group(2)]() + m.group(4)

    return BLOCK.sub(block, text)


def stale_pages(pages: Iterable[Path]) -> Dict[Path, str]:
    """page -> its text rendered afresh, for each page whose blocks differ from the records.
    Every page is rendered before any is written: a block nobody generates stops them all."""
    texts = {page: page.read_text(encoding="utf-8") for page in pages}
    return {page: fresh for page, text in texts.items() if (fresh := render(text)) != text}


def write_page(page: Path, text: str) -> None:
    with atomic_path(page) as tmp:
        tmp.write_text(text, encoding="utf-8")


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m mixer_plugin.experiments.readme",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a page differs from what it generates, or types a result figure by hand "
        "beyond docs/figures.allowed.json (mixer_plugin/experiments/figures.py)",
    )
    mode.add_argument(
        "--allow-current",
        action="store_true",
        help="shrink docs/figures.allowed.json to the figures the pages still type by hand; it never "
        "grows, so a new figure stays an error (exit 1)",
    )
    p.add_argument(
        "pages",
        nargs="*",
        type=Path,
        help="the pages (default: those with generated blocks, and for figures README.md, docs/*.md "
        "and experiments/*.findings.md)",
    )
    args = p.parse_args(argv)
    for page in args.pages:
        if not page.is_file():
            raise SystemExit(f"readme: no such page: {shown(page)}")
    # named pages are all the check reads; by default an allowance for a page that is gone is stale
    every_page = not args.pages
    texts = figures.texts_of(args.pages or FIGURE_PAGES)
    if args.allow_current:
        kept, left = figures.shrunk(texts, figures.load_allowed(), every_page)
        figures.write_allowed(kept)
        print("\n".join(f"readme: {line}" for line in left), end="\n" if left else "")
        return 1 if left else 0
    stale = stale_pages(args.pages or PAGES)
    if args.check:
        said = [f"readme: {line}" for line in figures.problems(texts, figures.load_allowed() or {}, every_page)]
        if stale:
            names = ", ".join(shown(page) for page in stale)
            said.insert(0, f"readme: stale: {names} (python -m mixer_plugin.experiments.readme rewrites them)")
        print("\n".join(said), end="\n" if said else "")
        return 1 if said else 0
    for page, fresh in stale.items():
        write_page(page, fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
