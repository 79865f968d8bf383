"""A later protocol carries over an earlier one's finished runs (``carries:``, ``archive.stages_here``):
version 3 of the leaderboard takes version 2's runs that their own stopping rule ended before
version 2's cap, since its larger cap gives the same runs, and trains the capped ones again."""

import dataclasses
import json
import shutil

import pytest
from conftest import work_at

from mixer_plugin.experiments import archive, report, stages
from mixer_plugin.experiments.collect import ModelResult
from mixer_plugin.experiments.record import FILE, RunRecord
from mixer_plugin.experiments.spec import ExperimentError
from mixer_plugin.experiments.spec_loader import from_mapping, load
from mixer_plugin.paths import CHECKOUT

# what the commands read of the Debian recipe's prep.json (the languages, the references, the sources)
PREP = {
    "src": "en",
    "tgt": "de",
    "references": {"test": {"detok": "ref/test.de", "tok": "ref/test.tok.de"}},
    "sources": {"test": "raw/test.source"},
}
# docs/leaderboard.md, version 3: version 2's runs its rule ended before the cap of 25,000
RULE_ENDED = {"transformer/seed1", "local/seed1", "multiscale_encoder/seed1", "talking_heads/seed1"}
RULE_ENDED |= {"hard_cross_samples4_prenorm/seed1"}


@pytest.fixture
def v3(tmp_path, monkeypatch):
    """Version 3's experiment and its chains, with a private work/ and no committed run of its own."""
    work_at(monkeypatch, tmp_path / "work")
    exp = load(CHECKOUT / "experiments" / "leaderboard_v3.yaml")
    own = tmp_path / "kept"
    kept_runs = archive.kept_runs
    monkeypatch.setattr(archive, "kept_runs", lambda e: own if e.name == exp.name else kept_runs(e))
    prepared = stages.prepare_stages(list(exp.models.values()))
    chains = stages.chains(exp, list(exp.models.values()), prepared, prep={"debian_en_de": PREP})
    return exp, dict(chains), own


def restorable(exp, chains):
    out = set()
    for label, chain in chains.items():
        name, seed = label.split("/seed")
        if archive.restore_run(exp, exp.models[name], int(seed), chain, copy=False):
            out.add(label)
    return out


def test_version_3_carries_over_exactly_the_runs_their_rule_ended_before_the_cap(v3):
    """Of version 2's eighteen committed runs, the five its rule ended are version 3's runs; the
    ten that ended at the cap are not, nor the three multiNN runs: their rule ended them too and
    their commands are the same, but their computation is not (mixer dropout), so the file does
    not name their rows."""
    exp, chains, _ = v3
    assert exp.carries is not None and archive.carried(exp).name == "leaderboard_converged"
    assert restorable(exp, chains) == RULE_ENDED


def test_a_carried_run_is_restored_with_its_own_record_and_kept_once(v3):
    """Restored into version 3's work folder, a carried run keeps the record that ran (version 2's
    commands and cap); version 3 keeps no second copy of it, and restores it again."""
    exp, chains, own = v3
    chain = chains["talking_heads/seed1"]
    assert archive.restore_run(exp, exp.models["talking_heads"], 1, chain)
    run = stages.run_dir(exp, exp.models["talking_heads"], 1)
    record = RunRecord.load(run / FILE)
    assert record.experiment == "leaderboard_converged" and "25000" in record.train_commands()[-1]
    assert (run / "gen-test" / "hyp.txt").read_text(encoding="utf-8").count("\n") == record.scores["lines"]
    marker = json.loads((run / ".stages" / "restored.json").read_text())
    train = marker["train"]["commands"][-1]
    assert "50000" in train and "<work>/leaderboard_v3/talking_heads/seed1" in train, train
    # kept once, where it ran: version 3 keeps no copy, and a machine whose work/ is empty
    # restores it from version 2's again
    result = ModelResult(exp.models["talking_heads"], [run], [record])
    archive.keep_run_outputs(exp, [result])
    assert not own.exists()
    shutil.rmtree(run)
    assert archive.restore_run(exp, exp.models["talking_heads"], 1, chain)
    assert RunRecord.load(run / FILE) == record


