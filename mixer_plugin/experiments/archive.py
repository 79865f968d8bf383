"""Where an experiment's results are kept, and each finished run beside them as its record
(``collect.run_record``: scores, curves, speeds, the stages with their commands) and its
hypotheses; never logs or checkpoints, and no path of the machine that ran it.
``runner.restore`` brings a kept run back on a machine whose ``work/`` is empty.
"""

import json
import shutil
from pathlib import Path
from typing import List

from ..files import atomic_path
from ..paths import PROJECT, RESULTS, WORK
from .collect import RECORD, ModelResult
from .spec import Experiment


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
    """Each finished run beside the results file: ``run.json`` (its record) and its
    hypotheses.  ``runner.restore`` brings them back on a machine whose ``work/`` is empty."""
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
                    shutil.copyfile(hyps, tmp / hyps.name)
