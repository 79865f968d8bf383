"""Where an experiment's results are kept, and each finished run beside them as its record
(``collect.run_record``: scores, curves, speeds, the stages with their commands) and its
hypotheses; never logs or checkpoints, and no path of the machine that ran it.
``restore_run`` brings a kept run back on a machine whose ``work/`` is empty.
"""

import functools
import json
import lzma
import shutil
from pathlib import Path
from typing import Dict, List, Optional

from ..files import atomic_path
from ..paths import PROJECT, RESULTS, WORK
from .argv import flag_value, portable_in, stopping_rule
from .collect import ModelResult, peak, train_flags
from .commands import beside_device
from .record import FILE, RunRecord
from .spec import Experiment, Model
from .spec_loader import load
from .stages import Stage, run_dir

# a run's hypotheses as kept: xz, a quarter of the text's size (the kept runs' hypotheses were 24 of
# results/' 32 MB), read back whole by ``restore_run`` and by ``mixer-score``, which opens .xz
KEPT_HYPS = "hyp.txt.xz"


def results_path(exp: Experiment) -> Path:
    if exp.results is None:
        return WORK / exp.name / "results.md"
    return exp.results if exp.results.is_absolute() else PROJECT / exp.results


def kept_runs(exp: Experiment) -> Path:
    """Where each run's small outputs are committed: ``results/<name>/runs/``."""
    return results_path(exp).with_suffix("") / "runs"


def committed_runs(exp: Experiment) -> Path:
    """Where an experiment's runs are committed: its kept runs, or, for an experiment that
    writes under work/ (the quickstart), ``results/<name>/runs/``, a run of it copied by hand."""
    return kept_runs(exp) if exp.results is not None else RESULTS / exp.name / "runs"


def keep_run_outputs(exp: Experiment, results: List[ModelResult]) -> None:
    """Each finished run beside the results file: its record (``record.FILE``) and its
    hypotheses (``KEPT_HYPS``).  ``restore_run`` brings them back on a machine whose ``work/`` is empty.
    A run carried over from another file (``stages_here``) stays kept where it ran, once."""
    for r in results:
        for run, record in zip(r.runs, r.records):
            if record.experiment != exp.name:
                continue
            dest = kept_runs(exp) / r.model.name / run.name
            hyps = run / f"gen-{r.model.generate.subset}" / "hyp.txt"
            # built beside and renamed whole: a copy cut short (a killed runner) is never a
            # committed run's hypotheses beside another training's record
            with atomic_path(dest) as tmp:
                tmp.mkdir()
                record.save(tmp / FILE)
                if hyps.is_file():
                    (tmp / KEPT_HYPS).write_bytes(lzma.compress(hyps.read_bytes()))


def kept_folders(exp: Experiment, records: List[RunRecord]) -> List[Path]:
    """The committed folders holding ``records``, runs of ``exp``: its own runs folder and, for
    runs it carries over, the carried file's; a folder not written yet (every run so far carried)
    is left out, so that a page's link to it leads somewhere."""
    folders = [kept_runs(exp)]
    if any(rec.experiment != exp.name for rec in records):
        folders.append(kept_runs(carried(exp)))
    return [f for f in folders if f.is_dir()]


def carried(exp: Experiment) -> Optional[Experiment]:
    """The experiment whose finished runs ``exp`` carries over (its file's ``carries:``), if any."""
    return _load(exp.path.parent / exp.carries.path) if exp.carries is not None else None


@functools.lru_cache(maxsize=None)
def _load(path: Path) -> Experiment:
    # read once a process: the runner asks for each of a file's runs, the README for each seed
    return load(path)


def carried_at(exp: Experiment, record: RunRecord, cap: Optional[str]) -> bool:
    """Whether ``record``, a run of the file ``exp`` carries over, is ``exp``'s run at the cap
    ``cap`` (``--max-update`` of ``exp``'s training): a run of a row ``carries:`` names, ended by
    its own stopping rule before its own cap, which ``cap`` does not undercut.  Such a run is the
    run the larger cap would give: inverse square root does not depend on the cap, and a
    training its rule ended never reached it (docs/leaderboard.md, version 3;
    ``tests/test_fairseq_features.py::test_a_longer_budget_resumed_is_the_unbroken_longer_run``)."""
    trained = record.train_commands()
    if exp.carries is None or record.model not in exp.carries.rows or record.experiment != carried(exp).name:
        return False
    old_cap = flag_value(trained[-1], "--max-update") if trained else None
    if old_cap is None or cap is None or int(cap) < int(old_cap) or record.last_update >= int(old_cap):
        return False
    top = peak(record, stopping_rule(trained[-1]))
    return top is not None and top.stopped is not None  # else the larger cap would train on


