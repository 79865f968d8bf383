"""The stock command lines of a run's stages: fairseq-train (torchrun with NGPU > 1),
fairseq-generate and the postprocessing, mixer-score; the environment every command gets
(``command_env``: threads and glibc's allocator) and the device flags (``PRECISION=``,
``NGPU=``, ``--cpu``) that say where a command runs, not what it computes."""

import json
import os
import shutil
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..files import BF16_FLAGS, machine
from ..paths import PLUGIN, PYTHON
from .argv import flag_value
from .spec import Experiment, Model


def prep_manifest(root: Path, prep: Optional[dict] = None) -> dict:
    """The recipe's ``prep.json`` in ``root`` ({} before the data is prepared); ``prep`` given
    instead where the commands are written before any data exists (``shell``: the scripts)."""
    if prep is not None:
        return prep
    path = root / "prep.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def fairseq(tool: str) -> List[str]:
    """``fairseq-<tool>`` as a module of this interpreter (the console scripts may be
    missing from PATH in a virtualenv that is not activated)."""
    return [PYTHON, "-m", f"fairseq_cli.{tool}"]


def ngpu() -> int:
    """``NGPU=N`` (else the GPUs torch sees): N > 1 trains with fairseq's DDP via torchrun."""
    value = os.environ.get("NGPU")
    if value:
        if not value.isdigit():
            raise ValueError(f"NGPU must be a number of GPUs, not {value!r}")
        return int(value)
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001  (no torch: CPU)
        return 0


# glibc's allocator, as fairseq's CPU training needs it.  By default glibc serves large
# blocks with mmap and hands freed memory back to the kernel, so every training step
# faults its buffers in again, page by page.  A fixed 32 MiB mmap threshold (glibc's
# maximum) and no trimming keep the freed blocks for the next step: 3.3x fewer page
# faults and kernel time for the CPU-size transformer, 1.05-1.18x its training speed,
# and 1.4x multiNN's (results/bench/bench_allocator_cpu.md).  Set in the environment of every
# command the runner starts; a value the user exported wins.
ALLOCATOR_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(4 << 30),
    "MALLOC_TOP_PAD_": str(256 << 20),
}


# OpenMP's threads, once a parallel region ends, spin waiting for the next one (the default,
# ACTIVE) or sleep (PASSIVE).  Alone on its cores a training hardly notices; beside another busy
# process the spinning threads take the cores the other needs and both crawl: a 2-thread training
# beside one busy process ran at 0.58 updates/s spinning, 0.83 sleeping (1.35 alone; issue 96).
# The runner's commands sleep, unless the user exported a policy of their own.
WAIT_POLICY = {"OMP_WAIT_POLICY": "PASSIVE"}


