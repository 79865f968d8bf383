"""Every parameter count the README and docs/ print is the count of the model the
named architecture builds (the paper-size readings of multiNN above all)."""

import re
from pathlib import Path

import pytest

from mixer_plugin.analysis.params import count
from mixer_plugin.models.architectures import ARCHITECTURES

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def printed_counts():
    """(page, arch, printed millions) for each row of a table whose header has an
    ``ours (M)`` column."""
    found = []
    for page in PAGES:
        column = None
        for line in page.read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
            if cells is None:
                column = None
            elif "ours (M)" in cells:
                column = cells.index("ours (M)")
            elif column is not None and (m := re.fullmatch(r"`(mixer_\w+)`", cells[0])):
                found.append((page.name, m.group(1), float(cells[column])))
    return found


PRINTED = printed_counts()


def test_the_multinn_page_prints_the_paper_rows():
    printed = {arch for page, arch, _ in PRINTED if page == "multinn.md"}
    assert {"mixer_wmt_multinn", "mixer_iwslt_multinn", "mixer_wmt_multinn_noglobal"} <= printed, printed


@pytest.mark.parametrize("page,arch,millions", PRINTED, ids=[f"{p}:{a}" for p, a, _ in PRINTED])
def test_printed_count_is_what_the_arch_builds(page, arch, millions):
    assert arch in ARCHITECTURES, f"{page} prints an arch that does not exist: {arch}"
    assert round(count(arch).ours, 1) == millions
