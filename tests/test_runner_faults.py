"""The runner under faults: two runners of one experiment, a runner killed at every
point of a campaign (``faults.py``), a guard whose parent dies, a damaged
``checkpoint_last.pt``.  Linux only (/proc, the parent-death signal)."""

import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import E2E_REPO
from faults import POINTS, STAGES, Campaign, differences, point_began, processes, survivors, tree, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_a_campaign_killed_at_every_point_ends_as_an_uninterrupted_one(tmp_path, corpus):
    """Killed inside each stage, the results write and the commit (SIGKILL, as the OOM
    killer does, and SIGTERM and SIGINT), its checkpoint_last.pt cut in half once, and
    started again each time: no process of a killed runner outlives it, and the campaign
    ends with the records of one never interrupted, bit for bit.  The runner used to leave
    its training running after a kill -9, and a damaged checkpoint_last.pt failed every
    rerun."""
    reference = Campaign(tmp_path / "reference", corpus)
    took = reference.complete()
    expected = reference.record()
    faulted = Campaign(tmp_path / "faulted", corpus)
    rng = random.Random(33)
    plan = {
        "prepare": signal.SIGKILL,
        "train": signal.SIGKILL,
        "average": signal.SIGKILL,
        "generate": signal.SIGTERM,
        "score": signal.SIGINT,
        "results": signal.SIGKILL,
        "commit": signal.SIGKILL,
    }
    assert tuple(plan) == POINTS
    for point, sig in plan.items():
        # the results write copies the run's outputs in its first tenth of a second (a
        # uniform moment of its half second mostly lands in its plots): killed there
        after = rng.uniform(0, 0.04) if point == "results" else rng.uniform(0.1, 0.5) * took[point]
        kill = faulted.kill(point, after, sig, damage=point == "train")
        assert kill is not None, (point, faulted.log[-20:])
        assert kill.survivors == [], (point, kill)
        if point in STAGES:
            assert kill.landed == "inside the stage", (kill, faulted.log[-20:])
        if point == "results":  # a half-built copy of the run's outputs left behind
            assert kill.landed == "inside the write", (kill, faulted.log[-20:])
    faulted.complete()
    out = "\n".join(faulted.log)
    assert "checkpoint_last.pt does not load" in out and "resuming from checkpoint_" in out, out
    assert "mixer-run: stopped by SIGTERM" in out and "mixer-run: stopped by SIGINT" in out
    assert differences(expected, faulted.record()) == [], out
    assert faulted.overlaps() == [] and faulted.trainings() >= 1
    damaged = list(faulted.run.glob("checkpoint_last.pt.damaged-*"))
    assert len(damaged) == 1  # kept aside, never deleted


