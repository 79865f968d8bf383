"""Version 3's two depths on the pages (``depth``): each 6+6 row beside its 2+2 row, the README's
table of both and its gap-by-depth figure, from the committed records and the kept verdicts."""

import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from mixer_plugin.experiments import depth
from mixer_plugin.experiments.record import FILE, RunRecord
from mixer_plugin.experiments.spec_loader import load
from mixer_plugin.experiments.verdicts import claim_metric, kept_verdicts
from mixer_plugin.paths import CHECKOUT

SVG = "{http://www.w3.org/2000/svg}"


def test_every_row_of_the_depth_table_stands_beside_a_row_of_the_2_2_table():
    """The 6+6 file names its partner for the one row whose name differs (the lower-layer
    question: layer 1 of 2 there, layers 1-3 of 6 here); every other row has a namesake."""
    rows = depth.pairs(load(depth.DEEP))
    beside = {y.model.name: x.model.name for x, y in rows if y.model is not None and x.model is not None}
    assert beside["multinn_lower_half"] == "multinn_lower_layer"
    assert all(x.model is not None for x, y in rows if y.model is not None), "a 6+6 row with no 2+2 row"
    assert set(beside) == {m.name for m in load(depth.DEEP).models.values()}


@pytest.mark.parametrize(
    "name", sorted(p.stem for p in (CHECKOUT / "experiments").glob("*.yaml") if p.stem.startswith("leaderboard"))
)
def test_a_row_s_gap_is_the_gap_its_verdict_was_judged_on(name):
    """The figure's gap (the seed means of the records) is the Δ of the comparison whose p the
    kept verdict carries, wherever the claim is against the row's baseline: one comparison,
    to the records' rounding of each score to two decimals."""
    exp = load(CHECKOUT / "experiments" / f"{name}.yaml")
    kept = kept_verdicts(depth.results_path(exp))
    sides = depth.sides(exp)
    checked = 0
    for row, judged in kept.items():
        for claim in exp.models[row].claims:
            v = judged.get(str(claim))
            if v is None or claim.other != exp.models[row].score.baseline:
                continue
            assert v["metric"] == claim_metric(exp.models[row])
            assert sides[row].gap == pytest.approx(v["delta"], abs=0.011), (row, str(claim))
            checked += 1
    if name in ("leaderboard_converged", "leaderboard_v3"):
        assert checked >= 2


