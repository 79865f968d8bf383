"""A campaign as cluster jobs (``mixer-run --executor``, ``mixer_plugin/experiments/executors.py``):
each training with its decodes one job, a job warned of its end mid-training pauses at a
checkpoint and is requeued, and the campaign ends with the results of a local run.

Two clusters: submitit's local executor (every CI run), and a real SLURM started here
(Debian's munge, slurmctld and slurmd; skipped where slurmctld is not installed:
docs/experiments.md says how to run it)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import E2E_REPO, e2e_env, tiny_row_script
from faults import TRAIN, processes, tree, wait_for

from mixer_plugin.experiments import spec_loader
from mixer_plugin.experiments.executors import job_runs

submitit = pytest.importorskip("submitit", reason="pip install 'mixer-plugin[slurm]'")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

SPEED = ("train wps", "decode sent/s")  # the columns a run on a busy machine changes


def campaign(folder: Path, corpus: Path) -> Path:
    """Two trainings of 60 updates (a checkpoint every 10) and a decode of one of them."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "name": "jobs",
        "data": "debian_en_de",
        "prepare": f"--corpus {corpus} --vocab 400",
        "train": TRAIN,
        "generate": {"subset": "test", "average_last": 2, "flags": "--beam 2 --max-len-a 1.2 --max-len-b 5"},
        "score": {"metrics": ["bleu", "chrf"], "baseline": "attn"},
        "threads": 1,
        "results": str(folder / "results" / "jobs.md"),
        "models": {
            "attn": {"arch": "mixer_small_attn"},
            "ngram": {"arch": "mixer_small_attn", "train": "--encoder-mixers ngram --decoder-mixers ngram"},
            "attn_hard": {"decode_of": "attn", "overrides": {"decoder_cross_mixers": "hard"}},
        },
    }
    path = folder / "jobs.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def start(path: Path, *args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mixer_plugin.experiments.runner", str(path), *args],
        cwd=E2E_REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )


def outcome(folder: Path) -> dict:
    """What a finished campaign must share with a local one: each row of the results table
    less its speed columns, and each run's hypotheses."""
    md = (folder / "results" / "jobs.md").read_text()
    lines = md.splitlines()
    names = [c.strip() for c in next(line for line in lines if line.startswith("| model")).split("|")[1:-1]]
    rows = {}
    for line in lines:
        if line.startswith("| `") and line.count("|") == len(names) + 1:
            cells = dict(zip(names, (c.strip() for c in line.split("|")[1:-1])))
            rows[cells["model"]] = {k: v for k, v in cells.items() if k not in SPEED}
    hyps = {
        str(p.relative_to(folder / "work")): p.read_bytes()
        for p in sorted((folder / "work").glob("jobs/*/seed1/gen-*/hyp.txt"))
    }
    return {"rows": rows, "hyps": hyps}


@pytest.fixture(scope="module")
def local(tmp_path_factory, corpus):
    """The campaign run locally, uninterrupted: the outcome the jobs must reach."""
    folder = tmp_path_factory.mktemp("local")
    proc = start(campaign(folder, corpus), env=e2e_env(MIXER_WORK=str(folder / "work")))
    out = proc.communicate(timeout=900)[0]
    assert proc.returncode == 0, out[-3000:]
    return outcome(folder)


def jobs_env(folder: Path, **extra) -> dict:
    # the jobs import this checkout's package, wherever the interpreter's own copy is
    path = os.pathsep.join(p for p in (str(E2E_REPO), os.environ.get("PYTHONPATH", "")) if p)
    return e2e_env(MIXER_WORK=str(folder / "work"), PYTHONPATH=path, **extra)


def training_begun(folder: Path, model: str) -> Path:
    run = folder / "work" / "jobs" / model / "seed1"
    wait_for(run / "checkpoint_last.pt", 300)
    assert (run / "checkpoint_last.pt").exists(), f"{model} saved no checkpoint"
    return run


