"""The runner's scheduling: each dataset prepared once, then every (model, seed) a chain of stages
(``stages.run_stages``), up to ``jobs`` chains at a time with ``threads`` threads each.  A
training and the decodes of its checkpoints form one job; each job holds the locks of every run
folder it writes (``locks``), so that several runners share a campaign.  Runs finished before
are restored from their committed copies first (``archive.restore_run``); the results are
published as runs finish (``publish``); a stop or a pause is read from ``signals``."""

import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Sequence, Tuple

from ..paths import PROJECT, WORK, outside_checkout, shown
from . import archive, signals
from .archive import restore_run
from .argv import shell
from .commands import PRECISIONS, command_env, threading_said
from .locks import Held, Lock
from .progress import HEARTBEAT, Progress, training_status
from .publish import git_repo, publish
from .running import execute
from .spec import Experiment, ExperimentError, Model
from .stages import Stage, StageError, StagePaused, chains, prepare_stages, run_dir


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
        self.deadline: Optional[float] = None  # time.monotonic() at which --stop-after pauses the runner
        self.unstarted: List[str] = []  # runs with stages a pause kept from starting
        missing = set(only or ()) - set(exp.models)
        if missing:
            raise ExperimentError(f"{exp.path}: --only names no model {sorted(missing)[0]!r}")
        names = set(only or exp.models)
        names |= {exp.models[n].decode_of for n in names if exp.models[n].decode_of}  # what a decode needs
        # trained models first, then the decodes of their checkpoints
        self.models = sorted((m for m in exp.models.values() if m.name in names), key=lambda m: m.decode_of is not None)
        self.seeds = seeds
        self.prepared = prepare_stages(self.models)
        runs = sum(1 for m in self.models for seed in m.seeds if not seeds or seed in seeds)
        self.fitted = jobs is None or threads is None
        self.jobs, self.threads = fit_cores(jobs, threads, runs, machine_cores())

    def chains(self) -> List[Tuple[str, List[Stage]]]:
        """(label, stages) of every (model, seed), built once the data is prepared (the
        commands take the languages from it)."""
        return chains(self.exp, self.models, self.prepared, self.seeds)

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
                if ok and signals.PAUSING and not stage.done():
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
            self.progress.say(f"paused by {signals.PAUSING}; {'; '.join(told)} (rerun the same command to continue)")
        if skipped:
            self.progress.say(
                f"skipped, held by another runner: {', '.join(skipped)} (rerun the same command "
                f"once it is done to see {'them' if len(skipped) > 1 else 'it'} in the results)"
            )
        return ok

    def was_paused(self) -> bool:
        """Whether a pause left work undone (a pause that came after the last stage began changes nothing)."""
        return bool(signals.PAUSING and (self.paused or self.unstarted))

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

    def results_only(self, commit: Optional[str] = None) -> bool:
        """The results from the run folders, with the committed runs restored first (which
        needs the data prepared: the commands name its languages); committed with ``commit``
        (the subject), as a campaign of cluster jobs ends (``executors``)."""
        self.progress = Progress(sum(not s.done() for s in self.prepared.values()))
        if not all(self.prepare(stage) for stage in self.prepared.values()):
            return False
        self.restore([])  # nothing runs, so nothing needs its checkpoints: every committed run counts
        self.write_results(commit)
        return True

    def step(self, label: str, stage: Stage, pending: List[str], hold: Sequence[int] = ()) -> bool:
        """Run one stage (unless done), holding ``hold`` (its run's locks) in its processes."""
        if stage.done():
            return True
        how = ""
        if stage.name == "train":  # how it shares the machine, and in what precision it trains
            argv = list(map(str, stage.commands[0]))
            on = next((name for name, flags in PRECISIONS.items() if flags and flags[0] in argv), "fp32")
            how = f"; {threading_said(command_env(self.threads, **stage.env))}, {on}"
        self.progress.say(f"{label} {stage.name}: started ({shown(stage.log)}{how})")
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
                pausing=lambda: signals.PAUSING is not None,
                deadline=self.deadline,
            )
        except StagePaused as e:
            self.paused.append(label)
            self.progress.say(f"{label} {stage.name}: {e}")
            return False
        except StageError as e:
            if not signals.STOPPING:  # (stopped by a signal: the handler says so)
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
        publish(self.exp, commit, lambda line: self.progress.say(line))  # (set by run or results_only)
