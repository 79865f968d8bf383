"""Command lines as lists: a flag's value, a command without a flag, a training's stopping rule
read from its flags, and a command as it reads on any machine (``portable``) and back here
(``placed_in``), and as a user types it (``shell``)."""

import os
import re
import shlex
from pathlib import Path
from typing import List, Optional

from ..paths import PLUGIN, PYTHON, shown
from .trainlog import Selection


def drop_flag(argv: List[str], flag: str) -> List[str]:
    """``argv`` without ``flag VALUE`` and ``flag=VALUE``."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == flag:
            skip = True
        elif not a.startswith(flag + "="):
            out.append(a)
    return out


def flag_value(argv: List[str], flag: str) -> Optional[str]:
    """The last value of ``flag``, given as ``flag VALUE`` or ``flag=VALUE`` (argparse: the
    last one wins)."""
    value = None
    for a, b in zip([*argv, None], [*argv[1:], None]):
        if a == flag and b is not None:
            value = b
        elif a is not None and a.startswith(flag + "="):
            value = a[len(flag) + 1 :]
    return value


def stopping_rule(argv: List[str]) -> Selection:
    """The checkpoint choice and early stop a fairseq-train command asks for: its
    ``--best-checkpoint-metric`` (fairseq's default: the loss), whether larger is better, and its
    ``--patience`` (fairseq's default -1: none).  A ``--patience`` that is no integer is no
    rule: fairseq's argparse rejects it in one line naming the flag when the training starts."""
    patience = flag_value(argv, "--patience") or "-1"
    return Selection(
        flag_value(argv, "--best-checkpoint-metric") or "loss",
        "--maximize-best-checkpoint-metric" in argv,
        int(patience) if re.fullmatch(r"[-+]?\d+", patience) else -1,
    )


def portable(argv: List[str], checkout: str, work: str) -> List[str]:
    """A command as it reads on any machine: the interpreter as ``python`` and paths
    under the work folder or the checkout relative to them."""
    out = []
    for i, a in enumerate(map(str, argv)):
        if i == 0:  # wherever the interpreter lives, a virtualenv inside the checkout too
            a = re.sub(r"^python[\d.]*$", "python", Path(a).name)
        elif a.startswith(work + "/"):
            a = "<work>/" + a[len(work) + 1 :]
        elif a.startswith(checkout + "/"):
            a = "<checkout>/" + a[len(checkout) + 1 :]
        out.append(a)
    return out


def portable_in(run: Path, argv: List[str]) -> List[str]:
    """``portable`` for a command of the run folder ``run`` (``work/<exp>/<model>/seed<N>``):
    its checkout is the plugin's, its work folder the one the run lies in."""
    return portable(argv, str(PLUGIN.parent), str(run.parents[2]))


def placed_in(run: Path, argv: List[str]) -> List[str]:
    """A recorded (``portable``) command of the run folder ``run`` as it reads here: the
    inverse of ``portable_in``."""
    places = {"<work>/": f"{run.parents[2]}/", "<checkout>/": f"{PLUGIN.parent}/"}
    return [next((here + a[len(p) :] for p, here in places.items() if a.startswith(p)), a) for a in map(str, argv)]


def shell(argv: List[str]) -> str:
    """A command as a user types it: this interpreter as ``python``, paths inside the
    checkout relative to it."""
    return shlex.join("python" if str(a) == PYTHON else shown(a) if os.path.isabs(str(a)) else str(a) for a in argv)
