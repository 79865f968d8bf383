"""One module per dataset: what it downloads (or reads) and how its release is laid out; the
steps every dataset shares are ``mixer_plugin.data``.  See docs/data.md.

    mixer-prepare RECIPE [options of the recipe]      (or python -m mixer_plugin.recipes)
    mixer-prepare --list
    mixer-prepare --where RECIPE [options]            # the folder it prepares by default
    mixer-prepare --check RECIPE --root DIR [options] # exit 2, one line: DIR was prepared otherwise
    mixer-prepare RECIPE [options] --print-steps      # its steps as commands, one each (data-prep runs them)
    mixer-prepare RECIPE [options] --step STEP        # one of them

Each module declares ``RECIPES = {name: fixed arguments}``: most serve one name
(``iwslt14_de_en``), ``wmt17`` serves every WMT'17 pair (``wmt17_en_de`` =
``python -m mixer_plugin.recipes.wmt17 --src en --tgt de``).  ``--help`` after the name shows the
recipe's own options.  They are part of the package, so an installed plugin prepares data from
any folder.
"""

import contextlib
import importlib
import io
import json
import pkgutil
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ..data.workspace import PrepError, arguments, data_root, main_wrapper
from ..paths import PYTHON, shown


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


def asked(name: str, argv: Sequence[str]) -> List[str]:
    """What a command line asks recipe ``name`` to prepare (``workspace.arguments``), its fixed
    arguments and the options of where and how left out."""
    return arguments(argv, recipes()[name][1])


def check(name: str, root: Path, argv: Sequence[str]) -> None:
    """Stop (``PrepError``) unless ``root`` holds ``name`` prepared with the arguments ``argv``
    asks for, as its ``prep.json`` records them: a row script's guard before it trains on a folder
    it did not prepare.  A folder whose prep.json records no command (made by hand) is taken."""
    manifest = root / "prep.json"
    if not manifest.is_file():
        raise PrepError(f"{root} holds no prep.json: it is not a prepared folder (mixer-prepare {name})")
    prep = json.loads(manifest.read_text(encoding="utf-8"))
    if prep.get("recipe", name) != name:
        raise PrepError(f"{root} holds {prep['recipe']}, not {name}")
    if "command" not in prep:
        return
    had, want = asked(name, shlex.split(prep["command"])[2:]), asked(name, argv)
    if had != want:
        said = lambda args: f"'{shlex.join(args)}'" if args else "its defaults"  # noqa: E731
        raise PrepError(
            f"{root} was prepared with {said(had)}, and this asks for {said(want)}: prepare "
            f"{shown(data_root(name, want))} (mixer-prepare {shlex.join([name, *want])}) or name another DATA"
        )


def printed_steps(name: str, argv: Sequence[str] = ()) -> str:
    """What ``mixer-prepare NAME [argv] --print-steps`` prints: the comment block of each
    data-prep script shows it for the script's defaults."""
    module, fixed = recipes()[name]
    out, before = io.StringIO(), sys.argv
    sys.argv = [module.__name__, *fixed, *argv, "--print-steps"]  # what mixer-prepare runs
    try:
        with contextlib.redirect_stdout(out):
            module.main(sys.argv[1:])
    finally:
        sys.argv = before
    return out.getvalue()


def main(argv: Optional[List[str]] = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("--where", "--check"):
        mode, rest = argv[0], argv[1:]
        if not rest or rest[0] not in recipes():
            print(
                f"mixer-prepare {mode}: error: name a recipe (known: {', '.join(sorted(recipes()))})", file=sys.stderr
            )
            sys.exit(2)
        name, rest = rest[0], rest[1:]
        if mode == "--where":
            print(data_root(name, asked(name, rest)))
            return
        root = next((Path(v) for k, v in zip(rest, rest[1:]) if k == "--root"), None)
        if root is None:
            print(f"mixer-prepare --check {name}: error: --root DIR names the folder to check", file=sys.stderr)
            sys.exit(2)
        main_wrapper(name, lambda: check(name, root, rest))
        return
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
