"""Where things are: the checkout (experiments/, data-prep/, results/, work/) and the
shared data folder beside it.

The package is installed editable from a checkout (``pip install -e .``, what
scripts/install.sh does), so the checkout is the package's parent.  Installed
elsewhere, the current directory stands in for it.
"""

import os
import sys
from pathlib import Path

_PARENT = Path(__file__).resolve().parents[1]
CHECKOUT = _PARENT if (_PARENT / "data-prep").is_dir() else Path.cwd()
# everything generated: data, checkpoints, logs (git-ignored); MIXER_WORK moves it
WORK = Path(os.environ.get("MIXER_WORK") or CHECKOUT / "work").resolve()
RESULTS = CHECKOUT / "results"  # what is committed: tables, plots, small run outputs
SHARED_DATA = CHECKOUT.parent / "shared" / "data"  # the real corpora beside the checkout, where present


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


def shown(path) -> str:
    """A path as a user reads it: relative to the checkout when inside it."""
    p = Path(path).resolve()
    return str(p.relative_to(CHECKOUT)) if p.is_relative_to(CHECKOUT) else str(path)
