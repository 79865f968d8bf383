"""fairseq's early-stopping rule and wall clock read back from a whole training log
(mixer_plugin/experiments/trainlog.py): the same as fairseq's own for an unbroken training,
and what an unbroken training would have had for one resumed after a kill."""

import random
import sys
from types import SimpleNamespace

import pytest
import torch

from mixer_plugin.experiments import checkpoints
from mixer_plugin.experiments.collect import Selection, peak
from mixer_plugin.experiments.record import RunRecord
from mixer_plugin.experiments.trainlog import parse_train_log, stopping_point


def fairseq_stop(values, patience, maximize):
    """Where fairseq's own rule (fairseq_cli.train.should_stop_early) stops over ``values``,
    one validation each 250 updates: the update, or None."""
    from fairseq_cli.train import should_stop_early

    for attr in ("best", "num_runs"):
        if hasattr(should_stop_early, attr):
            delattr(should_stop_early, attr)
    cfg = SimpleNamespace(checkpoint=SimpleNamespace(patience=patience, maximize_best_checkpoint_metric=maximize))
    for i, v in enumerate(values):
        if should_stop_early(cfg, v):
            return 250 * (i + 1)
    return None


@pytest.mark.parametrize("maximize", [True, False])
def test_the_rule_stops_where_fairseqs_own_does(maximize):
    """On many validation histories (ties included: the log rounds), the stop is fairseq's and the
    kept point holds the best score of the stretch, the last of equal ones (checkpoint_best.pt is
    saved again on a tie)."""
    rng = random.Random(0)
    for _ in range(300):
        values = [
            rng.choice([10.0, 10.5, 11.0, 11.5, 12.0]) + rng.randint(0, 8) * 0.25 for _ in range(rng.randint(1, 30))
        ]
        patience = rng.randint(1, 6)
        valid = [{"num_updates": 250 * (i + 1), "bleu": v} for i, v in enumerate(values)]
        best, stopped = stopping_point(valid, "bleu", maximize, patience)
        assert stopped == fairseq_stop(values, patience, maximize)
        seen = values[: (stopped or 250 * len(values)) // 250]
        top = max(seen) if maximize else min(seen)
        assert best["bleu"] == top
        assert best["num_updates"] == 250 * (len(seen) - seen[::-1].index(top))


def log_lines(segments):
    """The lines of a fairseq-train log of several trainings one after another (the runner
    appends a resumed one): each segment a list of (update, valid BLEU or None), a train_inner
    point every 50 updates, 1 s an update.  As fairseq logs them: each interval's own
    train_wall, a wall clock that reads 0 after a resume, and a checkpoint saved after each
    validation."""
    lines = []
    for i, segment in enumerate(segments):
        lines.append("$ python -m fairseq_cli.train ...")
        for update, bleu in segment:
            for u in range(update - 200, update + 1, 50):
                lines.append(
                    f"2026-11-26 06:21:37 | INFO | train_inner | epoch 001:     50 / 1354 loss=5.0, "
                    f"num_updates={u}, lr=0.001, train_wall=50, wall={0 if i else u}"
                )
            if bleu is not None:
                lines.append(
                    f"2026-11-26 06:26:03 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 5.0 | "
                    f"bleu {bleu} | num_updates {update} | best_bleu {bleu}"
                )
                lines.append(
                    f"2026-11-26 06:26:04 | INFO | fairseq.checkpoint_utils | Saved checkpoint "
                    f"run/checkpoint_1_{update}.pt (epoch 1 @ {update} updates, score {bleu}) (writing took 0.2 s)"
                )
    return lines


def write_log(path, segments):
    path.write_text("\n".join(log_lines(segments)) + "\n")


# a training with patience 2, killed after update 750; resumed from 750, fairseq counts from
# zero against its first validation (11.0) and so trains on past 1,000, where an unbroken
# training stopped, to a later best at 1,500
KILLED = [(250, 10.0), (500, 12.0), (750, 11.5)]
RESUMED = [(1000, 11.0), (1250, 11.8), (1500, 12.5), (1750, 12.0), (2000, 12.1)]


def test_a_resumed_training_peaks_and_stops_where_an_unbroken_one_would(tmp_path):
    write_log(tmp_path / "train.log", [KILLED, RESUMED])
    parsed = parse_train_log(tmp_path / "train.log")
    log = RunRecord("x", "m", 1, None, parsed["last_update"], parsed["train"], parsed["valid"], {}, None)
    assert fairseq_stop([b for _, b in KILLED + RESUMED], 2, True) == 1000  # the unbroken training's stop
    p = peak(log, Selection("bleu", True, patience=2))
    assert (p.update, p.value, p.stopped) == (500, 12.0, 1000)
    assert p.hours == pytest.approx(500 / 3600)
    # without a stopping rule the best of the whole log; the hours count the intervals before
    # the resume and after it (fairseq's wall clock reads 0 there)
    p = peak(log, Selection("bleu", True, patience=0))
    assert (p.update, p.stopped) == (1500, None)
    assert p.hours == pytest.approx(1500 / 3600)


def test_averaging_up_to_the_best_reads_the_rule_from_the_whole_log(tmp_path):
    """mixer-average --upto-best --log: the checkpoints ending at the best the stopping rule keeps
    over the whole log (the rule's settings from checkpoint_best.pt's config), not at
    checkpoint_best.pt, which the resumed training moved to a validation past its stop."""
    rule = {"patience": 2, "best_checkpoint_metric": "bleu", "maximize_best_checkpoint_metric": True}

    def save(name, updates):
        state = {
            "model": {"w": torch.full((2,), float(updates))},
            "optimizer_history": [{"num_updates": updates}],
            "cfg": {"checkpoint": rule},
        }
        torch.save(state, tmp_path / name)

    for u in range(250, 2001, 250):
        save(f"checkpoint_1_{u}.pt", u)
    save("checkpoint_best.pt", 1500)
    write_log(tmp_path / "train.log", [KILLED, RESUMED])
    out = tmp_path / "avg.pt"
    checkpoints.main([str(tmp_path), "--last", "2", "--upto-best", "--output", str(out)])
    assert torch.load(out, weights_only=True)["model"]["w"].tolist() == [1375.0, 1375.0]  # fairseq's best: 1,500
    checkpoints.main(
        [str(tmp_path), "--last", "2", "--upto-best", "--log", str(tmp_path / "train.log"), "--output", str(out)]
    )
    assert torch.load(out, weights_only=True)["model"]["w"].tolist() == [375.0, 375.0]  # (250 + 500) / 2
    with pytest.raises(SystemExit, match=r"--log: .*nowhere\.log does not exist"):
        checkpoints.main(
            [str(tmp_path), "--last", "2", "--upto-best", "--log", str(tmp_path / "nowhere.log"), "--output", str(out)]
        )
    with pytest.raises(SystemExit, match="add --upto-best"):
        checkpoints.main([str(tmp_path), "--last", "2", "--log", str(tmp_path / "train.log"), "--output", str(out)])


# A stand-in for fairseq-train resumed: it prints the given log lines as fairseq would (a
# pause after each checkpoint saved, which it also writes as checkpoint_last.pt, longer than
# the guard's 1 s between looks at a stop) and leaves a mark that it ran.  With
# FAKE_SAVE_ON_TERM set, the SIGTERM that ends it comes too late for the next checkpoint: it
# saves and logs that one first (a training saving checkpoints faster than the runner looks).
FAKE_TRAIN = """
import os, signal, sys, time
from pathlib import Path
lines, run = Path(sys.argv[1]).read_text().splitlines(), Path(sys.argv[2])
(run / "ran").write_text("")

def save(line):
    (run / "checkpoint_last.pt").write_text(line)
    print(line, flush=True)

def late(*_):
    save(next(line for line in lines[i + 1:] if "Saved checkpoint" in line))
    sys.exit(0)

if os.environ.get("FAKE_SAVE_ON_TERM"):
    signal.signal(signal.SIGTERM, late)
for i, line in enumerate(lines):
    if "Saved checkpoint" in line:
        save(line)
        time.sleep(1.5)
    else:
        print(line, flush=True)
"""
RULE = ["--best-checkpoint-metric", "bleu", "--maximize-best-checkpoint-metric", "--patience", "2"]


def fake_training(tmp_path, before, then, rule=RULE):
    """A train stage whose log holds the training ``before`` and whose command, with the
    fairseq flags ``rule``, replays ``then``."""
    from mixer_plugin.experiments.stages import Stage

    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "fake_train.py").write_text(FAKE_TRAIN)
    (tmp_path / "then.log").write_text("\n".join(log_lines([then])[1:]) + "\n")
    write_log(tmp_path / "train.log", [before])
    torch.save({"model": {}, "optimizer_history": [{"num_updates": before[-1][0]}]}, tmp_path / "checkpoint_last.pt")
    argv = [sys.executable, str(tmp_path / "fake_train.py"), str(tmp_path / "then.log"), str(tmp_path), *rule]
    return Stage("train", [argv], tmp_path / "train.log", [tmp_path / "checkpoint_last.pt"])