def stages_here(exp: Experiment, record: RunRecord, chain: List[Stage]) -> Optional[Dict[str, dict]]:
    """The stages of ``record`` as a run of ``exp`` would record them, or None when the record
    cannot be that run.  A run of ``exp`` itself: its stages as they are.  A run of the file
    ``exp`` carries over (``carried_at``): its stages read with that file's run folder as
    ``exp``'s and its cap as ``exp``'s."""
    if record.experiment == exp.name:
        return record.stages
    here = next((s.commands[-1] for s in chain if s.name == "train"), None)
    new_cap = flag_value(here, "--max-update") if here is not None else None
    if not carried_at(exp, record, new_cap):
        return None

    def moved(argv: List[str], train: bool) -> List[str]:
        out = [a.replace(f"<work>/{record.experiment}/", f"<work>/{exp.name}/") for a in argv]
        return [new_cap if train and b == "--max-update" else a for a, b in zip(out, [None, *out])]

    return {
        name: {**stamp, "commands": [moved(a, name == "train") for a in stamp["commands"]]}
        for name, stamp in record.stages.items()
    }


def kept_record(exp: Experiment, model: Model, seed: int) -> Optional[RunRecord]:
    """The committed record of (model, seed) as a run of ``exp``, read without ``work/``: its own,
    else the carried file's where that is ``exp``'s run (``carried_at``), else None.  What the
    pages read (``readme``); the runner restores a run by its commands (``restore_run``)."""
    own = committed_runs(exp) / model.name / f"seed{seed}" / FILE
    if own.is_file():
        return RunRecord.load(own)
    if exp.carries is None or model.name not in exp.carries.rows:
        return None
    theirs = kept_runs(carried(exp)) / model.name / f"seed{seed}" / FILE
    if not theirs.is_file():
        return None
    record = RunRecord.load(theirs)
    return record if carried_at(exp, record, flag_value(train_flags(exp, model), "--max-update")) else None


def kept_records(exp: Experiment) -> Dict[str, List[RunRecord]]:
    """model -> the committed records of its seeds (``kept_record``), in the order the file lists
    them; the models with none left out."""
    out = {}
    for m in exp.models.values():
        found = [r for seed in m.seeds if (r := kept_record(exp, m, seed)) is not None]
        if found:
            out[m.name] = found
    return out


def restore_run(exp: Experiment, model: Model, seed: int, chain: List[Stage], copy: bool = True) -> bool:
    """Whether (model, seed) is finished: here (a folder restored before) or in its
    committed copy, which is then copied into its run folder (``copy``).  A copy counts
    only when it records every stage of ``chain`` with the same commands; a run folder
    this machine ran is never touched, and one restored before follows its committed copy
    (a run trained again elsewhere and committed replaces the copy restored here, which
    the results would otherwise show, and copy back over the newer commit).  Where ``exp``
    has no committed copy of the run, the file it carries over is asked (``stages_here``)."""
    run = run_dir(exp, model, seed)
    marker = run / ".stages" / "restored.json"
    kept = kept_runs(exp) / model.name / f"seed{seed}"
    if not (kept / FILE).is_file() and exp.carries is not None:
        kept = kept_runs(carried(exp)) / model.name / f"seed{seed}"
    committed = kept / FILE
    if run.exists() and not marker.is_file():
        return False
    committed_stages = stages_here(exp, RunRecord.load(committed), chain) if committed.is_file() else None
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
        shutil.copyfile(committed, tmp / FILE)  # what the results read of a restored run
        if (kept / KEPT_HYPS).is_file():  # (a classification run has none)
            (gen / "hyp.txt").write_bytes(lzma.decompress((kept / KEPT_HYPS).read_bytes()))
        (tmp / ".stages").mkdir()
        (tmp / ".stages" / marker.name).write_text(json.dumps(stages, indent=1) + "\n")
    return True
