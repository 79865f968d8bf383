"""The run record (``experiments.record``): one type, one reader, its versions migrated."""

import json

import pytest

from mixer_plugin.experiments.record import VERSION, RecordError, RunRecord, stale


def a_record(**changes):
    fields = dict(
        experiment="tiny",
        model="attn",
        seed=2,
        params=1234,
        last_update=500,
        train=[{"num_updates": 50, "loss": 9.1, "wps": 1500.0}],
        valid=[{"num_updates": 250, "loss": 8.2, "bleu": 1.5}],
        scores={"bleu": 1.2, "chrf": 20.1, "lines": 10},
        decode_speed=55.5,
        stages={"train": {"commands": [["python", "-m", "fairseq_cli.train", "<work>/tiny/attn/seed2"]]}},
    )
    return RunRecord(**{**fields, **changes})


def test_a_record_saved_is_the_record_loaded(tmp_path):
    rec = a_record()
    rec.save(tmp_path / "run.json")
    assert RunRecord.load(tmp_path / "run.json") == rec
    text = (tmp_path / "run.json").read_text()
    assert text.startswith('{\n "version": %d,\n "experiment": "tiny"' % VERSION) and not stale(tmp_path / "run.json")
    assert rec.name == "attn/seed2" and rec.train_commands()[0][2] == "fairseq_cli.train"


def test_a_version_0_record_reads_as_the_same_run_and_is_rewritten(tmp_path):
    """Records committed before they had a version (2026-11-26 to 2026-12-06) hold every other
    field: they read as the same run, and ``stale`` names them until they are rewritten."""
    rec = a_record()
    old = rec.to_json()
    del old["version"]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(old, indent=1) + "\n")
    assert RunRecord.load(path) == rec and stale(path)
    RunRecord.load(path).save(path)
    assert not stale(path) and json.loads(path.read_text()) == rec.to_json()


@pytest.mark.parametrize(
    "change,says",
    [
        ({"valdi": []}, "unknown key valdi in a version"),
        ({"version": VERSION + 1}, f"record version {VERSION + 1} is newer than this code reads ({VERSION})"),
        ({"version": "1"}, "version '1' is no record version"),
    ],
)
def test_a_record_this_code_cannot_read_is_refused_in_one_line_naming_it(tmp_path, change, says):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({**a_record().to_json(), **change}))
    with pytest.raises(RecordError) as e:
        RunRecord.load(path)
    assert str(path) in str(e.value) and says in str(e.value) and "\n" not in str(e.value)
    assert not list(tmp_path.glob(".run.json.tmp*"))


def test_a_missing_field_is_named(tmp_path):
    data = a_record().to_json()
    del data["scores"], data["seed"]
    with pytest.raises(RecordError, match=r"is not a run record \(no scores, seed\)"):
        RunRecord.from_json(data, "x/run.json")
