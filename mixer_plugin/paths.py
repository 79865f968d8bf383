"""Where things are: the checkout (experiments/, data-prep/, results/, work/) and the
shared data folder beside it.

The package is installed editable from a checkout (``pip install -e .``, what
scripts/install.sh does), so the checkout is the package's parent.  Installed
elsewhere, the current directory stands in for it.
"""

import os
from pathlib import Path

_PARENT = Path(__file__).resolve().parents[1]
CHECKOUT = _PARENT if (_PARENT / "data-prep").is_dir() else Path.cwd()
# everything generated: data, checkpoints, logs (git-ignored); MIXER_WORK moves it
WORK = Path(os.environ.get("MIXER_WORK") or CHECKOUT / "work").resolve()
RESULTS = CHECKOUT / "results"  # what is committed: tables, plots, small run outputs
SHARED_DATA = CHECKOUT.parent / "shared" / "data"  # the real corpora beside the checkout, where present


def shown(path) -> str:
    """A path as a user reads it: relative to the checkout when inside it."""
    p = Path(path).resolve()
    return str(p.relative_to(CHECKOUT)) if p.is_relative_to(CHECKOUT) else str(path)
