"""Where an experiment's results are kept, and each run's small outputs beside them:
scores, hypotheses, the training and decoding logs, the stage records with their commands
(never checkpoints).  ``runner.restore`` brings a kept run back on a machine whose
``work/`` is empty.
"""

import json
import shutil
from pathlib import Path
from typing import List

from ..data.prep import atomic_path
from ..paths import CHECKOUT, WORK
from .collect import ModelResult
from .spec import Experiment


def results_path(exp: Experiment) -> Path:
    if exp.results is None:
        return WORK / exp.name / "results.md"
    return exp.results if exp.results.is_absolute() else CHECKOUT / exp.results


RUN_FILES = ("train.log",)  # kept from a run folder; the rest from its gen-<subset>/
GEN_FILES = ("hyp.txt", "score.json", "bootstrap*.json", "validate.log", "generate.err")


def kept_runs(exp: Experiment) -> Path:
    """Where each run's small outputs are committed: ``results/<name>/runs/``."""
    return results_path(exp).with_suffix("") / "runs"


def keep_run_outputs(exp: Experiment, results: List[ModelResult]):
    """Each run's small outputs beside the results file: scores, hypotheses, its
    training and decoding logs, the commands and the stage records (never checkpoints).
    ``runner.restore`` brings them back on a machine whose ``work/`` is empty."""
    for r in results:
        for run in r.runs:
            dest = kept_runs(exp) / r.model.name / run.name
            gen = run / f"gen-{r.model.generate.subset}"
            # built beside and renamed whole: a copy cut short (a killed runner) is never a
            # committed run's hypotheses beside another training's stage records
            with atomic_path(dest) as tmp:
                tmp.mkdir()
                for src in (*(run / f for f in RUN_FILES),
                            *(p for pattern in GEN_FILES for p in sorted(gen.glob(pattern)))):
                    if src.is_file():
                        shutil.copyfile(src, tmp / src.name)
                stamps = run / ".stages"
                restored = stamps / "restored.json"  # a restored run: the record of the machine that ran it
                record = json.loads(restored.read_text()) if restored.is_file() else {
                    p.stem: json.loads(p.read_text()) for p in sorted(stamps.glob("*.json"))
                    if not p.stem.endswith("begun")}
                if record:
                    (tmp / "stages.json").write_text(json.dumps(record, indent=1) + "\n")
