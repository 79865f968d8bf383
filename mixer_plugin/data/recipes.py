"""Run a data-prep recipe by the name the architecture tables and experiment files use.

    mixer-prepare RECIPE [options of its script]
    mixer-prepare --list

Each script of ``data-prep/`` declares ``RECIPES = {name: fixed arguments}``: most
serve one name (``iwslt14_de_en.py``), ``wmt17.py`` serves every WMT'17 pair
(``wmt17_en_de`` = ``wmt17.py --src en --tgt de``).  ``--help`` after the name shows
the script's own options.  The scripts hold only what is particular to a dataset
(where to fetch it, how its release is laid out); the rest is ``mixer_plugin.data``.
"""

import importlib.util
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Tuple

from ..paths import CHECKOUT, PYTHON
from .prep import PrepError, main_wrapper

FOLDER = CHECKOUT / "data-prep"


def load_script(path: Path) -> ModuleType:
    """A data-prep script as a module (imported from its file; it imports only the package)."""
    spec = importlib.util.spec_from_file_location(f"data_prep_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recipes(folder: Path = FOLDER) -> Dict[str, Tuple[Path, List[str]]]:
    """{recipe name: (script, fixed argv)} over every script of the folder."""
    out = {}
    for path in sorted(folder.glob("*.py")):
        for name, fixed in getattr(load_script(path), "RECIPES", {}).items():
            if name in out:
                raise PrepError(f"recipe {name} is declared by {out[name][0].name} and {path.name}")
            out[name] = (path, list(fixed))
    return out


def command(name: str, extra=()) -> List[str]:
    """The command line that prepares ``name``: ``python data-prep/<script>.py <fixed> <extra>``."""
    table = recipes()
    if name not in table:
        raise PrepError(f"unknown data recipe {name!r} (known: {', '.join(sorted(table))})")
    script, fixed = table[name]
    return [PYTHON, str(script), *fixed, *map(str, extra)]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        print("recipes: " + ", ".join(sorted(recipes())))
        return
    if argv[0] == "--list":
        for name, (script, fixed) in sorted(recipes().items()):
            print(f"{name}\tdata-prep/{script.name} {shlex.join(fixed)}".rstrip())
        return
    name, rest = argv[0], argv[1:]
    table = recipes()
    if name not in table:
        print(f"mixer-prepare: error: unknown recipe {name!r} (known: {', '.join(sorted(table))})", file=sys.stderr)
        sys.exit(2)
    script, fixed = table[name]
    sys.argv = [str(script), *fixed, *rest]
    module = load_script(script)
    main_wrapper(name, lambda: module.main(fixed + rest))


if __name__ == "__main__":
    main()
