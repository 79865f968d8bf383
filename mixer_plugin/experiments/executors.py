"""A campaign as cluster jobs: ``mixer-run FILE --executor slurm`` submits each training, with
the decodes of its checkpoints, as one SLURM job through submitit (the library of fairseq's
own hydra launcher), waits for the jobs, then writes the results once.

A job is this runner itself, restricted to one (model, seed): ``mixer-run FILE --only MODEL
--seeds N --executor local`` in a process of the job, so that the locks, the stamps, the
resume from ``checkpoint_last.pt`` and the pause work in a job as they do anywhere.

Before a job's time limit, and when it is preempted, SLURM sends it submitit's signal (USR2,
``SIGNAL_DELAY_S`` ahead).  submitit then calls ``RunJob.checkpoint``, which pauses the runner
as SIGUSR1 does (its training ends after its next checkpoint, exit status ``PAUSED``) and
hands submitit the same job again, which submitit requeues; the requeued job's runner
continues from that checkpoint.  A job requeued without warning (``scontrol requeue``, a
node lost) continues from the last checkpoint written, as a killed runner does.

submitit is imported only here and only for ``slurm`` / ``submitit-local``
(``pip install 'mixer-plugin[slurm]'``)."""

import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..paths import WORK, shown
from .signals import PAUSED
from .spec import EXECUTORS, Cluster, Experiment, ExperimentError, duration

# seconds between SLURM's warning (submitit's USR2) and the job's end: the pause's time to let
# the training reach its next checkpoint (a training left running longer is stopped, and
# continues from its last checkpoint instead)
SIGNAL_DELAY_S = 180
PAUSE_MARGIN_S = 20  # of those, kept for stopping the runner and requeueing
STOPPED = 128 + signal.SIGTERM  # a runner's exit status after a SIGTERM (``signals.stop``)
POLL_S = 2.0  # how often the submitting runner looks at its jobs

FLAGS = {  # the command line's name of each key of ``Cluster`` (the file's: cluster.<key>)
    "executor": "--executor",
    "partition": "--slurm-partition",
    "gpus_per_run": "--gpus-per-run",
    "time_limit": "--time-limit",
}


def checked(cluster: Cluster, where: Callable[[str], str]) -> Cluster:
    """``cluster`` when every value is one a job can run with; else the one-line error
    naming its flag or key (``where(key)``)."""
    if cluster.executor not in EXECUTORS:
        raise ExperimentError(f"{where('executor')} must be one of {', '.join(EXECUTORS)}, not {cluster.executor!r}")
    if cluster.partition is not None and (not isinstance(cluster.partition, str) or not cluster.partition.strip()):
        raise ExperimentError(f"{where('partition')} must name a SLURM partition")
    gpus = cluster.gpus_per_run
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise ExperimentError(f"{where('gpus_per_run')} must be a number of GPUs >= 0, not {gpus!r}")
    if duration(cluster.time_limit, where("time_limit")) < 2 * SIGNAL_DELAY_S:
        raise ExperimentError(
            f"{where('time_limit')} must leave a job at least {2 * SIGNAL_DELAY_S // 60}m "
            f"(its last {SIGNAL_DELAY_S // 60}m pause the training), not {cluster.time_limit!r}"
        )
    return cluster


def job_runs(exp: Experiment, only: Optional[Sequence[str]], seeds: Optional[Sequence[int]]) -> Dict[str, List[str]]:
    """``<model>/seed<N>`` of each job -> the models its runner runs (``--only``): a training
    and the decodes of its checkpoints, as the runner groups them (``schedule.Runner.run``)."""
    jobs: Dict[str, List[str]] = {}
    for name in only or exp.models:
        model = exp.models[name]
        for seed in model.seeds:
            if not seeds or seed in seeds:
                jobs.setdefault(f"{model.decode_of or name}/seed{seed}", []).append(name)
    return jobs


class RunJob:
    """What a job runs: the runner's ``argv`` in a process of its own.  A callable with a
    ``checkpoint`` method, which submitit calls on its preemption signal (duck-typed as
    ``submitit.helpers.Checkpointable``, so this module imports no submitit)."""

    def __init__(self, label: str, argv: List[str], cwd: str):
        self.label, self.argv, self.cwd = label, argv, cwd

    def __call__(self) -> str:
        import submitit

        # SLURM signals every process of the job; the runner and its trainings ignore submitit's
        # signal (an ignored signal stays ignored across exec), which reaches them as the pause
        warning = getattr(signal, "SIG" + submitit.JobEnvironment.USR_SIG)
        # a thread waits for the runner: the signal handler (``checkpoint``) runs in this
        # thread, between two instructions of this loop, and must not wait on a lock it holds
        self.ended = threading.Event()
        self.proc = subprocess.Popen(self.argv, cwd=self.cwd, preexec_fn=lambda: signal.signal(warning, signal.SIG_IGN))
        threading.Thread(target=lambda: (self.proc.wait(), self.ended.set()), daemon=True).start()
        while not self.ended.is_set():
            time.sleep(0.5)
        code = self.proc.returncode
        if code == STOPPED:
            # SLURM's SIGTERM reached the runner: the job is cancelled or requeued (SLURM kills it
            # within seconds) or preempted (submitit's signal follows: ``checkpoint`` requeues it).
            # An error now would tell the waiting runner that a job to run again has failed.
            time.sleep(SIGNAL_DELAY_S)
        if code == PAUSED:
            raise RuntimeError(f"{self.label}: paused (rerun the same command to continue)")
        if code != 0:
            raise RuntimeError(f"{self.label}: mixer-run exited with status {code}")
        return self.label

    def checkpoint(self):  # -> submitit.helpers.DelayedSubmission  # noqa: ANN201
        """The job warned of its end: pause the runner, give it until shortly before the end
        to reach a checkpoint (else stop it), and hand submitit this job again to requeue."""
        from submitit.helpers import DelayedSubmission

        proc = getattr(self, "proc", None)
        if proc is not None and not self.ended.is_set():
            os.kill(proc.pid, signal.SIGUSR1)
            deadline = time.monotonic() + SIGNAL_DELAY_S - PAUSE_MARGIN_S
            while not self.ended.is_set() and time.monotonic() < deadline:
                time.sleep(0.5)
            if not self.ended.is_set():  # stopped: the training continues from its last checkpoint
                os.kill(proc.pid, signal.SIGTERM)
                self.ended.wait(PAUSE_MARGIN_S / 2)
        return DelayedSubmission(RunJob(self.label, self.argv, self.cwd))


