"""Two finished runs side by side, read from their committed records (``run.json``, kept by
``archive``): the figures a campaign's findings page (``experiments/<name>.findings.md``) quotes
beside the results table, embedded as a generated block (``findings.compared``) that
``readme --check`` regenerates, so that each is computed rather than trusted.

    python -m mixer_plugin.experiments.compare \\
        results/leaderboard_converged/runs/fixed_head/seed1/run.json \\
        results/leaderboard_converged/runs/transformer/seed1/run.json --bins 4000,10000,16000

It prints, for the first run (``mine``) against the second (``theirs``): parameters; where each
peaked under its own training's stopping rule (read from its train command, applied to the whole
log as ``collect.peak`` does) and what the validations after the peak read; the test scores with
BLEU's n-gram precisions, brevity penalty and the per-source scores; and, over the validations
both runs have, how often the first is ahead in BLEU and above in loss, its mean BLEU gap within
each stretch that ``--bins`` marks, each run's lowest validation loss, and the first validation
at which the first run reaches the second's peak.  No p-values: the paired bootstraps are the
results table's (``bootstraps.run_bootstraps``).
"""

import argparse
import re
import statistics
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .argv import stopping_rule
from .collect import Peak, peak
from .record import RecordError, RunRecord
from .trainlog import Selection

_DETAIL = re.compile(r"= [\d.]+ ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) \(BP = ([\d.]+)")


def load(path: Path) -> RunRecord:
    """A run's record; a one-line error naming the file when it is missing or not one."""
    try:
        record = RunRecord.load(path)
    except RecordError as e:
        raise SystemExit(f"mixer-compare: error: {e}") from None
    if not record.train_commands():
        raise SystemExit(f"mixer-compare: error: {path} records no train stage")
    return record


def by_update(record: RunRecord, key: str) -> Dict[int, float]:
    """update -> the validation's ``key``, for the validations that have it."""
    return {int(p["num_updates"]): p[key] for p in record.valid if key in p}


def peak_of(record: RunRecord) -> Tuple[Optional[Peak], Selection]:
    """The record's peak under its own stopping rule (``collect.peak``), with that rule."""
    chosen = stopping_rule(record.train_commands()[-1])
    return peak(record, chosen), chosen


def after_peak(record: RunRecord, update: int, stop: Optional[int], metric: str) -> List[float]:
    """The validations after the peak, up to where the rule stopped (or the log ends)."""
    end = stop if stop is not None else record.last_update
    return [v for u, v in sorted(by_update(record, metric).items()) if update < u <= end]


def bins_of(updates: Sequence[int], edges: Sequence[int]) -> List[Tuple[str, List[int]]]:
    """The updates split at ``edges`` (each edge closes its stretch): (label, updates) pairs."""
    out, lo = [], None
    for hi in list(edges) + [None]:
        part = [u for u in updates if (lo is None or u > lo) and (hi is None or u <= hi)]
        if lo is None:
            label = f"up to {hi:,}" if hi is not None else "all"
        else:
            label = f"{lo:,} < u <= {hi:,}" if hi is not None else f"after {lo:,}"
        if part:
            out.append((label, part))
        lo = hi
    return out