def valid_updates(log):
    return [int(p["num_updates"]) for p in parse_train_log(log)["valid"]]


def test_the_runner_ends_a_resumed_training_where_its_rule_stops_the_unbroken_one(tmp_path, monkeypatch):
    """fairseq counts --patience from zero after a resume and would train on to 2,000; the
    runner ends it once the checkpoint of 1,000, where the whole log's rule stops, is saved."""
    from mixer_plugin.experiments import running

    monkeypatch.setattr(running, "STOP_POLL", 0.05)
    stage = fake_training(tmp_path, KILLED, RESUMED)
    said = []
    running.execute(stage, threads=1, say=said.append)
    assert valid_updates(stage.log) == [250, 500, 750, 1000]
    assert any("stopped at update 1000" in s for s in said), said


def test_a_training_its_rule_had_ended_is_not_resumed(tmp_path, monkeypatch):
    """Killed after fairseq's stop and before the runner's stamp: started again, the runner
    does not resume it (fairseq would count from zero and train on)."""
    from mixer_plugin.experiments import running

    monkeypatch.setattr(running, "STOP_POLL", 0.05)
    stage = fake_training(tmp_path, KILLED + RESUMED[:1], RESUMED[1:])
    said = []
    running.execute(stage, threads=1, say=said.append)
    assert not (tmp_path / "ran").exists()
    assert valid_updates(stage.log) == [250, 500, 750, 1000]
    assert any("stopped at update 1000" in s for s in said), said


