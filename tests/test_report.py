"""An experiment's results (mixer_plugin/experiments: collect, report, archive): the
tables, p-values, claims, seeds, sources, speeds and plots rendered from run folders built
by hand (the ``fake`` fixture of conftest.py), in seconds.  The runner that makes real run
folders is tests/test_experiments.py; the claims rule alone, tests/test_claims.py."""

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import E2E_REPO, TRAIN_LOG_LINE, rows


def test_a_paper_row_is_named_and_its_figures_come_from_the_paper_module():
    """An experiment file names the paper rows a model is compared with; their figures are
    read from the paper's module, where they are typed once."""
    from mixer_plugin.experiments import spec_loader, table
    from mixer_plugin.models.architectures import ARCHITECTURES

    exp = spec_loader.load(E2E_REPO / "experiments" / "leaderboard.yaml")
    cell = table.paper_cell(exp.models["multinn"])
    assert cell.startswith("multiNN ≈ transformer (T1 multi-head NN, 8 layers (62M, WMT16 en-de BLEU 27.15);")
    assert ARCHITECTURES["mixer_wmt_multinn"].rows[0].scores == (("WMT16 en-de BLEU", 27.15),)
    assert table.paper_cell(exp.models["hard_dec_decoded_soft"]).startswith(
        "trained hard, decoded soft: ≈ (T4 train Hard / decode Soft (BLEU 27.80);"
    )  # Paper.decodes
    assert "37.71/19.02/35.17" in table.paper_cell(
        spec_loader.load(E2E_REPO / "experiments" / "leaderboard_sum.yaml").models["multinn"]
    )  # Paper.extra_rows


def test_a_claim_cell_is_a_verdict_only_with_the_seeds_the_rule_needs():
    """The leaderboard's case: most rows have one seed, the transformer three.  A one-seed row
    25.72 against 26.34, 25.82, 25.67 read "significantly worse" (p 0.006) to a test over the
    sentences alone; one seed has no seed variance, so the cell is an indication, not bold.
    With three seeds a side, a verdict; a claim the paper made on another task, none."""
    from types import SimpleNamespace

    from mixer_plugin.experiments.collect import ModelResult
    from mixer_plugin.experiments.spec import Claim, Score
    from mixer_plugin.experiments.verdicts import claim_cells

    def cell(claim, mine, theirs):
        model = SimpleNamespace(name="mixer", claims=[claim], score=Score(metrics=["bleu", "chrf"]))
        mixer = ModelResult(model, runs=[None], records=[])
        mixer.extra["claims"] = {claim: compared(mine, theirs, 0.006)}
        return claim_cells(mixer)

    transformer = [26.34, 25.82, 25.67]
    assert cell(Claim(">", "transformer", "translation"), [25.72], transformer) == (
        "> transformer: indication, behind (BLEU -0.22; 1 and 3 seeds, seed pairs −−+, a verdict needs 3 a side)"
    )
    refuted = cell(Claim(">", "transformer", "translation"), [24.9, 24.7, 25.0], transformer)
    assert refuted.startswith("> transformer: **refuted** (BLEU -1.08, p 0.0") and refuted.endswith(
        "; 3 and 3 seeds, seed pairs −−−)"
    ), refuted
    equal = cell(Claim("~", "transformer", "translation"), [25.9, 26.0, 25.8], transformer)
    assert equal.startswith("≈ transformer: **confirmed** (BLEU -0.04, p 0.") and ", equivalence p 0.0" in equal
    assert cell(Claim(">", "transformer", "classification"), [24.9, 24.7, 25.0], transformer) == (
        "> transformer: not claimed by the paper (its claim is on classification; BLEU -1.08, 3 and 3 seeds, "
        "seed pairs −−−)"
    )


def record(train=(), valid=(), scores=None, last_update=0):
    """A run's record with what a test reads of it; the rest empty."""
    from mixer_plugin.experiments.record import RunRecord

    return RunRecord(
        experiment="t",
        model="m",
        seed=1,
        params=1,
        last_update=last_update,
        train=list(train),
        valid=list(valid),
        scores=scores or {},
        decode_speed=None,
    )


def compared(mine, theirs, p):
    """A comparison record as ``bootstraps.pooled`` gives it (seeds 1, 2, ...)."""
    seeds = lambda xs: [f"seed{i + 1}" for i in range(len(xs))]  # noqa: E731
    delta = sum(mine) / len(mine) - sum(theirs) / len(theirs)
    return dict(
        system=mine,
        baseline=theirs,
        p_value=p,
        delta=delta,
        sentence_sd=0.2,
        system_seeds=seeds(mine),
        baseline_seeds=seeds(theirs),
    )


