"""Decoding speed over output length: every decoder mixer against the transformer at the
same size, through fairseq's own ``fairseq-generate``.

    mixer-bench decode DATA_BIN                      # -> results/bench/bench_decode_<device>.{md,json,png}
    mixer-bench decode DATA_BIN --lengths 30,100 --beams 4 --sentences 16 --rounds 1 --md /tmp/d.md
    mixer-bench decode DATA_BIN --device cuda --precision bf16   # -> results/bench/bench_decode_cuda_bf16.*
    mixer-bench decode DATA_BIN --experiment experiments/leaderboard.yaml --lengths 25 --beams 4
                                                     # -> results/bench/bench_decode_leaderboard_cpu.*

A benchmark, not a test.  The models are the transformer and every registered mixer that
can be a decoder's self-attention (a new mixer is timed without editing a list here), each
in its decoding spec (``DECODE_SPECS``), with the readings of ``EXTRA_MODELS`` beside it.
Each model is the CPU size (``mixer_small_attn``: 2+2 layers, d=256, 4 heads) with its
mixer in the decoder (self-attention, and cross-attention for the mixers that take it),
made by ``fairseq-train --max-update 1`` at a learning rate of 1e-9 on DATA_BIN: the
weights do not matter, because every hypothesis is pinned to exactly L tokens
(``--max-len-a 0 --max-len-b L --min-len L``), so every model does the same number of
decoder steps.  The speed is fairseq-generate's own figure (its timer around the
SequenceGenerator: loading and I/O are out); ms per step = sentences / (that figure) /
(L+1) for the one batch of ``--sentences`` sentences (fairseq's sentences/s comes from the
unrounded time; the seconds it prints beside it are rounded to 0.1 s).  Models run
round-robin, the order rotated every round; the median over rounds is reported with the
ratio to the transformer of the same run.

``--experiment FILE`` times the rows of an experiment file instead of the mixers above:
each row's own architecture and flags (``arch`` and ``train``, with the file's task flags
and ``--share-all-embeddings`` where its training shares them), and a row that decodes
another row's checkpoints (``decode_of``) with that checkpoint and its ``--model-overrides``.
The speed-up is against the file's baseline row.  This is the decoding column of the
leaderboard (``speed:`` in the experiment file): every row in one run on an idle machine,
where the decoding timed inside a campaign's runs depends on which other run shared the
machine, and on which machine a session had.

It runs under the allocator settings ``mixer-run`` gives fairseq-generate (``mixer-bench``
starts itself again with them when they are not set), so it measures what the runner runs.

A windowed decoder (``ngram``, ``local``, ``multiscale`` with fixed scales: every mixer
whose decoder state is bounded, ``bounded_state``) keeps O(n) state per layer, where
attention keeps O(L): its advantage should grow with L.  For hard retrieval, one decoding
step of the transformer is profiled (forward hooks on its attention modules): the share of
the step in attention, s, bounds what replacing attention can gain at 1 / (1 - s); hard's
measured speed-up is given as a share of that.
"""

import argparse
import datetime
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from ..experiments.stages import PRECISIONS, command_env
from ..mixers.registry import MIXER_REGISTRY, MixerContext, Role, build_mixer, parse_item
from ..mixers.window_base import WindowMixer
from ..paths import PLUGIN
from .common import RESULTS, command_line, cpu_label, write_outputs

if TYPE_CHECKING:
    from torch import nn