def test_a_training_without_a_stopping_rule_runs_to_its_end(tmp_path, monkeypatch):
    from mixer_plugin.experiments import running

    monkeypatch.setattr(running, "STOP_POLL", 0.05)
    stage = fake_training(tmp_path, KILLED, RESUMED[:2], rule=RULE[:-2])  # no --patience
    running.execute(stage, threads=1, say=lambda s: None)
    assert valid_updates(stage.log)[-1] == 1250


def test_a_patience_that_is_no_number_is_left_to_fairseqs_one_line_error():
    """The runner reads --patience before it starts fairseq-train: a value that is no integer
    means no rule of ours, and fairseq's argparse then stops the training in one line naming
    the flag (a ValueError traceback here would come first)."""
    from mixer_plugin.experiments.argv import stopping_rule

    assert stopping_rule(["--patience", "eight", "--best-checkpoint-metric", "bleu"]).patience == -1
    assert stopping_rule(["--patience=8"]).patience == 8


@pytest.mark.parametrize("rule", [RULE, RULE[:-2]], ids=["stopping-rule", "fixed-budget"])
def test_a_pausing_runner_ends_a_training_right_after_its_next_checkpoint(rule, tmp_path, monkeypatch):
    """Asked to pause (SIGUSR1, --stop-after) while a training runs, the runner ends it once
    its next checkpoint is saved, the moment it loses nothing, and says which (StagePaused:
    unfinished, so the next run continues from there)."""
    from mixer_plugin.experiments import running

    monkeypatch.setattr(running, "STOP_POLL", 0.05)
    improving = [(500, 12.0), (750, 12.5), (1000, 13.0)]
    stage = fake_training(tmp_path, KILLED[:1], improving, rule=rule)  # resumed at 250; saves at 500, 750, ...
    with pytest.raises(running.StagePaused, match="after its checkpoint of update 500"):
        running.execute(stage, threads=1, say=lambda s: None, pausing=lambda: True)
    assert valid_updates(stage.log) == [250, 500]
    assert "(epoch 1 @ 500 updates" in (tmp_path / "checkpoint_last.pt").read_text()


