"""Build a ``mixer_transformer`` outside the CLI: for parameter counts, benchmarks
and tests.  Goes through fairseq's own argument parsing and architecture defaults,
so what it builds is what ``fairseq-train --arch NAME`` would build."""

import argparse
from typing import Sequence

from fairseq import options
from fairseq.data import Dictionary
from fairseq.models import ARCH_MODEL_REGISTRY, BaseFairseqModel
from torch import nn


class _Task:
    """The two dictionaries are all a translation model's build_model reads."""

    def __init__(self, vocab_size: int):
        d = Dictionary()
        for i in range(vocab_size - len(d)):
            d.add_symbol(f"w{i}")
        self.source_dictionary = self.target_dictionary = d


def model_args(arch: str, extra: Sequence[str] = ()) -> argparse.Namespace:
    parser = options.get_training_parser()
    # no --user-dir: importing this module already registered the plugin
    argv = ["/dev/null", "--task", "translation", "--arch", arch, *extra]
    return options.parse_args_and_arch(parser, argv)


def build(arch: str, vocab_size: int = 1000, extra: Sequence[str] = ()) -> BaseFairseqModel:
    args = model_args(arch, extra)
    return ARCH_MODEL_REGISTRY[arch].build_model(args, _Task(vocab_size))


def num_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