def experiment_files(tmp_path, deep_extra=None, seeds=(1,)):
    """A 2+2 file and a 6+6 file read beside it, with results kept under tmp_path: rows
    ``base`` (the baseline), ``a`` in both, ``b`` only at 2+2 and ``c`` at 6+6 beside ``b2``."""
    model = {"arch": "mixer_small_attn", "seeds": list(seeds)}
    common = {"data": "debian_en_de", "score": {"metrics": ["bleu"], "baseline": "base", "noise_floor": 0.41}}
    shallow = {
        "name": "shallow",
        "setting": "2+2 layers, toy",
        "results": str(tmp_path / "shallow.md"),
        "models": {"base": model, "a": {**model, "claims": ["> base on translation"]}, "b": model, "b2": model},
        **common,
    }
    deep = {
        "name": "deep",
        "setting": "6+6 layers, toy",
        "results": str(tmp_path / "deep.md"),
        "beside": {"from": "shallow.yaml", "rows": {"c": "b2"}},
        "models": {"base": model, "a": {**model, "claims": ["> base on translation"]}, "c": model},
        **common,
        **(deep_extra or {}),
    }
    for raw in (shallow, deep):
        (tmp_path / f"{raw['name']}.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    return tmp_path / "deep.yaml"


def finish(tmp_path, exp, row, bleu, seed=1):
    """A committed record of (row, seed) of experiment ``exp`` with this test BLEU."""
    path = tmp_path / exp / "runs" / row / f"seed{seed}" / FILE
    path.parent.mkdir(parents=True)
    RunRecord(exp, row, seed, 100, 1000, [], [], {"bleu": bleu}, None).save(path)


def test_the_figure_draws_each_finished_gap_and_says_what_waits(tmp_path):
    deep_path = experiment_files(tmp_path)
    for exp, row, bleu in [("shallow", "base", 30.0), ("shallow", "a", 28.5), ("shallow", "b2", 31.2)]:
        finish(tmp_path, exp, row, bleu)
    finish(tmp_path, "deep", "a", 29.0)  # its baseline at 6+6 not finished yet
    svg = ET.fromstring(depth.figure(deep_path))
    circles = [float(c.get("cx")) for c in svg.iter(f"{SVG}circle")][1:]  # the legend's first
    diamonds = list(svg.iter(f"{SVG}polygon"))[1:]
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    # the rows of the 6+6 file with a baseline: a, and c beside b2; b is no row at 6+6
    assert "a" in texts and "b2 · c" in texts and "b" not in texts
    assert len(circles) == 2 and not diamonds  # a's and b2's gaps at 2+2; nothing at 6+6 has its baseline
    ticks = {t.text: float(t.get("x")) for t in svg.iter(f"{SVG}text") if t.text in ("-2", "-1", "0", "+1", "+2")}
    per_bleu = ticks["0"] - ticks["-1"]
    assert sorted(circles) == pytest.approx(sorted(ticks["0"] + g * per_bleu for g in (-1.5, 1.2)), abs=0.06)
    assert "at 6+6, its baseline not finished" in texts and "not finished at 6+6" in texts
    finish(tmp_path, "deep", "base", 30.5)
    svg = ET.fromstring(depth.figure(deep_path))
    assert len(list(svg.iter(f"{SVG}polygon"))) == 2 and len(list(svg.iter(f"{SVG}line"))) > 0
    assert depth.figure(deep_path) == depth.figure(deep_path)  # the same records, the same bytes


def test_the_table_shows_both_settings_and_a_verdict_only_as_its_report_kept_it(tmp_path):
    deep_path = experiment_files(tmp_path)
    for exp, row, bleu in [("shallow", "base", 30.0), ("shallow", "a", 28.5), ("deep", "a", 29.0)]:
        finish(tmp_path, exp, row, bleu)
    kept = {"a": {"> base": {"metric": "bleu", "verdict": "refuted", "delta": -1.5, "p": 0.001, "seeds": [3, 3]}}}
    (tmp_path / "shallow" / "claims.json").write_text(json.dumps(kept))
    table = depth.side_by_side(deep_path)
    lines = table.splitlines()
    assert lines[0] == "| row | the paper's claim | 2+2 layers, toy: BLEU | verdict | 6+6 layers, toy: BLEU | verdict |"
    assert "| `a` | > base | 28.50 | **refuted** (BLEU -1.50, p 0.001; 3 and 3 seeds) | 29.00 | – |" in lines
    assert "| `b` |  | – | no claim |  |  |" in lines  # no row at 6+6: blank
    assert "| `b2` · `c` |  | – | no claim | – | no claim |" in lines
    assert "Not finished yet at 6+6 layers, toy: `base`, `c`." in lines[-1]


def test_a_partner_the_other_file_does_not_have_is_one_line_naming_it(tmp_path):
    deep_path = experiment_files(tmp_path, {"beside": {"from": "shallow.yaml", "rows": {"c": "nope"}}})
    with pytest.raises(SystemExit) as e:
        depth.pairs(load(deep_path))
    assert "beside.rows names 'nope', no row of shallow.yaml" in str(e.value)


def test_the_pilots_table_reads_each_precisions_benchmark(tmp_path):
    """The pilot's speeds, one row per mixer, depth and width, from the benchmark's files of each
    precision: the ratio of the two, and the hours of a planned run at the faster."""
    import json

    from mixer_plugin.experiments import pilot

    def bench(precision, speeds):
        path = tmp_path / pilot.PILOT.format(precision)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {"cpu": "AMD EPYC", "date": "2026-12-07 07:07 UTC", "updates": 60, "load_start": "0.10 0.20 0.30"}
        path.write_text(json.dumps({"meta": meta, "rows": [{"model": m, "ups": u} for m, u in speeds.items()]}))

    assert pilot.speed_table(tmp_path).startswith("Not measured yet")
    bench("fp32", {"transformer_2x2_d256": 2.0, "multinn_2x2_d256": 1.0, "transformer_6x6_d128": 1.0})
    bench("bf16", {"transformer_2x2_d256": 3.0, "multinn_2x2_d256": 1.25})
    lines = pilot.speed_table(tmp_path).splitlines()
    assert lines[0] == (
        "| row | layers | d | fp32 updates/s | bf16 updates/s | bf16 ÷ fp32 | hours for 10,000 updates, "
        "the faster precision |"
    )
    assert lines[2:5] == [
        "| `transformer` | 2+2 | 256 | 2.00 | 3.00 | 1.50x | 0.9 |",
        "| `multinn` | 2+2 | 256 | 1.00 | 1.25 | 1.25x | 2.2 |",
        "| `transformer` | 6+6 | 128 | 1.00 |  |  | 2.8 |",
    ]


def test_the_pilots_peak_line_says_whether_its_rule_or_its_cap_ended_it(monkeypatch):
    """A pilot training ended by its rule (2,000 updates without a better valid BLEU: patience
    8 at a validation every 250) is said to be; one its cap ended sooner after its peak is
    "still improving"; the hours are fairseq's clock, validations in."""
    from mixer_plugin.experiments import pilot
    from mixer_plugin.experiments.record import RunRecord

    def record(bleus, seed):
        valid = [{"num_updates": 250 * (i + 1), "bleu": b, "loss": 5.0} for i, b in enumerate(bleus)]
        train = [{"num_updates": v["num_updates"], "wall": v["num_updates"] * 2.0} for v in valid]
        last = valid[-1]["num_updates"]
        return RunRecord("depth_pilot_peak", "transformer_6x6_d128", seed, 1000, last, train, valid, {}, None)

    peaked = record([1, 2, 9, *[8] * 8], seed=1)  # best at 750, 8 validations without better: 2,750
    capped = record([1, 2, 3, 4, 5, 6, 5, 4], seed=2)  # best at 1,500, the cap at 2,000
    monkeypatch.setattr(pilot, "kept_records", lambda exp: {"transformer_6x6_d128": [peaked, capped]})
    lines = pilot.peak_lines().splitlines()
    assert lines[0] == (
        "- `transformer_6x6_d128` (seed 1, 1,000 parameters): valid bleu (greedy) peaked at update 750 at 9.00; "
        "its rule ended it at update 2,750. 1.53 h by the clock to its last update, validations in (0.50 updates/s)."
    )
    assert (
        "its cap ended it at update 2,000, 500 updates after the peak, fewer than the rule's 2,000: still " in lines[1]
    )


def test_the_pilots_rule_takes_the_widest_width_a_session_lets_peak_else_an_equal_budget(tmp_path, monkeypatch):
    """Rules 1 and 2 of version 4 read off the pilot: at each width the slowest 6+6 row's speed
    (fp32 at d=128, bf16 wider) and the peak run's validations set what a session trains; the
    peak run's width passes only if its rule ended it within that, and a width without a peak run
    never does; else the narrowest width's session, rounded down to 1,000 updates, for every row."""
    import json
    import shutil

    from mixer_plugin.experiments import pilot
    from mixer_plugin.experiments.record import RunRecord

    (tmp_path / "experiments").mkdir()
    for name in ("depth_pilot.yaml", "depth_pilot_peak.yaml"):
        shutil.copy(CHECKOUT / "experiments" / name, tmp_path / "experiments" / name)
    for precision, ups in (("fp32", 1.0), ("bf16", 0.5)):
        path = tmp_path / pilot.PILOT.format(precision)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [{"model": f"{row}_6x6_d{d}", "ups": ups * (2 if row == "transformer" else 1)}
                for row in ("transformer", "dynamicconv") for d in (256, 128)]  # fmt: skip
        path.write_text(json.dumps({"meta": {}, "rows": rows}))

    def peak_run(bleus):  # a validation every 250 updates, each 50 s beside 250 s of training
        valid = [{"num_updates": 250 * (i + 1), "bleu": b} for i, b in enumerate(bleus)]
        train = [{"num_updates": v["num_updates"], "train_wall": 250.0, "wall": 300.0 * (i + 1)}
                 for i, v in enumerate(valid)]  # fmt: skip
        return RunRecord(
            "depth_pilot_peak", "transformer_6x6_d128", 1, 1, valid[-1]["num_updates"], train, valid, {}, None
        )

    # a session of 8,100 s at 300 s a stretch of 250 updates: 27 stretches, 6,750 updates
    monkeypatch.setattr(pilot, "kept_records", lambda exp: {"transformer_6x6_d128": [peak_run([1, 9, *[8] * 8])]})
    lines = pilot.rule_lines(tmp_path).splitlines()
    assert lines[0].startswith("- d=256 (bf16): the slowest 6+6 row, `dynamicconv`, at 0.50 updates/s and 50 s a ")
    assert lines[0].endswith("not measured at this width, so it does not pass.")
    assert lines[1] == "- d=192: no bf16 speeds measured."
    assert lines[2] == (
        "- d=128 (fp32): the slowest 6+6 row, `dynamicconv`, at 1.00 updates/s and 50 s a validation, trains 6,750 "
        "updates in a session's 2:15:00; the 6+6 transformer would have to peak by update 4,750: it peaked at "
        "update 500 and its rule ended it at 2,500: passes."
    )
    assert lines[-1] == "Rule 1 chooses d=128: both depths train to version 3's stopping rule."
    monkeypatch.setattr(pilot, "kept_records", lambda exp: {"transformer_6x6_d128": [peak_run(range(28))]})
    lines = pilot.rule_lines(tmp_path).splitlines()
    assert lines[2].endswith(
        "its rule had not ended it by its cap, update 7,000, its best at update 7,000: does not pass."
    )
    assert lines[-1] == (
        "No width passes rule 1. Rule 2: every row at both depths trains at d=128 (fp32) for 6,000 updates, "
        "an equal update budget."
    )


def test_the_recipe_pilot_chooses_the_first_recipe_within_the_floor_of_the_best(tmp_path, monkeypatch):
    """Each recipe's score is its mean valid BLEU over the two depths; the first in the rule's
    order (fewest changes first) within the rerun floor of the best is chosen, and none before
    every run has finished."""
    import shutil

    from mixer_plugin.experiments import pilot
    from mixer_plugin.experiments.record import RunRecord

    (tmp_path / "experiments").mkdir()
    shutil.copy(CHECKOUT / pilot.RECIPE, tmp_path / pilot.RECIPE)
    bleu = {"postnorm_lr2e3": (20.0, 0.0), "postnorm_lr1e3": (18.0, 15.8), "prenorm_lr2e3": (18.5, 15.6)}

    def records(names):
        return {
            f"{r}_{n}x{n}": [RunRecord("depth_pilot_recipe", f"{r}_{n}x{n}", 1, 1, 1500, [], [], {"bleu": b}, None)]
            for r in names
            for n, b in zip((2, 6), bleu[r])
        }

    monkeypatch.setattr(pilot, "kept_records", lambda exp: records(["postnorm_lr2e3", "prenorm_lr2e3"]))
    lines = pilot.recipe_lines(tmp_path).splitlines()
    assert lines[2:5] == [
        "| `postnorm_lr2e3` | 20.00 | 0.00 | 10.00 |",
        "| `postnorm_lr1e3` | – | – | – |",
        "| `prenorm_lr2e3` | 18.50 | 15.60 | 17.05 |",
    ]
    assert lines[6].startswith("Not every run has finished")
    monkeypatch.setattr(pilot, "kept_records", lambda exp: records(bleu))
    said = pilot.recipe_lines(tmp_path).splitlines()[6]
    assert said == (
        "Chosen: `postnorm_lr1e3`, the first in the rule's order whose mean is within the rerun floor (0.41 BLEU) "
        "of the best (17.05)."
    )


def test_the_studys_cost_is_each_row_at_the_budget_at_its_pilot_speed(tmp_path, monkeypatch):
    """Version 4's machine-hours: each row of its two files at the rule's budget, at its pilot
    speed (a row the pilot did not time at the slower of the transformer and multiNN at its
    depth), a validation of the peak run's length every 250 updates; the planned runs count
    each file's seeds, the most the seeds rule can ask three of every row."""
    import json
    import shutil

    from mixer_plugin.experiments import pilot
    from mixer_plugin.experiments.record import RunRecord

    (tmp_path / "experiments").mkdir()
    for name in ("depth_pilot.yaml", "depth_pilot_peak.yaml", *(f.split("/")[1] for f in pilot.STUDY)):
        shutil.copy(CHECKOUT / "experiments" / name, tmp_path / "experiments" / name)
    ups = {"transformer": 4.0, "multinn": 2.0, "lightconv": 4.0, "dynamicconv": 1.0}
    rows = [{"model": f"{row}_{n}x{n}_d128", "ups": u / (1 if n == 2 else 2)} for row, u in ups.items() for n in (2, 6)]
    path = tmp_path / pilot.PILOT.format("fp32")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"meta": {}, "rows": rows}))
    valid = [{"num_updates": 250 * (i + 1), "bleu": float(i)} for i in range(28)]  # never peaks: rule 2
    train = [
        {"num_updates": v["num_updates"], "train_wall": 250.0, "wall": 300.0 * (i + 1)} for i, v in enumerate(valid)
    ]
    run = RunRecord("depth_pilot_peak", "transformer_6x6_d128", 1, 1, 7000, train, valid, {}, None)
    monkeypatch.setattr(pilot, "kept_records", lambda exp: {"transformer_6x6_d128": [run]})
    # dynamicconv 6+6 at 0.5 updates/s: 8,100 s at 500 + 50 s a stretch is 14 stretches, 3,500: budget 3,000
    assert pilot.rule(tmp_path).budget == 3000
    lines = pilot.cost_lines(tmp_path).splitlines()
    # 3,000 updates at 4.0 updates/s and 12 validations of 50 s: 1,350 s; at 2.0 and 12: 2,100 s
    assert "| `transformer` | 0.38 | 0.58 |" in lines
    assert "| `local` | 0.58 | 1.00 |" in lines  # the slower stand-in, multiNN
    assert "| `dynamicconv` | 1.00 | 1.83 |" in lines
    # planned: 3 transformer seeds and one of each other row at both depths; the most: three of every row
    hours = [0.375, 0.583, 0.583, 0.583, 0.583, 0.375, 1.0] + [0.583, 1.0, 1.0, 1.0, 1.0, 0.583, 1.833]
    planned = sum(hours) + 2 * (0.375 + 0.583)
    assert f"{planned:.0f} machine-hours" in lines[-1] and f"ask: {3 * sum(hours):.0f}." in lines[-1]
    # the peak run trained at 1.0 updates/s by fairseq's intervals, half the benchmark's 2.0 for its row:
    # every row's training twice as long, its validations not (12 of 50 s)
    for p in run.train:
        p["ups"] = 1.0
    assert pilot.rule(tmp_path).ratio == 0.5
    valid_h = 12 * 50 / 3600
    at = lambda h: (h - valid_h) * 2 + valid_h  # noqa: E731
    planned = sum(map(at, hours)) + 2 * (at(0.375) + at(0.583))
    assert pilot.cost_lines(tmp_path).splitlines()[-1] == (
        "At the peak run's own speed, 0.50x the benchmark's for its row (above), applied to every row: the "
        f"slowest run, `dynamicconv` at 6+6, {at(11 / 6):.2f} h; the planned runs {planned:.0f} machine-hours."
    )


