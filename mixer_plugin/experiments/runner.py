"""``mixer-run``: one runner for every experiment of this repository.  This module is its command
line; the scheduling is ``schedule``, the publishing ``publish``, the restores ``archive``.

    mixer-run experiments/quickstart.yaml                 # prepare -> train -> generate -> score -> results
    mixer-run experiments/leaderboard.yaml --jobs 2 --threads 1 --commit
    mixer-run experiments/leaderboard.yaml --only transformer,multinn --seeds 1
    mixer-run experiments/leaderboard.yaml --results-only  # tables and plots from the run folders
    mixer-run experiments/leaderboard.yaml --dry-run       # print every command, run nothing
    NGPU=8 mixer-run configs/multinn/mixer_wmt_multinn.wmt16_en_de.yaml   # fairseq's DDP via torchrun
    PRECISION=bf16 mixer-run ...                           # fairseq's --bf16 (or fp16) on a GPU
    mixer-run FILE.yaml --executor slurm --gpus-per-run 1 --time-limit 4h   # each training a SLURM job (executors)

Each data recipe is prepared once; then every (model, seed) is a chain of stages
(``stages.py``) run by the stock fairseq tools.  Up to ``--jobs`` chains run at a time,
each with ``--threads`` threads (the core budget is their product).  One progress line
per stage, with the elapsed time and an estimate of what is left; a line every few
minutes while a model trains.  Finished stages are skipped, a killed training
continues from its ``checkpoint_last.pt`` (or from the newest checkpoint that loads).
At the end (and after every run with ``--commit``) the results file is regenerated from
the run folders, and each run's small outputs are copied beside it; ``--commit`` commits them,
with the README's blocks they change (``publish``).

A campaign that must end by a given time (a session, a SLURM job) pauses instead of being
killed: after SIGUSR1 (``sbatch --signal=B:USR1@600``) or ``--stop-after 2h30m``, no stage
starts, each training ends right after its next checkpoint and every other stage finishes
(``signals.request_pause``); the runner exits with status 75 (EX_TEMPFAIL: run it again), and the same
command continues from those checkpoints, having lost nothing.

Several runners may share an experiment: each run, each prepared dataset and the results
file has a lock (``locks``) that a runner takes before it starts a stage there and keeps
until the run's last stage ends; another runner skips a held run in one line and goes on
with the rest, and waits for a dataset being prepared.  Every command runs under a guard
(``guard``) that ends its whole process group when the runner ends, ``kill -9`` included;
SIGINT, SIGTERM and SIGHUP stop the running stages and exit (``signals.stop``).

Those committed copies (``results/<name>/runs/<model>/seed<N>/``) are what a campaign
resumes from on another machine, where ``work/`` is empty: a run whose copy records the
same commands as today's (paths compared relative to the checkout and ``work/``) is
restored into ``work/`` instead of trained again (``archive.restore_run``).  Checkpoints are never
committed, so a run another model decodes (``decode_of``) is trained again while that
decode is still to do.
"""

import argparse
import os
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import List, Optional

from ..data.workspace import data_root
from ..paths import WORK, shown
from . import report
from .commands import bf16_here, ngpu, precision
from .executors import FLAGS, checked, run_jobs
from .progress import Progress
from .schedule import Runner
from .signals import PAUSED, pause, request_pause, stop
from .spec import Cluster, Experiment, ExperimentError, duration
from .spec_loader import load


def dangling_link(path: Path) -> Optional[Path]:
    """The first folder on the way to ``path`` that is a symbolic link to nothing (a
    ``work/data`` linked to a corpus folder not made yet), else None: creating anything
    under it fails with a bare FileExistsError."""
    for p in [*reversed(path.parents), path]:
        if p.is_symlink() and not p.exists():
            return p
    return None


def cluster_of(exp: Experiment, args: argparse.Namespace) -> Cluster:
    """The file's ``cluster:`` with the flags given over it, checked: an error names the flag,
    or the file's key, that gave the value."""
    given = {
        key: getattr(args, flag[2:].replace("-", "_"))
        for key, flag in FLAGS.items()
        if getattr(args, flag[2:].replace("-", "_")) is not None
    }
    if "gpus_per_run" in given and given["gpus_per_run"].isdigit():
        given["gpus_per_run"] = int(given["gpus_per_run"])
    return checked(
        replace(exp.cluster, **given), lambda key: FLAGS[key] if key in given else f"{exp.path}: cluster.{key}"
    )


