"""Where things are: the plugin (the ``--user-dir``), the repository checkout it may sit in,
and the project folder where runs write ``work/`` and ``results/``.

Installed editable from a checkout (``pip install -e .``, what scripts/install.sh does),
the checkout is the package's parent, and a command started anywhere inside it works on
the checkout's experiments/, work/ and results/.  Started from any other folder, or with the
package installed into a user's own environment (``pip install .``), the current folder is
the project: ``work/`` and ``results/`` go under it, and experiment files and corpora are
read from wherever their paths point.
"""

import os
import sys
from pathlib import Path
from typing import Optional, Union

PLUGIN = Path(__file__).resolve().parent  # the package folder: fairseq's --user-dir


def _checkout(folder: Path) -> Optional[Path]:
    """``folder`` when it is this repository's checkout (it holds setup.py and experiments/)."""
    return folder if (folder / "setup.py").is_file() and (folder / "experiments").is_dir() else None


def _project(checkout: Optional[Path], cwd: Path) -> Path:
    return checkout if checkout is not None and cwd.is_relative_to(checkout) else cwd


_REPO = _checkout(PLUGIN.parent)  # None for an installed (not editable) package
PROJECT = _project(_REPO, Path.cwd().resolve())  # where work/ and results/ go
CHECKOUT = _REPO or PROJECT  # the repository's own files (experiments/, configs/, data/, README.md)
# everything generated: data, checkpoints, logs (git-ignored); MIXER_WORK moves it
WORK = Path(os.environ.get("MIXER_WORK") or PROJECT / "work").resolve()
RESULTS = PROJECT / "results"  # what is committed: tables, plots, small run outputs
SHARED_DATA = CHECKOUT.parent / "shared" / "data"  # the real corpora beside the checkout, where present


def outside_checkout() -> bool:
    """True when runs write under a folder of the user's own, not under the plugin's checkout."""
    return PROJECT != _REPO


def interpreter() -> str:
    """This Python, named ``python`` in its own folder where that is the same program (a
    virtualenv's ``python3`` and ``python``).  The runner writes it into every command it
    records, and a finished stage counts as done only while its recorded command is
    today's: started once as ``mixer-run`` and once as ``python3 -m ...``, it would
    otherwise call every finished run changed and train it again."""
    exe = Path(sys.executable)
    alias = exe.with_name("python")
    try:
        if alias != exe and alias.exists() and os.path.samefile(alias, exe):
            return str(alias)
    except OSError:
        pass
    return str(exe)


PYTHON = interpreter()


def shown(path: Union[str, Path]) -> str:
    """A path as a user reads it: relative to the project folder when inside it."""
    p = Path(path).resolve()
    return str(p.relative_to(PROJECT)) if p.is_relative_to(PROJECT) else str(path)