def command_env(threads: Optional[int] = None, **extra: str) -> Dict[str, str]:
    """The environment of a stock fairseq command the runner or a benchmark starts:
    the allocator settings above unless already set, ``threads`` OpenMP / MKL threads
    (None: the library's default, all cores) with ``WAIT_POLICY`` unless already set, unbuffered
    output, then ``extra``."""
    env = {**ALLOCATOR_ENV, **os.environ, "PYTHONUNBUFFERED": "1"}
    if threads is None:
        env.pop("OMP_NUM_THREADS", None)
        env.pop("MKL_NUM_THREADS", None)
    else:
        env = {**WAIT_POLICY, **env, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    env.update(extra)
    return env


def threading_said(env: Dict[str, str]) -> str:
    """How a command's threads run, as the progress line says it: ``2 threads, OpenMP PASSIVE``."""
    threads = env.get("OMP_NUM_THREADS", "all")
    return f"{threads} threads, OpenMP {env.get('OMP_WAIT_POLICY', 'default wait policy')}"


PRECISIONS = {"fp32": [], "fp16": ["--fp16"], "bf16": ["--bf16"]}


# the flags that say where a command runs, not what it computes: a run trained in bf16 on a GPU
# is the same run to a CPU machine, whose commands carry --cpu instead (and decode in fp32),
# as a run is the same on another CPU or with other threads, whose rounding differs too
DEVICE_FLAGS = frozenset({"--cpu", *(flag for flags in PRECISIONS.values() for flag in flags)})


def beside_device(argv: List[str]) -> List[str]:
    """``argv`` without ``DEVICE_FLAGS``: what a committed run and today's command must share."""
    return [a for a in argv if a not in DEVICE_FLAGS]


def precision_of(commands: Sequence[Sequence[str]]) -> str:
    """The precision a stage's commands ran in, of ``PRECISIONS``: what its stamp says outright,
    so a table that must not mix precisions is checked by reading, not by a flag's absence."""
    flags = {a for argv in commands for a in argv}
    return next((name for name, given in PRECISIONS.items() if given and set(given) <= flags), "fp32")


def precision() -> List[str]:
    """``PRECISION=fp16|bf16``: fairseq's --fp16 / --bf16 for training and decoding (on
    a GPU; fairseq-train --fp16 --cpu asserts CUDA; --bf16 --cpu: ``bf16_here``)."""
    value = os.environ.get("PRECISION", "fp32")
    if value not in PRECISIONS:
        raise ValueError(f"PRECISION must be one of {', '.join(PRECISIONS)}, not {value!r}")
    return PRECISIONS[value]


def bf16_here() -> None:
    """``PRECISION=bf16`` trains on a CPU only where it does bfloat16 in hardware
    (``files.machine``'s ``bf16``): elsewhere it is emulated, slower than fp32.  The runner asks
    before it runs anything; building commands does not (a script is written for any machine)."""
    if os.environ.get("PRECISION") == "bf16" and ngpu() == 0 and machine().get("bf16", "none") == "none":
        raise ValueError(
            f"PRECISION=bf16: this CPU ({machine().get('cpu', '?')}) has no bfloat16 in hardware "
            f"(/proc/cpuinfo: none of {', '.join(BF16_FLAGS)}), so it would train slower than fp32"
        )


def task_flags(exp: Experiment, prep: dict) -> List[str]:
    """The plugin, the task of the experiment's kind and the data's languages, then the
    experiment's own task flags: what training and decoding both need."""
    if exp.kind == "classification":
        return ["--user-dir", str(PLUGIN), "--task", "sentence_prediction", *exp.task]
    # before the data is prepared (a dry run) the languages are not known yet
    return [
        "--user-dir",
        str(PLUGIN),
        "--task",
        "translation",
        "--source-lang",
        prep.get("src", "SRC"),
        "--target-lang",
        prep.get("tgt", "TGT"),
        *exp.task,
    ]


def ddp_update_freq(update_freq: int, gpus: int) -> int:
    """fairseq's own DDP on ``gpus`` GPUs: ``--update-freq`` divided, so that the tokens per
    update stay the same (at least 1)."""
    return max(1, update_freq // gpus)


def train_command(
    exp: Experiment, model: Model, seed: int, root: Path, save: Path, prep: Optional[dict] = None
) -> List[str]:
    flags = [
        *task_flags(exp, prep_manifest(root, prep)),
        *exp.train,
        "--arch",
        model.arch,
        *model.train,
        "--seed",
        str(seed),
        "--save-dir",
        str(save),
        *precision(),
    ]
    gpus = ngpu()
    if gpus == 0 and "--cpu" not in flags:
        flags.append("--cpu")
    if gpus > 1:
        update_freq = int(flag_value(flags, "--update-freq") or 1)
        flags += ["--update-freq", str(ddp_update_freq(update_freq, gpus))]
        return [
            "torchrun",
            "--standalone",
            "--nproc_per_node",
            str(gpus),
            shutil.which("fairseq-train") or "fairseq-train",
            str(root / "bin"),
            *flags,
        ]
    return [*fairseq("train"), str(root / "bin"), *flags]


def checkpoint(model: Model, save: Path) -> Path:
    if model.generate.average_last > 1:
        upto = "_upto_best" if model.generate.checkpoint == "best" else ""
        return save / f"averaged_last{model.generate.average_last}{upto}.pt"
    return save / f"checkpoint_{model.generate.checkpoint}.pt"


def decode_commands(
    exp: Experiment, model: Model, root: Path, save: Path, out: Path, prep: Optional[dict] = None
) -> List[List[str]]:
    prep = prep_manifest(root, prep)
    subset = model.generate.subset
    overrides = ["--model-overrides", repr(model.overrides)] if model.overrides else []
    cpu = ["--cpu"] if ngpu() == 0 else precision()
    if exp.kind == "classification":
        return [
            [
                *fairseq("validate"),
                str(root / "bin"),
                *task_flags(exp, prep),
                "--path",
                str(checkpoint(model, save)),
                "--valid-subset",
                subset,
                *model.generate.flags,
                *overrides,
                *cpu,
            ]
        ]
    return [
        # --required-batch-size-multiple 1: with fairseq's default 8 the last batch of a
        # subset whose size is not a multiple of 8 is dropped (facebookresearch/fairseq#5036)
        [
            *fairseq("generate"),
            str(root / "bin"),
            *task_flags(exp, prep),
            "--path",
            str(checkpoint(model, save)),
            "--gen-subset",
            subset,
            "--nbest",
            "1",
            "--required-batch-size-multiple",
            "1",
            *model.generate.flags,
            *overrides,
            *cpu,
            "--results-path",
            str(out),
        ],
        [
            PYTHON,
            "-m",
            "mixer_plugin.data.postprocess",
            str(out / f"generate-{subset}.txt"),
            "--prep",
            str(root / "prep.json"),
            "--split",
            subset,
            "--out-dir",
            str(out),
        ],
    ]


def score_command(exp: Experiment, model: Model, root: Path, out: Path, prep: Optional[dict] = None) -> List[str]:
    prep = prep_manifest(root, prep)
    subset = model.generate.subset
    tgt = prep.get("tgt") or "TGT"  # the recipes' names for the references (data.pipeline)
    ref = prep.get("references", {}).get(subset, {"detok": f"ref/{subset}.{tgt}", "tok": f"ref/{subset}.tok.{tgt}"})
    argv = [
        PYTHON,
        "-m",
        "mixer_plugin.scoring",
        str(out / "hyp.txt"),
        str(root / ref["detok"]),
        "--metrics",
        ",".join(m for m in model.score.metrics if m != "tok_bleu"),
        "--json",
        str(out / "score.json"),
        "--label",
        model.name,
    ]
    if model.score.tokenized or "tok_bleu" in model.score.metrics:
        argv += ["--hyp-tok", str(out / "hyp.tok"), "--ref-tok", str(root / ref["tok"])]
        if model.score.compound_split:
            argv.append("--compound-split")
    if model.score.lowercase:
        argv.append("--lowercase")
    sources = prep.get("sources", {}).get(subset)
    if model.score.by_source and sources:
        argv += ["--sources", str(root / sources)]
    return argv