def on_cluster(runner: Runner, cluster: Cluster, args: argparse.Namespace) -> bool:
    """Every run a job (``executors``), then the results once, from the run folders the
    jobs wrote; committed with ``--commit``."""
    exp = runner.exp
    say = Progress(0).say
    try:
        only = args.only.split(",") if args.only else None
        ok = run_jobs(exp, cluster, only, runner.seeds, args.threads or exp.threads, say)
    except ExperimentError as e:
        print(f"mixer-run: error: {e}", file=sys.stderr)
        sys.exit(2)
    done = runner.results_only(commit=f"{exp.name}: results" if args.commit and ok else None)
    if not ok:
        say(f"{exp.name}: a job did not finish; finished runs are kept (rerun the same command to continue)")
    return ok and done


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(
        prog="mixer-run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("experiment", help="an experiment file (experiments/*.yaml, configs/<paper>/*.yaml)")
    p.add_argument("--jobs", type=int, help="runs at a time [the file's jobs, else fitted to the machine's cores]")
    p.add_argument(
        "--threads",
        type=int,
        help="threads per run [the file's threads, else the machine's cores shared among the runs]",
    )
    p.add_argument("--only", help="comma-separated models of the file to run")
    p.add_argument("--seeds", help="comma-separated seeds to run (of those the file lists)")
    p.add_argument("--results-only", action="store_true", help="only rebuild the results from the run folders")
    p.add_argument("--dry-run", action="store_true", help="print every command and whether it is done")
    p.add_argument(
        "--commit",
        action="store_true",
        help="git-commit the results file and each run's small outputs as each run finishes",
    )
    p.add_argument(
        "--executor",
        help="where the runs go: local (this machine), slurm (each training, with its decodes, one SLURM job, "
        "through submitit), submitit-local (those jobs as local processes) [the file's cluster.executor, else local]",
    )
    p.add_argument("--slurm-partition", help="the jobs' SLURM partition [the file's cluster.partition]")
    p.add_argument("--gpus-per-run", help="GPUs of each job [the file's cluster.gpus_per_run, else 0]")
    p.add_argument(
        "--time-limit",
        metavar="DURATION",
        help="each job's time limit (4h, 90m); a longer run pauses at a checkpoint, is requeued and continues "
        "[the file's cluster.time_limit, else 4h]",
    )
    p.add_argument(
        "--stop-after",
        metavar="DURATION",
        help="pause after this long (2h30m, 90m, 45s), as SIGUSR1 does: no stage starts, each training ends "
        f"after its next checkpoint, the rest finish; exit status {PAUSED}, and the same command continues",
    )
    args = p.parse_args(argv)
    try:
        exp = load(args.experiment)
        for key in ("jobs", "threads"):
            if getattr(args, key) is not None and getattr(args, key) < 1:
                raise ExperimentError(f"--{key} must be >= 1")
        seeds = None
        if args.seeds:
            try:
                seeds = [int(s) for s in args.seeds.split(",")]
            except ValueError:
                raise ExperimentError(f"--seeds takes comma-separated integers, not {args.seeds!r}") from None
            listed = {s for m in exp.models.values() for s in m.seeds}
            if not set(seeds) & listed:
                raise ExperimentError(f"--seeds {args.seeds}: the file lists seeds {sorted(listed)}")
        stop_after = duration(args.stop_after, "--stop-after") if args.stop_after is not None else None
        cluster = cluster_of(exp, args)
        if cluster.executor != "local" and stop_after is not None:
            raise ExperimentError(f"--stop-after: a job of --executor {cluster.executor} ends at its --time-limit")
        precision(), ngpu(), bf16_here()  # PRECISION= and NGPU= checked before anything runs
        for folder in [WORK / exp.name, *(data_root(m.data, m.prepare) for m in exp.models.values())]:
            link = dangling_link(folder)
            if link is not None:
                raise ExperimentError(f"{shown(link)} is a symbolic link to {os.readlink(link)}, which does not exist")
        runner = Runner(
            exp,
            args.jobs or exp.jobs,
            args.threads or exp.threads,
            only=args.only.split(",") if args.only else None,
            seeds=seeds,
            dry_run=args.dry_run,
            commit=args.commit,
        )
    except (ExperimentError, ValueError) as e:
        print(f"mixer-run: error: {e}", file=sys.stderr)
        sys.exit(2)
    if not args.dry_run:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, stop)
    if args.results_only:
        sys.exit(0 if runner.results_only() else 1)
    if cluster.executor != "local" and not args.dry_run:
        sys.exit(0 if on_cluster(runner, cluster, args) else 1)
    if not args.dry_run:
        signal.signal(signal.SIGUSR1, pause)
        if stop_after is not None:
            # a training that cannot reach its --max-update by then ends at its first checkpoint
            runner.deadline = time.monotonic() + stop_after
            timer = threading.Timer(stop_after, request_pause, args=(f"--stop-after {args.stop_after}",))
            timer.daemon = True
            timer.start()
    ok = runner.run()
    if ok and runner.was_paused():
        sys.exit(PAUSED)
    if not ok:
        print(
            f"mixer-run: {exp.name} stopped at a failed stage; finished stages are kept "
            f"(rerun the same command to continue)",
            file=sys.stderr,
        )
        sys.exit(1)
    if exp.samples and not args.dry_run:
        report.print_samples(exp, exp.samples)


if __name__ == "__main__":
    main()