def test_version_4_trains_what_its_pilot_chose_with_depth_the_only_change():
    """Version 4's two files train at the width and for the budget the pilot's rule chose (its
    setting and title say the budget), and differ only in depth: each row's flags are the same
    but for the layer counts, and the lower-half row's mixer lists, which put multiNN in the
    lower half at each depth."""
    from mixer_plugin.experiments import pilot
    from mixer_plugin.experiments.argv import flag_value
    from mixer_plugin.experiments.collect import train_flags

    got = pilot.rule()
    assert got is not None and got.budget is not None, "rule 2 chose version 4's budget"
    shallow, deep = (load(CHECKOUT / f) for f in pilot.STUDY)
    assert list(shallow.models) == list(deep.models) and deep.beside.path.name == "leaderboard_v4.yaml"
    for exp, layers in ((shallow, 2), (deep, 6)):
        assert f"{got.budget:,} updates" in exp.setting and f"{got.budget:,} updates" in exp.title
        assert exp.setting.startswith(f"{layers}+{layers} layers, d={got.width},")
        for m in exp.models.values():
            flags = train_flags(exp, m)
            assert int(flag_value(flags, "--max-update")) == got.budget
            assert int(flag_value(flags, "--encoder-embed-dim")) == got.width
            assert {flag_value(flags, f) for f in ("--encoder-layers", "--decoder-layers")} == {str(layers)}

    def depthless(exp, m):
        flags = list(train_flags(exp, m))
        for f in ("--encoder-layers", "--decoder-layers", "--encoder-mixers", "--decoder-mixers"):
            if f in flags:
                flags[flags.index(f) + 1] = "N"
        return flags

    for name in shallow.models:
        a, b = shallow.models[name], deep.models[name]
        assert depthless(shallow, a) == depthless(deep, b), name
        assert (a.arch, a.seeds, a.claims) == (b.arch, b.seeds, b.claims)
        for exp, m, layers in ((shallow, a, 2), (deep, b, 6)):
            mixers = flag_value(train_flags(exp, m), "--encoder-mixers")
            if name == "multinn_lower_half":
                assert mixers == (f"ngram:n=5*{layers // 2},attn*{layers // 2}" if layers > 2 else "ngram:n=5,attn")
            else:
                assert mixers == flag_value(train_flags(shallow, a), "--encoder-mixers")