def assert_resumed(run: Path) -> None:
    """The training ran twice (its log heads each with its command), the second from a checkpoint."""
    log = (run / "train.log").read_text()
    assert len(re.findall(r"^\$ ", log, re.M)) == 2, log[-3000:]
    assert re.search(r"Loaded checkpoint \S+checkpoint_last\.pt \(epoch \d+ @ [1-9]\d* updates\)", log), log[-3000:]


def test_a_job_holds_a_training_and_the_decodes_of_its_checkpoints(tmp_path, corpus):
    exp = spec_loader.load(campaign(tmp_path, corpus))
    assert job_runs(exp, None, None) == {"attn/seed1": ["attn", "attn_hard"], "ngram/seed1": ["ngram"]}
    assert job_runs(exp, ["attn_hard"], [1]) == {"attn/seed1": ["attn_hard"]}  # its runner trains attn too


@pytest.mark.parametrize(
    "args,key,message",
    [
        (["--executor", "pbs"], None, "--executor must be one of local, slurm, submitit-local, not 'pbs'"),
        (["--gpus-per-run", "two"], None, "--gpus-per-run must be a number of GPUs >= 0, not 'two'"),
        (["--time-limit", "4h30"], None, "--time-limit takes a duration such as 2h30m, 90m, 45s or 5400, not '4h30'"),
        (["--time-limit", "5m"], None, "--time-limit must leave a job at least 6m (its last 3m pause the training)"),
        (["--executor", "slurm", "--stop-after", "1h"], None, "--stop-after: a job of --executor slurm ends at its"),
        ([], {"gpus_per_run": -1}, "cluster.gpus_per_run must be a number of GPUs >= 0, not -1"),
        ([], {"queue": "gpu"}, "cluster: unknown key 'queue'"),
    ],
    ids=["executor", "gpus", "time-limit", "time-limit-short", "stop-after", "file-gpus", "file-key"],
)
def test_bad_cluster_options_are_one_line_errors(args, key, message, tmp_path, corpus):
    path = campaign(tmp_path, corpus)
    if key:
        path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "cluster": key}))
    proc = start(path, *args, env=e2e_env(MIXER_WORK=str(tmp_path / "work")))
    out = proc.communicate(timeout=120)[0]
    err = [line for line in out.strip().splitlines() if not line.startswith("INFO:fairseq.tasks")]
    assert proc.returncode == 2 and len(err) == 1 and message in err[0], out
    assert not (tmp_path / "work").exists()


def test_jobs_warned_mid_training_are_requeued_and_end_as_a_local_run(local, tmp_path, corpus):
    """submitit's local executor: each job a process of this machine.  Mid-training, attn's
    job and every process under it get submitit's warning signal, as SLURM sends it before a
    time limit: the runner pauses at a checkpoint, the job is requeued and continues from it,
    and the campaign's table and hypotheses are the local run's."""
    path = campaign(tmp_path, corpus)
    proc = start(path, "--executor", "submitit-local", env=jobs_env(tmp_path))
    run = training_begun(tmp_path, "attn")
    runner = next(pid for pid, (_, _, cmd) in processes().items() if "--only attn,attn_hard" in cmd and "runner" in cmd)
    task = processes()[runner][0]  # submitit's process of the job
    for pid in [task, *tree(task, processes())]:
        os.kill(pid, signal.SIGUSR2)
    out = proc.communicate(timeout=900)[0]
    assert proc.returncode == 0, out[-4000:]
    assert re.search(r"attn/seed1: job \d+ done", out) and re.search(r"ngram/seed1: job \d+ done", out), out
    logs = "".join(p.read_text() for p in (tmp_path / "work" / "jobs" / "jobs").glob("*_log.*"))
    assert "Caught signal SIGUSR2" in logs and "Requeued job" in logs, logs[-3000:]
    assert "attn/seed1 train: paused after its checkpoint of update" in logs, logs[-3000:]
    assert_resumed(run)
    assert outcome(tmp_path) == local


