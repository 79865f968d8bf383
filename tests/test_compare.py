"""mixer-compare (mixer_plugin/experiments/compare.py): two committed run records side by side,
the figures the findings sections quote."""

import json

import pytest

from mixer_plugin.experiments import compare
from mixer_plugin.experiments.record import RunRecord
from mixer_plugin.paths import RESULTS

RUNS = RESULTS / "leaderboard_converged" / "runs"


def record(model, valid, *, patience=2, scores=None, params=1000, last=None):
    """A run record as ``archive`` keeps it: (update, bleu, loss) validations, one train stage."""
    points = [{"num_updates": float(u), "bleu": b, "loss": loss} for u, b, loss in valid]
    train = ["python", "-m", "fairseq_cli.train", "--best-checkpoint-metric", "bleu"]
    train += ["--maximize-best-checkpoint-metric", "--patience", str(patience)]
    return RunRecord(
        experiment="x",
        model=model,
        seed=1,
        params=params,
        last_update=last if last is not None else valid[-1][0],
        train=[{"num_updates": float(u), "train_wall": 360.0} for u, _, _ in valid],
        valid=points,
        scores=scores or {},
        decode_speed=None,
        stages={"train": {"commands": [train]}},
    )


def test_the_ninth_rows_figures_come_back_from_the_committed_records(capsys):
    """The converged leaderboard's findings (experiments/leaderboard_converged.findings.md) read the
    ninth row's figures from these two records; the command gives them back."""
    mine, theirs = RUNS / "fixed_head" / "seed1" / "run.json", RUNS / "transformer" / "seed1" / "run.json"
    compare.main([str(mine), str(theirs), "--bins", "4000,10000,16000"])
    out = capsys.readouterr().out
    for figure in [
        "params: 5,711,800 against 5,736,448 (-0.43 %)",
        "valid bleu peak 31.07 at 23,000",
        "stopped by its rule at 25,000",
        "the 8 validations after the peak read 30.31 to 30.85",
        "test bleu: 31.55 against 32.50 (-0.95)",
        "mine (precisions 62.5/38.5/26.6/19.0, BP 0.950)",
        "ddtp (1394 lines): 29.69 against 31.12 (-1.43)",
        "ahead at 3, behind at 86",
        "valid loss above theirs at 88 of 89",
        "mean BLEU gap up to 4,000: -1.64",
        "mean BLEU gap 4,000 < u <= 10,000: -1.95",
        "mean BLEU gap 10,000 < u <= 16,000: -1.58",
        "mean BLEU gap after 16,000: -1.41",
        "lowest valid loss (mine): 3.979 at 24,500",
        "first reaching their best valid BLEU 31.90: never",
    ]:
        assert figure in out


def test_curves_read_only_the_common_validations_and_the_first_to_reach_the_peak():
    mine = record("a", [(250, 1.0, 9.0), (500, 3.0, 7.0), (750, 5.0, 6.0), (1000, 4.0, 6.5)])
    theirs = record("b", [(250, 2.0, 8.0), (500, 3.0, 7.5), (750, 4.5, 6.2)])
    lines = [line.strip() for line in compare.curves(mine, theirs, [250])]
    assert lines[0].startswith("valid BLEU over the 3 validations both have: ahead at 1, behind at 1, level at 1")
    assert lines[1] == "valid loss above theirs at 1 of 3"
    assert "mean BLEU gap up to 250: -1.00 (1 validations)" in lines
    assert "mean BLEU gap after 250: +0.25 (2 validations)" in lines
    assert "lowest valid loss (mine): 6.000 at 750" in lines
    assert lines[-1] == "first reaching their best valid BLEU 4.50: at 750 (5.00)"


def test_the_peak_follows_the_runs_own_rule():
    """Patience 2: the rule stops two validations after 5.0, so the 6.0 after it is past the stop."""
    run = record("a", [(250, 1.0, 9), (500, 5.0, 8), (750, 4.0, 8), (1000, 4.5, 8), (1250, 6.0, 7)], last=1250)
    (line,) = compare.peak_lines(run)
    assert "peak 5.00 at 500, 0.20 h of training to it; stopped by its rule at 1,000" in line
    assert line.endswith("the 2 validations after the peak read 4.00 to 4.50")


@pytest.mark.parametrize(
    "content, says",
    [
        (None, "does not exist"),
        ("{not json", "is not JSON"),
        (json.dumps({"model": "a"}), "is not a run record (no decode_speed, experiment, last_update"),
        (json.dumps({"version": 9, "model": "a"}), "record version 9 is newer than this code reads"),
    ],
)
def test_a_bad_record_is_one_line_naming_the_file(tmp_path, content, says):
    path = tmp_path / "run.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as e:
        compare.main([str(path), str(path)])
    assert str(path) in str(e.value) and says in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("bins", ["4000,x", "4000,2000"])
def test_bins_that_do_not_increase_are_refused_naming_the_flag(tmp_path, bins, capsys):
    with pytest.raises(SystemExit):
        compare.main(["a", "b", "--bins", bins])
    assert "--bins" in capsys.readouterr().err