def test_train_speed_is_the_median_over_every_seed(tmp_path):
    """The table's words/s comes from fairseq's train_inner lines: an interval holding a
    validation or a resume reads low, and one seed may have shared a busy machine, so the
    column is the median over every seed's intervals, not the mean of the first seed's."""
    from mixer_plugin.experiments.collect import ModelResult, parse_train_log

    seeds = {1: [120, 900, 950, 1000, 980], 2: [210, 1750, 1760, 1800, 1790], 3: [200, 1770, 1780, 1740, 1810]}
    logs = []
    for seed, figures in seeds.items():
        lines = [
            f"2026-11-23 10:{i:02d}:00 | INFO | train_inner | epoch 001:     {50 * i} / 900 loss=4.2, "
            f"wps={w}, ups=0.9, wpb=1850, num_updates={50 * (i + 1)}, train_wall=55"
            for i, w in enumerate(figures)
        ]
        (tmp_path / f"seed{seed}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
        logs.append(record(train=parse_train_log(tmp_path / f"seed{seed}.log")["train"]))
    result = ModelResult(model=None, runs=[tmp_path] * 3, records=logs)
    assert result.wps() == 1740  # the median of all fifteen intervals (seed 1 alone averages 790)
    assert ModelResult(model=None, runs=[], records=[]).wps() is None


def test_a_results_file_forgets_the_runs_that_are_gone(fake, tmp_path):
    """A recipe found wrong: its run folders are moved aside (and their committed copies
    removed) before the rows train again.  The results file must not go on showing the void
    figures until the first new run finishes."""
    import shutil

    from mixer_plugin.experiments import report

    exp = fake({"A": {}, "B": {}}, {"A": 0.1, "B": 0.3})
    report.write(exp)
    a, b = f"{bleu(tmp_path, 'A'):.2f}", f"{bleu(tmp_path, 'B'):.2f}"
    assert f"| {a} |" in (tmp_path / "tiny.md").read_text()
    shutil.rmtree(tmp_path / "work" / "tiny")
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    assert "| `A` |" in md and a not in md and b not in md


def test_a_summarizer_that_ignores_its_source_shows_in_the_table(fake, tmp_path):
    """The first summarization leaderboard scored ROUGE-L 12.65 with 38 distinct synopses
    for 1,930 descriptions, which the table did not show: it took reading the hypotheses
    to see that the model ignored its source.  A summarization table counts each row's
    distinct outputs; translation tables, where the count says nothing, keep their columns."""
    from mixer_plugin.experiments import report

    exp = fake({"A": {}, "B": {}}, {"A": 0.1, "B": 1.0}, metrics=("rouge",))
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    table = rows(md)
    assert "| distinct outputs |" in md
    assert "| 1 of 60 |" in table["B"] and "| 60 of 60 |" in table["A"], table
    exp = fake({"A": {}, "B": {}}, {"A": 0.1, "B": 1.0})
    report.write(exp)
    assert "distinct" not in (tmp_path / "tiny.md").read_text()


def plots_drawn(monkeypatch) -> dict:
    """Figure.savefig replaced: plot file name -> each panel's y label and lines, a line as
    (label, marker, colour, [[x, y], ...])."""
    from matplotlib.figure import Figure

    drawn = {}

    def save(fig, path, **kw):
        drawn[Path(path).name] = [
            (
                ax.get_ylabel(),
                [(ln.get_label(), ln.get_marker(), ln.get_color(), ln.get_xydata().tolist()) for ln in ax.lines],
            )
            for ax in fig.axes
        ]

    monkeypatch.setattr(Figure, "savefig", save)
    return drawn


def test_the_score_plot_shows_the_metric_the_claims_are_judged_on(request, tmp_path, monkeypatch):
    """The summarization leaderboard judged every claim on ROUGE-L while its score-against-
    speed plot drew ROUGE-1, the first metric of the file: the plot ranked local attention,
    multiNN and the transformer on a figure the verdicts never read (multiNN's R-1 lead was
    not significant, its R-L lead was).  A file that scores neither ROUGE nor BLEU (the
    classification experiment: accuracy) keeps its plot, on its own metric."""
    from mixer_plugin.experiments import collect, plots

    make_plots = plots.make_plots  # the fixture below leaves plots out
    exp = request.getfixturevalue("fake")({"A": {}, "B": {}}, {"A": 0.1, "B": 0.3}, metrics=("rouge",))
    for name, (r1, rl) in {"A": (40.0, 36.0), "B": (42.0, 35.0)}.items():
        run = tmp_path / "work" / "tiny" / name / "seed1"
        (run / "gen-test" / "score.json").write_text(json.dumps({"rouge1": r1, "rouge2": 18.0, "rougeL": rl}))
        (run / "train.log").write_text(TRAIN_LOG_LINE)
    drawn = plots_drawn(monkeypatch)
    make_plots(exp, collect.collect(exp), tmp_path)

    def scores_drawn():  # each panel's y label and its rows' scores
        return [(ylabel, [xy[0][1] for *_, xy in lines]) for ylabel, lines in drawn["score_vs_speed.png"]]

    assert scores_drawn() == [("R-L", [36.0, 35.0])], drawn
    exp = request.getfixturevalue("fake")({"A": {}, "B": {}}, {"A": 0.1, "B": 0.3}, metrics=("accuracy",))
    for name, accuracy in {"A": 80.0, "B": 75.0}.items():
        (tmp_path / "work" / "tiny" / name / "seed1" / "gen-test" / "score.json").write_text(
            json.dumps({"accuracy": accuracy})
        )
    drawn.clear()
    make_plots(exp, collect.collect(exp), tmp_path)
    assert scores_drawn() == [("accuracy", [80.0, 75.0])], drawn


def bleu(tmp_path: Path, model: str, seed: int = 1) -> float:
    """The fake run's BLEU (its hypotheses' own, from its score.json)."""
    return json.loads((tmp_path / "work" / "tiny" / model / f"seed{seed}" / "gen-test" / "score.json").read_text())[
        "bleu"
    ]


def pair_row(first: str, a: float, b: float) -> str:
    """A seed-by-seed line's pattern: ``first`` cells, then a, b, a - b and any p."""
    cells = " | ".join(f"{x:.2f}" for x in (a, b)) + f" | {a - b:+.2f} | "
    return rf"^\| {first} \| {re.escape(cells)}\d\.\d{{3}} \|$"


def kept_baseline(run: Path, name="bootstrap.json") -> str:
    """<model>/seed<N> of the baseline run a cached bootstrap compared against."""
    return "/".join(Path(json.loads((run / "gen-test" / name).read_text())["baseline"]).parts[-4:-2])


def test_rows_name_their_own_baselines_and_seeds_pair_by_seed(fake, tmp_path):
    """A row with a baseline of its own (interacting_heads' 16-head rows against 16-head
    MHA) is not printed under the file's baseline; its seed-by-seed rows show its own
    baseline's scores; and a row whose first seed is not the baseline's pairs each seed
    with the same seed (both printed the first seeds' test as a same-seed one)."""
    from mixer_plugin.experiments import report

    exp = fake(
        {
            "A": {"seeds": [1, 2, 3]},
            "B": {"seeds": [2, 3]},
            "C": {"seeds": [1, 2], "score": {"baseline": "C"}},
            "D": {"seeds": [1, 2], "score": {"baseline": "C"}},
        },
        {"A": 0.1, "B": 0.3, "C": 0.6, "D": 0.5},
    )
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    table = rows(md)
    assert "| Δ, p vs the row's baseline |" in md
    assert "| baseline |" in table["A"] and "| baseline |" in table["C"]
    gap = r"\| BLEU [-+]\d+\.\d\d \(2 and \d seeds: no p\) vs `%s` \|"  # two seeds: too few for a p
    assert re.search(gap % "C", table["D"]) and re.search(gap % "A", table["B"])
    # the first seeds' test pairs B's 2 with A's 1; seed by seed, each run meets the
    # baseline's run of the same seed, and the table prints that baseline's scores
    work = tmp_path / "work" / "tiny"
    assert kept_baseline(work / "B" / "seed2") == "A/seed1"
    assert kept_baseline(work / "B" / "seed2", "bootstrap-same-seed.json") == "A/seed2"
    assert kept_baseline(work / "B" / "seed3") == "A/seed3"
    assert "Seed by seed against `C`" in md
    assert re.search(pair_row("`D` \\| 2", bleu(tmp_path, "D", 2), bleu(tmp_path, "C", 2)), md, re.M), md
    assert re.search(pair_row("`B` \\| 2", bleu(tmp_path, "B", 2), bleu(tmp_path, "A", 2)), md, re.M), md


def test_a_row_with_one_seed_other_than_the_baselines_first_is_shown_against_the_same_seed(fake, tmp_path):
    """A decode of the transformer's seed 2 only (hard_ablation's hard_dec_samples4_decoded_soft):
    the main table's p pairs it with the baseline's first seed, another training; its
    same-seed test was made but the seed-by-seed table left out rows with one seed."""
    from mixer_plugin.experiments import report

    exp = fake({"A": {"seeds": [1, 2]}, "E": {"seeds": [2]}, "F": {}}, {"A": 0.1, "E": 0.2, "F": 0.3})
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    assert re.search(pair_row("`E` \\| 2", bleu(tmp_path, "E", 2), bleu(tmp_path, "A", 2)), md, re.M), md
    assert not re.search(r"^\| `F` \| 1 \|", md, re.M), md  # its one pair is the main table's


def test_the_baselines_later_seeds_meet_its_first_to_show_what_a_seed_alone_does(fake, tmp_path):
    """The summarization transformer's seed 2 beat its seed 1 by 1.13 ROUGE-L with bootstrap
    p 0.002: the same recipe, another seed, "significant".  The results said nothing of
    it, so a reader took a one-seed row's p < 0.05 for a difference in recipes.  Each later
    seed of a baseline is tested against its first seed, the test the claims' p is."""
    from mixer_plugin.experiments import report

    exp = fake({"A": {"seeds": [1, 2, 3]}, "B": {}}, {"A": 0.1, "B": 0.3})
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    assert "`A` against its own first seed" in md, md
    # each later seed against seed 1
    for seed in (2, 3):
        assert re.search(pair_row(str(seed), bleu(tmp_path, "A", seed), bleu(tmp_path, "A", 1)), md, re.M), md
    assert kept_baseline(tmp_path / "work" / "tiny" / "A" / "seed3", "bootstrap-vs-first-seed.json") == "A/seed1"
    exp = fake({"A": {}, "B": {"seeds": [1, 2]}}, {"A": 0.1, "B": 0.3})  # one baseline seed: nothing to show
    report.write(exp)
    assert "against its own first seed" not in (tmp_path / "tiny.md").read_text()


def test_per_source_scores_are_the_first_seeds(fake, tmp_path):
    """The per-source table is labelled "first seed": while a row's first seed is missing
    (being trained again), its second stood in under that label."""
    from mixer_plugin.experiments import report

    exp = fake({"A": {"seeds": [1, 2]}, "B": {}}, {"A": 0.1, "B": 0.3})
    for name, seed in (("A", 1), ("A", 2), ("B", 1)):
        score = tmp_path / "work" / "tiny" / name / f"seed{seed}" / "gen-test" / "score.json"
        score.write_text(json.dumps({**json.loads(score.read_text()), "by_source": {"x": {"lines": 60, "bleu": seed}}}))

    def exp_rows():
        table = (tmp_path / "tiny.md").read_text().split("Test BLEU per source")[1].split("\n\n")[1]
        return {line.split("|")[1].strip("` "): line for line in table.splitlines() if line.startswith("| `")}

    report.write(exp)
    assert exp_rows()["A"] == "| `A` | 1.00 |"
    shutil.rmtree(tmp_path / "work" / "tiny" / "A" / "seed1")  # seed 1 trains again
    report.write(exp)
    assert exp_rows()["A"] == "| `A` | – |" and exp_rows()["B"] == "| `B` | 1.00 |"


def test_a_cached_bootstrap_is_the_test_asked_for(fake, tmp_path):
    """The bootstrap cache held while its file was newer than both hypotheses: a changed
    baseline kept the old row's p-value under the new baseline's name."""
    models = {"A": {}, "B": {}, "C": {}}
    noise = {"A": 0.3, "B": 0.3, "C": 0.6}
    from mixer_plugin.experiments import report, spec_loader

    exp = fake(models, noise, baseline="A")
    report.write(exp)
    run = tmp_path / "work" / "tiny" / "B" / "seed1"
    assert kept_baseline(run) == "A/seed1"
    raw = yaml.safe_load(exp.path.read_text())  # the same runs, another baseline
    raw["score"]["baseline"] = "C"
    exp.path.write_text(yaml.safe_dump(raw))
    report.write(spec_loader.load(exp.path))
    assert kept_baseline(run) == "C/seed1"


def test_speed_columns_come_from_the_benchmarks_the_file_names(tmp_path, request):
    """The leaderboard's runs span sessions on different machines, two runs sharing each, so
    their own words/s compare nothing (one session's machine trained 1.6 times faster than
    the last's).  With ``speed:`` the columns are the idle-machine benchmarks of every row,
    each with its speed-up against that run's baseline; the runs' own timings stay out."""
    from mixer_plugin.experiments import bootstraps, collect, plots, report, spec_loader

    make_plots = plots.make_plots  # the fixture below leaves plots out
    exp = request.getfixturevalue("fake")({"A": {}, "B": {}, "C": {}}, {"A": 0.1, "B": 0.3, "C": 0.5})
    (tmp_path / "work" / "tiny" / "A" / "seed1" / "train.log").write_text(TRAIN_LOG_LINE)
    raw = yaml.safe_load(exp.path.read_text())
    raw["generate"] = {"flags": "--beam 4"}
    raw["speed"] = {"train": str(tmp_path / "train.json"), "decode": str(tmp_path / "decode.json")}
    exp.path.write_text(yaml.safe_dump(raw))
    exp = spec_loader.load(exp.path)
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    assert "| train words/s (x) | decode sent/s (x) |" in md and "999" not in md
    assert all(line.count("| – | – |") for line in rows(md).values())
    assert "- train speed: not benchmarked yet (`mixer-bench train" in md
    meta = {"command": "mixer-bench ...", "date": "2026-11-24 12:00 UTC", "rounds": 2, "sentences": 32}
    (tmp_path / "train.json").write_text(
        json.dumps(
            {
                "meta": meta,
                "rows": [{"model": "A", "wps": 3000.0, "speedup": 1.0}, {"model": "B", "wps": 3750.0, "speedup": 1.25}],
            }
        )
    )
    (tmp_path / "decode.json").write_text(
        json.dumps(
            {
                "meta": {**meta, "baseline": "A"},
                "rows": [
                    {"model": m, "L": L, "beam": b, "sent_per_s": v, "speedup": v / base}
                    for m, k in (("A", 1.0), ("B", 0.5))
                    for L, b, base in ((100, 4, 10.0), (25, 1, 80.0), (25, 4, 40.0))
                    for v in [base * k]
                ],
            }
        )
    )
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    table = rows(md)
    # decoding: the shortest L at the experiment's beam (4), not beam 1's figures
    assert "| 3,000 (1.00x) | 40.0 (1.00x) |" in table["A"] and "| 3,750 (1.25x) | 20.0 (0.50x) |" in table["B"]
    assert "| – | – |" in table["C"]  # a row the benchmarks have not timed
    assert "every hypothesis pinned to L = 25 tokens, beam 4" in md and "not benchmarked" not in md
    collected = collect.collect(exp)
    bootstraps.run_bootstraps(exp, collected)
    (tmp_path / "curves.png").write_bytes(b"a plot of runs that are gone")
    assert [p.name for p in make_plots(exp, collected, tmp_path)] == ["score_vs_speed.png"]  # no curves: no logs
    assert not (tmp_path / "curves.png").exists()


def test_the_learning_curves_draw_every_seed(request, tmp_path, monkeypatch):
    """The curves drew each row's first seed only.  The summarization leaderboard's multiNN
    spread 1.93 R-L over its seeds because its validation loss drops in a step that came
    750 updates later for seed 1 than for seeds 2 and 3, and the plot hid it: every seed's
    curve is drawn, in its row's colour, the first one marked and named."""
    from mixer_plugin.experiments import collect, plots

    make_plots = plots.make_plots  # the fixture below leaves plots out
    exp = request.getfixturevalue("fake")({"A": {"seeds": [1, 2, 3]}, "B": {}}, {"A": 0.1, "B": 0.3})
    for name, seeds in (("A", (1, 2, 3)), ("B", (1,))):
        for seed in seeds:
            (tmp_path / "work" / "tiny" / name / f"seed{seed}" / "train.log").write_text(
                "".join(
                    f"x | INFO | valid | epoch 001 | valid on 'valid' subset | loss {9 - u / 100 - seed:.2f} | "
                    f"num_updates {u}\n"
                    for u in (100, 200)
                )
            )
    drawn = plots_drawn(monkeypatch)
    make_plots(exp, collect.collect(exp), tmp_path)
    a, b = (plots.row_styles(["A", "B"])[m][0] for m in "AB")
    [(_, lines)] = drawn["curves.png"]
    assert [(label, color) for label, _, color, _ in lines] == [
        ("A", a),
        ("_seed2", a),
        ("_seed3", a),
        ("B", b),
    ], lines
    assert [[y for _, y in xy] for *_, xy in lines][:3] == [[7.0, 6.0], [6.0, 5.0], [5.0, 4.0]]


def test_the_curves_mark_where_each_run_peaked(tmp_path, request, monkeypatch):
    """A table trained until valid BLEU stops improving names each run's peak update; the
    curves mark that point on every seed's BLEU curve (a star in the row's colour), so a reader
    sees where each run stopped improving and that the stretch after it was flat."""
    from mixer_plugin.experiments import collect, plots

    make_plots = plots.make_plots  # the fixture below leaves plots out
    until_best = "--eval-bleu --best-checkpoint-metric bleu --maximize-best-checkpoint-metric --patience 2"
    exp = request.getfixturevalue("fake")(
        {"A": {"seeds": [1, 2], "train": until_best}, "B": {"train": until_best}}, {"A": 0.1, "B": 0.3}
    )
    bleus = {("A", 1): [10, 14, 13, 12], ("A", 2): [11, 12, 15, 14], ("B", 1): [9, 10, 11, 12]}
    for (name, seed), curve in bleus.items():
        (tmp_path / "work" / "tiny" / name / f"seed{seed}" / "train.log").write_text(
            "".join(
                f"x | INFO | valid | epoch 001 | valid on 'valid' subset | loss 5.0 | bleu {b} | "
                f"num_updates {250 * (i + 1)}\n"
                for i, b in enumerate(curve)
            )
        )
    drawn = plots_drawn(monkeypatch)
    make_plots(exp, collect.collect(exp), tmp_path)
    a, b = (plots.row_styles(["A", "B"])[m][0] for m in "AB")
    _, (_, lines) = drawn["curves.png"]
    stars = [(color, xy) for _, marker, color, xy in lines if marker == "*"]
    assert stars == [(a, [[500.0, 14.0]]), (a, [[750.0, 15.0]]), (b, [[1000.0, 12.0]])], lines


def test_every_row_keeps_its_own_style_in_the_plots():
    """The leaderboard's 17 rows outnumber matplotlib's ten default colours: its curves drew
    multiNN and talking heads in the same green.  Each row gets its own colour and marker
    (and line style), the same in both plots."""
    from mixer_plugin.experiments.plots import row_styles

    names = [f"row{i}" for i in range(30)]
    style = row_styles(names)
    assert len({(c, m) for c, m, _ in style.values()}) == 30
    assert len({s for _, _, s in style.values()}) == 3
    assert row_styles(names[:17])["row12"] == style["row12"]  # a row's style does not move as rows are added


def test_each_seeds_peak_is_fairseqs_best_and_a_run_that_hit_the_cap_is_marked():
    """The converged protocol's columns: the last validation with the best BLEU (fairseq's
    checkpoint_best.pt takes a tie), its score and the hours to it; a seed that trained to
    --max-update without its stopping rule ending it is marked (cap)."""
    from mixer_plugin.experiments.collect import Selection
    from mixer_plugin.experiments.table import peak_cells

    def log(bleus, last):
        valid = [{"num_updates": 250 * (i + 1), "loss": 5.0, "bleu": b} for i, b in enumerate(bleus)]
        train = [{"num_updates": u, "train_wall": 180.0} for u in range(50, last + 1, 50)]
        return record(train=train, valid=valid, last_update=last)

    r = [log([10.0, 12.5, 12.5, 11.0], 1000), log([9.0, 10.0, 11.0, 12.0], 1000)]
    bleu = Selection("bleu", True, patience=8)
    assert peak_cells(r, bleu, cap=2000) == ["750 / 1,000", "12.50 / 12.00", "0.8 / 1.0"]
    assert peak_cells(r, bleu, cap=1000)[0] == "750 (cap) / 1,000 (cap)"
    # a seed its stopping rule ended at the cap's update did not hit the cap
    assert peak_cells(r, Selection("bleu", True, patience=1), cap=1000)[0] == "750 / 1,000 (cap)"
    assert peak_cells(r, None, cap=1000) == ["–"] * 3


def test_the_seeds_rule_reads_each_rows_first_seed_against_the_baselines_peaks():
    """The converged protocol's seeds: a row's first seed at its valid peak against the mean of
    the baseline's three (25.80, 26.00, 26.40: spread 0.31, margin 0.61 over the 0.41 floor):
    within it seeds 2 and 3, beyond it one; until the baseline has two seeds the table waits."""
    from types import SimpleNamespace

    from mixer_plugin.experiments.collect import ModelResult, Selection
    from mixer_plugin.experiments.seed_tables import seeds_rule_table

    def result(name, bleus, seeds, decode_of=None):
        records = [record(valid=[{"num_updates": 250, "bleu": b}], last_update=250) for b in bleus]
        model = SimpleNamespace(name=name, seeds=seeds, decode_of=decode_of, score=SimpleNamespace(noise_floor=0.41))
        runs = [Path(f"seed{s}") for s in seeds[: len(bleus)]]
        return ModelResult(model, runs, records)

    base = result("transformer", [26.0, 25.8, 26.4], [1, 2, 3])
    near, far = result("near", [25.5], [1]), result("far", [24.0], [1])
    decoded = result("decoded", [20.0], [1], decode_of="transformer")
    bleu = Selection("bleu", True, patience=8)
    lines = seeds_rule_table([base, near, far, decoded], base, bleu)
    assert lines[0] == "### Seeds by the rule against `transformer`, on valid BLEU at the peak"
    rows = {line.split(" | ")[0].strip("| `"): line for line in lines if line.startswith("| `")}
    assert set(rows) == {"near", "far"}  # a decode trains nothing: no seeds of its own
    assert "| 25.50 | -0.57 | 0.61 | 3: within the margin |" in rows["near"]
    assert "| 24.00 | -2.07 | 0.61 | 1: beyond the margin |" in rows["far"]
    one = result("transformer", [26.0], [1, 2, 3])
    assert any(
        "waits for `transformer`'s seeds (1 of 3 finished)" in line for line in seeds_rule_table([one, near], one, bleu)
    )
    # a baseline of one seed by design (a recipe's screen): no seeds rule
    assert seeds_rule_table([result("t", [26.0], [1]), near], result("t", [26.0], [1]), bleu) == []
    # a row that is other rows' baseline (amendment 2) keeps its three seeds beyond the margin
    prenorm = result("prenorm", [24.0], [1, 2, 3])
    lines = seeds_rule_table([base, prenorm, near], base, bleu, baselines=["transformer", "prenorm"])
    cell = next(line for line in lines if line.startswith("| `prenorm`"))
    assert "| 1: beyond the margin; 3 as a baseline | 1, 2, 3 |" in cell
    assert "as a baseline" not in next(line for line in lines if line.startswith("| `near`"))


def test_the_recipe_rule_is_applied_step_by_step_on_the_validation_scores_and_waits_for_a_missing_run():
    """``choose``: each candidate against the choice before it (the mean of its seeds), the
    choice named once every candidate has a finished run; at a candidate without one the rule
    waits, since every later step reads the choice before it."""
    from types import SimpleNamespace

    from mixer_plugin.experiments.collect import ModelResult
    from mixer_plugin.experiments.seed_tables import choice_table
    from mixer_plugin.experiments.spec import Generate, Score

    def result(name, bleus):
        model = SimpleNamespace(
            name=name, score=Score(metrics=["bleu", "chrf"], noise_floor=0.41), generate=Generate(subset="valid")
        )
        runs = [Path(f"seed{i + 1}") for i in range(len(bleus))]
        return ModelResult(model, runs, [record(scores={"bleu": b}) for b in bleus])

    names = ["dropout0", "dropout01", "dropout02"]
    exp = SimpleNamespace(choose=names)
    lines = choice_table(exp, {n: result(n, b) for n, b in zip(names, ([30.0], [30.2, 30.8], [31.0]))})
    rows = [line for line in lines if line.startswith("| `")]
    assert lines[0] == "### Chosen by the rule, on valid BLEU"
    assert rows[0] == "| `dropout0` | 30.00 | 1 | – | – | `dropout0`: the first |"
    assert rows[1] == "| `dropout01` | 30.50 | 2 | `dropout0` | +0.50 | `dropout01`: gains more than 0.41 |"
    assert rows[2] == "| `dropout02` | 31.00 | 1 | `dropout01` | +0.50 | `dropout02`: gains more than 0.41 |"
    assert any(line.startswith("**Chosen: `dropout02`.**") for line in lines)
    lines = choice_table(exp, {n: result(n, b) for n, b in zip(names, ([30.0], [30.3], []))})
    assert "`dropout0`: `dropout01` gains 0.41 or less |" in lines[-4]
    assert lines[-2].startswith("The rule waits for `dropout02` (no finished run): the choice so far is `dropout0`.")
    assert not any("Chosen" in line for line in lines[1:])
    assert choice_table(SimpleNamespace(choose=[]), {}) == []


def test_a_run_trained_again_since_its_decode_has_no_result_until_decoded_again(fake):
    """The runner stamps a training's start and end; a run resumed for a longer budget (the
    converged protocol's cap raised from 12,500 to 25,000) keeps its old decode in its folder
    until the new one replaces it.  Before, the table showed that decode as the run's result,
    peaking before the new cap, and the recipe rule chose on it."""
    import os
    import time

    from mixer_plugin.experiments.collect import collect

    exp = fake({"A": {}}, {"A": 0.1})
    [run] = collect(exp)[0].runs  # a folder made by hand, no stamps: read as it is
    stamps = run / ".stages"
    stamps.mkdir()

    def stamp(name, at):
        (stamps / f"{name}.json").write_text('{"commands": []}')
        os.utime(stamps / f"{name}.json", ns=(at, at))

    def finished():
        return [r.name for r in collect(exp)[0].runs]

    t = time.time_ns()
    stamp("train.begun", t)
    for i, name in enumerate(("train", "average", "generate", "score")):
        stamp(name, t + i + 1)
    assert finished() == ["seed1"]
    stamp("train.begun", t + 10)  # trained again: its stamp goes until the training ends
    (stamps / "train.json").unlink()
    assert finished() == []
    stamp("train", t + 20)  # trained; the old decode still there
    assert finished() == []
    stamp("average", t + 21)
    stamp("generate", t + 22)
    (stamps / "score.json").unlink()  # scoring
    assert finished() == []
    stamp("score", t + 23)
    assert finished() == ["seed1"]


def test_the_readme_table_of_a_converged_experiment_shows_where_each_seed_peaked(tmp_path, monkeypatch):
    """README's table of an experiment trained until validation stops improving (the converged
    leaderboard): each seed's peak update, the valid BLEU there (mean ± std), test scores from
    the same committed records; a row that trained to the cap is marked, and the rows and seeds
    not finished yet are named below. An experiment with a fixed budget keeps its last valid loss."""
    from mixer_plugin.experiments import readme

    def record(bleus, test, last):
        valid = [{"num_updates": 250 * (i + 1), "loss": 5.0 - i / 10, "bleu": b} for i, b in enumerate(bleus)]
        return {
            "experiment": "conv",
            "model": "m",
            "seed": 1,
            "params": 1,
            "last_update": last,
            "train": [],
            "valid": valid,
            "scores": {"bleu": test, "chrf": 50.0},
            "decode_speed": None,
        }

    runs = {
        ("transformer", 1): record([10.0, 12.0, 11.0, 11.5], 25.0, 1000),
        ("transformer", 2): record([12.4, 12.0, 12.1], 25.4, 750),  # stopped by its rule
        ("mixer", 1): record([9.0, 10.0, 11.0, 12.0], 24.0, 1000),  # still improving at the cap
    }
    for (model, seed), rec in runs.items():
        (tmp_path / "results" / "conv" / "runs" / model / f"seed{seed}").mkdir(parents=True)
        (tmp_path / "results" / "conv" / "runs" / model / f"seed{seed}" / "run.json").write_text(json.dumps(rec))
    (tmp_path / "experiments").mkdir()
    flags = "--max-update 1000 --eval-bleu --best-checkpoint-metric bleu --maximize-best-checkpoint-metric --patience 2"
    for name, train in (("conv", flags), ("fixed", "--max-update 1000")):
        (tmp_path / "experiments" / f"{name}.yaml").write_text(
            yaml.safe_dump(
                {
                    "name": name,
                    "data": "debian_en_de",
                    "results": str(tmp_path / "results" / "conv.md"),
                    "train": train,
                    "models": {
                        "transformer": {"arch": "mixer_small_attn", "seeds": [1, 2, 3]},
                        "mixer": {"arch": "mixer_small_attn", "note": "a mixer"},
                        "late": {"arch": "mixer_small_attn"},
                    },
                },
                sort_keys=False,
            )
        )
    monkeypatch.setattr(readme, "CHECKOUT", tmp_path)
    table = readme.score_table("conv", {"bleu": "BLEU", "chrf": "chrF"}).splitlines()
    assert table[0] == "| row | seeds | peak update | valid BLEU at peak | BLEU | chrF |"
    assert table[2] == "| `transformer` | 2 | 500 / 250 | 12.20 ± 0.28 | 25.20 ± 0.28 | 50.00 ± 0.00 |"
    assert table[3] == "| `mixer`: a mixer | 1 | 1,000 (cap) | 12.00 | 24.00 | 50.00 |"
    # a campaign under way names what is still to come below the table
    assert table[4:] == ["", "Not finished yet: `transformer` (seed 3), `late`."]
    fixed = readme.score_table("fixed", {"bleu": "BLEU"}).splitlines()
    assert fixed[0] == "| row | seeds | BLEU | valid loss |" and fixed[3] == "| `mixer`: a mixer | 1 | 24.00 | 4.700 |"


def test_every_page_with_generated_blocks_is_checked_and_rewritten(tmp_path, monkeypatch, capsys):
    """The README and the protocol page both carry generated tables: --check names each stale
    page, a rewrite fixes every one, and a page with a block nobody generates stops them all
    unwritten; a page that does not exist is named."""
    from mixer_plugin.experiments import readme

    monkeypatch.setattr(readme, "BLOCKS", {"a": lambda: "A\n", "b": lambda: "B\n"})
    fresh, stale = tmp_path / "README.md", tmp_path / "protocol.md"
    fresh.write_text("top\n<!-- generated: a -->\nA\n<!-- end generated -->\n")
    stale.write_text("<!-- generated: b -->\nB, typed by hand\n<!-- end generated -->\nend\n")
    assert readme.main(["--check", str(fresh), str(stale)]) == 1
    assert "protocol.md" in capsys.readouterr().out
    assert readme.main([str(fresh), str(stale)]) == 0
    assert stale.read_text() == "<!-- generated: b -->\nB\n<!-- end generated -->\nend\n"
    assert readme.main(["--check", str(fresh), str(stale)]) == 0
    stale.write_text("<!-- generated: b -->\nB, typed by hand\n<!-- end generated -->\n")
    unknown = tmp_path / "other.md"
    unknown.write_text("<!-- generated: c -->\n<!-- end generated -->\n")
    with pytest.raises(SystemExit, match="'c'"):
        readme.main([str(stale), str(unknown)])
    assert "typed by hand" in stale.read_text()
    with pytest.raises(SystemExit, match="no such page: .*missing.md"):
        readme.main([str(tmp_path / "missing.md")])


def test_a_rows_verdicts_are_kept_and_shown_beside_those_of_the_file_it_comes_from(fake, tmp_path):
    """The converged leaderboard runs the 3,750-update one's rows again (``from:``): each
    report keeps its judged claims beside the results (claims.json), and a table whose rows
    come from another file shows that file's verdict beside its own, and which moved."""
    from mixer_plugin.experiments import readme, report, verdicts

    early = {"A": {"arch": "mixer_small_attn"}, "B": {"arch": "mixer_small_attn", "claims": "> A on translation"}}
    spec = {"name": "early", "data": "debian_en_de", "results": str(tmp_path / "early.md"), "models": early}
    (tmp_path / "early.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "early").mkdir()
    before = {"metric": "bleu", "verdict": "inconclusive", "delta": 0.12, "p": 0.31, "seeds": [1, 1]}
    (tmp_path / "early" / verdicts.VERDICTS).write_text(json.dumps({"B": {"> A": before}}))
    exp = fake({"A": {"from": "early.yaml"}, "B": {"from": "early.yaml"}}, {"A": 0.5, "B": 0.1})
    assert [str(c) for c in exp.models["B"].claims] == ["> A"] and exp.models["B"].source == "early.yaml"
    report.write(exp)
    after = json.loads((tmp_path / "tiny" / verdicts.VERDICTS).read_text())["B"]["> A"]
    gap = bleu(tmp_path, "B") - bleu(tmp_path, "A")
    assert after["verdict"] == "indication" and after["seeds"] == [1, 1] and after["p"] is None, after
    assert after["delta"] == pytest.approx(gap, abs=0.006)  # the bootstrap's own scores, unrounded
    md = (tmp_path / "tiny.md").read_text()
    assert "### The claims beside [early.md](early.md) (`early.yaml`, the rows' own file)" in md
    line = next(x for x in md.splitlines() if x.startswith("| `B` | > A |"))
    assert line.startswith(
        "| `B` | > A | inconclusive (BLEU +0.12, p 0.310; 1 and 1 seeds) | "
        f"indication, ahead (BLEU {after['delta']:+.2f}; "
    )
    assert line.endswith(" | **moved** |")
    # the README's paragraph of them reads the same records
    assert readme.verdicts_moved(exp) == "Moved: `B` > A (inconclusive → indication).\n"
    kept = dict(before, verdict="indication")
    (tmp_path / "early" / verdicts.VERDICTS).write_text(json.dumps({"B": {"> A": kept}}))
    assert readme.verdicts_moved(exp) == "Same: `B` > A (indication).\n"
    (tmp_path / "tiny" / verdicts.VERDICTS).write_text("{}")
    assert readme.verdicts_moved(exp) == "None judged in both yet.\n"


def test_the_findings_say_in_one_line_which_verdicts_the_seeds_rule_moved(tmp_path, monkeypatch):
    """A campaign's verdicts under the rule before 2026-12-07 (kept beside its claims) and
    today's, read from the two records: the claims that moved, before → now, in one line."""
    from mixer_plugin.experiments import findings

    monkeypatch.setattr(findings, "RESULTS", tmp_path)
    (tmp_path / "lb").mkdir()
    v = lambda verdict: {"metric": "bleu", "verdict": verdict, "delta": -1.0, "p": 0.001, "seeds": [1, 3]}  # noqa: E731
    before = {"a": {"> t": v("refuted")}, "b": {"~ t": v("confirmed")}}
    (tmp_path / "lb" / findings.BEFORE_SEEDS).write_text(json.dumps(before))
    (tmp_path / "lb" / findings.VERDICTS).write_text(json.dumps({"a": {"> t": v("indication")}, "b": before["b"]}))
    line = findings.rule_moved("lb")
    assert line == (
        "Judged again when the rule began to count the seeds (2026-12-07), 1 of its 2 verdicts moved: "
        "`a` > t (refuted → indication).\n"
    )
    (tmp_path / "lb" / findings.VERDICTS).write_text(json.dumps(before))
    assert findings.rule_moved("lb").endswith("none of its 2 verdicts moved.\n")