def test_a_training_that_cannot_reach_its_cap_in_time_ends_at_its_first_checkpoint(tmp_path, monkeypatch):
    """Given a deadline (the runner's --stop-after), a training whose updates left to its
    --max-update, at the speed of this start by the clock, end after it is ended at its first
    checkpoint, saying why (StageTooLong, a pause: it continues from there where time allows);
    with the time, the same training runs to its end."""
    import time

    from mixer_plugin.experiments import running

    monkeypatch.setattr(running, "STOP_POLL", 0.05)
    no_rule = RULE[:-2]
    short = fake_training(tmp_path / "short", KILLED, RESUMED, rule=[*no_rule, "--max-update", "100000000"])
    with pytest.raises(running.StageTooLong, match=r"cannot end in the time it was given: at [\d.]+ updates/s .*"
                       r"its 99,999,000 updates to --max-update 100,000,000 take about .*, and --stop-after "
                       r"leaves 0:[0-5]\d; ended after its checkpoint of update 1,000"):  # fmt: skip
        running.execute(stage=short, threads=1, say=lambda s: None, deadline=time.monotonic() + 60)
    assert valid_updates(short.log) == [250, 500, 750, 1000]
    enough = fake_training(tmp_path / "enough", KILLED, RESUMED, rule=[*no_rule, "--max-update", "2000"])
    running.execute(stage=enough, threads=1, say=lambda s: None, deadline=time.monotonic() + 3600)
    assert valid_updates(enough.log) == [250, 500, 750, 1000, 1250, 1500, 1750, 2000]


def test_a_pause_names_the_checkpoint_the_training_ended_at(tmp_path, monkeypatch):
    """A checkpoint saved between the runner's last look at the log and the training's end
    (CI: a 24-update training saving every 4 updates) is where the training continues from:
    the pause names it, not the one the runner saw last (before: 500 said, 750 saved)."""
    from mixer_plugin.experiments import running

    monkeypatch.setattr(running, "STOP_POLL", 0.05)
    monkeypatch.setenv("FAKE_SAVE_ON_TERM", "1")
    improving = [(500, 12.0), (750, 12.5), (1000, 13.0)]
    stage = fake_training(tmp_path, KILLED[:1], improving, rule=RULE[:-2])
    with pytest.raises(running.StagePaused, match="after its checkpoint of update 750 "):
        running.execute(stage, threads=1, say=lambda s: None, pausing=lambda: True)
    assert "(epoch 1 @ 750 updates" in (tmp_path / "checkpoint_last.pt").read_text()


def test_a_pause_at_the_checkpoint_where_the_rule_ends_the_training_finishes_it(tmp_path, monkeypatch):
    """The checkpoint a pause would end the training at is the one where its stopping rule
    ends it anyway: the training is finished, not paused."""
    from mixer_plugin.experiments import running

    monkeypatch.setattr(running, "STOP_POLL", 0.05)
    stage = fake_training(tmp_path, KILLED, RESUMED)
    said = []
    running.execute(stage, threads=1, say=said.append, pausing=lambda: True)
    assert valid_updates(stage.log) == [250, 500, 750, 1000]
    assert any("stopped at update 1000" in s for s in said), said


def test_a_trainings_progress_line_says_where_its_rule_will_stop_it(tmp_path):
    """The runner's progress line of a training until validation stops improving names its best
    validation so far and the update where the rule ends it unless it improves (read over the
    whole log, as the runner ends it); a training without a rule shows its updates alone."""
    from mixer_plugin.experiments.progress import training_status
    from mixer_plugin.experiments.stages import Stage

    write_log(tmp_path / "train.log", [KILLED])
    argv = ["fairseq-train", "data", "--max-update", "3000"]
    stage = Stage("train", [argv + RULE], tmp_path / "train.log", [])
    said = "750/3000 updates; valid bleu 12 at 500 is the best: stops at 1,000 unless it improves"
    assert training_status(stage) == said
    assert training_status(Stage("train", [argv], tmp_path / "train.log", [])) == "750/3000 updates"
