"""``mixer-run``: one runner for every experiment of this repository.

    mixer-run experiments/quickstart.yaml                 # prepare -> train -> generate -> score -> results
    mixer-run experiments/leaderboard.yaml --jobs 2 --threads 1 --commit
    mixer-run experiments/leaderboard.yaml --only transformer,multinn --seeds 1
    mixer-run experiments/leaderboard.yaml --results-only  # tables and plots from the run folders
    mixer-run experiments/leaderboard.yaml --dry-run       # print every command, run nothing
    NGPU=8 mixer-run configs/multinn/mixer_wmt_multinn.wmt16_en_de.yaml   # fairseq's DDP via torchrun
    PRECISION=bf16 mixer-run ...                           # fairseq's --bf16 (or fp16) on a GPU

Each data recipe is prepared once; then every (model, seed) is a chain of stages
(``stages.py``) run by the stock fairseq tools.  Up to ``--jobs`` chains run at a time,
each with ``--threads`` threads (the core budget is their product).  One progress line
per stage, with the elapsed time and an estimate of what is left; a line every few
minutes while a model trains.  Finished stages are skipped, a killed training
continues from its ``checkpoint_last.pt`` (or from the newest checkpoint that loads).
At the end (and after every run with ``--commit``) the results file is regenerated from
the run folders, and each run's small outputs are copied beside it; ``--commit`` commits them,
with the README's blocks they change (``refresh_pages``).

A campaign that must end by a given time (a session, a SLURM job) pauses instead of being
killed: after SIGUSR1 (``sbatch --signal=B:USR1@600``) or ``--stop-after 2h30m``, no stage
starts, each training ends right after its next checkpoint and every other stage finishes
(``pause``); the runner exits with status 75 (EX_TEMPFAIL: run it again), and the same
command continues from those checkpoints, having lost nothing.

Several runners may share an experiment: each run, each prepared dataset and the results
file has a lock (``locks``) that a runner takes before it starts a stage there and keeps
until the run's last stage ends; another runner skips a held run in one line and goes on
with the rest, and waits for a dataset being prepared.  Every command runs under a guard
(``guard``) that ends its whole process group when the runner ends, ``kill -9`` included;
SIGINT, SIGTERM and SIGHUP stop the running stages and exit (``stop``).

Those committed copies (``results/<name>/runs/<model>/seed<N>/``) are what a campaign
resumes from on another machine, where ``work/`` is empty: a run whose copy records the
same commands as today's (paths compared relative to the checkout and ``work/``) is
restored into ``work/`` instead of trained again (``restore``).  Checkpoints are never
committed, so a run another model decodes (``decode_of``) is trained again while that
decode is still to do.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..data.workspace import data_root
from ..files import atomic_path, sweep_leftovers
from ..paths import PROJECT, WORK, outside_checkout, shown
from . import archive, guard, readme, report
from .collect import RECORD
from .locks import Held, Lock, release_all
from .spec import Experiment, ExperimentError, Model, load
from .stages import (
    Stage,
    StageError,
    StagePaused,
    beside_device,
    execute,
    flag_value,
    ngpu,
    portable_in,
    precision,
    prepare_stage,
    run_dir,
    run_stages,
    shell,
    stopping_rule,
)
from .trainlog import parse_train_log, stopping_point

HEARTBEAT = 300  # seconds between the progress lines of a training
STOPPING = False  # a SIGINT, SIGTERM or SIGHUP of the runner is stopping it (``stop``)
PAUSING: Optional[str] = None  # what asked the runner to pause (``pause``): SIGUSR1, --stop-after
PAUSED = 75  # the exit status of a paused runner (sysexits.h EX_TEMPFAIL): not done, rerun to continue


class Progress:
    """Progress lines with elapsed time and an estimate of what is left."""

    def __init__(self, total: int):
        self.start = time.time()
        self.total, self.finished = total, 0
        self.took: Dict[str, List[float]] = {}  # stage name -> seconds of finished ones
        self.lock = threading.Lock()

    def clock(self) -> str:
        s = int(time.time() - self.start)
        return f"[{time.strftime('%H:%M:%S')} +{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}]"

    def say(self, msg: str) -> None:
        with self.lock:
            print(f"{self.clock()} {msg}", flush=True)

    def finish(self, label: str, stage: Stage, seconds: float, pending: List[str], jobs: int) -> None:
        with self.lock:
            self.finished += 1
            self.took.setdefault(stage.name, []).append(seconds)
            known = {k: sum(v) / len(v) for k, v in self.took.items()}
            left = sum(known.get(name, 0.0) for name in pending) / max(1, jobs)
            unknown = sorted({name for name in pending if name not in known})
            eta = f"ETA {fmt(left)}" + (f" + {', '.join(unknown)} not yet timed" if unknown else "")
            print(
                f"{self.clock()} {label} {stage.name}: done in {fmt(seconds)} "
                f"({self.finished}/{self.total} stages; {eta})",
                flush=True,
            )


def fmt(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def training_status(stage: Stage) -> str:
    """``1500/3750 updates, 2.10 upd/s, about 17:51 left`` from a training's log; for one with
    a stopping rule (``--patience``) also its best validation and where the rule stops it
    unless it improves (``valid bleu 28.01 at 7,500 is the best: stops at 9,500 unless it
    improves, in about 49:45``), read over the whole log as the runner ends it."""
    if not stage.log.is_file():
        return "starting"
    text = stage.log.read_text(encoding="utf-8", errors="replace")
    updates = re.findall(r"num_updates=(\d+)", text)
    ups = re.findall(r"\bups=([\d.]+)", text)
    goal = flag_value(stage.commands[0], "--max-update")
    if not updates:
        return "starting"
    done = int(updates[-1])
    speed = float(ups[-1]) if ups and float(ups[-1]) > 0 else None
    line = f"{done}/{goal or '?'} updates"
    if speed:
        line += f", {speed:.2f} upd/s"
        if goal:
            line += f", about {fmt((int(goal) - done) / speed)} left"
    chosen = stopping_rule([str(a) for a in stage.commands[0]])
    valid = [p for p in parse_train_log(stage.log)["valid"] if chosen.metric in p]
    if chosen.patience > 0 and len(valid) >= 2:
        best, _ = stopping_point(valid, chosen.metric, chosen.maximize, chosen.patience)
        every = int(valid[-1]["num_updates"] - valid[-2]["num_updates"])  # updates between validations
        stop = int(best["num_updates"]) + chosen.patience * every
        if goal:
            stop = min(stop, int(goal))
        line += (
            f"; valid {chosen.metric} {best[chosen.metric]:g} at {int(best['num_updates']):,} is the best: "
            f"stops at {stop:,} unless it improves"
        )
        if speed and stop > done:
            line += f", in about {fmt((stop - done) / speed)}"
    return line


def dangling_link(path: Path) -> Optional[Path]:
    """The first folder on the way to ``path`` that is a symbolic link to nothing (a
    ``work/data`` linked to a corpus folder not made yet), else None: creating anything
    under it fails with a bare FileExistsError."""
    for p in [*reversed(path.parents), path]:
        if p.is_symlink() and not p.exists():
            return p
    return None


def machine_cores() -> int:
    """The cores this process may use (its affinity mask, as a batch scheduler sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def fit_cores(jobs: Optional[int], threads: Optional[int], runs: int, cores: int) -> Tuple[int, int]:
    """(runs at a time, threads each): what the command line or the experiment file says,
    and what neither says filled in so that their product is ``cores``: as many runs at a
    time as there are runs (up to one a core), the cores shared out among them."""
    if jobs is None:
        jobs = max(1, min(runs, cores)) if threads is None else max(1, cores // threads)
    if threads is None:
        threads = max(1, cores // jobs)
    return jobs, threads


class Runner:
    def __init__(
        self,
        exp: Experiment,
        jobs: Optional[int] = None,
        threads: Optional[int] = None,
        only: Optional[Sequence[str]] = None,
        seeds: Optional[Sequence[int]] = None,
        dry_run: bool = False,
        commit: bool = False,
    ):
        """``jobs``/``threads``: runs at a time and threads each; None: fitted to the machine."""
        self.exp = exp
        self.dry_run, self.commit = dry_run, commit
        self.writing = threading.Lock()
        self.paused: List[str] = []  # runs whose training a pause ended at a checkpoint
        self.unstarted: List[str] = []  # runs with stages a pause kept from starting
        missing = set(only or ()) - set(exp.models)
        if missing:
            raise ExperimentError(f"{exp.path}: --only names no model {sorted(missing)[0]!r}")
        names = set(only or exp.models)
        names |= {exp.models[n].decode_of for n in names if exp.models[n].decode_of}  # what a decode needs
        # trained models first, then the decodes of their checkpoints
        self.models = sorted((m for m in exp.models.values() if m.name in names), key=lambda m: m.decode_of is not None)
        self.seeds = seeds
        self.prepared: Dict[Tuple[str, tuple], Stage] = {}
        for m in self.models:
            key = (m.data, tuple(m.prepare))
            if key not in self.prepared:
                self.prepared[key] = prepare_stage(m.data, m.prepare)
        runs = sum(1 for m in self.models for seed in m.seeds if not seeds or seed in seeds)
        self.fitted = jobs is None or threads is None
        self.jobs, self.threads = fit_cores(jobs, threads, runs, machine_cores())

    def chains(self) -> List[Tuple[str, List[Stage]]]:
        """(label, stages) of every (model, seed), built once the data is prepared (the
        commands take the languages from it)."""
        trained: Dict[Tuple[str, int], Stage] = {}
        out = []
        for m in self.models:
            for seed in m.seeds:
                if self.seeds and seed not in self.seeds:
                    continue
                prepared = self.prepared[(m.data, tuple(m.prepare))]
                stages = run_stages(self.exp, m, seed, prepared, trained.get((m.decode_of, seed)))
                if not m.decode_of:
                    trained[(m.name, seed)] = stages[0]
                out.append((f"{m.name}/seed{seed}", stages))
        return out

    def model_seed(self, label: str) -> Tuple[Model, int]:
        """The (model, seed) of a chain's ``<model>/seed<N>`` label."""
        name, seed = label.rsplit("/seed", 1)
        return self.exp.models[name], int(seed)

    # ------------------------------------------------------------------ resuming
    def restore(self, chains: List[Tuple[str, List[Stage]]]) -> set:
        """The labels of the runs finished before, on this machine or on another.

        Every (model, seed) of the experiment (not only those selected, so the results
        keep every committed row) whose run folder is missing here but whose committed
        copy records today's commands is copied back into ``work/``, with a
        ``.stages/restored.json`` that marks it.  A selected decode still to run needs
        the checkpoints of the run it decodes: that run is trained again."""
        everything = dict(Runner(self.exp, self.jobs, self.threads, dry_run=True).chains())
        restored = set()
        for label, chain in everything.items():  # trained models first, then their decodes
            model, seed = self.model_seed(label)
            source = f"{model.decode_of}/seed{seed}"
            # a committed decode records its own commands, not the training it decoded: it
            # counts only while that training is today's too (restored, or done here)
            if model.decode_of and source not in restored and not all(s.done() for s in everything[source]):
                continue
            if self.dry_run:
                found = restore_run(self.exp, model, seed, chain, copy=False)
            else:
                try:  # a run another runner holds is its own business: left alone
                    with Lock(run_dir(self.exp, model, seed)) as lock:
                        self.took_over(label, lock)
                        found = restore_run(self.exp, model, seed, chain)
                except Held:
                    found = False
            if found:
                restored.add(label)
        pending = [c for label, c in chains if label not in restored and not all(s.done() for s in c)]
        for chain in pending:
            for dep in (d for s in chain for d in s.after if d.name == "train" and d not in chain):
                run = dep.outputs[0].parent
                label = f"{run.parent.name}/{run.name}"
                if label in restored and not dep.done():
                    restored.discard(label)
        return restored

    # ------------------------------------------------------------------ running
    def run(self) -> bool:
        exp = self.exp
        if self.dry_run:
            chains = self.chains()
            restored = self.restore(chains)
            for stage in self.prepared.values():
                print(
                    f"# {stage.name} ({'done' if stage.done() else 'to run'})\n"
                    + "\n".join(shell(argv) for argv in stage.commands)
                )
            for label, chain in chains:
                for stage in chain:
                    state = "restorable" if label in restored else "done" if stage.done() else "to run"
                    for argv in stage.commands:
                        print(f"# {stage.name} ({state})\n{shell(argv)}")
            return True
        cores = self.jobs * self.threads
        self.progress = Progress(sum(not s.done() for s in self.prepared.values()))
        self.progress.say(
            f"{exp.name}: {len(self.models)} models; {self.jobs} runs at a time x {self.threads} "
            f"threads = {cores} cores" + (" (fitted to this machine)" if self.fitted else "")
        )
        if outside_checkout():
            self.progress.say(
                f"writing under {PROJECT}: runs and data in {shown(WORK)}/, "
                f"results in {shown(archive.results_path(exp))}"
            )
        results = archive.results_path(exp)
        if self.commit and git_repo(results) is None:
            self.progress.say(
                f"--commit: {shown(results)} is outside any git repository, or ignored in its own: "
                f"nothing will be committed"
            )
        for stage in self.prepared.values():  # every dataset first, each once
            if not self.prepare(stage):
                return False
        chains = self.chains()
        restored = self.restore(chains)
        if restored:
            self.progress.say(f"{len(restored)} runs finished before, restored from {shown(archive.kept_runs(exp))}")
        chains = [(label, c) for label, c in chains if label not in restored]
        todo = sum(not s.done() for _, c in chains for s in c)
        self.progress.total += todo
        self.progress.say(
            f"{len(chains)} runs, {todo} stages to run ({sum(len(c) for _, c in chains) - todo} done before)"
        )
        ok = True
        events = {id(s): threading.Event() for _, c in chains for s in c}
        skipped: List[str] = []

        def run_chain(label: str, chain: List[Stage], hold: Sequence[int]) -> None:
            nonlocal ok
            ran = not all(s.done() for s in chain)
            for i, stage in enumerate(chain):
                for dep in stage.after:  # a decode waits for the training it decodes
                    if id(dep) in events and dep not in chain:
                        events[id(dep)].wait()
                if ok and PAUSING and not stage.done():
                    self.unstarted.append(label)
                    for s in chain[i:]:
                        events[id(s)].set()
                    return
                if not ok or not self.step(label, stage, [s.name for s in chain[i + 1 :]], hold):
                    ok = ok and label in self.paused  # a training paused at a checkpoint failed nothing
                    for s in chain[i:]:
                        events[id(s)].set()
                    return
                events[id(stage)].set()
            if self.commit and ran:
                self.write_results(commit=f"{exp.name}: {label} finished")

        def run_job(job: List[Tuple[str, List[Stage]]]) -> None:
            """A training and the decodes of its checkpoints, holding every folder they
            write, or nothing of it where another runner holds one."""
            locks = self.lock_job(job)
            if locks is None:
                skipped.extend(label for label, _ in job)
                for _, chain in job:
                    for s in chain:
                        events[id(s)].set()
                return
            try:
                for label, chain in job:
                    run = run_dir(exp, *self.model_seed(label))
                    # a run to train again in a folder restored before (a decode needs its
                    # checkpoints, or its commands changed): the folder holds only copies of
                    # committed files, and a training would append to the train.log it finds
                    if (run / ".stages" / "restored.json").is_file():
                        shutil.rmtree(run)
                    run_chain(label, chain, [lock.fd for lock in locks])
            finally:
                for lock in locks:
                    lock.release()

        # A decode of another model's checkpoints (decode_of) runs in the job of the training
        # it decodes, right after it: queued behind every other training, it would wait for
        # the end of the campaign, which on CPU spans sessions, and a machine handed back in
        # between takes the checkpoints with it (they are never committed).
        jobs, by_label = [], {}
        for label, chain in chains:
            model, seed = self.model_seed(label)
            source = f"{model.decode_of}/seed{seed}"
            if model.decode_of and source in by_label:
                by_label[source].append((label, chain))
            else:
                by_label[label] = [(label, chain)]
                jobs.append(by_label[label])

        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            list(pool.map(run_job, jobs))
        self.write_results(commit=f"{exp.name}: results" if self.commit and ok else None)
        if self.was_paused():
            told = [f"trainings ended at a checkpoint: {', '.join(self.paused)}"] if self.paused else []
            told += [f"not started: {', '.join(self.unstarted)}"] if self.unstarted else []
            self.progress.say(f"paused by {PAUSING}; {'; '.join(told)} (rerun the same command to continue)")
        if skipped:
            self.progress.say(
                f"skipped, held by another runner: {', '.join(skipped)} (rerun the same command "
                f"once it is done to see {'them' if len(skipped) > 1 else 'it'} in the results)"
            )
        return ok

    def was_paused(self) -> bool:
        """Whether a pause left work undone (a pause that came after the last stage began changes nothing)."""
        return bool(PAUSING and (self.paused or self.unstarted))

    def lock_job(self, job: List[Tuple[str, List[Stage]]]) -> Optional[List[Lock]]:
        """The locks of every run folder a job writes (its runs', and the save dir of a
        training it decodes), or None, having said which run is held by whom, when another
        runner holds one of them."""
        folders = {run_dir(self.exp, *self.model_seed(label)): label for label, _ in job}
        for label, chain in job:
            for dep in (d for s in chain for d in s.after if d.name == "train"):
                folders.setdefault(dep.outputs[0].parent, label)
        locks = []
        for folder, label in sorted(folders.items()):
            try:
                locks.append(Lock(folder).acquire(patience=3.0))
            except Held as e:
                for lock in locks:
                    lock.release()
                self.progress.say(f"{label}: skipped, another runner holds {shown(folder)}: {e.who()}")
                return None
            self.took_over(label, locks[-1])
        return locks

    def took_over(self, what: str, lock: Lock) -> None:
        """One line where a lock's last holder died holding it (its record is still there)."""
        h = lock.took_over
        if h is not None:
            state = {False: "it is gone", None: "on another host, it ended or lost its lock"}.get(
                h.alive(), "its pid is reused"
            )
            self.progress.say(f"{what}: taking over the lock of {h} ({state})")

    def prepare(self, stage: Stage) -> bool:
        """A dataset's preparation, by one runner at a time: another waits for it (every
        run needs the data) and then finds it done."""
        lock = Lock(stage.outputs[0].parent)
        try:
            lock.acquire()
        except Held as e:
            self.progress.say(f"data: waiting for {e.who()}, which prepares {shown(stage.outputs[0].parent)}")
            lock.acquire(wait=True)
        self.took_over("data", lock)
        try:
            return self.step("data", stage, [], [lock.fd])
        finally:
            lock.release()

    def results_only(self) -> bool:
        """The results from the run folders, with the committed runs restored first (which
        needs the data prepared: the commands name its languages)."""
        self.progress = Progress(sum(not s.done() for s in self.prepared.values()))
        if not all(self.prepare(stage) for stage in self.prepared.values()):
            return False
        self.restore([])  # nothing runs, so nothing needs its checkpoints: every committed run counts
        self.write_results()
        return True

    def step(self, label: str, stage: Stage, pending: List[str], hold: Sequence[int] = ()) -> bool:
        """Run one stage (unless done), holding ``hold`` (its run's locks) in its processes."""
        if stage.done():
            return True
        self.progress.say(f"{label} {stage.name}: started ({shown(stage.log)})")
        watcher = None
        if stage.name == "train":
            stop = threading.Event()

            def beat():
                while not stop.wait(HEARTBEAT):
                    self.progress.say(f"{label} train: {training_status(stage)}")

            watcher = threading.Thread(target=beat, daemon=True)
            watcher.start()
        try:
            seconds = execute(
                stage,
                self.threads,
                hold,
                say=lambda note: self.progress.say(f"{label} {stage.name}: {note}"),
                pausing=lambda: PAUSING is not None,
            )
        except StagePaused as e:
            self.paused.append(label)
            self.progress.say(f"{label} {stage.name}: {e}")
            return False
        except StageError as e:
            if not STOPPING:  # (stopped by a signal: the handler says so)
                self.progress.say(f"{label} error: {e}")
            return False
        finally:
            if watcher is not None:
                stop.set()
        self.progress.finish(label, stage, seconds, pending, self.jobs)
        return True

    # ------------------------------------------------------------------ results
    def write_results(self, commit: Optional[str] = None) -> None:
        # one at a time: the jobs, and other runners of the experiment, share the results
        # file, its bootstrap caches and git's index
        with self.writing, Lock(WORK / self.exp.name / "results").acquire(wait=True):
            self._write_results(commit)

    def _write_results(self, commit: Optional[str] = None) -> None:
        path = report.write(self.exp)
        if path is not None:
            self.progress.say(f"results: {shown(path)}")
        repo = git_repo(path) if commit and path is not None else None
        if repo is not None:
            results_dir = path.with_suffix("")
            sweep_leftovers(results_dir, recursive=True)  # a killed runner's half-built copies: never committed
            pages = refresh_pages(repo, self.progress.say)
            paths = [str(path), str(results_dir)] + pages
            git(repo, "add", *paths)
            # a re-render that changed nothing (a resumed campaign's skipped runs) is no commit
            if git(repo, "diff", "--cached", "--quiet", "--", *paths).returncode != 0:
                body = (
                    f"Written by mixer-run --commit: {shown(path)} regenerated from the run folders, "
                    f"each finished run's record and hypotheses under {shown(results_dir)}/"
                    + (f", and the generated blocks of {', '.join(shown(Path(p)) for p in pages)}." if pages else ".")
                )
                done = git(repo, "commit", "-q", "-m", commit, "-m", textwrap.fill(body, 72), "--", *paths)
                if done.returncode != 0:
                    self.progress.say(f"results: git commit failed: {(done.stderr or done.stdout).strip()[:300]}")


def refresh_pages(repo: Path, say: Callable[[str], None]) -> List[str]:
    """The pages of ``repo`` with blocks generated from the committed run records (the
    README's tables: ``readme.PAGES``) that the results just written changed, rewritten to go
    into the same commit, so that a campaign's commit leaves no page stale.  A page with edits
    not committed yet is left to its author (the commit would take them with it), and said so."""
    pages = [p for p in readme.PAGES if p.is_file() and p.resolve().is_relative_to(repo.resolve())]
    try:
        stale = readme.stale_pages(pages)
    except (Exception, SystemExit) as e:  # the pages are a by-product: the campaign goes on without them
        say(f"results: the pages' generated blocks were not rewritten ({e}): python -m mixer_plugin.experiments.readme")
        return []
    out = []
    for page, text in stale.items():
        if git(repo, "diff", "--quiet", "HEAD", "--", str(page)).returncode != 0:
            say(
                f"results: {shown(page)} has edits not committed, so its generated blocks stay stale "
                "(commit them, then: python -m mixer_plugin.experiments.readme)"
            )
            continue
        readme.write_page(page, text)
        out.append(str(page))
    return out


def git_repo(path: Path) -> Optional[Path]:
    """The git work tree that can commit ``path`` (a results file), or None: outside any
    repository, or ignored there (the default ``work/<name>/results.md``)."""
    folder = next(p for p in path.parents if p.is_dir())  # (before the first write, results/ may not exist)
    top = git(folder, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        return None
    repo = Path(top.stdout.strip())
    return None if git(repo, "check-ignore", "-q", str(path)).returncode == 0 else repo


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """git in ``repo``, in a session of its own: a Ctrl-C or a killed runner lets a commit
    finish rather than leave ``.git/index.lock`` behind (which stops every later commit)."""
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, start_new_session=True)
    except FileNotFoundError:  # no git on this machine: nothing to commit with
        return subprocess.CompletedProcess(["git", *args], 127, "", "git: command not found")


def restore_run(exp: Experiment, model: Model, seed: int, chain: List[Stage], copy: bool = True) -> bool:
    """Whether (model, seed) is finished: here (a folder restored before) or in its
    committed copy, which is then copied into its run folder (``copy``).  A copy counts
    only when it records every stage of ``chain`` with the same commands; a run folder
    this machine ran is never touched, and one restored before follows its committed copy
    (a run trained again elsewhere and committed replaces the copy restored here, which
    the results would otherwise show, and copy back over the newer commit)."""
    run = run_dir(exp, model, seed)
    marker = run / ".stages" / "restored.json"
    kept = archive.kept_runs(exp) / model.name / f"seed{seed}"
    committed = kept / RECORD
    if run.exists() and not marker.is_file():
        return False
    committed_stages = json.loads(committed.read_text())["stages"] if committed.is_file() else None
    restored_stages = json.loads(marker.read_text()) if run.exists() else None
    stale = restored_stages is not None and committed_stages is not None and committed_stages != restored_stages
    stages = restored_stages if restored_stages is not None and not stale else committed_stages
    if stages is None:
        return False
    if any(
        s.name not in stages
        or [beside_device(a) for a in stages[s.name]["commands"]]
        != [beside_device(portable_in(run, a)) for a in s.commands]
        for s in chain
    ):
        return False
    if (run.exists() and not stale) or not copy:
        return True
    # built in a sibling folder and renamed whole (over a stale copy): a restore cut short
    # must leave no folder, since one without its marker reads as a run this machine
    # trained
    with atomic_path(run) as tmp:
        gen = tmp / f"gen-{model.generate.subset}"
        gen.mkdir(parents=True)
        shutil.copyfile(committed, tmp / RECORD)  # what the results read of a restored run
        if (kept / "hyp.txt").is_file():  # (a classification run has none)
            shutil.copyfile(kept / "hyp.txt", gen / "hyp.txt")
        (tmp / ".stages").mkdir()
        (tmp / ".stages" / marker.name).write_text(json.dumps(stages, indent=1) + "\n")
    return True


def stop(signum: int, frame: Optional[FrameType]) -> None:
    """SIGINT (Ctrl-C), SIGTERM, SIGHUP (a closed terminal): end every running stage's
    process group, free the locks, and exit at once (the other jobs' threads would
    otherwise start their next stages).  What finished is kept; what was cut short has
    no stamp and runs again, and a training continues from its last checkpoint.

    A handler runs in the main thread between two of its instructions, wherever that
    thread is (inside a lock, a print, this handler for an earlier signal), so it takes
    no lock and prints with os.write; a second signal while it runs changes nothing."""
    global STOPPING
    if STOPPING:
        return
    STOPPING = True
    name = signal.Signals(signum).name
    os.write(2, f"mixer-run: {name}: stopping the running stages\n".encode())
    left = guard.stop_all()
    release_all()
    os.write(
        2,
        (
            f"mixer-run: stopped by {name}"
            + (f"; processes {left} did not end" if left else "")
            + " (rerun the same command to continue)\n"
        ).encode(),
    )
    os._exit(128 + signum)


def pause(signum: int, frame: Optional[FrameType]) -> None:
    """SIGUSR1: pause (``request_pause``).  Like ``stop``, a handler takes no lock."""
    request_pause(signal.Signals(signum).name)


def request_pause(why: str) -> None:
    """Pause the campaign where nothing is lost: no stage starts from now on, each training
    ends right after its next checkpoint (``stages.TrainingWatch``), every other stage (minutes
    long) finishes, then the runner exits with status PAUSED.  Said once, with os.write (it
    runs in a signal handler or a timer thread)."""
    global PAUSING
    if PAUSING is not None or STOPPING:
        return
    PAUSING = why
    os.write(
        2,
        f"mixer-run: {why}: pausing: no stage starts; each training ends after its next checkpoint, "
        f"the other stages finish\n".encode(),
    )


DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def duration(text: str) -> float:
    """Seconds of ``2h30m``, ``90m``, ``45s`` or ``5400`` (a bare number: seconds)."""
    t = text.strip()
    if t.isdigit():
        return float(t)
    m = DURATION.fullmatch(t)
    if not t or m is None:
        raise ExperimentError(f"--stop-after takes a duration such as 2h30m, 90m, 45s or 5400, not {text!r}")
    h, mins, secs = (int(g or 0) for g in m.groups())
    return 3600.0 * h + 60.0 * mins + secs


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
        stop_after = duration(args.stop_after) if args.stop_after is not None else None
        precision(), ngpu()  # PRECISION= and NGPU= checked before anything runs
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
    if not args.dry_run:
        signal.signal(signal.SIGUSR1, pause)
        if stop_after is not None:
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
