"""fairseq-preprocess in a subprocess, its command and output kept in a log and its failure a ``PrepError``:
the pipeline's binarize step calls it, and so do the recipes' own binarizers (a classifier's
labels, a dictionary capped as a paper's)."""

import shlex
import subprocess
import sys
from pathlib import Path
from typing import List

from .workspace import PrepError


def fairseq_preprocess(argv: List[str], log: Path) -> None:
    cmd = [sys.executable, "-m", "fairseq_cli.preprocess", *argv]
    with open(log, "w") as f:
        # the command first, as a user would type it (data-prep/common.sh points there)
        f.write(f"$ python -m fairseq_cli.preprocess {shlex.join(argv)}\n")
        f.flush()
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log.read_text().strip().splitlines()[-1:] or ["(no output)"]
        raise PrepError(f"fairseq-preprocess failed (exit {proc.returncode}; see {log}): {tail[0]}")
