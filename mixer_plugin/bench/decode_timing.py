"""One fairseq-generate in this process, timed by fairseq's own speed line (``generate``): cut to
the first sentences of the test set, and, for the profiled run, with the time spent in the
decoder's attention modules (``AttentionTimer``)."""

import argparse
import logging
import re
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Sequence, Tuple, Union

from ..paths import PLUGIN
from .decode_models import device_flags

if TYPE_CHECKING:
    from torch import nn


SPEED = re.compile(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s \(([\d.]+) sentences/s")


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


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