SPEED = re.compile(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s \(([\d.]+) sentences/s")
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


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


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


def generate(
    data: str,
    checkpoint: Union[str, Path],
    L: int,
    beam: int,
    sentences: int,
    langs: Tuple[str, str],
    profile: bool = False,
    device: str = "cpu",
    precision: str = "fp32",
    extra: Sequence[str] = (),
) -> dict:
    """One fairseq-generate of the first ``sentences`` test sentences, in this process
    (``extra``: more of its flags)."""
    from fairseq import options
    from fairseq_cli import generate as fairseq_generate

    argv = [data, "--user-dir", str(PLUGIN), "--task", "translation", "--source-lang",
            langs[0], "--target-lang", langs[1], "--path", str(checkpoint), "--gen-subset", "test", "--beam",
            str(beam), "--nbest", "1", "--batch-size", str(sentences), "--required-batch-size-multiple", "1",
            "--max-len-a", "0", "--max-len-b", str(L), "--min-len", str(L), "--quiet", "--seed", "1",
            "--num-workers", "0", "--skip-invalid-size-inputs-valid-test",
            *device_flags(device, precision), *extra]  # fmt: skip
    args = options.parse_args_and_arch(options.get_generation_parser(), argv)
    capture, timer = Capture(), AttentionTimer(device) if profile else None
    # fairseq-generate's speed line is an INFO record: make sure it is made, whatever the
    # root logger's level (fairseq's basicConfig does nothing where logging is set up already)
    gen_log = logging.getLogger("fairseq_cli.generate")
    level = gen_log.level
    gen_log.setLevel(logging.INFO)
    gen_log.addHandler(capture)
    try:
        if timer:
            timer.install()
        with tempfile.TemporaryDirectory() as out:
            args.results_path = out
            first_sentences(fairseq_generate, args, sentences)
    finally:
        gen_log.removeHandler(capture)
        gen_log.setLevel(level)
        if timer:
            timer.remove()
    m = next((SPEED.search(x) for x in capture.messages if SPEED.search(x)), None)
    if m is None:
        raise SystemExit(f"mixer-bench decode: error: fairseq-generate reported no speed for {checkpoint}")
    n, sent_per_s = int(m.group(1).replace(",", "")), float(m.group(4))
    gen_s = n / sent_per_s  # the unrounded time (fairseq prints it rounded to 0.1 s)
    out = {"sentences": n, "gen_s": gen_s, "sent_per_s": sent_per_s, "ms_per_step": 1000 * gen_s / (L + 1)}
    if timer:
        out["attention_s"] = timer.total
        out["attention_share"] = timer.total / out["gen_s"]
    return out


def first_sentences(module: ModuleType, args: argparse.Namespace, n: int) -> None:
    """fairseq-generate decodes the whole subset; its first ``n`` sentences are enough,
    so the loaded dataset is cut there (a shorter subset, the same code path)."""
    from fairseq.data import BaseWrapperDataset
    from fairseq.tasks.translation import TranslationTask

    class Head(BaseWrapperDataset):
        def __len__(self):
            return min(n, len(self.dataset))

        @property
        def sizes(self):
            return self.dataset.sizes[: len(self)]

    original = TranslationTask.load_dataset

    def load_dataset(self: TranslationTask, split: str, *a, **kw) -> None:
        original(self, split, *a, **kw)
        ds = self.datasets[split]  # a LanguagePairDataset: its sides and their sizes, cut to n
        ds.src, ds.tgt = Head(ds.src), Head(ds.tgt)
        ds.src_sizes, ds.tgt_sizes = ds.src_sizes[:n], ds.tgt_sizes[:n]

    TranslationTask.load_dataset = load_dataset
    try:
        module.main(args)
    finally:
        TranslationTask.load_dataset = original


class AttentionTimer:
    """Wall time inside the decoder's attention modules (self and cross), by hooks; on a
    GPU each hook waits for the device first, so the time is the modules' own (and the
    profiled run is slower than the timed ones)."""

    def __init__(self, device: str = "cpu"):
        self.total, self.handles, self.start = 0.0, [], {}
        self.sync = device != "cpu"

    def install(self) -> None:
        from fairseq.models.transformer import TransformerDecoderBase

        original = TransformerDecoderBase.forward
        timer = self

        def forward(decoder: TransformerDecoderBase, *args, **kwargs):
            if not decoder.__dict__.get("_timed"):
                decoder._timed = True
                for layer in decoder.layers:
                    for module in (layer.self_attn, layer.encoder_attn):
                        timer.handles.append(module.register_forward_pre_hook(timer.enter))
                        timer.handles.append(module.register_forward_hook(timer.leave))
            return original(decoder, *args, **kwargs)

        self.original = original
        TransformerDecoderBase.forward = forward

    def enter(self, module: "nn.Module", args: Tuple[Any, ...]) -> None:
        if self.sync:
            import torch

            torch.cuda.synchronize()
        self.start[id(module)] = time.perf_counter()

    def leave(self, module: "nn.Module", args: Tuple[Any, ...], out: Any) -> None:
        if self.sync:
            import torch

            torch.cuda.synchronize()
        self.total += time.perf_counter() - self.start.pop(id(module))

    def remove(self) -> None:
        from fairseq.models.transformer import TransformerDecoderBase

        TransformerDecoderBase.forward = self.original
        for h in self.handles:
            h.remove()


def add_common_args(ap: argparse.ArgumentParser) -> None:
    """The options every decoding benchmark takes: data, languages, outputs."""
    ap.add_argument("data", help="a fairseq-preprocess output folder (its test split and dictionaries)")
    ap.add_argument("--source-lang", default="en")
    ap.add_argument("--target-lang", default="de")
    ap.add_argument("--md")
    ap.add_argument("--json")


def check_data(args: argparse.Namespace, prog: str) -> None:
    if not (Path(args.data) / f"dict.{args.target_lang}.txt").is_file():
        raise SystemExit(f"{prog}: error: {args.data} is not a fairseq data folder (no dict.{args.target_lang}.txt)")


def checked_labels(args: argparse.Namespace, prog: str, transformer_first: bool) -> List[str]:
    """The data folder and ``--mixers`` checked -> the model labels, in order."""
    check_data(args, prog)
    labels = [m for m in args.mixers.split(",") if m]
    unknown = [m for m in labels if m not in MODELS]
    if unknown or not labels or (transformer_first and labels[0] != "transformer"):
        first = "the first must be transformer, " if transformer_first else ""
        raise SystemExit(f"{prog}: error: --mixers: {first}labels from {', '.join(MODELS)} (got {args.mixers})")
    return labels


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(
        prog="mixer-bench decode", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(ap)
    ap.add_argument("--lengths", default="30,100,300", help="output lengths L")
    ap.add_argument("--beams", default="4,1")
    ap.add_argument("--sentences", type=int, default=32, help="sentences decoded per run (one batch)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--mixers", default=",".join(MODELS), help=f"of {', '.join(MODELS)}")
    ap.add_argument("--experiment", help="time the rows of this experiment file instead of --mixers")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument(
        "--precision",
        choices=list(PRECISIONS),
        default="fp32",
        help="fairseq-generate's precision (fp16 and bf16 on a GPU only)",
    )
    ap.add_argument(
        "--checkpoints",
        help="a folder to keep the models' checkpoints in and reuse them from (default: a temporary one)",
    )
    args = ap.parse_args(argv)
    if args.experiment:
        if args.mixers != ap.get_default("mixers"):
            raise SystemExit(f"{ap.prog}: error: --mixers and --experiment exclude each other")
        check_data(args, ap.prog)
        models, described = experiment_rows(args.experiment, ap.prog)
    else:
        models = mixer_rows(checked_labels(args, ap.prog, transformer_first=True))
        described = "`mixer_small_attn` (2+2 layers, d=256, 4 heads) with its mixer in the decoder"
    labels = list(models)
    base = labels[0]
    if args.device == "cpu" and args.precision != "fp32":
        raise SystemExit(
            f"{ap.prog}: error: --precision {args.precision} needs --device cuda (fairseq's --fp16/--bf16 assert a GPU)"
        )
    lengths = [int(x) for x in args.lengths.split(",")]
    beams = [int(x) for x in args.beams.split(",")]
    langs = (args.source_lang, args.target_lang)
    import torch

    t0, load_start = time.time(), " ".join(f"{v:.2f}" for v in os.getloadavg())
    where = {"device": args.device, "precision": args.precision}
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"{ap.prog}: error: --device cuda but torch.cuda.is_available() is False")
    with tempfile.TemporaryDirectory() as tmp:
        keep = Path(args.checkpoints) if args.checkpoints else Path(tmp)
        ckpts = {}
        for label in sorted(labels, key=lambda lab: models[lab].train is None):  # what a decode_of row reads first
            row = models[label]
            ckpts[label] = (
                ckpts[row.source]
                if row.train is None
                else make_checkpoint(args.data, row.train, keep / label, langs, args.device)
            )
            generate(
                args.data, ckpts[label], lengths[0], beams[0], args.sentences, langs, **where, extra=row.generate
            )  # warm-up
            print(f"checkpoint {label}: {ckpts[label]}", flush=True)
        runs = {(lab, L, b): [] for lab in labels for L in lengths for b in beams}
        profile = {}
        for L in lengths:
            for b in beams:
                profile[(L, b)] = generate(
                    args.data,
                    ckpts[base],
                    L,
                    b,
                    args.sentences,
                    langs,
                    profile=True,
                    **where,
                    extra=models[base].generate,
                )
                for r in range(args.rounds):
                    k = r % len(labels)
                    for label in labels[k:] + labels[:k]:  # rotate the order each round
                        res = generate(
                            args.data, ckpts[label], L, b, args.sentences, langs, **where, extra=models[label].generate
                        )
                        runs[(label, L, b)].append(res)
                        print(
                            f"L={L:4d} beam {b} round {r + 1} {label:14s} {res['sent_per_s']:8.2f} sent/s "
                            f"{res['ms_per_step']:7.1f} ms/step",
                            flush=True,
                        )
    rows = []
    for (label, L, b), res in runs.items():
        speed = statistics.median(x["sent_per_s"] for x in res)
        base_speed = statistics.median(x["sent_per_s"] for x in runs[(base, L, b)])
        share = profile[(L, b)]["attention_share"]
        rows.append(
            {
                "model": label,
                "L": L,
                "beam": b,
                "sent_per_s": speed,
                "ms_per_step": statistics.median(x["ms_per_step"] for x in res),
                "speedup": speed / base_speed,
                "rounds": [x["sent_per_s"] for x in res],
                "transformer_attention_share": share,
                "ceiling": 1 / (1 - share),
            }
        )
    meta = {
        "command": command_line(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": (cpu_label() if args.device == "cpu" else f"{torch.cuda.get_device_name()}, {args.precision}"),
        "precision": args.precision,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "load_start": load_start,
        "load_end": " ".join(f"{v:.2f}" for v in os.getloadavg()),
        "wall_s": time.time() - t0,
        "sentences": args.sentences,
        "rounds": args.rounds,
        "baseline": base,
        "models": described,
        "experiment": args.experiment,
    }
    md = markdown(meta, rows, labels, lengths, beams, profile)
    stem = "bench_decode" + (f"_{Path(args.experiment).stem}" if args.experiment else "")
    stem += "_cpu" if args.device == "cpu" else f"_cuda_{args.precision}"
    out_md = args.md or str(RESULTS / f"{stem}.md")
    out_json = args.json or str(Path(out_md).with_suffix(".json"))
    if len(lengths) > 1:  # a plot over L
        plot(rows, labels, beams, Path(out_md).with_suffix(".png"), meta["device"])
    write_outputs(
        out_md, out_json, md, {"meta": meta, "rows": rows, "profile": {f"{L},{b}": v for (L, b), v in profile.items()}}
    )


def markdown(
    meta: Dict[str, Any],
    rows: List[Dict[str, Any]],
    labels: List[str],
    lengths: List[int],
    beams: List[int],
    profile: Dict[Tuple[int, int], Dict[str, Any]],
) -> str:
    by = {(r["model"], r["L"], r["beam"]): r for r in rows}
    base = meta.get("baseline", "transformer")
    described = meta.get("models", "`mixer_small_attn` (2+2 layers, d=256, 4 heads) with its mixer in the decoder")
    out = [
        f"# Decoding speed over output length ({meta['device']})",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; torch {meta['torch']}, {meta['threads']} threads; load average at start "
        f"{meta['load_start']}, at end {meta['load_end']}; wall {meta['wall_s']:.0f} s",
        f"- every model: {described}, the "
        f"same {meta['sentences']} test sentences in one batch, every hypothesis pinned to L tokens; "
        f"fairseq-generate's own timing, median of {meta['rounds']} rounds (models round-robin); speed-up "
        f"against the {'transformer' if base == 'transformer' else f'`{base}`'} of the same (L, beam)",
        "",
    ]
    for b in beams:
        out += [
            f"## beam {b}",
            "",
            f"sentences/s (speed-up vs {base}); ms per decoding step",
            "",
            "| model | " + " | ".join(f"L={L}" for L in lengths) + " |",
            "|---|" + "---:|" * len(lengths),
        ]
        for label in labels:
            cells = []
            for L in lengths:
                r = by[(label, L, b)]
                cells.append(f"{r['sent_per_s']:.1f} ({r['speedup']:.2f}x); {r['ms_per_step']:.1f} ms")
            out.append(f"| `{label}` | " + " | ".join(cells) + " |")
        out.append("")
    # the mixer-family sections read labels of MODELS: an experiment's rows are named by the file
    mixers = not meta.get("experiment")
    hard = [(L, b) for L in lengths for b in beams if ("hard", L, b) in by] if mixers else []
    if hard:
        out += [
            "## Hard retrieval against its ceiling",
            "",
            "The transformer's decoding step, profiled (hooks on its decoder attention modules): the share s "
            "of the step spent in attention bounds what any replacement of attention can gain at 1 / (1 - s).",
            "",
            "| L | beam | attention share of the step | ceiling | `hard` speed-up | share of the ceiling |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
    for L, b in hard:
        r = by[("hard", L, b)]
        out.append(
            f"| {L} | {b} | {r['transformer_attention_share']:.0%} | {r['ceiling']:.2f}x | "
            f"{r['speedup']:.2f}x | {r['speedup'] / r['ceiling']:.0%} |"
        )
    windowed = [m for m in labels if SPECS.get(m) and bounded_state(SPECS[m])] if mixers else []
    if windowed and mixers and len(lengths) > 1:
        out += [
            "",
            "## Does the windowed decoders' advantage grow with length?",
            "",
            "| model | beam | " + " | ".join(f"L={L}" for L in lengths) + " | grows |",
            "|---|---:|" + "---:|" * len(lengths) + "---|",
        ]
        for m in windowed:
            for b in beams:
                s = [by[(m, L, b)]["speedup"] for L in lengths]
                grows = "yes" if all(y > x for x, y in zip(s, s[1:])) else "no"
                out.append(f"| `{m}` | {b} | " + " | ".join(f"{x:.2f}x" for x in s) + f" | {grows} |")
    out.append("")
    return "\n".join(out)


def plot(rows: List[Dict[str, Any]], labels: List[str], beams: List[int], path: Path, device: str) -> None:
    from ..plotting import pyplot

    plt = pyplot()

    fig, axes = plt.subplots(1, len(beams), figsize=(5.2 * len(beams), 3.8), squeeze=False)
    for ax, b in zip(axes[0], beams):
        for label in labels:
            pts = sorted((r["L"], r["sent_per_s"]) for r in rows if r["model"] == label and r["beam"] == b)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=label, ms=3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("output length (tokens)")
        ax.set_ylabel("sentences/s")
        ax.set_title(f"beam {b}")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"fairseq-generate speed against output length ({device}, mixer_small size)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