class OnceWithoutAccounting(logging.Filter):
    """submitit reads job states with ``sacct`` and warns at every poll when it fails, as it does
    on a cluster that keeps no job accounting: said once, in one line, and the rest dropped."""

    SAID = "sacct failed (this cluster keeps no job accounting?): job states may lag; said once"

    def __init__(self):
        super().__init__()
        self.said = False

    def filter(self, record: logging.LogRecord) -> bool:
        if "Bypassing sacct error" not in record.getMessage():
            return True
        if self.said:
            return False
        self.said, record.msg, record.args = True, self.SAID, ()
        return True


def quiet_without_accounting() -> None:
    """``OnceWithoutAccounting`` on submitit's logger, once per process."""
    log = logging.getLogger("submitit")
    if not any(isinstance(f, OnceWithoutAccounting) for f in log.filters):
        log.addFilter(OnceWithoutAccounting())


def executor(exp: Experiment, cluster: Cluster, threads: Optional[int], folder: Path):  # noqa: ANN201
    """The submitit executor of ``cluster``: each job one task on one node, ``threads`` CPUs
    (None: the cluster's default), ``gpus_per_run`` GPUs, the time limit."""
    try:
        import submitit
    except ImportError:
        raise ExperimentError(
            f"--executor {cluster.executor} needs submitit: pip install 'mixer-plugin[slurm]' (submitit==1.5.2)"
        ) from None
    minutes = math.ceil(duration(cluster.time_limit, FLAGS["time_limit"]) / 60)
    if cluster.executor == "submitit-local":
        ex = submitit.LocalExecutor(folder)
        ex.update_parameters(timeout_min=minutes, gpus_per_node=cluster.gpus_per_run, signal_delay_s=SIGNAL_DELAY_S)
        return ex
    quiet_without_accounting()
    ex = submitit.SlurmExecutor(folder)
    ex.update_parameters(
        job_name=f"mixer-{exp.name}",
        partition=cluster.partition,
        time=minutes,
        nodes=1,
        ntasks_per_node=1,
        cpus_per_task=threads,
        gpus_per_node=cluster.gpus_per_run or None,
        signal_delay_s=SIGNAL_DELAY_S,
    )
    return ex


def run_jobs(
    exp: Experiment,
    cluster: Cluster,
    only: Optional[Sequence[str]],
    seeds: Optional[Sequence[int]],
    threads: Optional[int],
    say: Callable[[str], None],
) -> bool:
    """Submit every job, wait for them all, say how each ended; whether they all finished."""
    folder = WORK / exp.name / "jobs"
    ex = executor(exp, cluster, threads, folder)
    head = [sys.executable, "-m", "mixer_plugin.experiments.runner", str(exp.path.resolve())]
    tail = ["--executor", "local", "--jobs", "1"] + (["--threads", str(threads)] if threads else [])
    submitted: List[Tuple[str, object]] = []
    for label, models in job_runs(exp, only, seeds).items():
        seed = label.rsplit("/seed", 1)[1]
        argv = head + ["--only", ",".join(models), "--seeds", seed] + tail
        job = ex.submit(RunJob(label, argv, os.getcwd()))
        say(f"{label}: job {job.job_id} submitted ({shown(job.paths.stdout)})")
        submitted.append((label, job))
    ok, pending = True, list(submitted)
    while pending:
        time.sleep(POLL_S)
        for label, job in [p for p in pending if p[1].done()]:
            pending.remove((label, job))
            try:
                job.result()
                say(f"{label}: job {job.job_id} done")
            except Exception as e:  # noqa: BLE001  (what the job raised, or submitit's word for a lost job)
                ok = False
                last = [line for line in str(e).strip().splitlines() if line.strip()]
                say(
                    f"{label}: job {job.job_id} failed: {last[-1] if last else type(e).__name__} "
                    f"(its log: {shown(job.paths.stdout)})"
                )
    return ok
