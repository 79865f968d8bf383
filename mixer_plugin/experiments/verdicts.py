"""The paper's claims in a results file: each judged (``claims.judge``) on its row's one
comparison with the other row (``bootstraps.pooled``), as the table's claim cell and as the small
record kept beside the results (``VERDICTS``), and set beside the verdicts that another file's
table gave the same claims (the converged leaderboard beside the 3,750-update one)."""

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import claims
from .archive import results_path
from .collect import PRIMARY, ModelResult
from .spec import Claim, Experiment, Model
from .spec_loader import load

VERDICTS = "claims.json"  # beside the results file: each judged claim (``verdicts``)


def judgement(r: ModelResult, claim: Claim) -> Optional[claims.Judgement]:
    """A row's claim judged (``claims.judge``) on its one comparison with the other row
    (``bootstraps.pooled``: every seed's score, and the paired bootstrap of the gap between the
    means over the test sentences), or None while either row has no finished run."""
    rec = r.extra.get("claims", {}).get(claim)
    if rec is None:
        return None
    claimed = claim.task == claims.task_of(r.model.score.metrics)
    return claims.judge(claim.relation, rec["system"], rec["baseline"], rec["sentence_sd"], rec["p_value"], claimed)


def signs(rec: dict) -> str:
    """The seed pairs' signs of a comparison (``claims.seed_signs``), or "" for one pair."""
    s = claims.seed_signs(rec["system"], rec["baseline"], rec["system_seeds"], rec["baseline_seeds"])
    return s if len(s) > 1 else ""


def kept(j: claims.Judgement, claim: Claim, metric: str) -> dict:
    """A judged claim as the small record ``VERDICTS`` keeps and every page renders (``said``)."""
    t = j.test
    return {
        "metric": metric,
        "task": claim.task,
        "verdict": j.verdict,
        "delta": round(j.delta, 4),
        "p": None if t is None else round(t.p, 4),
        "p_equal": None if t is None or claim.relation != "~" else round(t.p_equal, 4),
        "sentences_p": j.sentences_p,
        "sentence_sd": round(j.sentence_sd, 4),
        "seeds": list(j.seeds),
    }


def said(v: dict, pairs: str = "", gap: bool = True, rule: bool = True) -> str:
    """A kept verdict in words, bold only where the rule decided (``claims.DECIDED``):
    "**refuted** (BLEU -0.53, p 0.210; 3 and 3 seeds)", "indication, behind (BLEU -1.73; 1 and 3
    seeds, a verdict needs 3 a side)", "not claimed by the paper (its claim is on classification;
    BLEU -1.55, 1 and 3 seeds)".  ``pairs``: the seed pairs' signs, where the table shows them;
    ``gap``, ``rule``: whether to say the gap and why an indication is not a verdict (a table
    that shows them once, in a column or below it, leaves them out)."""
    a, b = v["seeds"]
    said_gap = [f"{PRIMARY.get(v['metric'], v['metric'])} {v['delta']:+.2f}"] if gap else []
    seeds = f"{a} and {b} seeds" + (f", seed pairs {pairs}" if pairs else "")
    if v["verdict"] == "not claimed":
        return f"not claimed by the paper (its claim is on {v['task']}; {', '.join([*said_gap, seeds])})"
    if v["verdict"] == "indication":
        needs = f", a verdict needs {claims.MIN_SEEDS} a side" if rule else ""
        return f"indication, {claims.sign(v['delta'])} ({'; '.join([*said_gap, seeds + needs])})"
    test = ", ".join([*said_gap, f"p {v['p']:.3f}"])
    equal = f", equivalence p {v['p_equal']:.3f}" if v.get("p_equal") is not None else ""
    return f"{word(v)} ({test}{equal}; {seeds})"


def word(v: dict) -> str:
    """A kept verdict's word, bold where the rule decided (``claims.DECIDED``)."""
    return f"**{v['verdict']}**" if v["verdict"] in claims.DECIDED else v["verdict"]


def claim_cells(r: ModelResult) -> str:
    """Each claim of a row: its verdict in words (``said``), or what it waits for."""
    key = claim_metric(r.model)
    cells = []
    for claim in r.model.claims:
        j = judgement(r, claim)
        if j is None:
            cells.append(f"{claim}: waiting for runs")
            continue
        cells.append(f"{claim}: {said(kept(j, claim, key), signs(r.extra['claims'][claim]))}")
    return "; ".join(cells)


def verdicts(results: List[ModelResult]) -> Dict[str, Dict[str, dict]]:
    """Every judged claim as a small record (``kept``), row -> claim (as the table writes it)
    -> its verdict, the gap between the means, its p, the seeds of each side: what another table
    of the same rows (``verdicts_beside``) and the pages read, kept beside the results (``VERDICTS``)."""
    out: Dict[str, Dict[str, dict]] = {}
    for r in results:
        for claim in r.model.claims:
            j = judgement(r, claim)
            if j is not None:
                out.setdefault(r.model.name, {})[str(claim)] = kept(j, claim, claim_metric(r.model))
    return out


def kept_verdicts(results: Path) -> Dict[str, Dict[str, dict]]:
    """The claims a results file's report judged (``VERDICTS`` beside it): row -> claim -> its
    verdict, gap, p and seeds; {} before any was judged."""
    kept = results.with_suffix("") / VERDICTS
    return json.loads(kept.read_text(encoding="utf-8")) if kept.is_file() else {}


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
        theirs = kept_verdicts(theirs_at)
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
    return "–" if v is None else said(v)


def claim_metric(m: Model) -> str:
    return claims.claim_metric(m.score.metrics)