def test_two_runners_of_one_experiment_train_each_run_once(tmp_path, corpus):
    """Started two seconds apart (two terminals), both runners trained both runs into the
    same folders (every validation line twice in one log; the second even moved the
    first's training aside as 'trained with other flags').  Now the second waits for the
    data the first prepares, skips the run the first holds with one line naming it, and
    trains the other."""
    c = Campaign(tmp_path, corpus)
    spec = c.exp.read_text().replace("seeds:\n    - 1", "seeds:\n    - 1\n    - 2")
    c.exp.write_text(spec)
    first = c.start()
    time.sleep(2)
    second = c.start()
    outs = [p.communicate(timeout=600)[0] for p in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outs
    both = "\n".join(outs)
    for seed in (1, 2):
        c.run = c.work / "faults" / "transformer" / f"seed{seed}"
        log = (c.run / "train.log").read_text()
        assert log.count("$ ") == 1 and c.trainings() == 1 and c.overlaps() == [], (seed, both)
        assert both.count(f"transformer/seed{seed} train: started") == 1, both
    assert "skipped, another runner holds" in both and "which prepares" in both, both
    assert not list((c.work / "faults" / "transformer").glob("seed*.stale-*"))
    md = (c.repo / "results" / "faults.md").read_text()
    assert "| `transformer` | 55,808 | 60 | 2 |" in md, md  # the last writer saw both runs


def test_a_paused_campaign_continues_and_ends_as_an_uninterrupted_one(tmp_path, corpus):
    """SIGUSR1 inside the training (what `sbatch --signal=B:USR1@600` sends before a job's time
    runs out; `--stop-after` raises the same pause from a timer): the training ends right
    after its next checkpoint, no stage starts, and the runner exits with 75 (EX_TEMPFAIL)
    saying what it paused; the same command continues from that checkpoint, and the campaign
    ends with the records of one never interrupted.  Before, a session's end could only kill
    the runner, losing the training since its last checkpoint."""
    reference = Campaign(tmp_path / "reference", corpus)
    reference.complete()
    expected = reference.record()
    c = Campaign(tmp_path / "paused", corpus)
    proc = c.start()
    for _, line in c.lines(proc):
        if point_began(line) == "train":
            wait_for(c.run / "checkpoint_last.pt", 120)  # a checkpoint saved: a pause worth making
            proc.send_signal(signal.SIGUSR1)
            break
    c.log += proc.stdout.read().splitlines()
    assert proc.wait(60) == 75, c.log[-20:]
    out = "\n".join(c.log)
    assert "SIGUSR1: pausing" in out and "paused by SIGUSR1; trainings ended at a checkpoint" in out, out
    assert re.search(r"train: started \(\S+; \d+ threads, OpenMP PASSIVE, fp32\)", out), out  # how it trains
    log = (c.run / "train.log").read_text()
    saved = re.findall(r"Saved checkpoint \S+ \(epoch \d+ @ (\d+) updates", log)
    assert f"train: paused after its checkpoint of update {saved[-1]} " in out, out
    assert "done training" not in log and not (c.run / ".stages" / "train.json").exists()
    assert not list(c.run.glob("gen-*")), "a stage started after the pause"
    c.complete()
    log = (c.run / "train.log").read_text()
    assert re.search(rf"Loaded checkpoint \S+checkpoint_last\.pt \(epoch \d+ @ {saved[-1]} updates\)", log), log
    assert differences(expected, c.record()) == [] and c.overlaps() == []


def test_a_runner_told_when_to_stop_pauses_then(tmp_path, corpus):
    """--stop-after: the same pause from a timer.  Due while the data is prepared, it lets the
    preparation finish and starts nothing more, saying which runs it kept from starting."""
    c = Campaign(tmp_path, corpus)
    proc = c.start("--stop-after", "1s")
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == 75, out
    assert "--stop-after 1s: pausing" in out and "data prepare: done" in out, out
    assert "paused by --stop-after 1s; not started: transformer/seed1" in out, out
    assert not c.run.exists()


def only_child(parent: int, timeout: float = 10) -> int:
    """The pid of ``parent``'s one child, once it has started."""
    deadline = time.monotonic() + timeout
    while not [p for p, rec in processes().items() if rec[0] == parent] and time.monotonic() < deadline:
        time.sleep(0.05)
    [child] = [p for p, rec in processes().items() if rec[0] == parent]
    return child


def storm(proc: subprocess.Popen, seconds: float):
    """SIGTERM, SIGHUP and SIGINT to ``proc`` without a pause, for ``seconds`` or until it ends."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                break


GUARDED = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {folder!r})
    import guard
    proc = guard.start(["sleep", "60"])
    print(proc.pid, flush=True)
    time.sleep(60)
""")


