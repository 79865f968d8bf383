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
continues from its ``checkpoint_last.pt``.  At the end (and after every run with
``--commit``) the results file is regenerated from the run folders, and each run's small
outputs are copied beside it.

Those committed copies (``results/<name>/runs/<model>/seed<N>/``) are what a campaign
resumes from on another machine, where ``work/`` is empty: a run whose copy records the
same commands as today's (paths compared relative to the checkout and ``work/``) is
restored into ``work/`` instead of trained again (``restore``).  Checkpoints are never
committed, so a run another model decodes (``decode_of``) is trained again while that
decode is still to do.
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..data.prep import atomic_path
from ..paths import CHECKOUT, shown
from . import results as results_module
from .spec import Experiment, ExperimentError, Model, load
from .stages import (PLUGIN, Stage, StageError, execute, flag_value, ngpu, precision, prepare_stage, run_dir, run_stages,
                     shell)

HEARTBEAT = 300  # seconds between the progress lines of a training


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

    def say(self, msg: str):
        with self.lock:
            print(f"{self.clock()} {msg}", flush=True)

    def finish(self, label: str, stage: Stage, seconds: float, pending: List[str], jobs: int):
        with self.lock:
            self.finished += 1
            self.took.setdefault(stage.name, []).append(seconds)
            known = {k: sum(v) / len(v) for k, v in self.took.items()}
            left = sum(known.get(name, 0.0) for name in pending) / max(1, jobs)
            unknown = sorted({name for name in pending if name not in known})
            eta = f"ETA {fmt(left)}" + (f" + {', '.join(unknown)} not yet timed" if unknown else "")
            print(f"{self.clock()} {label} {stage.name}: done in {fmt(seconds)} "
                  f"({self.finished}/{self.total} stages; {eta})", flush=True)


