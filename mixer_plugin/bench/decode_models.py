"""The models the decoding benchmarks (``mixer-bench decode``, ``decode-ops``) time, and their
checkpoints: the transformer and every registered decoder mixer at the CPU size (``MODELS``), or
the rows of an experiment file (``experiment_rows``); a checkpoint is one fairseq-train update
(``make_checkpoint``), since the weights do not change the work of decoding."""

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..experiments.commands import PRECISIONS, command_env
from ..mixers.registry import MIXER_REGISTRY, MixerContext, Role, build_mixer, parse_item
from ..mixers.window_base import WindowMixer
from ..paths import PLUGIN

SMALL = ["--arch", "mixer_small_attn", "--share-all-embeddings"]  # the model every label of MODELS is
SMALL_DIM, SMALL_HEADS = 256, 4  # mixer_small_attn's decoder
# the spec a mixer is decoded with where its defaults are not the model to time
DECODE_SPECS = {
    "multiscale": "multiscale:scales=1+3+5+7",  # fixed scales: a bounded cache (ratios of N grow with it)
    "fixed_head": "fixed_head:heads=12:head_dim=21",  # the leaderboard's row: head size 21, 12 heads for its size
}
# readings timed beside a mixer's decoding spec: label -> spec
EXTRA_MODELS = {
    # the same module with softmax x V in eval mode: what retrieval saves, and nothing else
    "hard_soft": "hard:decode=soft",
}


def decoder_flags(spec: str) -> List[str]:
    """A mixer in the decoder: its self-attention, and its cross-attention where it takes that role."""
    cross = Role.DECODER_CROSS in MIXER_REGISTRY[spec.split(":")[0]].roles
    return ["--decoder-mixers", spec, *(["--decoder-cross-mixers", spec] if cross else [])]


def decoder_specs() -> Dict[str, Optional[str]]:
    """label -> the decoder's mixer spec: ``transformer`` (stock attention: None) first, then
    every registered mixer that can be a decoder's self-attention, each followed by its readings."""
    specs = {"transformer": None}
    for name, entry in sorted(MIXER_REGISTRY.items()):
        if name == "attn" or Role.DECODER_SELF not in entry.roles:
            continue
        specs[name] = DECODE_SPECS.get(name, name)
        specs.update((label, spec) for label, spec in EXTRA_MODELS.items() if spec.split(":")[0] == name)
    return specs


# label -> decoder flags (the encoder is stock attention for every model)
SPECS = decoder_specs()
MODELS = {label: [] if spec is None else decoder_flags(spec) for label, spec in SPECS.items()}


def bounded_state(spec: str) -> bool:
    """Whether a decoder self-mixer keeps O(n) state per layer where attention keeps O(L): a
    window of neighbours, or a key cache cut to its last rows (``cache_window``)."""
    ctx = MixerContext(
        role=Role.DECODER_SELF,
        layer_index=0,
        embed_dim=SMALL_DIM,
        kv_dim=SMALL_DIM,
        num_heads=SMALL_HEADS,
        attention_dropout=0.0,
        build_stock=lambda: None,
    )
    m = build_mixer(parse_item(Role.DECODER_SELF.flag, spec), ctx)
    return isinstance(m, WindowMixer) or getattr(m, "cache_window", None) is not None


@dataclass(frozen=True)
class Row:
    """One timed model: the flags its checkpoint is made with (None: it decodes the
    checkpoint of ``source``) and the flags its decoding adds."""

    source: str
    train: Optional[List[str]]
    generate: List[str]


def mixer_rows(labels: List[str]) -> Dict[str, Row]:
    return {label: Row(label, [*SMALL, *MODELS[label]], []) for label in labels}


def experiment_rows(path: str, prog: str) -> Tuple[Dict[str, Row], str]:
    """The rows of an experiment file, its baseline first, and the description of them."""
    from ..experiments.spec import ExperimentError
    from ..experiments.spec_loader import load

    try:
        exp = load(path)
    except ExperimentError as e:
        raise SystemExit(f"{prog}: error: --experiment: {e}") from None
    base = next((m.score.baseline for m in exp.models.values() if m.score.baseline), next(iter(exp.models)))
    share = [f for f in exp.train if f == "--share-all-embeddings"]
    rows = {}
    for name in [base, *(n for n in exp.models if n != base)]:
        m = exp.models[name]
        overrides = ["--model-overrides", repr(m.overrides)] if m.overrides else []
        if m.decode_of:
            rows[name] = Row(m.decode_of, None, [*exp.task, *overrides])
        else:
            rows[name] = Row(name, [*exp.task, *share, "--arch", m.arch, *m.train], [*exp.task, *overrides])
    return rows, (
        f"every row of `{exp.path}` with its own architecture and flags (a row decoding another's "
        "checkpoints with its --model-overrides)"
    )


def device_flags(device: str, precision: str = "fp32") -> list:
    """fairseq's flags for where and in what precision: ``--cpu``, or on a GPU nothing
    (fp32), ``--fp16`` or ``--bf16`` (which fairseq runs only on a GPU)."""
    return ["--cpu"] if device == "cpu" else PRECISIONS[precision]


def make_checkpoint(data: str, flags: Sequence[str], save: Path, langs: Tuple[str, str], device: str = "cpu") -> Path:
    """A checkpoint of the model ``flags`` define (``--arch`` and its options; one update at
    lr 1e-9: the work does not depend on it), trained in fp32 whatever the decoding
    precision; one already in ``save`` is reused."""
    if (save / "checkpoint_last.pt").is_file():
        return save / "checkpoint_last.pt"
    argv = [sys.executable, "-m", "fairseq_cli.train", data, "--user-dir", str(PLUGIN),
            "--task", "translation", "--source-lang", langs[0], "--target-lang", langs[1],
            *flags, "--optimizer", "adam", "--lr", "1e-9",
            "--max-tokens", "2048", "--max-update", "1", "--save-dir", str(save), "--no-epoch-checkpoints",
            *device_flags(device), "--num-workers", "0", "--seed", "1"]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, env=command_env(1))
    if proc.returncode != 0 or not (save / "checkpoint_last.pt").is_file():
        raise SystemExit(f"mixer-bench decode: error: making the {save.name} checkpoint failed:\n{proc.stderr[-2000:]}")
    return save / "checkpoint_last.pt"