def curves(mine: RunRecord, theirs: RunRecord, edges: Sequence[int]) -> List[str]:
    a_bleu, b_bleu = by_update(mine, "bleu"), by_update(theirs, "bleu")
    a_loss, b_loss = by_update(mine, "loss"), by_update(theirs, "loss")
    common = sorted(set(a_bleu) & set(b_bleu))
    if not common:
        return ["no validation update in common"]
    ahead = [u for u in common if a_bleu[u] > b_bleu[u]]
    behind = [u for u in common if a_bleu[u] < b_bleu[u]]
    both_loss = sorted(set(a_loss) & set(b_loss))
    above = [u for u in both_loss if a_loss[u] > b_loss[u]]
    out = [
        f"valid BLEU over the {len(common)} validations both have: ahead at {len(ahead)}, "
        f"behind at {len(behind)}, level at {len(common) - len(ahead) - len(behind)}"
        + (f" (ahead at {', '.join(f'{u:,}' for u in ahead)})" if 0 < len(ahead) <= 5 else ""),
        f"valid loss above theirs at {len(above)} of {len(both_loss)}",
    ]
    for label, part in bins_of(common, edges):
        gap = statistics.mean(a_bleu[u] - b_bleu[u] for u in part)
        out.append(f"  mean BLEU gap {label}: {gap:+.2f} ({len(part)} validations)")
    for who, loss in (("mine", a_loss), ("theirs", b_loss)):
        if loss:
            u = min(loss, key=lambda k: (loss[k], k))
            out.append(f"lowest valid loss ({who}): {loss[u]:.3f} at {u:,}")
    target = max(b_bleu.values())
    first = next((u for u in sorted(a_bleu) if a_bleu[u] >= target), None)
    out.append(
        f"first reaching their best valid BLEU {target:.2f}: "
        + (f"at {first:,} ({a_bleu[first]:.2f})" if first is not None else "never")
    )
    return out


def peak_lines(record: RunRecord) -> List[str]:
    p, chosen = peak_of(record)
    if p is None:
        return [f"{record.name}: no validation with {chosen.metric!r}"]
    rest = after_peak(record, p.update, p.stopped, chosen.metric)
    ended = f"stopped by its rule at {p.stopped:,}" if p.stopped is not None else "no stop by its rule"
    hours = f", {p.hours:.2f} h of training to it" if p.hours is not None else ""
    line = f"{record.name}: valid {chosen.metric} peak {p.value:.2f} at {p.update:,}{hours}; {ended}"
    line += f"; last update {record.last_update:,}"
    if rest:
        line += f"; the {len(rest)} validations after the peak read {min(rest):.2f} to {max(rest):.2f}"
    return [line]


def detail(scores: dict) -> str:
    m = _DETAIL.search(scores.get("bleu_detail", ""))
    return f" (precisions {m.group(1)}/{m.group(2)}/{m.group(3)}/{m.group(4)}, BP {m.group(5)})" if m else ""


def score_lines(mine: RunRecord, theirs: RunRecord) -> List[str]:
    a, b = mine.scores, theirs.scores
    out = []
    for key in ("bleu", "chrf"):
        if key in a and key in b:
            out.append(f"test {key}: {a[key]:.2f} against {b[key]:.2f} ({a[key] - b[key]:+.2f})")
    if "bleu" in a and "bleu" in b:
        out += [f"  mine{detail(a)}", f"  theirs{detail(b)}"]
    sa, sb = a.get("by_source") or {}, b.get("by_source") or {}
    for src in [s for s in sa if s in sb]:
        if "bleu" in sa[src] and "bleu" in sb[src]:
            x, y = sa[src]["bleu"], sb[src]["bleu"]
            out.append(f"  {src} ({sa[src].get('lines', '?')} lines): {x:.2f} against {y:.2f} ({x - y:+.2f})")
    return out


def report(mine: RunRecord, theirs: RunRecord, edges: Sequence[int]) -> List[str]:
    out = [f"{mine.name} (mine) against {theirs.name} (theirs)"]
    pa, pb = mine.params, theirs.params
    if pa and pb:
        out.append(f"params: {pa:,} against {pb:,} ({100 * (pa - pb) / pb:+.2f} %)")
    out += peak_lines(mine) + peak_lines(theirs) + score_lines(mine, theirs) + curves(mine, theirs, edges)
    return out


def edges_arg(value: str) -> List[int]:
    try:
        edges = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of updates: {value!r}") from None
    if edges != sorted(set(edges)):
        raise argparse.ArgumentTypeError(f"updates must increase: {value!r}")
    return edges


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(
        prog="mixer-compare", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("mine", type=Path, help="a run's run.json")
    p.add_argument("theirs", type=Path, help="the run.json it is read against")
    p.add_argument("--bins", type=edges_arg, default=[], help="updates closing each stretch of the mean gap")
    a = p.parse_args(argv)
    print("\n".join(report(load(a.mine), load(a.theirs), a.bins)))


if __name__ == "__main__":
    main()
