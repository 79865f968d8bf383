"""The stages of one run (one model, one seed) and what each depends on.  Their command lines
are ``commands``; running one (its stamp, a training's resume and pause) is ``running``.

    prepare   mixer-prepare RECIPE                   -> work/data/<recipe>/{bin,ref,prep.json}
    train     fairseq-train (torchrun with NGPU > 1)  -> <run>/checkpoint*.pt, train.log
    average   mixer-average                           -> <run>/averaged_last<N>[_upto_best].pt (average_last > 1)
    generate  fairseq-generate + mixer-postprocess    -> <run>/gen-<subset>/{hyp.txt,hyp.tok}
              (classification: fairseq-validate on the test subset -> <run>/test.log)
    score     mixer-score                             -> <run>/gen-<subset>/score.json

Every stage is a list of stock command lines, each written at the head of the stage's
log (``$ python -m fairseq_cli.train ...``) and listed in the results' Commands, so
that each can be copied and run by hand.  A stage leaves a stamp
``<run>/.stages/<stage>.json`` with its commands and a hash of what it was given (its
commands and the stamps it depends on); a rerun skips a stage whose stamp matches.  Training is
the exception that makes long runs resumable: a killed ``fairseq-train`` is started
again with the same save dir and continues from ``checkpoint_last.pt`` (or, where that
does not load, from the newest checkpoint that does: ``checkpoints.resume_point``), and a changed
``--max-update`` (a longer budget) continues too; any other change to the training
command starts the run over (the old folder is kept as ``<run>.stale-<time>``).
"""

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..data.workspace import data_root
from ..paths import PYTHON, WORK
from .argv import drop_flag
from .commands import checkpoint, decode_commands, score_command, train_command
from .spec import Experiment, Model


class StageError(RuntimeError):
    """A stage's command failed: one line naming the stage, the command and its log."""


class StagePaused(StageError):
    """A training the runner ended at a checkpoint because it is pausing (``TrainingWatch``):
    unfinished, so unstamped, and continued from that checkpoint by the next run."""


class StageTooLong(StagePaused):
    """A training the runner ended at its first checkpoint because it cannot reach its
    ``--max-update`` before ``--stop-after`` ends the runner (``TrainingWatch``): kept at that
    checkpoint, for a machine with the time to finish it."""


@dataclass
class Stage:
    name: str  # prepare | train | average | generate | score
    commands: List[List[str]]
    log: Path  # stdout + stderr of the commands
    outputs: List[Path]  # what must exist afterwards
    after: List["Stage"] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    stamp: Optional[Path] = None
    cwd: Optional[Path] = None

    def inputs(self) -> str:
        """What the stage was given: its commands (without ``--max-update`` for training,
        which may grow) and the stamps of what it depends on."""
        parts = [
            json.dumps(self.commands if self.name != "train" else [drop_flag(c, "--max-update") for c in self.commands])
        ]
        parts += [s.stamp.read_text() if s.stamp and s.stamp.is_file() else "" for s in self.after]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

    def record(self) -> Optional[dict]:
        if self.stamp and self.stamp.is_file():
            return json.loads(self.stamp.read_text())
        return None

    def done(self) -> bool:
        """Stamped with today's commands and inputs, its outputs there, and every stage it
        depends on done too: its inputs hash only the stamps next to it, so a decode two
        steps from a training that runs again would read as done until the step between
        had run again (the runner checks each stage as it comes, but a dry run and the
        count of stages to run read them all at the start)."""
        rec = self.record()
        return (
            bool(rec)
            and rec["inputs"] == self.inputs()
            and rec["commands"] == self.commands
            and all(p.exists() for p in self.outputs)
            and all(s.done() for s in self.after)
        )


def run_dir(exp: Experiment, model: Model, seed: int) -> Path:
    return WORK / exp.name / model.name / f"seed{seed}"


def prepare_stage(recipe: str, prepare: List[str]) -> Stage:
    from ..recipes import command

    root = data_root(recipe, prepare)
    return Stage(
        "prepare",
        [command(recipe, [*prepare, "--root", str(root)])],
        root / "prepare.log",
        [root / "prep.json"],
        stamp=root / ".stages" / "prepare.json",
    )