def test_the_landing_page_names_the_first_run_until_one_finishes_then_shows_both_depths(tmp_path):
    deep_path = experiment_files(tmp_path)
    svg = tmp_path / "gap.svg"
    first = "`mixer-run experiments/shallow.yaml --only a --seeds 1`"  # the shallower file's first row
    assert depth.landing(deep_path, svg) == f"No run has finished yet; the first is {first}.\n"
    finish(tmp_path, "shallow", "base", 30.0)
    page = depth.landing(deep_path, svg)
    assert page.startswith(depth.side_by_side(deep_path)) and page.endswith("(docs/gap.svg)\n")


def test_what_moved_with_depth_is_the_depth_rule_over_four_rows_seeds(tmp_path):
    """Version 4's rule: a row's change of gap from 2+2 to 6+6, judged by
    ``claims.gap_change_test`` with each depth's bootstrap sd from the verdict its report kept;
    an indication until every one of the four rows has three seeds and each depth its sd."""
    import shutil

    from mixer_plugin.experiments import claims

    deep_path = experiment_files(tmp_path, seeds=(1, 2, 3))
    assert depth.moved_lines(deep_path) == (
        "No row has its gap at both depths yet.\n\nWaiting for a gap at both depths: `a`, `b2 · c`.\n"
    )
    scores = {
        ("shallow", "base"): [30.0, 30.2, 29.8],
        ("shallow", "a"): [28.4, 28.5, 28.6],  # -1.5
        ("deep", "base"): [31.0, 31.2, 30.8],
        ("deep", "a"): [31.0, 30.9, 31.1],  # 0.0: gained 1.5 with depth
    }
    for (exp, row), bleus in scores.items():
        finish(tmp_path, exp, row, bleus[0])
    [line, _, waits] = depth.moved_lines(deep_path).splitlines()  # seed 1 of each: 28.4 - 30.0 and 31.0 - 31.0
    assert line == (
        "- `a`: BLEU gap -1.60 at 2+2, +0.00 at 6+6; change +1.60: indication, it gained on `base` with depth "
        "(seeds 1 and 1 at 2+2, 1 and 1 at 6+6; a reading needs 3 of each)."
    )
    assert waits == "Waiting for a gap at both depths: `b2 · c`."
    for (exp, row), bleus in scores.items():
        for seed, bleu in enumerate(bleus[1:], start=2):
            finish(tmp_path, exp, row, bleu, seed)
    for exp, sd in (("shallow", 0.1), ("deep", 0.2)):
        kept = {"a": {"> base": {"metric": "bleu", "verdict": "x", "delta": 0, "sentence_sd": sd, "seeds": [3, 3]}}}
        (tmp_path / exp / "claims.json").write_text(json.dumps(kept))
    test = claims.gap_change_test(
        *(scores[k] for k in [("deep", "a"), ("deep", "base"), ("shallow", "a"), ("shallow", "base")]), (0.2, 0.1)
    )
    assert test.p < claims.ALPHA
    line = depth.moved_lines(deep_path).splitlines()[0]
    assert line.endswith(
        f": **moved with depth**, it gained on `base` (p {test.p:.3f}; seeds 3 and 3 at 2+2, 3 and 3 at 6+6)."
    )
    shutil.rmtree(tmp_path / "deep" / "runs" / "a")
    for seed, bleu in enumerate([29.5, 29.6, 29.4], start=1):  # -1.5 again: the gap did not move
        finish(tmp_path, "deep", "a", bleu, seed)
    assert ": **did not move** (equivalence p " in depth.moved_lines(deep_path).splitlines()[0]


