"""Once, on 2026-11-26: every committed run folder (``results/<name>/runs/<model>/seed<N>/``)
from its logs to its record.  Before, a kept run was its training log, fairseq-generate's
log, ``score.json``, the bootstrap caches and ``stages.json``, with the absolute paths of
the machine that ran it; now it is ``run.json`` (``collect.run_record``) and its
hypotheses.  The records are read from those files by the same function that reads a run
folder (``collect.read_record``), and the stage commands are made portable the way
``runner.restore`` used to compare them; then the old files are removed.

    python scripts/convert_runs_to_records.py            # convert (a folder that has run.json is left alone)
    python scripts/convert_runs_to_records.py --check    # exit 1 while a committed run is not converted
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, Optional, Tuple

from mixer_plugin.experiments.archive import committed_runs
from mixer_plugin.experiments.argv import portable
from mixer_plugin.experiments.collect import RECORD, read_record
from mixer_plugin.experiments.spec_loader import load
from mixer_plugin.paths import CHECKOUT

OLD_FILES = ("train.log", "generate.err", "score.json", "stages.json", "validate.log")


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
                work = str(a)[: str(a).index(f"/{run_suffix}")]
    return (checkout, work) if checkout and work else None


def portable_stages(stages: Dict[str, dict], run_suffix: str) -> Dict[str, dict]:
    roots = recorded_roots(stages, run_suffix)
    if roots is None:
        sys.exit(f"convert: no --user-dir or run folder in the stage records of {run_suffix}")
    return {
        name: {**stamp, "commands": [portable(argv, *roots) for argv in stamp["commands"]]}
        for name, stamp in stages.items()
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="only say which committed runs are not converted")
    args = p.parse_args(argv)
    pending = {}
    for path in sorted((CHECKOUT / "experiments").glob("*.yaml")):
        exp = load(path)
        root = committed_runs(exp)
        if not root.is_dir():
            continue
        for m in exp.models.values():
            src = exp.models[m.decode_of] if m.decode_of else m
            for seed in m.seeds:
                kept = root / m.name / f"seed{seed}"
                if not kept.is_dir() or (kept / RECORD).is_file():
                    continue
                stages = json.loads((kept / "stages.json").read_text())
                record = read_record(exp, m, seed, root / src.name / f"seed{seed}" / "train.log", kept)
                if record is None:
                    sys.exit(f"convert: {kept} has no scores")
                record["stages"] = portable_stages(stages, f"{exp.name}/{m.name}/seed{seed}")
                pending[kept] = record
    if args.check:
        for kept in pending:
            print(f"not converted: {kept.relative_to(CHECKOUT)}")
        return 1 if pending else 0
    # every record first: a decode's record reads the training log of the run it decodes
    for kept, record in pending.items():
        (kept / RECORD).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for kept in pending:
        for old in [*(kept / name for name in OLD_FILES), *kept.glob("bootstrap*.json")]:
            old.unlink(missing_ok=True)
    print(f"converted {len(pending)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
