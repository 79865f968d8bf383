"""Figures that cannot drift (mixer_plugin/experiments/figures.py): ``readme --check`` fails on a
result figure typed by hand outside a generated block, on any page a reader is sent to, beyond the
legacy figures docs/figures.allowed.json still allows; that file only shrinks."""

import json

PAGE = """# A page

The transformer reached 31.23 BLEU, p 0.001, after 4,000 updates.

<!-- generated: t -->
| `transformer` | 32.96 ± 0.40 |
<!-- end generated -->
"""


def test_a_figure_typed_by_hand_in_a_page_fails_the_check_naming_page_line_and_figure(tmp_path, monkeypatch, capsys):
    """What the issue asks: a hand-typed figure in docs fails ``readme --check`` with one line
    that says where it is.  The same figure inside a generated block passes."""
    from mixer_plugin.experiments import readme

    monkeypatch.setattr(readme, "BLOCKS", {"t": lambda: "| `transformer` | 32.96 ± 0.40 |\n"})
    page = tmp_path / "findings.md"
    page.write_text(PAGE)
    assert readme.main(["--check", str(page)]) == 1
    said = capsys.readouterr().out.splitlines()
    assert [line.split(": ", 1)[1] for line in said] == [
        f"{page}:3: 31.23 is a result figure typed by hand; quote it from a generated block",
        f"{page}:3: 0.001 is a result figure typed by hand; quote it from a generated block",
    ]
    page.write_text(PAGE.replace("31.23 BLEU, p 0.001, after", "a higher BLEU after"))
    assert readme.main(["--check", str(page)]) == 0


def test_what_is_a_figure_and_what_is_exempt():
    """Decimals, percentages and a mean with its spread are figures; a number is exempt where it
    is not a result (code, links, dates, versions, section numbers, a paper's identifier) or not
    typed by hand (a generated block).  Integers are counts and settings, not figures by form."""
    from mixer_plugin.experiments.figures import hand_figures

    text = "\n".join(
        [
            "BLEU 31.23, loss 4.153 (p 0.001); 12 % faster, 3.5% of it; 25 ± 1 seeds.",
            "Not figures: 3,750 updates, 2+2 layers, `--dropout 0.1`, ``lr 0.002``, version 0.5.0,",
            "Python 3.11, Section 3.2, Eq. 4.1, §3.3–3.4, 2026-11-24 at 14:05, arXiv:2207.13354,",
            "doi:10.1155/2022/2998242, [a link](../results/1.5x/t.md#b), https://example.org/2.5/t,",
            "<!-- 9.99 -->, wmt16.de, v1.2; and a sentence ending in a figure: 0.41.",
            "~~~",
            "paired bootstrap bleu: baseline 32.50 -> system 32.80, p = 0.0779",
            "~~~",
            "<!-- generated: t -->",
            "| 32.96 ± 0.40 |",
            "<!-- end generated -->",
        ]
    )
    assert hand_figures(text) == [(1, "31.23"), (1, "4.153"), (1, "0.001"), (1, "12 %"), (1, "3.5%"), (1, "25 ± 1")] + [
        (5, "0.41")
    ]


def test_the_allowance_is_a_ratchet(tmp_path, monkeypatch, capsys):
    """The legacy figures a page still types are allowed, as they are and no more: a new one fails,
    an allowance the page no longer uses fails too (so the file only shrinks), ``--allow-current``
    shrinks it in one command and never grows it, and a page with no figure has no entry."""
    from mixer_plugin.experiments import figures, readme

    monkeypatch.setattr(figures, "ALLOWED", tmp_path / "figures.allowed.json")
    page = tmp_path / "old.md"
    page.write_text("Old: 26.34 BLEU, 25.82 and 25.82.\n")
    clean = tmp_path / "clean.md"
    clean.write_text("No figure here.\n")
    pages = [str(page), str(clean)]
    assert readme.main(["--allow-current", *pages]) == 0  # no file yet: the first ratchet
    assert json.loads(figures.ALLOWED.read_text()) == {str(page): {"25.82": 2, "26.34": 1}}
    assert readme.main(["--check", *pages]) == 0
    # a new figure, or one more of an allowed one, fails by page and line
    page.write_text("Old: 26.34 BLEU, 25.82 and 25.82.\nNew: 25.82.\n")
    assert readme.main(["--check", *pages]) == 1
    assert f"{page}:2: 25.82 is a result figure typed by hand" in capsys.readouterr().out
    # --allow-current does not take it in: the file never grows
    assert readme.main(["--allow-current", *pages]) == 1
    assert f"{page}:2: 25.82" in capsys.readouterr().out
    assert json.loads(figures.ALLOWED.read_text()) == {str(page): {"25.82": 2, "26.34": 1}}
    # a figure converted to a block leaves its allowance larger than the page: that fails too
    page.write_text("Old: the first seed's BLEU (below), 25.82 and 25.82.\n")
    assert readme.main(["--check", *pages]) == 1
    assert (
        capsys.readouterr()
        .out.strip()
        .endswith(
            "allows figures the page no longer types (26.34); "
            "python -m mixer_plugin.experiments.readme --allow-current shrinks it"
        )
    )
    assert readme.main(["--allow-current", *pages]) == 0 and readme.main(["--check", *pages]) == 0
    assert json.loads(figures.ALLOWED.read_text()) == {str(page): {"25.82": 2}}
    # a clean page has no entry, and an empty one is named
    page.write_text("Clean at last.\n")
    assert readme.main(["--allow-current", *pages]) == 0 and json.loads(figures.ALLOWED.read_text()) == {}
    assert figures.problems({"a.md": "text"}, {"a.md": {}}, every_page=True) == [
        f"a.md: {figures.ALLOWED} has an empty entry for it; python -m mixer_plugin.experiments.readme "
        "--allow-current drops it"
    ]
    # reading every page, an allowance for a page that is gone is stale
    assert figures.problems({}, {"gone.md": {"1.5": 1}}, every_page=True)[0].startswith("gone.md: ")


def test_every_committed_page_passes_the_check():
    """The committed pages are fresh, and type no figure beyond their allowance: what CI and the
    pre-commit hook run."""
    from mixer_plugin.experiments import readme

    assert readme.main(["--check"]) == 0


def test_the_findings_pages_type_no_figure_and_a_planted_one_fails():
    """Each campaign's findings page (experiments/NAME.findings.md) quotes its figures only from
    generated blocks, so it has no allowance at all; a figure typed into one fails by its line."""
    from mixer_plugin.experiments import figures, findings, readme

    allowed = figures.load_allowed()
    names = {figures.page_name(p) for p in findings.pages()}
    assert {"experiments/leaderboard.findings.md", "experiments/leaderboard_converged.findings.md"} <= names
    assert not names & set(allowed), sorted(names & set(allowed))
    assert set(findings.pages()) <= set(readme.PAGES) & set(readme.FIGURE_PAGES)
    for page in findings.pages():
        text = page.read_text(encoding="utf-8")
        assert readme.BLOCK.search(text) and not figures.hand_figures(text), page.name
    page = findings.pages()[0]
    text = page.read_text(encoding="utf-8") + "\nThe gap was 1.28 BLEU.\n"
    assert figures.problems({figures.page_name(page): text}, allowed, every_page=False) == [
        f"{figures.page_name(page)}:{len(text.splitlines())}: 1.28 is a result figure typed by hand; "
        "quote it from a generated block"
    ]