# ---------------------------------------------------------------- a real SLURM on this machine
SLURM_CONF = """\
ClusterName=mixer
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={port}
SlurmdPort={port_d}
AuthType=auth/munge
AuthInfo=socket={root}/munge.sock
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobRequeue=1
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


@pytest.fixture
def slurm(tmp_path):
    """munged, slurmctld and slurmd of a one-node cluster (this machine, 2 CPUs) in a folder
    of their own; the environment its clients need (SLURM_CONF)."""
    if shutil.which("slurmctld") is None or shutil.which("munged") is None:
        pytest.skip("no slurmctld/munged: apt-get install slurm-wlm munge (docs/experiments.md)")
    if os.geteuid() != 0:
        pytest.skip("the test cluster runs its daemons as root")
    root = tmp_path / "slurm"
    for d in ("state", "spool"):
        (root / d).mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    os.chmod(root, 0o755)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    port = 17000 + os.getpid() % 1000 * 2
    conf = root / "slurm.conf"
    conf.write_text(SLURM_CONF.format(root=root, port=port, port_d=port + 1))
    env = dict(os.environ, SLURM_CONF=str(conf))
    started = []
    for argv in (
        ["munged", f"--socket={root}/munge.sock", f"--key-file={key}", f"--log-file={root}/munged.log",
         f"--pid-file={root}/munged.pid", f"--seed-file={root}/munged.seed", "--force"],
        ["slurmctld", "-i"],
        ["slurmd", "-N", "localhost"],
    ):  # fmt: skip
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            pytest.fail(f"{argv[0]} did not start: {done.stderr.strip()}")
        started.append(root / f"{argv[0]}.pid")
    try:
        deadline = time.monotonic() + 60
        while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline, (root / "slurmctld.log").read_text()[-2000:]
            time.sleep(1)
        yield env
    finally:
        subprocess.run(["scancel", "-u", "root"], env=env, capture_output=True)
        for pidfile in reversed(started):
            for _ in range(50):
                if pidfile.exists():
                    break
                time.sleep(0.1)
            if pidfile.exists():
                try:
                    os.kill(int(pidfile.read_text().split()[0]), signal.SIGTERM)
                except (ProcessLookupError, ValueError):
                    pass
        time.sleep(2)


def test_a_real_slurm_runs_requeues_and_collects_the_campaign(local, slurm, tmp_path, corpus):
    """Each job sbatch'ed to the cluster; mid-training one job is warned as a time limit warns it
    (``scancel --signal=USR2``: every process of the job) and the other requeued without
    warning (``scontrol requeue``, as a node lost); both continue from a checkpoint, and the
    table and the hypotheses are the local run's."""
    path = campaign(tmp_path, corpus)
    proc = start(path, "--executor", "slurm", "--time-limit", "30m", env={**jobs_env(tmp_path), **slurm})
    ids = {}
    for line in proc.stdout:
        m = re.search(r"(\w+)/seed1: job (\d+) submitted", line)
        if m:
            ids[m.group(1)] = m.group(2)
        if len(ids) == 2:
            break
    assert set(ids) == {"attn", "ngram"}, ids
    attn, ngram = training_begun(tmp_path, "attn"), training_begun(tmp_path, "ngram")
    subprocess.run(["scancel", "--signal=USR2", ids["attn"]], env=slurm, check=True)
    subprocess.run(["scontrol", "requeue", ids["ngram"]], env=slurm, check=True)
    out = proc.communicate(timeout=1200)[0]
    assert proc.returncode == 0, out[-4000:]
    logs = "".join(p.read_text() for p in (tmp_path / "work" / "jobs" / "jobs").glob("*_log.*"))
    assert "Caught signal SIGUSR2" in logs and "attn/seed1 train: paused after its checkpoint" in logs, logs[-3000:]
    assert_resumed(attn)
    assert_resumed(ngram)
    assert outcome(tmp_path) == local


