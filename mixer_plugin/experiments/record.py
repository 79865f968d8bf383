"""A finished run's record: the one type in which a run is kept (``results/<name>/runs/<row>/seed<N>/run.json``)
and read back, by the results tables (``collect``), the README's blocks (``readme``),
``mixer-compare`` and the restores (``archive``).

A record holds what the tables, plots and bootstraps need of a run and nothing else: the
training's points (``TRAIN_KEYS`` of each of fairseq's ``train_inner`` lines), every
validation, the test scores, the decoding speed and each stage's stamp with its commands
(relative to the checkout and ``work/``, never a path of the machine).  The hypotheses lie
beside it (``archive.KEPT_HYPS``).

The file carries its format's version.  ``load`` reads every version there has been, by the
chain of ``MIGRATIONS``, and refuses a key it does not know or a version newer than this
code, in one line naming the file: a record is read the same way everywhere, or not at all.

Versions:
  0  (2026-11-26 to 2026-12-06) the same fields without ``version``
  1  ``version`` written first

    python -m mixer_plugin.experiments.record           # rewrite every committed record in this version
    python -m mixer_plugin.experiments.record --check   # exit 1 while one is not (or is no record)
"""

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable, Dict, List, Optional

from ..files import atomic_path
from ..paths import RESULTS, shown

FILE = "run.json"
VERSION = 1
# of each train_inner point, what a table or plot reads: the curve, the speed and the step
TRAIN_KEYS = ("num_updates", "loss", "nll_loss", "ppl", "wps", "ups", "wpb", "bsz", "lr", "gnorm", "wall", "train_wall")


class RecordError(ValueError):
    """A file that is not a run record this code reads; its message is one line naming the file."""


@dataclass(frozen=True)
class RunRecord:
    experiment: str
    model: str
    seed: int
    params: Optional[int]  # as fairseq-train's log counts them (None: not logged)
    last_update: int
    train: List[dict]  # fairseq's train_inner points, ``TRAIN_KEYS`` of each, in update order
    valid: List[dict]  # every validation, as fairseq logs it, in update order
    scores: dict  # the scorer's output (``mixer-score``) less the sentences, or {"accuracy": x}
    decode_speed: Optional[float]  # sentences/s that fairseq-generate reports (None: not timed)
    # stage name -> its stamp (``stages.Stage.done``), commands portable (``argv.portable_in``)
    stages: Dict[str, dict] = field(default_factory=dict)
    version: int = VERSION

    @property
    def name(self) -> str:
        return f"{self.model}/seed{self.seed}"

    def train_commands(self) -> List[List[str]]:
        """The training's commands (a resumed training has several), [] when not recorded."""
        return self.stages.get("train", {}).get("commands", [])

    def to_json(self) -> dict:
        """The file's content: ``version`` first, then the fields in their order."""
        out = asdict(self)
        return {"version": out.pop("version"), **out}

    def save(self, path: Path) -> None:
        """Written whole or not at all (``files.atomic_path``)."""
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def from_json(cls, data: dict, where: str = "a record") -> "RunRecord":
        if not isinstance(data, dict):
            raise RecordError(f"{where} is not a run record (a JSON object is)")
        version = data.get("version", 0)
        if not isinstance(version, int) or version < 0:
            raise RecordError(f"{where}: version {version!r} is no record version")
        if version > VERSION:
            raise RecordError(
                f"{where}: record version {version} is newer than this code reads ({VERSION}); update mixer-plugin"
            )
        for v in range(version, VERSION):
            data = MIGRATIONS[v](data)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RecordError(f"{where}: unknown key {', '.join(unknown)} in a version {VERSION} record")
        required = {f.name for f in fields(cls) if f.name not in ("stages", "version")}
        missing = sorted(required - set(data))
        if missing:
            raise RecordError(f"{where} is not a run record (no {', '.join(missing)})")
        return cls(**data)

    @classmethod
    def load(cls, path: Path) -> "RunRecord":
        """The record at ``path``; ``RecordError`` (one line naming it) for anything else."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise RecordError(f"{path} does not exist") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise RecordError(f"{path} is not JSON ({e.msg}, line {e.lineno})") from None
        return cls.from_json(data, str(path))


def _v0_to_v1(data: dict) -> dict:
    """Version 0 had every field of version 1 but ``version`` itself."""
    return {**data, "version": 1}


# version -> the step from it to the next; ``load`` applies them in turn
MIGRATIONS: Dict[int, Callable[[dict], dict]] = {0: _v0_to_v1}


def committed() -> List[Path]:
    """Every committed run's record: ``results/<name>/runs/<row>/seed<N>/run.json``."""
    return sorted(RESULTS.glob(f"*/runs/*/seed*/{FILE}"))


def stale(path: Path) -> bool:
    """Whether the file is not its record as this version writes it (``RecordError`` if it is
    no record at all)."""
    text = path.read_text(encoding="utf-8")
    return text != json.dumps(RunRecord.load(path).to_json(), indent=1, ensure_ascii=False) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m mixer_plugin.experiments.record",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--check", action="store_true", help="only name the records not in this version")
    args = p.parse_args(argv)
    try:
        old = [path for path in committed() if stale(path)]
    except RecordError as e:
        print(f"record: error: {e}", file=sys.stderr)
        return 1
    for path in old:
        if args.check:
            print(f"not version {VERSION}: {shown(path)}")
        else:
            RunRecord.load(path).save(path)
    if not args.check:
        print(f"{len(old)} of {len(committed())} records rewritten in version {VERSION}")
    return 1 if args.check and old else 0


if __name__ == "__main__":
    sys.exit(main())
