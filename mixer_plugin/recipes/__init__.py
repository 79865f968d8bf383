"""One module per dataset: what it downloads (or reads) and how its release is laid out; the
steps every dataset shares are ``mixer_plugin.data``.  See docs/data.md.

    mixer-prepare RECIPE [options of the recipe]      (or python -m mixer_plugin.recipes)
    mixer-prepare --list

Each module declares ``RECIPES = {name: fixed arguments}``: most serve one name
(``iwslt14_de_en``), ``wmt17`` serves every WMT'17 pair (``wmt17_en_de`` =
``python -m mixer_plugin.recipes.wmt17 --src en --tgt de``).  ``--help`` after the name shows the
recipe's own options.  They are part of the package, so an installed plugin prepares data from
any folder.
"""

import importlib
import pkgutil
import shlex
import sys
from types import ModuleType
from typing import Dict, Iterable, List, Optional, Tuple

from ..data.workspace import PrepError, main_wrapper
from ..paths import PYTHON


def recipe_modules() -> List[ModuleType]:
    """Every recipe module of this package, by name (``__main__`` is the command, not a recipe)."""
    return [
        importlib.import_module(f"{__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
        if not info.name.startswith("_")
    ]


def recipes() -> Dict[str, Tuple[ModuleType, List[str]]]:
    """{recipe name: (its module, fixed argv)} over every recipe module."""
    out = {}
    for module in recipe_modules():
        for name, fixed in getattr(module, "RECIPES", {}).items():
            if name in out:
                raise PrepError(f"recipe {name} is declared by {out[name][0].__name__} and {module.__name__}")
            out[name] = (module, list(fixed))
    return out


def command(name: str, extra: Iterable[object] = ()) -> List[str]:
    """The command line that prepares ``name``:
    ``python -m mixer_plugin.recipes.<module> <fixed> <extra>``."""
    table = recipes()
    if name not in table:
        raise PrepError(f"unknown data recipe {name!r} (known: {', '.join(sorted(table))})")
    module, fixed = table[name]
    return [PYTHON, "-m", module.__name__, *fixed, *map(str, extra)]


def main(argv: Optional[List[str]] = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        print("recipes: " + ", ".join(sorted(recipes())))
        return
    if argv[0] == "--list":
        for name, (module, fixed) in sorted(recipes().items()):
            print(f"{name}\tpython -m {module.__name__} {shlex.join(fixed)}".rstrip())
        return
    name, rest = argv[0], argv[1:]
    table = recipes()
    if name not in table:
        print(f"mixer-prepare: error: unknown recipe {name!r} (known: {', '.join(sorted(table))})", file=sys.stderr)
        sys.exit(2)
    module, fixed = table[name]
    sys.argv = [module.__name__, *fixed, *rest]
    main_wrapper(name, lambda: module.main(fixed + rest))
