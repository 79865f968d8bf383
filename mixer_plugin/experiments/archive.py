"""Where an experiment's results are kept, and each finished run beside them as its record
(``collect.run_record``: scores, curves, speeds, the stages with their commands) and its
hypotheses; never logs or checkpoints, and no path of the machine that ran it.
``restore_run`` brings a kept run back on a machine whose ``work/`` is empty.
"""

import json
import lzma
import shutil
from pathlib import Path
from typing import List

from ..files import atomic_path
from ..paths import PROJECT, RESULTS, WORK
from .argv import portable_in
from .collect import RECORD, ModelResult
from .commands import beside_device
from .spec import Experiment, Model
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


def read_record(path: Path) -> dict:
    """A committed run's record (``run.json``), as the generated pages read it: the one place to
    change when the records get a reader of their own."""
    return json.loads(path.read_text(encoding="utf-8"))


def committed_runs(exp: Experiment) -> Path:
    """Where an experiment's runs are committed: its kept runs, or, for an experiment that
    writes under work/ (the quickstart), ``results/<name>/runs/``, a run of it copied by hand."""
    return kept_runs(exp) if exp.results is not None else RESULTS / exp.name / "runs"


def keep_run_outputs(exp: Experiment, results: List[ModelResult]) -> None:
    """Each finished run beside the results file: ``run.json`` (its record) and its
    hypotheses (``KEPT_HYPS``).  ``restore_run`` brings them back on a machine whose ``work/`` is empty."""
    for r in results:
        for run, record in zip(r.runs, r.records):
            dest = kept_runs(exp) / r.model.name / run.name
            hyps = run / f"gen-{r.model.generate.subset}" / "hyp.txt"
            # built beside and renamed whole: a copy cut short (a killed runner) is never a
            # committed run's hypotheses beside another training's record
            with atomic_path(dest) as tmp:
                tmp.mkdir()
                (tmp / RECORD).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
                if hyps.is_file():
                    (tmp / KEPT_HYPS).write_bytes(lzma.compress(hyps.read_bytes()))


def restore_run(exp: Experiment, model: Model, seed: int, chain: List[Stage], copy: bool = True) -> bool:
    """Whether (model, seed) is finished: here (a folder restored before) or in its
    committed copy, which is then copied into its run folder (``copy``).  A copy counts
    only when it records every stage of ``chain`` with the same commands; a run folder
    this machine ran is never touched, and one restored before follows its committed copy
    (a run trained again elsewhere and committed replaces the copy restored here, which
    the results would otherwise show, and copy back over the newer commit)."""
    run = run_dir(exp, model, seed)
    marker = run / ".stages" / "restored.json"
    kept = kept_runs(exp) / model.name / f"seed{seed}"
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
        if (kept / KEPT_HYPS).is_file():  # (a classification run has none)
            (gen / "hyp.txt").write_bytes(lzma.decompress((kept / KEPT_HYPS).read_bytes()))
        (tmp / ".stages").mkdir()
        (tmp / ".stages" / marker.name).write_text(json.dumps(stages, indent=1) + "\n")
    return True