def test_a_row_script_runs_under_sbatch_as_written(slurm, tmp_path, corpus):
    """A tiny row's script, sbatch'ed as it is written: its header asks for no GPU (its file's
    cluster: asks for none), a time limit and CPUs the one-node cluster has; the job trains,
    decodes and scores, and its log is appended to, not overwritten, by a second start."""
    script, env, run = tiny_row_script(tmp_path, corpus, time_limit="30m")
    header = [line for line in script.read_text().splitlines() if line.startswith("#SBATCH")]
    assert not any("gpus" in line for line in header) and "#SBATCH --time=30" in header, header
    for start in (1, 2):
        done = subprocess.run(
            ["sbatch", "--wait", script.name], cwd=tmp_path, env={**env, **slurm}, capture_output=True, text=True,
            timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, (done.stdout, done.stderr, [p.read_text()[-3000:] for p in tmp_path.glob("*.out")])
        assert json.loads((run / "gen-test" / "score.json").read_text())["bleu"] >= 0
        # each start of fairseq-train logs its task once: the second start appended to the first's log
        assert (run / "train.log").read_text().count("| INFO | fairseq_cli.train | task: ") == start


def test_a_row_script_warned_of_its_time_limit_is_requeued_and_goes_on(slurm, tmp_path, corpus):
    """SLURM's warning before the time limit (the header's --signal=B:USR1, sent here with
    ``scancel --batch``) reaches the script while it trains: the job is requeued, starts again,
    and fairseq-train goes on from its checkpoint to the end, decodes and scores."""
    script, env, run = tiny_row_script(tmp_path, corpus, time_limit="30m")
    text = script.read_text()
    assert "#SBATCH --signal=B:USR1@180" in text and "--max-update 4 " in text
    script.write_text(text.replace("--max-update 4 ", "--max-update 400 "))  # long enough to be warned in
    done = subprocess.run(["sbatch", "--parsable", script.name], cwd=tmp_path, env={**env, **slurm},
                          capture_output=True, text=True, check=True)  # fmt: skip
    job = done.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 600
    while not (run / "checkpoint_last.pt").is_file():
        assert time.monotonic() < deadline, [p.read_text()[-3000:] for p in tmp_path.glob("*.out")]
        time.sleep(0.5)
    subprocess.run(["scancel", "--batch", "--signal=USR1", job], env=slurm, check=True)
    while (
        not (run / "gen-test" / "score.json").is_file()
        or subprocess.run(["squeue", "-h", "-j", job], env=slurm, capture_output=True, text=True).stdout.strip()
    ):
        assert time.monotonic() < deadline, [p.read_text()[-3000:] for p in tmp_path.glob("*.out")]
        time.sleep(1)
    out = "".join(p.read_text() for p in tmp_path.glob("*.out"))
    assert f"the time limit is near: job {job} requeued" in out, out[-3000:]
    log = (run / "train.log").read_text()
    first, second = log.split("| INFO | fairseq_cli.train | task: ")[1:]  # two starts
    assert "done training" not in first and "done training" in second, log[-3000:]  # the first ended with its job
    assert "Loaded checkpoint" in second and "(epoch 1 @ 0 updates)" not in second, second[:3000]


def test_a_cluster_without_accounting_is_said_once(capsys):
    """submitit warns at every poll when sacct fails (no job accounting), flooding the console: one
    line, once; its other warnings pass as they are."""
    import logging

    from mixer_plugin.experiments.executors import OnceWithoutAccounting, quiet_without_accounting

    quiet_without_accounting()
    quiet_without_accounting()  # once per process
    log = logging.getLogger("submitit")
    assert sum(isinstance(f, OnceWithoutAccounting) for f in log.filters) == 1
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    log.addHandler(handler)
    try:
        for n in range(1, 4):
            log.warning(f"Call #{n} - Bypassing sacct error Command 'sacct' returned 1, status may be inaccurate.")
        log.warning("Bypassing state error: other")
    finally:
        log.removeHandler(handler)
    assert seen == [OnceWithoutAccounting.SAID, "Bypassing state error: other"]