def test_a_run_that_is_not_the_same_run_is_not_carried(v3, monkeypatch):
    """A cap lower than the carried run's, or any other flag changed, and the run trains again."""
    exp, chains, _ = v3
    chain = chains["talking_heads/seed1"]
    model = exp.models["talking_heads"]
    source = RunRecord.load(archive.kept_runs(archive.carried(exp)) / "talking_heads" / "seed1" / FILE)
    assert archive.stages_here(exp, source, chain) is not None
    for old, new in (("--max-update", "--max-update"), ("--seed", "--seed")):
        argv = list(chain[0].commands[-1])
        i = argv.index(old)
        argv[i + 1] = "20000" if old == "--max-update" else "2"
        changed = [dataclasses.replace(chain[0], commands=[argv]), *chain[1:]]
        assert not archive.restore_run(exp, model, 1, changed, copy=False), new


@pytest.mark.parametrize(
    "key,value,says",
    [
        (
            "carries",
            {"from": "nope.yaml", "rows": ["a"]},
            "carries.from: no experiment file 'nope.yaml' beside this one",
        ),
        ("carries", {"from": "x.yaml", "rows": ["b"]}, "carries.rows: no model 'b' in this file"),
        ("carries", {"from": "x.yaml", "rows": []}, "carries.rows: a list of this file's rows"),
        ("carries", {"from": "x.yaml", "row": ["a"]}, "carries: unknown key 'row'"),
        ("beside", {"from": "nope.yaml"}, "beside.from: no experiment file 'nope.yaml' beside this one"),
        ("beside", {"from": "x.yaml", "rows": {"b": "a"}}, "beside.rows: no model 'b' in this file"),
        ("beside", {"from": "x.yaml", "rows": ["a"]}, "beside.rows: a mapping of this file's rows to that file's"),
        ("beside", {"from": "x.yaml", "row": {}}, "beside: unknown key 'row'"),
    ],
)
def test_a_file_named_beside_this_one_and_rows_of_this_one(tmp_path, key, value, says):
    """``carries:`` and ``beside:`` (``depth``) name an experiment file beside this one and rows of this one."""
    (tmp_path / "x.yaml").write_text("name: x\n")
    raw = {"name": "x", "data": "debian_en_de", "models": {"a": {"arch": "mixer_small_attn"}}, key: value}
    with pytest.raises(ExperimentError) as e:
        from_mapping(raw, tmp_path / "x.yaml")
    assert says in str(e.value) and "\n" not in str(e.value)


def test_the_pages_read_a_carried_run_as_this_file_s(v3):
    """The README's tables read committed records without work/ (``archive.kept_records``): a
    carried run is version 3's there too, with its own record, and nothing else of version 2 is."""
    exp, _, _ = v3
    kept = archive.kept_records(exp)
    assert {f"{row}/seed{r.seed}" for row, recs in kept.items() for r in recs} == RULE_ENDED
    theirs = archive.kept_runs(archive.carried(exp))
    for row, recs in kept.items():
        assert recs == [RunRecord.load(theirs / row / f"seed{r.seed}" / FILE) for r in recs]


def test_the_page_links_the_folders_that_hold_its_records(v3):
    """Version 3's page links version 2's runs folder while every run it reads is carried (its
    own folder is not written yet: the link would lead nowhere), and both once one of its own is
    kept; tests/test_links.py checks the committed page's link leads somewhere."""
    exp, _, own = v3
    model = exp.models["talking_heads"]
    carried = [ModelResult(model, [], [archive.kept_record(exp, model, 1)])]
    out = archive.results_path(exp)
    assert report.kept_at(exp, [], out) == "no run's record is committed yet"
    assert report.kept_at(exp, carried, out).endswith(": [`leaderboard_converged/runs/`](leaderboard_converged/runs/)")
    own.mkdir()
    links = report.kept_at(exp, carried, out)
    assert links.count("](") == 2, links
    assert "kept/`]" in links and "leaderboard_converged/runs/`]" in links
