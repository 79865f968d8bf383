"""Result figures typed by hand: the check that keeps the pages' figures in generated blocks.

A figure a page quotes by hand drifts from the records the day a run is trained again; one that a
generated block shows (``readme.BLOCKS``) cannot.  So every page the check reads (``readme.
FIGURE_PAGES``: README.md, docs/*.md and the campaigns' findings) may quote a result figure only
inside a generated block, or inside the few places where a number is not a result.

A *result figure* (``FIGURE``) is, in the text left after the exemptions:

- a decimal number: ``31.23``, ``0.41``, ``4.153``, the ``0.001`` of ``p 0.001``;
- a percentage: ``12 %``, ``3.5%``;
- a mean and its spread: ``25 ± 1`` (with decimals, each side is a decimal anyway).

Not figures by form: integers, so dates and times too (``2026-11-24``, ``14:05``; a page's
integers are mostly settings and counts of the protocol, layers, updates, seeds, sentences, that
no reader can tell from a result without reading the sentence); numbers with two dots or more,
which are versions and section numbers (``0.5.0``, ``3.2.1``); and a number glued to a letter
before it (``v1.2``, ``wmt16.de``).  A decimal in prose is a figure even when it is a setting;
write a setting as its flag in a code span (```--dropout 0.1```), which is what it is.

The exemptions (``exempt``), each a place where a number is not a result or is not typed by hand:

- generated blocks (the records wrote them);
- fenced code and code spans: commands, flags, versions, file names, printed output;
- a link's target, a URL, a paper's arXiv or DOI identifier, and HTML comments;
- a number after a word that names a section, an equation, a table, a figure, an appendix or a
  version (``Section 3.2``, ``Eq. 4.1``, ``§3.3–3.4``, ``Python 3.11``).

Pages written before the check still quote figures by hand, among them the papers' published
numbers.  ``ALLOWED`` (docs/figures.allowed.json, written by ``readme --allow-current``) holds, for
each such page, every figure it still types and how often: a ratchet.  The check fails on a figure
beyond those (naming the page, the line and the figure), and on an allowance the page no longer
uses, so the file only shrinks, by one command.  A page with no figure by hand has no entry.
"""

import json
import re
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from ..files import atomic_path
from ..paths import CHECKOUT

ALLOWED = CHECKOUT / "docs" / "figures.allowed.json"
SHRINK = "python -m mixer_plugin.experiments.readme --allow-current"

FIGURE = re.compile(
    r"(?<![\w.])(?:"
    r"\d+(?:\.\d+)?\s?%"  # a percentage
    r"|\d+(?:\.\d+)?\s?±\s?\d+(?:\.\d+)?"  # a mean and its spread
    r"|\d+\.\d+(?![\w.]*\d)"  # a decimal (not the start of a version: 0.5.0, v1.2rc3)
    r")"
)