def test_a_run_still_improving_at_the_budget_is_named_by_version_3s_rule(monkeypatch):
    """Version 4's runs end at its budget; one whose best valid BLEU came within version 3's
    stretch (8 validations of 250 updates) before its last update was still improving."""
    deep_path = depth.STUDIES["gap_by_depth_v4"][0]

    def run(best_at, seed):
        valid = [{"num_updates": u, "bleu": 20.0 + (u <= best_at) * u / 1000} for u in range(250, 7001, 250)]
        return RunRecord("leaderboard_v4", "transformer", seed, 1, 7000, [], valid, {}, None)

    runs = {"leaderboard_v4": {"transformer": [run(5250, 1), run(4750, 2)]}, "leaderboard_v4_deep": {}}
    monkeypatch.setattr(depth, "kept_records", lambda exp: runs[exp.name])
    assert depth.improving_lines(deep_path) == (
        "Still improving at the budget by version 3's rule (a better valid BLEU within the last 2,000 updates): "
        "`transformer` seed 1 at 2+2 (best 25.25 at update 5,250). "
        "Not improving: `transformer` seed 2 at 2+2 (best 24.75 at update 4,750).\n"
    )
    runs["leaderboard_v4"] = {}
    assert depth.improving_lines(deep_path) == "No run has finished yet.\n"
