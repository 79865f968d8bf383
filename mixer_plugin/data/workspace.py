"""One recipe run's output folder and its resumable steps, the options every recipe shares,
and how a failure reaches the user (one line, exit status 2).

``Workspace.run_step`` writes a step's marker in ``.steps/<step>.json`` only once the step
has finished; the markers are what let a rerun skip, redo or refuse a step
(``mixer_plugin.data`` says the rules).
"""

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from ..files import atomic_path, sweep_leftovers
from ..paths import WORK, shown


class PrepError(Exception):
    """A one-line, user-facing failure (bad input, failed download, missing file)."""


def say(msg: str) -> None:
    print(f"[mixer-prepare {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# the steps of every recipe, in order (``pipeline.Pipeline``); ``--step NAME`` runs one of them
STEPS = ("raw", "tok", "subword", "binarize")


class Workspace:
    """The output root of one recipe run, with its step markers.  ``fixed``: the arguments the
    recipe's name stands for (``--src en --tgt de`` of wmt17_en_de), left out of the commands
    the steps are printed as."""

    def __init__(self, root: Path, args: argparse.Namespace, recipe: str, fixed: Sequence[str] = ()):
        self.root = Path(root)
        self.recipe = recipe
        self.args = args
        self.fixed = list(fixed)
        self.downloads = Path(args.download_dir) if args.download_dir else self.root / "downloads"
        self.user_downloads = list(args.downloads or [])
        self.offline = args.offline
        self.steps = self.root / ".steps"
        # as prep.json records it: what was asked for, not which step of it this run did
        self.command = " ".join(["python", shown(sys.argv[0]), *map(shlex.quote, without(sys.argv[1:], ONE_STEP))])
        if getattr(args, "print_steps", False):  # prints, touches nothing
            return
        if args.force and self.root.exists():
            for name in ("raw", "tok", "subword", "bin", "ref", ".steps", "prep.json"):
                p = self.root / name
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        for folder in (self.root, self.steps):
            sweep_leftovers(folder)
        self.steps.mkdir(parents=True, exist_ok=True)

    def dir(self, name: str) -> Path:
        return self.root / name

    def run_step(self, name: str, options: dict, fn: Callable[[], Optional[dict]], done_only: bool = False) -> dict:
        """Run ``fn`` unless ``name`` finished before with the same options; ``done_only``: a step
        before the one ``--step`` asks for, which must have finished."""
        marker = self.steps / f"{name}.json"
        if done_only and not marker.is_file():
            raise PrepError(f"step {name} is not done in {self.root}: run --step {name} first (--print-steps)")
        if marker.is_file():
            done = json.loads(marker.read_text())
            stored = done.get("options") or {}
            # as the marker stores them (a tuple reads back as a list), less the options added
            # since the marker was written
            wanted = {k: v for k, v in json.loads(json.dumps(options)).items() if k in stored}
            if stored != wanted:
                raise PrepError(
                    f"step {name} in {self.root} was done with other options "
                    f"({stored} vs {options}); pass --force or another --root"
                )
            say(f"{name}: done before, skipped")
            return done.get("info") or {}
        say(f"{name}: start")
        t0 = time.time()
        info = fn() or {}
        with atomic_path(marker) as tmp:
            tmp.write_text(
                json.dumps({"options": options, "info": info, "seconds": round(time.time() - t0, 1)}, indent=1)
            )
        say(f"{name}: done in {time.time() - t0:.0f} s")
        return info


class RecipeParser(argparse.ArgumentParser):
    """A recipe's options, and after ``--`` the fairseq-preprocess command its binarize step
    runs (``--step binarize -- fairseq-preprocess FLAGS``), kept whole in ``args.preprocess``;
    ``args.argv`` is the command line without it."""

    def parse_args(
        self, args: Optional[Sequence[str]] = None, namespace: Optional[argparse.Namespace] = None
    ) -> argparse.Namespace:
        argv = list(sys.argv[1:] if args is None else args)
        argv, tail = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
        out = super().parse_args(argv, namespace)
        if tail and out.step != "binarize":
            self.error("a command after -- is the binarize step's: --step binarize -- fairseq-preprocess FLAGS")
        out.argv, out.preprocess = argv, tail
        return out


def common_parser(recipe: str, doc: str) -> argparse.ArgumentParser:
    p = RecipeParser(
        prog=f"mixer-prepare {recipe}", description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--root", type=Path, help=f"output folder [work/data/{recipe}]")
    p.add_argument(
        "--downloads",
        action="append",
        metavar="DIR",
        help="a folder holding files you downloaded already (repeatable); used as they are",
    )
    p.add_argument("--download-dir", help="where fetched files go [ROOT/downloads]")
    p.add_argument("--offline", action="store_true", help="never use the network: every file must be there")
    p.add_argument("--force", action="store_true", help="redo every step (downloads are kept)")
    p.add_argument(
        "--workers",
        type=int,
        default=max(1, min(8, os.cpu_count() or 1)),
        help="processes for tokenisation, BPE and fairseq-preprocess",
    )
    p.add_argument("--no-binarize", action="store_true", help="stop after the subword step")
    p.add_argument(
        "--step",
        choices=STEPS,
        help="run this step alone (the steps before it must be done): one of the commands --print-steps prints",
    )
    p.add_argument(
        "--print-steps",
        action="store_true",
        help="print the steps as commands, one a line with what each does, and run none "
        "(data-prep/prepare-<dataset>.sh runs them so; copy one, edit it, run it)",
    )
    return p


def add_subword_args(
    p: argparse.ArgumentParser,
    *,
    kind: str,
    vocab: int,
    joint: bool = True,
    spm_type: str = "bpe",
    lowercase: bool = False,
) -> None:
    g = p.add_argument_group("subwords")
    g.add_argument(
        "--subword",
        choices=("bpe", "spm"),
        default=kind,
        help="bpe: subword-nmt joint BPE (merge operations = --vocab); spm: sentencepiece",
    )
    g.add_argument("--vocab", type=int, default=vocab, help="BPE merges or sentencepiece vocabulary size")
    g.add_argument("--spm-type", choices=("bpe", "unigram"), default=spm_type, help="sentencepiece model type")
    g.add_argument(
        "--separate-vocab",
        action="store_true",
        default=not joint,
        help="one subword model and dictionary per language instead of a joint one",
    )
    g.add_argument(
        "--lowercase",
        action=argparse.BooleanOptionalAction,
        default=lowercase,
        help="lowercase all text (Edunov et al.'s IWSLT14 setup does)",
    )
    g.add_argument(
        "--moses-escape",
        action="store_true",
        help="escape & < > ' \" | [ ] as tokenizer.perl does by default (off: plain characters)",
    )


# the options of every recipe that say where its files go and how it runs, not what it prepares
# (flag -> how many values follow): left out of a prepared folder's name and of the arguments
# its prep.json records
# which step of it runs and whether it is printed are not what it prepares either
ONE_STEP = {"--step": 1, "--print-steps": 0}
PLACE = {"--root": 1, "--downloads": 1, "--download-dir": 1, "--workers": 1, "--offline": 0, "--force": 0, **ONE_STEP}


def without(argv: Sequence[str], flags: dict) -> List[str]:
    """``argv`` less ``flags`` (flag -> how many values follow; ``--flag=value`` too) and less
    everything from ``--`` on (the binarize step's own command)."""
    argv = list(argv)
    argv = argv[: argv.index("--")] if "--" in argv else argv
    out, tokens = [], iter(argv)
    for token in tokens:
        name, eq, _ = token.partition("=")
        if name in flags:
            for _ in range(0 if eq else flags[name]):
                next(tokens, None)
            continue
        out.append(token)
    return out


def arguments(argv: Sequence[str], fixed: Sequence[str] = ()) -> List[str]:
    """What a recipe is asked to prepare: its command line (``argv``) less the recipe name's own
    ``fixed`` arguments (``--src en --tgt de`` of wmt17_en_de) and the options of ``PLACE``."""
    return without(argv, {**PLACE, **{flag: 1 for flag in fixed if flag.startswith("--")}})


def variant(prepare: Sequence[str]) -> str:
    """A prepared folder's variant, spelled out from its arguments: ``--variant ihead`` reads
    ``ihead``, ``--variant raw --valid newstest2012,newstest2013`` reads
    ``raw.valid-newstest2012,newstest2013``; a path names its last folder (two corpora of one
    name share the name, and the recipe's steps refuse the second, one line)."""
    words, tokens = [], list(prepare)
    i = 0
    while i < len(tokens):
        flag, eq, value = tokens[i].partition("=")
        i += 1
        if not eq and i < len(tokens) and not tokens[i].startswith("--"):
            value, i = tokens[i], i + 1
        value = Path(value).name if "/" in value else value
        word = value if flag == "--variant" else flag.lstrip("-") + (f"-{value}" if value else "")
        words.append(re.sub(r"[^A-Za-z0-9,+_-]+", "-", word))
    return ".".join(words)


def data_root(recipe: str, prepare: Sequence[str] = ()) -> Path:
    """Where a recipe's data goes: ``work/data/<recipe>``, or ``work/data/<recipe>.<variant>``
    when it is asked for more than its defaults (an experiment's ``prepare:``, data-prep's
    options), so that each set of arguments has a folder of its own, named so a person can read
    it, and ``mixer-prepare``, ``mixer-run``, data-prep and the row scripts find the same one."""
    prepare = arguments(prepare)
    return WORK / "data" / (f"{recipe}.{variant(prepare)}" if prepare else recipe)


def resolve_root(
    args: argparse.Namespace, recipe: str, argv: Optional[Sequence[str]], fixed: Sequence[str] = ()
) -> Path:
    """A recipe's folder: ``--root``, else ``data_root`` of what its command line asks for."""
    return args.root or data_root(recipe, arguments(sys.argv[1:] if argv is None else argv, fixed))


def main_wrapper(recipe: str, fn: Callable[[], None]) -> None:
    """Run a recipe; a PrepError is one line on stderr and exit status 2."""
    try:
        fn()
    except PrepError as e:
        print(f"mixer-prepare {recipe}: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(
            f"mixer-prepare {recipe}: interrupted; finished steps are kept, the rest is redone next time",
            file=sys.stderr,
        )
        sys.exit(130)
