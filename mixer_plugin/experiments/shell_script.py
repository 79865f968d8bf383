"""An experiment's commands as one bash script: what ``mixer-run FILE`` runs, stage by stage, for
every (model, seed).  ``mixer-configs`` writes one beside each paper row's file
(``configs/<paper>/<row>.<dataset>.sh``); ``mixer-configs --script FILE`` prints one for any file.

The commands are the runner's own (``stages.chains``), quoted with ``shlex``, with the places of
a machine as variables: ``$WORK`` (``MIXER_WORK``, else ./work), ``$DATA`` (the recipe's folder
under it) and ``$USER_DIR`` (the plugin).  What depends on where the commands run is read from
``NGPU`` and ``PRECISION``, as the runner reads them: each command's device flags are found by
building the commands under every setting (``device_slot``), and with NGPU > 1 the training goes
through torchrun with ``--update-freq`` divided (``commands.ddp_update_freq``).  The tests run the
scripts with ``python`` and ``torchrun`` replaced by functions that print their argv and compare
them with the runner's (tests/test_shell_scripts.py).
"""

import math
import os
import re
import shlex
import shutil
import textwrap
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from ..data.workspace import data_root
from ..paths import PLUGIN, PYTHON, WORK
from ..recipes import asked, recipes
from .argv import flag_value
from .commands import ALLOCATOR_ENV, DEVICE_FLAGS, PRECISIONS, ddp_update_freq
from .executors import SIGNAL_DELAY_S
from .spec import Experiment, duration
from .stages import Stage, chains, prepare_stages, run_dir

SETTINGS = [(gpus, p) for gpus in (0, 1) for p in PRECISIONS]  # (NGPU, PRECISION): cpu or gpu, each precision
BASE = (1, "fp32")  # no device flags: the command every other setting adds its flags to
DDP = (2, "fp32")
WIDTH = 100


class Word(str):
    """A word already in shell syntax (a variable, an expansion): not quoted again."""


def implied_prep(data: str) -> dict:
    """The languages of a recipe's ``prep.json`` before it is prepared: a translation recipe's name
    ends in ``_<src>_<tgt>`` (iwslt14_de_en, wmt17_en_cs); the summarization recipes write
    ``src`` and ``tgt``.  The references are named after the target (``commands.score_command``)."""
    m = re.fullmatch(r".+_([a-z]{2})_([a-z]{2})", data)
    src, tgt = m.groups() if m else ("src", "tgt")
    return {"src": src, "tgt": tgt}


def quote(arg: str) -> str:
    """``shlex.quote``, but a word with single quotes in it (a Python literal) in double quotes
    where nothing in it expands there."""
    if "'" in arg and not re.search(r'[$`"\\!]', arg):
        return f'"{arg}"'
    return shlex.quote(arg)


@contextmanager
def device(gpus: int, precision: str) -> Iterator[None]:
    """``NGPU`` and ``PRECISION`` set as the runner reads them, for the commands built inside."""
    old = {k: os.environ.get(k) for k in ("NGPU", "PRECISION")}
    os.environ.update(NGPU=str(gpus), PRECISION=precision)
    try:
        yield
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


Built = Tuple[List[Stage], List[Tuple[str, List[Stage]]]]


def build(exp: Experiment, prep: Dict[str, dict]) -> Built:
    """The prepare stages and the (label, stages) of every (model, seed), as the runner builds them."""
    prepared = prepare_stages(list(exp.models.values()))
    return list(prepared.values()), chains(exp, list(exp.models.values()), prepared, prep=prep)


def device_slot(base: List[str], variants: Sequence[List[str]], where: str) -> Optional[Tuple[int, list]]:
    """Where each variant of ``base`` (built under one of ``SETTINGS``) adds its device flags, and
    which: (index, [flags of each setting]); None when no setting adds any."""
    index, blocks = None, []
    for v in variants:
        k = next((i for i, (a, b) in enumerate(zip(base, v)) if a != b), len(base))
        block = v[k : k + len(v) - len(base)]
        if v[k + len(block) :] != base[k:] or not set(block) <= DEVICE_FLAGS:
            raise ValueError(f"{where}: the command changes with NGPU or PRECISION beyond its device flags")
        if block and index not in (None, k):
            raise ValueError(f"{where}: the device flags move with NGPU or PRECISION")
        index = k if block else index
        blocks.append(block)
    return None if index is None else (index, blocks)