def prepare_stages(models: Sequence[Model]) -> Dict[Tuple[str, tuple], Stage]:
    """The prepare stage of each (recipe, its arguments) the models train on, once each: what
    ``chains`` takes as ``prepared``."""
    out: Dict[Tuple[str, tuple], Stage] = {}
    for m in models:
        key = (m.data, tuple(m.prepare))
        if key not in out:
            out[key] = prepare_stage(m.data, m.prepare)
    return out


def run_stages(
    exp: Experiment,
    model: Model,
    seed: int,
    prepared: Stage,
    trained: Optional[Stage],
    prep: Optional[dict] = None,
) -> List[Stage]:
    """The stages of one (model, seed); ``trained``: the train stage of ``decode_of``; ``prep``:
    the data's ``prep.json`` as given (else read from the prepared folder: ``commands.prep_manifest``)."""
    root = prepared.outputs[0].parent
    run = run_dir(exp, model, seed)
    stamps = run / ".stages"
    save = trained.outputs[0].parent if trained is not None else run
    stages = []
    if trained is None:
        trained = Stage(
            "train",
            [train_command(exp, model, seed, root, run, prep)],
            run / "train.log",
            [run / "checkpoint_last.pt"],
            [prepared],
            stamp=stamps / "train.json",
        )
        stages.append(trained)
    last = trained
    if model.generate.average_last > 1:
        n = model.generate.average_last
        last = Stage(
            "average",
            [
                [
                    PYTHON,
                    "-m",
                    "mixer_plugin.experiments.checkpoints",
                    str(save),
                    "--last",
                    str(n),
                    # the best by the training's stopping rule over its whole log (a resumed
                    # training's own count restarted: trainlog)
                    *(["--upto-best", "--log", str(trained.log)] if model.generate.checkpoint == "best" else []),
                    "--output",
                    str(checkpoint(model, save)),
                ]
            ],
            stamps / "average.log",
            [checkpoint(model, save)],
            [trained],
            stamp=stamps / "average.json",
        )
        stages.append(last)
    out = run / f"gen-{model.generate.subset}"
    if exp.kind == "classification":
        gen = Stage(
            "generate",
            decode_commands(exp, model, root, save, out, prep),
            out / "validate.log",
            [out / "validate.log"],
            [last, prepared],
            stamp=stamps / "generate.json",
        )
        stages.append(gen)
        return stages
    gen = Stage(
        "generate",
        decode_commands(exp, model, root, save, out, prep),
        out / "generate.err",
        [out / "hyp.txt"],
        [last, prepared],
        stamp=stamps / "generate.json",
    )
    score = Stage(
        "score",
        [score_command(exp, model, root, out, prep)],
        out / "score.log",
        [out / "score.json"],
        [gen],
        stamp=stamps / "score.json",
    )
    return stages + [gen, score]


def chains(
    exp: Experiment,
    models: Sequence[Model],
    prepared: Dict[Tuple[str, tuple], Stage],
    seeds: Optional[Sequence[int]] = None,
    prep: Optional[Dict[str, dict]] = None,
) -> List[Tuple[str, List[Stage]]]:
    """(``<model>/seed<N>``, stages) of every (model, seed) of ``models`` (of ``seeds``, where
    given), trained models first, each decode after the training it decodes; ``prepared``: the
    prepare stage of each (recipe, its arguments); ``prep``: each recipe's ``prep.json`` as given
    (``run_stages``)."""
    trained: Dict[Tuple[str, int], Stage] = {}
    out = []
    for m in sorted(models, key=lambda m: m.decode_of is not None):
        for seed in m.seeds:
            if seeds and seed not in seeds:
                continue
            data = prepared[(m.data, tuple(m.prepare))]
            given = prep[m.data] if prep is not None else None
            stages = run_stages(exp, m, seed, data, trained.get((m.decode_of, seed)), given)
            if not m.decode_of:
                trained[(m.name, seed)] = stages[0]
            out.append((f"{m.name}/seed{seed}", stages))
    return out
