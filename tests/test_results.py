"""What is committed under results/: each finished run as its record and hypotheses, and no
path of the machine that made anything there."""

import re
from pathlib import Path

import pytest

from mixer_plugin.experiments import record as run_record
from mixer_plugin.experiments.record import RunRecord

RESULTS = Path(__file__).resolve().parents[1] / "results"
# an absolute path: a slash that starts a word (not inside a relative path, a URL or a
# <checkout>/<work> placeholder), then at least one folder
ABSOLUTE = re.compile(r"(?<![\w.:/<>~$-])/(?:[\w.+-]+/)+[\w.+-]*")
# the same on every Linux machine: a tool's path is not the machine's
SYSTEM = ("/usr/", "/bin/", "/etc/", "/dev/", "/proc/")
TEXT = (".md", ".json", ".txt", ".log", ".err", ".yaml", ".csv")


def committed_text_files():
    # hypotheses are the models' output: Debian texts name files (/usr/share/doc/...)
    return sorted(p for p in RESULTS.rglob("*") if p.is_file() and p.suffix in TEXT and p.name != "hyp.txt")


def test_no_machine_path_in_a_committed_result():
    found = {}
    for path in committed_text_files():
        paths = [
            m for m in ABSOLUTE.findall(path.read_text(encoding="utf-8", errors="replace")) if not m.startswith(SYSTEM)
        ]
        if paths:
            found[str(path.relative_to(RESULTS))] = paths[:3]
    assert not found, f"{len(found)} files name a machine's paths: {dict(list(found.items())[:5])}"


def test_the_pattern_finds_machine_paths_and_nothing_else():
    text = (
        "`/work/venv/bin/python -m fairseq_cli.train /home/me/mixer/work/data/bin` "
        "[table](../results/x.md) https://example.org/a/b <work>/leaderboard/x work/data/y "
        "2/3 sent/s /usr/bin/time $TMPDIR/t_1"
    )
    assert [m for m in ABSOLUTE.findall(text) if not m.startswith(SYSTEM)] == [
        "/work/venv/bin/python",
        "/home/me/mixer/work/data/bin",
    ]


def kept_runs():
    return sorted(p for p in RESULTS.glob("*/runs/*/seed*") if p.is_dir())


def test_every_kept_run_is_its_record_and_its_hypotheses():
    runs = kept_runs()
    assert len(runs) >= 58
    for run in runs:
        assert {p.name for p in run.iterdir()} <= {"run.json", "hyp.txt.xz"}, run
        record = RunRecord.load(run / "run.json")
        assert (record.model, f"seed{record.seed}") == (run.parent.name, run.name)
        assert record.scores and record.stages, run
        for stage in record.stages.values():
            for argv in stage["commands"]:
                assert argv[0] == "python" or not argv[0].startswith("/"), (run, argv[0])


def test_every_committed_record_is_in_the_current_version():
    """Read by the one reader and written as this version writes it: a record committed in an
    older version fails here until ``python -m mixer_plugin.experiments.record`` rewrites it."""
    assert run_record.committed() and run_record.main(["--check"]) == 0


@pytest.mark.parametrize("experiment", sorted({p.parents[2].name for p in kept_runs()}))
def test_a_record_holds_what_its_table_shows(experiment):
    """Each committed table's score cells come from its records: the first seed's BLEU (or
    R-L, or accuracy) of every row with one seed is in the table as it is in run.json."""
    table = (RESULTS / f"{experiment}.md").read_text(encoding="utf-8")
    for model in sorted((RESULTS / experiment / "runs").iterdir()):
        seeds = sorted(model.iterdir())
        if len(seeds) != 1:
            continue
        scores = RunRecord.load(seeds[0] / "run.json").scores
        key = next(k for k in ("rougeL", "bleu", "accuracy") if k in scores)
        row = next(line for line in table.splitlines() if line.startswith(f"| `{model.name}` |"))
        assert f" {scores[key]:.2f} " in row, (model.name, key, scores[key], row)


def test_the_readme_is_generated_from_the_records():
    """The README's figures come from the committed run records; an edit by hand, or a
    record that changed without ``python -m mixer_plugin.experiments.readme``, fails here."""
    from mixer_plugin.experiments import readme

    pages = {page: page.read_text(encoding="utf-8") for page in readme.PAGES}
    assert {name for text in pages.values() for _, name, _, _ in readme.BLOCK.findall(text)} == set(readme.BLOCKS)
    for page, text in pages.items():
        assert readme.render(text) == text, f"{page.name} is stale: python -m mixer_plugin.experiments.readme"
        generated = [line for _, _, body, _ in readme.BLOCK.findall(text) for line in body.splitlines()]
        # a score typed by hand where the page has the transformer's row, else any generated table
        # line; a page with no table (the SVG figure) has a generated line edited
        row = next(
            (line for line in generated if line.startswith("| `transformer` |")),
            next((line for line in generated if line.startswith("| ") and line.endswith(" |")), None),
        )
        if row is not None:
            tampered = text.replace(row, row.rsplit(" | ", 1)[0] + " | 99.99 |")
        else:
            tampered = text.replace(generated[-2], generated[-2].replace('"', "'", 2))
        assert tampered != text and readme.render(tampered) == text, page.name
    # a landing page: its first results table is the most complete finished one, version 2's, with
    # every trained row and a number in it, each baseline as its seed mean; version 3's tables, under
    # way, live on the protocol page with their figure; version 4 follows it, its two depths in one table
    text = pages[readme.README]
    first = readme.BLOCK.search(text[text.index("## Results") :]).group(2)
    assert first == "leaderboard_converged_landing"
    lines = {name: body for _, name, body, _ in readme.BLOCK.findall(text)}[first].splitlines()
    exp = readme.load(readme.CHECKOUT / "experiments" / "leaderboard_converged.yaml")
    for model in exp.models.values():
        [line] = [x for x in lines if x.startswith(f"| `{model.name}` |")]
        scores = [r.scores["bleu"] for r in readme.kept_records(exp)[model.name]]
        assert f"| {len(scores)} | {readme.mean_sd(scores)} |" in line, line
    assert "leaderboard_v3_depths" not in lines and len(text.splitlines()) <= 185
    protocol_v3 = pages[readme.CHECKOUT / "docs" / "leaderboard.md"]
    assert "<!-- generated: leaderboard_v3_depths -->" in protocol_v3 and "(gap_by_depth.svg)" in protocol_v3
    # version 2's verdicts that moved since version 1 stay one paragraph on its protocol page
    protocol = pages[readme.CHECKOUT / "docs" / "leaderboard.md"]
    moved = {name: body for _, name, body, _ in readme.BLOCK.findall(protocol)}["verdicts_moved"]
    assert len(moved.splitlines()) == 1, moved
    # the rows that only decode another's training (a paper's switches) stay in the results file
    assert "| `transformer_decoded_hard` |" not in protocol and "| `hard_cross` |" in protocol
