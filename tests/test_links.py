"""Every relative link in the pages a reader opens leads somewhere: to a file or folder in the
repository and, with a ``#fragment`` into a Markdown page, to one of its headings (GitHub's
anchors).  A heading renamed, a page moved or a generated page pointing at a folder never
committed fails here, not in a reader's browser."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [REPO / "README.md", REPO / "CHANGELOG.md"]
    + [p for folder in ("docs", "experiments", "results") for p in (REPO / folder).glob("*.md")]
)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


def anchors(text: str) -> set:
    """GitHub's heading anchors: the heading as rendered (a link's text, no backticks), lower
    case, every character but letters, digits, ``-``, ``_`` and spaces dropped, spaces as ``-``;
    a repeated heading gets ``-1``, ``-2``...  Plus explicit ``<a id=...>``/``<a name=...>``."""
    found, seen = set(), {}
    for line in FENCE.sub("", text).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if heading:
            rendered = LINK.sub(r"\1", heading.group(1)).replace("`", "")
            slug = re.sub(r"[^\w\- ]", "", rendered.lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
    return found | set(re.findall(r'<a\s+(?:id|name)="([^"]+)"', text))


def test_the_anchor_rule_is_githubs():
    text = "# Version 2: at convergence\n## The claims beside [a.md](a.md) (`x.yaml`, the rows' own file)\n"
    text += "# Plots\n# Plots\n"
    assert anchors(text) == {
        "version-2-at-convergence",
        "the-claims-beside-amd-xyaml-the-rows-own-file",
        "plots",
        "plots-1",
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_somewhere(page):
    text = page.read_text(encoding="utf-8")
    broken = []
    for _, target in LINK.findall(CODE.sub("", FENCE.sub("", text))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, doi: ... are not checked here
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)