# The exempt spans, in the order they are blanked: a code span inside a generated block or a link
# inside a code span is gone with its container.  Blanking keeps every line's length and every
# newline, so a figure's line number is the page's.
# a generated block: its opening line (with the block's name), its body and its closing line;
# ``readme`` writes blocks by the same pattern
BLOCK = re.compile(r"(<!-- generated: (\w+) -->\n)(.*?)(<!-- end generated -->)", re.S)
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,}).*?^\1\2[`~]*[ \t]*$", re.S | re.M)
_EXEMPT = (
    re.compile(r"<!--.*?-->", re.S),  # HTML comments
    re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S),  # code spans, of one backtick or more
    re.compile(r"\]\([^)\s]*\)|^\s*\[[^\]]+\]:\s*\S+", re.M),  # a link's target, a reference definition
    re.compile(r"<?https?://[^\s)>]+>?"),  # URLs
    re.compile(r"\b(?:arXiv|doi):\s*[\w./-]+", re.I),  # a paper's identifier
    re.compile(
        r"(?:§|\b(?:[Ss]ections?|[Ss]ecs?\.|[Ee]quations?|[Ee]qs?\.|[Tt]ables?|[Ff]igures?|[Ff]igs?\.|[Aa]ppendi(?:x|ces)"
        r"|[Vv]ersions?|Python|PyTorch|torch|fairseq|CUDA))\s*\(?\d+(?:\.\d+)*(?:\s*[–-]\s*\d+(?:\.\d+)*)?"
    ),  # a number that names a section, an equation, a table, a figure or a version
)


def _blank(m: re.Match) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def exempt(text: str) -> str:
    """``text`` with every exempt span (the module's docstring) blanked to spaces, lines kept."""
    text = BLOCK.sub(lambda m: m.group(1) + re.sub(r"[^\n]", " ", m.group(3)) + m.group(4), text)
    text = _FENCE.sub(_blank, text)
    for pattern in _EXEMPT:
        text = pattern.sub(_blank, text)
    return text


def hand_figures(text: str) -> List[Tuple[int, str]]:
    """(line number, figure) for each result figure of a page typed by hand, in the page's order."""
    return [
        (n, " ".join(m.group(0).split()))  # one spelling for "12 %" and "12\u00a0%"
        for n, line in enumerate(exempt(text).splitlines(), 1)
        for m in FIGURE.finditer(line)
    ]


def allowance(text: str) -> Dict[str, int]:
    """figure -> how often the page types it by hand: the page's entry in ``ALLOWED``."""
    return dict(sorted(Counter(figure for _, figure in hand_figures(text)).items()))


def page_problems(page: str, text: str, allowed: Mapping[str, int]) -> List[str]:
    """One line for each figure of ``page`` beyond its allowance (the page, the line, the figure),
    and one for each figure the allowance holds that the page no longer types as often."""
    seen: Counter = Counter()
    out = []
    for n, figure in hand_figures(text):
        seen[figure] += 1
        if seen[figure] > allowed.get(figure, 0):
            out.append(f"{page}:{n}: {figure} is a result figure typed by hand; quote it from a generated block")
    spare = {f: k - seen[f] for f, k in allowed.items() if k > seen[f]}
    if spare:
        listed = [f"{f} x{k}" if k > 1 else f for f, k in sorted(spare.items())]
        listed = ", ".join(listed[:8]) + (f" and {len(listed) - 8} more" if len(listed) > 8 else "")  # one line
        out.append(f"{page}: {shown_allowed()} allows figures the page no longer types ({listed}); {SHRINK} shrinks it")
    return out


def problems(texts: Mapping[str, str], allowed: Mapping[str, Mapping[str, int]], every_page: bool) -> List[str]:
    """The check over pages (name -> text) against the allowances (name -> figure -> count). With
    ``every_page`` (the texts are all the pages there are), an entry for no page is one too."""
    out = []
    for page, text in texts.items():
        entry = allowed.get(page, {})
        if page in allowed and not entry:
            out.append(f"{page}: {shown_allowed()} has an empty entry for it; {SHRINK} drops it")
        out += page_problems(page, text, entry)
    if every_page:
        out += [
            f"{page}: {shown_allowed()} has an entry for no such page; {SHRINK} drops it"
            for page in allowed
            if page not in texts
        ]
    return out


def shrunk(
    texts: Mapping[str, str], allowed: Optional[Mapping[str, Mapping[str, int]]], every_page: bool
) -> Tuple[Dict[str, Dict[str, int]], List[str]]:
    """The allowances cut to what the pages type (never grown: a figure beyond them stays a problem,
    returned with the rest), and the problems left.  With no allowances file (None), the pages'
    figures as they are: the first ratchet, which a review sees as the file's birth."""
    fresh = {page: allowance(text) for page, text in texts.items()}
    if allowed is not None:
        fresh = {
            page: {f: min(k, allowed.get(page, {}).get(f, 0)) for f, k in counts.items()}
            for page, counts in fresh.items()
        }
    kept = {} if every_page or allowed is None else {p: dict(c) for p, c in allowed.items() if p not in texts}
    kept.update({page: {f: k for f, k in counts.items() if k} for page, counts in fresh.items()})
    kept = {page: counts for page, counts in sorted(kept.items()) if counts}
    return kept, problems(texts, kept, every_page)


def shown_allowed() -> str:
    return ALLOWED.relative_to(CHECKOUT).as_posix() if ALLOWED.is_relative_to(CHECKOUT) else str(ALLOWED)


def load_allowed() -> Optional[Dict[str, Dict[str, int]]]:
    """The allowances, or None when the file does not exist; a one-line error naming it when it is
    not page -> figure -> count."""
    if not ALLOWED.is_file():
        return None
    try:
        data = json.loads(ALLOWED.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SystemExit(f"readme: {shown_allowed()} is not JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(data, dict) or not all(
        isinstance(c, dict) and all(isinstance(k, int) for k in c.values()) for c in data.values()
    ):
        raise SystemExit(f"readme: {shown_allowed()} is not page -> figure -> count")
    return data


def write_allowed(allowed: Mapping[str, Mapping[str, int]]) -> None:
    with atomic_path(ALLOWED) as tmp:
        tmp.write_text(json.dumps(allowed, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


def page_name(page: Path) -> str:
    """A page's key in ``ALLOWED``: its path in the checkout, or as given when outside it."""
    page = page.resolve()
    return page.relative_to(CHECKOUT).as_posix() if page.is_relative_to(CHECKOUT) else str(page)


def texts_of(pages: Iterable[Path]) -> Dict[str, str]:
    return {page_name(p): p.read_text(encoding="utf-8") for p in pages}
