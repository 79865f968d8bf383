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


def experiment_files(tmp_path, deep_extra=None):
    """A 2+2 file and a 6+6 file read beside it, with results kept under tmp_path: rows
    ``base`` (the baseline), ``a`` in both, ``b`` only at 2+2 and ``c`` at 6+6 beside ``b2``."""
    model = {"arch": "mixer_small_attn"}
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


def finish(tmp_path, exp, row, bleu):
    """A committed record of (row, seed 1) of experiment ``exp`` with this test BLEU."""
    path = tmp_path / exp / "runs" / row / "seed1" / FILE
    path.parent.mkdir(parents=True)
    RunRecord(exp, row, 1, 100, 1000, [], [], {"bleu": bleu}, None).save(path)


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