def fmt(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def training_status(stage: Stage) -> str:
    """``1500/3750 updates, 2.10 upd/s, about 17:51 left`` from a training's log."""
    if not stage.log.is_file():
        return "starting"
    text = stage.log.read_text(encoding="utf-8", errors="replace")
    updates = re.findall(r"num_updates=(\d+)", text)
    ups = re.findall(r"\bups=([\d.]+)", text)
    goal = flag_value(stage.commands[0], "--max-update")
    if not updates:
        return "starting"
    done = int(updates[-1])
    line = f"{done}/{goal or '?'} updates"
    if ups and float(ups[-1]) > 0:
        line += f", {float(ups[-1]):.2f} upd/s"
        if goal:
            line += f", about {fmt((int(goal) - done) / float(ups[-1]))} left"
    return line


class Runner:
    def __init__(self, exp: Experiment, jobs: int, threads: int, only=None, seeds=None, dry_run=False,
                 commit=False):
        self.exp, self.jobs, self.threads = exp, jobs, threads
        self.dry_run, self.commit = dry_run, commit
        self.writing = threading.Lock()
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
            if restore_run(self.exp, model, seed, chain, copy=not self.dry_run):
                restored.add(label)
        pending = [c for label, c in chains if label not in restored and not all(s.done() for s in c)]
        for chain in pending:
            for dep in (d for s in chain for d in s.after if d.name == "train" and d not in chain):
                run = dep.outputs[0].parent
                label = f"{run.parent.name}/{run.name}"
                if label in restored and not dep.done():
                    restored.discard(label)
        # a selected run to train again in a folder restored before (a decode needs its
        # checkpoints, or its commands changed): the folder holds only copies of committed
        # files, and a training would append to the train.log it finds there
        for label, _ in chains:
            run = run_dir(self.exp, *self.model_seed(label))
            if label not in restored and (run / ".stages" / "restored.json").is_file() and not self.dry_run:
                shutil.rmtree(run)
        return restored

    # ------------------------------------------------------------------ running
    def run(self) -> bool:
        exp = self.exp
        if self.dry_run:
            chains = self.chains()
            restored = self.restore(chains)
            for stage in self.prepared.values():
                print(f"# {stage.name} ({'done' if stage.done() else 'to run'})\n"
                      + "\n".join(shell(argv) for argv in stage.commands))
            for label, chain in chains:
                for stage in chain:
                    state = "restorable" if label in restored else "done" if stage.done() else "to run"
                    for argv in stage.commands:
                        print(f"# {stage.name} ({state})\n{shell(argv)}")
            return True
        cores = self.jobs * self.threads
        self.progress = Progress(sum(not s.done() for s in self.prepared.values()))
        self.progress.say(f"{exp.name}: {len(self.models)} models; {self.jobs} runs at a time x {self.threads} "
                          f"threads = {cores} cores")
        for stage in self.prepared.values():  # every dataset first, each once
            if not self.step("data", stage, []):
                return False
        chains = self.chains()
        restored = self.restore(chains)
        if restored:
            self.progress.say(f"{len(restored)} runs finished before, restored from {shown(results_module.kept_runs(exp))}")
        chains = [(label, c) for label, c in chains if label not in restored]
        todo = sum(not s.done() for _, c in chains for s in c)
        self.progress.total += todo
        self.progress.say(f"{len(chains)} runs, {todo} stages to run "
                          f"({sum(len(c) for _, c in chains) - todo} done before)")
        ok = True
        events = {id(s): threading.Event() for _, c in chains for s in c}

        def run_chain(label, chain):
            nonlocal ok
            ran = not all(s.done() for s in chain)
            for i, stage in enumerate(chain):
                for dep in stage.after:  # a decode waits for the training it decodes
                    if id(dep) in events and dep not in chain:
                        events[id(dep)].wait()
                if not ok or not self.step(label, stage, [s.name for s in chain[i + 1:]]):
                    ok = False
                    for s in chain[i:]:
                        events[id(s)].set()
                    return
                events[id(stage)].set()
            if self.commit and ran:
                self.write_results(commit=f"{exp.name}: {label} finished")

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
            list(pool.map(lambda job: [run_chain(*c) for c in job], jobs))
        self.write_results(commit=f"{exp.name}: results" if self.commit and ok else None)
        return ok

    def results_only(self) -> bool:
        """The results from the run folders, with the committed runs restored first (which
        needs the data prepared: the commands name its languages)."""
        self.progress = Progress(sum(not s.done() for s in self.prepared.values()))
        if not all(self.step("data", stage, []) for stage in self.prepared.values()):
            return False
        self.restore([])  # nothing runs, so nothing needs its checkpoints: every committed run counts
        self.write_results()
        return True

    def step(self, label: str, stage: Stage, pending: List[str]) -> bool:
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
            seconds = execute(stage, self.threads)
        except StageError as e:
            self.progress.say(f"{label} error: {e}")
            return False
        finally:
            if watcher is not None:
                stop.set()
        self.progress.finish(label, stage, seconds, pending, self.jobs)
        return True

    # ------------------------------------------------------------------ results
    def write_results(self, commit=None):
        # one at a time: the jobs share the results file, its bootstrap caches and git's index
        with self.writing:
            self._write_results(commit)

    def _write_results(self, commit=None):
        path = results_module.write(self.exp)
        if path is not None:
            self.progress.say(f"results: {shown(path)}")
        if commit and path is not None and path.is_relative_to(CHECKOUT / "results"):
            results_dir = path.with_suffix("")
            paths = [str(path), str(results_dir)]
            subprocess.run(["git", "add", *paths], cwd=CHECKOUT, check=False)
            # a re-render that changed nothing (a resumed campaign's skipped runs) is no commit
            unchanged = subprocess.run(["git", "diff", "--cached", "--quiet", "--", *paths], cwd=CHECKOUT)
            if unchanged.returncode != 0:
                subprocess.run(["git", "commit", "-q", "-m", commit, "--", *paths], cwd=CHECKOUT, check=False)


def portable(argv: List[str], checkout: str, work: str) -> List[str]:
    """A command as it reads on any machine: the interpreter as ``python`` and paths
    under the work folder or the checkout relative to them."""
    out = []
    for i, a in enumerate(map(str, argv)):
        if i == 0:  # wherever the interpreter lives, a virtualenv inside the checkout too
            a = re.sub(r"^python[\d.]*$", "python", Path(a).name)
        elif a.startswith(work + "/"):
            a = "<work>/" + a[len(work) + 1:]
        elif a.startswith(checkout + "/"):
            a = "<checkout>/" + a[len(checkout) + 1:]
        out.append(a)
    return out


def recorded_roots(record: dict, run_suffix: str) -> Optional[Tuple[str, str]]:
    """(checkout, work) of the machine that wrote a run's stage record: the checkout is
    the parent of ``--user-dir``, the work folder what precedes <exp>/<model>/seed<N>."""
    checkout = work = None
    for argv in (a for rec in record.values() for a in rec.get("commands", [])):
        for flag, value in zip(argv, argv[1:]):
            if flag == "--user-dir":
                checkout = str(Path(value).parent)
        for a in argv:
            if f"/{run_suffix}" in str(a):
                work = str(a)[:str(a).index(f"/{run_suffix}")]
    return (checkout, work) if checkout and work else None


def restore_run(exp, model, seed: int, chain: List[Stage], copy: bool = True) -> bool:
    """Whether (model, seed) is finished: here (a folder restored before) or in its
    committed copy, which is then copied into its run folder (``copy``).  A copy counts
    only when it records every stage of ``chain`` with the same commands; a run folder
    this machine ran is never touched, and one restored before follows its committed copy
    (a run trained again elsewhere and committed replaces the copy restored here, which
    the results would otherwise show, and copy back over the newer commit)."""
    run = run_dir(exp, model, seed)
    marker = run / ".stages" / "restored.json"
    kept = results_module.kept_runs(exp) / model.name / f"seed{seed}"
    committed = kept / "stages.json"
    if run.exists() and not marker.is_file():
        return False
    stale = run.exists() and committed.is_file() and json.loads(committed.read_text()) != json.loads(
        marker.read_text())
    source = marker if run.exists() and not stale else committed
    if not source.is_file():
        return False
    record = json.loads(source.read_text())
    roots = recorded_roots(record, f"{exp.name}/{model.name}/seed{seed}")
    here = (str(PLUGIN.parent), str(run.parents[2]))
    if roots is None or any(
            s.name not in record or [portable(a, *roots) for a in record[s.name]["commands"]]
            != [portable(a, *here) for a in s.commands] for s in chain):
        return False
    if (run.exists() and not stale) or not copy:
        return True
    # built in a sibling folder and renamed whole (over a stale copy): a restore cut short
    # must leave no folder, since one without its marker reads as a run this machine
    # trained (and a training would append to its half-copied train.log)
    with atomic_path(run) as tmp:
        gen = tmp / f"gen-{model.generate.subset}"
        gen.mkdir(parents=True)
        for src in kept.iterdir():
            if src.name in results_module.RUN_FILES:
                shutil.copyfile(src, tmp / src.name)
            elif src.name != "stages.json":  # hypotheses, scores, bootstraps, decoding logs
                shutil.copyfile(src, gen / src.name)
        (tmp / ".stages").mkdir()
        (tmp / ".stages" / marker.name).write_text(json.dumps(record, indent=1) + "\n")
    return True


def main(argv=None):
    p = argparse.ArgumentParser(prog="mixer-run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", help="an experiment file (experiments/*.yaml, configs/<paper>/*.yaml)")
    p.add_argument("--jobs", type=int, help="runs at a time [the file's jobs, else 1]")
    p.add_argument("--threads", type=int, help="threads per run [the file's threads, else 1]")
    p.add_argument("--only", help="comma-separated models of the file to run")
    p.add_argument("--seeds", help="comma-separated seeds to run (of those the file lists)")
    p.add_argument("--results-only", action="store_true", help="only rebuild the results from the run folders")
    p.add_argument("--dry-run", action="store_true", help="print every command and whether it is done")
    p.add_argument("--commit", action="store_true",
                   help="git-commit the results file and each run's small outputs as each run finishes")
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
        precision(), ngpu()  # PRECISION= and NGPU= checked before anything runs
        runner = Runner(exp, args.jobs or exp.jobs, args.threads or exp.threads,
                        only=args.only.split(",") if args.only else None, seeds=seeds, dry_run=args.dry_run,
                        commit=args.commit)
    except (ExperimentError, ValueError) as e:
        print(f"mixer-run: error: {e}", file=sys.stderr)
        sys.exit(2)
    if args.results_only:
        sys.exit(0 if runner.results_only() else 1)
    ok = runner.run()
    if not ok:
        print(f"mixer-run: {exp.name} stopped at a failed stage; finished stages are kept "
              f"(rerun the same command to continue)", file=sys.stderr)
        sys.exit(1)
    if exp.samples and not args.dry_run:
        results_module.print_samples(exp, exp.samples)


if __name__ == "__main__":
    main()
