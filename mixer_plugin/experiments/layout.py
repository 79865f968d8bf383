"""docs/layers.md's two pictures, drawn from the code so that they cannot drift from it:

* ``layers``: the package's layers as pyproject.toml's import contracts state them (the ones
  ``lint-imports`` checks in CI), each module with the first sentence of its docstring;
* ``run_flow``: the stages of one run as the runner builds them (``stages.run_stages`` for a row
  of the leaderboard), the program each runs and what it leaves, then the record and the table.

``readme`` renders both into the page's generated blocks, and its ``--check`` fails when the
contracts, a docstring or the stages change and the page was not rewritten.
"""

import ast
import importlib.util
import re
from pathlib import Path
from typing import Dict, List

from ..paths import CHECKOUT
from .spec_loader import load
from .stages import prepare_stage, run_dir, run_stages

PLUGIN_CONTRACT = "forbidden"  # the contract whose sources are the plugin
LAYERS_CONTRACT = "layers"  # the lab's order, down to the plugin
FLOW_EXPERIMENT = "leaderboard_v3"  # a row of it shows every stage of a translation run
# what is made of a finished run after its stages: (step, what makes it, what it leaves)
AFTER_STAGES = [
    ("record", ["collect.run_record", "archive.keep_run_outputs"], "`results/<experiment>/runs/<row>/seed<N>/`: "
     "`run.json` (one `record.RunRecord`, versioned) and `hyp.txt.xz`"),
    ("table", ["report.write", "readme"], "`results/<experiment>.md`, the README's and docs' blocks"),
]  # fmt: skip


def contracts() -> Dict[str, dict]:
    """pyproject.toml's import-linter contracts, by type."""
    import tomllib  # Python 3.11 (the CI's); the docs check is the only reader

    with open(CHECKOUT / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    return {c["type"]: c for c in config}


def summary(module: str) -> str:
    """The first sentence of a module's docstring, read without importing it."""
    origin = importlib.util.find_spec(module).origin
    doc = ast.get_docstring(ast.parse(Path(origin).read_text(encoding="utf-8"))) or ""
    first = re.split(r"(?<=\.)\s", " ".join(doc.split()), maxsplit=1)[0]
    return first.replace("``", "`").replace("|", "\\|")


def short(module: str) -> str:
    return module.split(".", 1)[1]


def layers_block() -> str:
    """A mermaid picture of the layers (an arrow: may import from) and a table of their modules."""
    found = contracts()
    plugin = set(found[PLUGIN_CONTRACT]["source_modules"])
    layers = [[m.strip() for m in layer.split("|")] for layer in found[LAYERS_CONTRACT]["layers"]]
    lines = ["```mermaid", "flowchart TB"]
    for side, title in (
        ("lab", "the lab: runs experiments around the plugin"),
        ("plugin", "the plugin: what --user-dir loads"),
    ):
        lines.append(f'  subgraph {side}["{title}"]')
        for i, layer in enumerate(layers):
            if (set(layer) <= plugin) == (side == "plugin"):
                lines.append(f'    L{i}["{" · ".join(short(m) for m in layer)}"]')
        lines.append("  end")
    lines += [f"  L{i} --> L{i + 1}" for i in range(len(layers) - 1)]
    lines += ["```", "", "| layer | module | what it is |", "|---:|---|---|"]
    for i, layer in enumerate(layers):
        for m in layer:
            side = "plugin" if m in plugin else "lab"
            lines.append(f"| {i + 1} ({side}) | `{short(m)}` | {summary(m)} |")
    return "\n".join(lines) + "\n"


def program(argv: List[str]) -> str:
    """What a command runs: ``python -m MODULE`` as the module, any other as its program's name."""
    args = [str(a) for a in argv]
    if "-m" in args:
        return args[args.index("-m") + 1]
    return Path(args[0]).name


def run_flow_block() -> str:
    """The stages of the first row of ``FLOW_EXPERIMENT``, seed 1, as a mermaid chain, then a
    table of each stage's programs and outputs (relative to the run folder or the data root)."""
    exp = load(CHECKOUT / "experiments" / f"{FLOW_EXPERIMENT}.yaml")
    model = next(iter(exp.models.values()))
    prepared = prepare_stage(model.data, model.prepare)
    stages = [prepared] + run_stages(exp, model, 1, prepared, None)
    run, root = run_dir(exp, model, 1), prepared.outputs[0].parent
    # (name, what it runs, what it leaves): the runner's stages, then what is made of a finished run
    steps = []
    for s in stages:
        base, where = (root, "data root") if s is prepared else (run, "run folder")
        left = ", ".join(f"`{p.relative_to(base)}`" for p in s.outputs) + f" (in the {where})"
        steps.append((s.name, list(dict.fromkeys(program(c) for c in s.commands)), left))
    steps += AFTER_STAGES
    lines = ["```mermaid", "flowchart LR"]
    lines += [f'  {name}["{name}<br>{", ".join(what)}"]' for name, what, _ in steps]
    lines += ["  " + " --> ".join(name for name, _, _ in steps), "```", ""]
    lines += ["| stage | runs | leaves |", "|---|---|---|"]
    lines += [f"| {name} | {', '.join(f'`{w}`' for w in what)} | {left} |" for name, what, left in steps]
    return "\n".join(lines) + "\n"