@pytest.mark.parametrize("pdeathsig", [True, False], ids=["parent-death-signal", "polling"])
def test_a_guarded_command_dies_with_its_parent(pdeathsig, tmp_path):
    """kill -9 of the process that started a command under the guard ends the command
    within seconds: by the parent-death signal, and without it (not Linux) by polling."""
    folder = str(E2E_REPO / "mixer_plugin" / "experiments")
    if not pdeathsig:  # the guard must find out by itself: a copy of it that never asks for the signal
        source = (Path(folder) / "guard.py").read_text()
        call = "    set_parent_death_signal(signal.SIGTERM)\n"
        assert call in source
        (tmp_path / "guard.py").write_text(source.replace(call, ""))
        folder = str(tmp_path)
    script = tmp_path / "parent.py"
    script.write_text(GUARDED.format(folder=folder))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    guard_pid = int(parent.stdout.readline())
    sleeper = only_child(guard_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    t0 = time.monotonic()
    while sleeper in processes() and time.monotonic() - t0 < 8:
        time.sleep(0.05)
    assert sleeper not in processes(), "the guarded command outlived its runner"
    assert guard_pid not in processes()


HOLDER = textwrap.dedent("""
    import sys, time
    from mixer_plugin.experiments.locks import Lock
    Lock(sys.argv[1]).acquire()
    print("held", flush=True)
    time.sleep(60)
""")


def test_a_held_lock_names_its_holder_and_a_dead_holders_lock_is_taken_over(tmp_path):
    """A second taker learns who holds a run (pid, host, since); once that holder is
    killed, the kernel has freed its lock and the next taker says whose it took over."""
    import json
    import socket
    from types import SimpleNamespace

    from mixer_plugin.experiments.locks import Held, Lock
    from mixer_plugin.experiments.schedule import Runner

    run = tmp_path / "seed1"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(run)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    with pytest.raises(Held) as held:
        Lock(run).acquire()
    assert (held.value.holder.pid, held.value.holder.host) == (holder.pid, socket.gethostname())
    assert str(holder.pid) in held.value.who() and "since 20" in held.value.who()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    said = []
    runner = SimpleNamespace(progress=SimpleNamespace(say=said.append))
    with Lock(run) as lock:
        Runner.took_over(runner, "tiny/seed1", lock)
    assert said == [f"tiny/seed1: taking over the lock of {lock.took_over} (it is gone)"]
    assert lock.took_over.pid == holder.pid
    # released cleanly: the record is emptied, so the next taker takes over nobody
    with Lock(run) as lock:
        assert lock.took_over is None
    # a record left from another host: its lock is free here, which is that host's word
    (tmp_path / "seed1.lock").write_text(json.dumps({"pid": 1, "host": "elsewhere", "since": "2026-11-25 10:00"}))
    said.clear()
    with Lock(run) as lock:
        Runner.took_over(runner, "tiny/seed1", lock)
    assert said == [
        "tiny/seed1: taking over the lock of pid 1 on elsewhere since 2026-11-25 10:00 "
        "(on another host, it ended or lost its lock)"
    ]


def test_a_guard_told_to_stop_many_times_at_once_still_ends_its_command(tmp_path):
    """Signals that arrive together (a dying runner, a closing terminal) each run the
    guard's handler, one inside another.  A handler that took a lock (threading.Event.set)
    deadlocked the guard with the lock held by the handler it interrupted: the sweep found a
    guard asleep on that lock, its training left running (and holding its run's lock)."""
    guard_py = E2E_REPO / "mixer_plugin" / "experiments" / "guard.py"
    proc = subprocess.Popen(
        [sys.executable, "-I", str(guard_py), str(os.getpid()), "--", "sleep", "60"], start_new_session=True
    )
    sleeper = only_child(proc.pid)
    storm(proc, 2)  # each handler likely to land inside another
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the guard hung in its signal handlers, its command still running")
    assert sleeper not in processes()


def test_a_runner_told_to_stop_many_times_at_once_stops_once(tmp_path, corpus):
    """The runner's own handler (Ctrl-C pressed again and again, a terminal closing) takes
    no lock either: under a storm of SIGINT, SIGTERM and SIGHUP it stops its stages, says
    so once, and exits, leaving no process behind.  It used to wait for its guards with
    Popen.wait, whose lock the thread it interrupted held while waiting for the same guard:
    ten seconds lost, then 'processes [...] did not end' of a guard long gone."""
    c = Campaign(tmp_path, corpus)
    proc = c.start()
    for _, line in c.lines(proc):
        if "data prepare: started" in line:
            break
    time.sleep(1)
    before = tree(proc.pid, processes())
    storm(proc, 1)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the runner hung in its signal handler")
    out = "\n".join(c.log) + proc.stdout.read()
    assert proc.returncode in (128 + signal.SIGINT, 128 + signal.SIGTERM, 128 + signal.SIGHUP), out
    assert out.count("mixer-run: stopped by") == 1 and "did not end" not in out, out
    time.sleep(2)
    assert survivors(before, str(tmp_path)) == []