class Script:
    def __init__(self, exp: Experiment, prep: Dict[str, dict]):
        self.exp = exp
        self.built = {}
        for setting in [*SETTINGS, DDP]:
            with device(*setting):
                self.built[setting] = build(exp, prep)
        self.arrays: Dict[str, tuple] = {}  # bash array -> its flags under each setting
        self.train = shutil.which("fairseq-train") or "fairseq-train"
        prepares = self.built[BASE][0]
        # $DATA: the recipe's folder, where the experiment has one dataset (else paths under $WORK)
        self.data = prepares[0].outputs[0].parent if len(prepares) == 1 else None
        self.places = [(str(WORK / exp.name), "$EXP"), (str(WORK), "$WORK"), (str(PLUGIN), "$USER_DIR")]
        if self.data is not None:
            self.places.insert(0, (str(self.data), "$DATA"))
        self.base_places = list(self.places)

    def word(self, arg: str) -> str:
        if isinstance(arg, Word):
            return arg
        for path, var in self.places:
            if arg == path or arg.startswith(path + "/"):
                return f'"{var}"' + ("/" + quote(arg[len(path) + 1 :]) if arg != path else "")
        return quote(arg)

    def line(self, argv: Sequence[str], indent: str = "") -> str:
        """``argv`` as shell words, the interpreter as ``python``, a line break before a flag
        where the line grows past ``WIDTH``."""
        words = ["python" if i == 0 and a == PYTHON else self.word(a) for i, a in enumerate(argv)]
        lines, cur = [], indent
        for w in words:
            if cur.strip() and w.startswith("--") and len(cur) + len(w) > WIDTH:
                lines.append(cur.rstrip() + " \\")
                cur = indent + "    "
            cur += w + " "
        return "\n".join([*lines, cur.rstrip()])

    def device_array(self, stage: str, blocks: list) -> Word:
        pattern = tuple(tuple(b) for b in blocks)
        for name, have in self.arrays.items():
            if have == pattern:
                return Word(f'"${{{name}[@]}}"')
        name = f"{stage.upper()}_DEVICE" + (
            "" if f"{stage.upper()}_DEVICE" not in self.arrays else str(len(self.arrays))
        )
        self.arrays[name] = pattern
        return Word(f'"${{{name}[@]}}"')

    def command(self, stage: Stage, i: int, c: int, j: int, log: str) -> str:
        """Command ``j`` of stage ``i`` of chain ``c`` (-1: the prepare stages) under every setting."""

        def of(setting: Tuple[int, str]) -> List[str]:
            prepares, runs = self.built[setting]
            s = prepares[i] if c < 0 else runs[c][1][i]
            return [str(a) for a in s.commands[j]]

        base = of(BASE)
        where = f"{self.exp.name}: {stage.name} command {j + 1}"
        slot = device_slot(base, [of(s) for s in SETTINGS], where)
        argv: List[str] = list(base)
        if slot is not None:
            argv.insert(slot[0], self.device_array(stage.name, slot[1]))
        tee = f" 2>&1 | tee -a {log}" if c >= 0 else ""  # -a: a job run again (requeued) appends
        ddp = of(DDP)
        if [a for a in ddp if a not in DEVICE_FLAGS] == [a for a in base if a not in DEVICE_FLAGS]:
            return self.line(argv) + tee
        freq = int(flag_value(base, "--update-freq") or 1)
        head = ["torchrun", "--standalone", "--nproc_per_node", "2", self.train]
        if base[:3] != [PYTHON, "-m", "fairseq_cli.train"] or ddp != [
            *head,
            *base[3:],
            "--update-freq",
            str(ddp_update_freq(freq, 2)),
        ]:
            raise ValueError(f"{where}: NGPU > 1 changes it in a way this script cannot write")
        # ddp_update_freq: the recipe's --update-freq divided among the GPUs, at least 1
        per_gpu = Word(f'"$(({freq} / NGPU > 0 ? {freq} / NGPU : 1))"')
        torchrun = [*head[:3], Word('"$NGPU"'), Word('"$(command -v fairseq-train)"'), *argv[3:]]
        return "\n".join(
            [
                'if [ "$NGPU" -gt 1 ]; then',
                self.line([*torchrun, "--update-freq", per_gpu], "  ") + tee,
                "else",
                self.line(argv, "  ") + tee,
                "fi",
            ]
        )

    def body(self) -> List[str]:
        prepares, runs = self.built[BASE]
        out = []
        for p in prepares:
            recipe, asked = self.recipe(p)
            out += [
                f"# the data: {data_prep(recipe, asked)} prepares the same folder; a folder prepared",
                "# with other options stops the script here, one line naming both",
                f"if [ -e {self.word(str(p.outputs[0]))} ]; then",
                self.line(
                    [
                        PYTHON,
                        "-m",
                        "mixer_plugin.recipes",
                        "--check",
                        recipe,
                        "--root",
                        str(p.outputs[0].parent),
                        *asked,
                    ],
                    "  ",
                ),
                "else",
                self.line(p.commands[0], "  "),
                "fi",
                "",
            ]
        for c, (label, stages) in enumerate(runs):
            model, seed = label.rsplit("/seed", 1)
            run = run_dir(self.exp, self.exp.models[model], int(seed))
            out.append(f"RUN={self.word(str(run))}")
            self.places = [(str(run), "$RUN"), *self.base_places]
            made = set()
            for i, s in enumerate(stages):
                out.append(f"# {label}: {s.name}")
                if s.log.parent not in made:
                    out.append(f"mkdir -p {self.word(str(s.log.parent))}")
                    made.add(s.log.parent)
                lines = [self.command(s, i, c, j, self.word(str(s.log))) for j in range(len(s.commands))]
                if s.name == "train":  # the long one: SLURM's warning must be heard while it runs
                    lines = ["train() {", *(textwrap.indent(x, "  ") for x in lines), "}", "heard train"]
                out += lines
            out.append("")
            self.places = self.base_places
        return out

    def recipe(self, p: Stage) -> Tuple[str, List[str]]:
        """A prepare stage's recipe and the arguments it asks for (``recipes.asked``)."""
        m = next(m for m in self.exp.models.values() if data_root(m.data, m.prepare) == p.outputs[0].parent)
        return m.data, asked(m.data, m.prepare)

    def sbatch(self) -> List[str]:
        """The #SBATCH header, from the file's ``cluster:`` as ``mixer-run --executor slurm`` reads
        it: GPUs only where the row asks for them, its time limit, a CPU a thread, requeued when
        preempted or warned of its time limit (``settings``), and the log of every start of the job
        appended to one file."""
        c = self.exp.cluster
        minutes = math.ceil(duration(c.time_limit, "cluster.time_limit") / 60)
        return [
            f"#SBATCH --job-name={self.exp.name}",
            "#SBATCH --nodes=1",
            *([f"#SBATCH --gpus-per-node={c.gpus_per_run}"] if c.gpus_per_run else []),
            *([f"#SBATCH --partition={c.partition}"] if c.partition else []),
            f"#SBATCH --cpus-per-task={self.exp.threads or 2}",
            f"#SBATCH --time={minutes}",
            "#SBATCH --requeue",
            f"#SBATCH --signal=B:USR1@{SIGNAL_DELAY_S}",
            "#SBATCH --open-mode=append",
            "#SBATCH --output=%x-%j.out",
        ]

    def header(self, generated: str, source: str) -> List[str]:
        name = re.sub(r"\.ya?ml$", "", source) + ".sh"
        return [
            "#!/usr/bin/env bash",
            *([generated.rstrip("\n")] if generated else []),
            *textwrap.wrap(self.exp.title, WIDTH, initial_indent="# ", subsequent_indent="# "),
            "#",
            f"# What `mixer-run {source}` runs, one command after the other",
            "# (without its skipping of finished stages, locks and results; fairseq-train goes on from",
            "# checkpoint_last.pt when run again):",
            f"#   bash {name}                        # work/ where mixer-run puts it (MIXER_WORK moves it)",
            f"#   NGPU=8 PRECISION=bf16 bash {name}  # fairseq's DDP through torchrun, --bf16",
            f"#   sbatch {name}                      # SLURM: the #SBATCH lines below (keep, edit or delete)",
            *self.sbatch(),
            "set -euo pipefail",
            "",
        ]

    def settings(self) -> List[str]:
        python = (
            "python -c 'import importlib.util as u; print(u.find_spec(\"mixer_plugin\").submodule_search_locations[0])'"
        )
        out = [
            "# where the commands run, read as mixer-run reads them",
            "NGPU=${NGPU:-$(python -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)}",
            "PRECISION=${PRECISION:-fp32}",
            "case $NGPU in ''|*[!0-9]*) echo \"$0: NGPU must be a number of GPUs, not '$NGPU'\" >&2; exit 2 ;; esac",
        ]
        if self.arrays:
            out += [
                "# each command's device flags: --cpu without a GPU, fairseq's --fp16 / --bf16 (PRECISION)",
                'if [ "$NGPU" -eq 0 ]; then ON=cpu; else ON=gpu; fi',
                'case "$ON/$PRECISION" in',
            ]
            for n, (gpus, precision) in enumerate(SETTINGS):
                sets = "; ".join(f"{a}=({shlex.join(v[n])})" for a, v in self.arrays.items())
                out.append(f"  {'gpu' if gpus else 'cpu'}/{precision}) {sets} ;;")
            choices = ", ".join(PRECISIONS)
            out += [
                f"  *) echo \"$0: PRECISION must be one of {choices}, not '$PRECISION'\" >&2; exit 2 ;;",
                "esac",
            ]
        out += [
            "# work/ as mixer-run and data-prep find it: the checkout's inside it, else this folder's",
            "WORK=${MIXER_WORK:-$(python -c 'from mixer_plugin.paths import WORK; print(WORK)')}",
        ]
        if self.data is not None:
            recipe, wanted = self.recipe(self.built[BASE][0][0])
            out.append(
                f"# the data, any folder of the same layout (prep.json, ref/, bin/): {data_prep(recipe, wanted)}"
            )
            out.append(f"DATA=${{DATA:-$WORK/{quote(str(self.data.relative_to(WORK)))}}}")
        out.append(f"EXP=$WORK/{quote(self.exp.name)}  # the runs")
        out += [
            f"USER_DIR=${{USER_DIR:-$({python})}}  # fairseq's --user-dir: the plugin",
            "# glibc's allocator as mixer-run sets it (experiments/commands.py); a value exported before wins",
            *(f"export {k}=${{{k}:-{v}}}" for k, v in ALLOCATOR_ENV.items()),
            "export PYTHONUNBUFFERED=1",
            f"# under sbatch: SLURM warns this shell {SIGNAL_DELAY_S} s before the time limit (#SBATCH --signal), and",
            "# the job is requeued: it starts again from the top, and fairseq-train goes on from",
            "# checkpoint_last.pt.  A shell hears a signal only between two commands, so the training runs",
            "# in the background there (heard).",
            'requeue() { echo "$0: the time limit is near: job $SLURM_JOB_ID requeued" >&2; '
            'scontrol requeue "$SLURM_JOB_ID"; wait; }  # wait: the training ends with the job, not after it',
            'if [ -n "${SLURM_JOB_ID:-}" ]; then trap requeue USR1; fi',
            'heard() { if [ -n "${SLURM_JOB_ID:-}" ]; then "$@" & wait $!; else "$@"; fi; }',
            "",
        ]
        return out


def data_prep(recipe: str, wanted: Sequence[str]) -> str:
    """The data-prep command that prepares ``recipe`` as ``wanted`` asks, into the folder a row
    script reads: ``data-prep/prepare-<recipe>.sh``, or the script of its family with the
    pair (``prepare-wmt17.sh en de``)."""
    fixed = recipes()[recipe][1]
    family = recipe if not fixed else recipe.rsplit("_", 2)[0]
    pair = [v for k, v in zip(fixed, fixed[1:]) if k in ("--src", "--tgt")]
    return shlex.join([f"data-prep/prepare-{family}.sh", *pair, *wanted])


def script(exp: Experiment, prep: Dict[str, dict], source: str, generated: str = "") -> str:
    """The bash script of ``exp`` (read from ``source``, as its users name it), with ``prep`` as each
    recipe's ``prep.json``; ``generated``: a comment line saying what wrote it."""
    s = Script(exp, prep)
    body = s.body()  # first: it names the device arrays the settings define
    return "\n".join([*s.header(generated, source), *s.settings(), *body]).rstrip() + "\n"
