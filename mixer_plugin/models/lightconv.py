"""fairseq's own LightConv and DynamicConv (Wu, Fan, Baevski, Dauphin and Auli 2019, "Pay Less
Attention with Lightweight and Dynamic Convolutions", arXiv:1901.10430) as the leaderboard's
outside peers: the strongest published non-attention mixers for NMT, in pure PyTorch on a CPU
(``LightweightConv1dTBC``; ``DynamicConv1dTBC`` by unfold).

The model is fairseq's ``LightConvModel`` unchanged.  What this module adds is what one recipe
needs to reach it as it reaches the transformer and the plugin's mixers:

* ``--activation-dropout`` (fairseq's newer name, which the converged recipe uses and this
  model does not take) sets the model's ``--relu-dropout``: the dropout after the FFN's
  ReLU, the same place.  Given, it wins over ``--relu-dropout``.
* ``--attention-dropout`` reaches the convolutions through their own analogue, DropConnect
  on the softmax-normalised kernel weights (``--weight-dropout``, Wu et al. §3: "we drop
  every entry of the normalized weights with probability p"), as fairseq's
  ``base_architecture`` already defaults it; ``lightconv_iwslt_de_en`` fixes it at 0.1
  instead, so the archs here restore the base rule.  It also drops the decoder's
  cross-attention probabilities, as in the stock model.

Archs (defaults only): the CPU size of the leaderboard (d=256, FFN 1024, 4 heads, 2+2 layers;
``--encoder-layers 6 --decoder-layers 6`` for the depth table) on ``lightconv_iwslt_de_en``'s
settings (no GLU, no input dropout), kernel sizes the first L of Wu et al.'s lists (3, 7, 15,
31, 31, 31, 31 for the encoder; 3, 7, 15, 31, 31, 31 for the decoder), so each layer has the
kernel the paper gave its layer of that depth.
"""

import argparse

from fairseq.models import register_model, register_model_architecture
from fairseq.models.lightconv import LightConvModel, lightconv_iwslt_de_en
from fairseq.tasks import FairseqTask

# Wu et al.'s kernel sizes by layer (fairseq's base_architecture: 7 encoder, 6 decoder layers)
ENCODER_KERNELS = [3, 7, 15, 31, 31, 31, 31]
DECODER_KERNELS = [3, 7, 15, 31, 31, 31]


@register_model("mixer_lightconv")
class LightConvPeer(LightConvModel):
    """``LightConvModel`` with ``--activation-dropout`` read as its ``--relu-dropout``."""

    @staticmethod
    def add_args(parser: argparse.ArgumentParser) -> None:
        LightConvModel.add_args(parser)
        # fairseq gives the conv types an argparse default ("dynamic"), which would hide
        # from an arch whether the user chose one: unset, the arch decides
        parser.set_defaults(encoder_conv_type=None, decoder_conv_type=None)
        parser.add_argument(
            "--activation-dropout",
            type=float,
            metavar="D",
            help="dropout after the FFN's ReLU: sets --relu-dropout (fairseq's newer name for it)",
        )

    @classmethod
    def build_model(cls, args: argparse.Namespace, task: FairseqTask) -> LightConvModel:
        if getattr(args, "activation_dropout", None) is not None:
            args.relu_dropout = args.activation_dropout
        return super().build_model(args, task)


def small_conv(args: argparse.Namespace, conv_type: str) -> None:
    args.encoder_layers = getattr(args, "encoder_layers", 2)
    args.decoder_layers = getattr(args, "decoder_layers", 2)
    if args.encoder_layers > len(ENCODER_KERNELS) or args.decoder_layers > len(DECODER_KERNELS):
        raise ValueError(
            f"--encoder-layers/--decoder-layers: Wu et al.'s kernel lists have {len(ENCODER_KERNELS)} and "
            f"{len(DECODER_KERNELS)} layers; give --encoder-kernel-size-list and --decoder-kernel-size-list"
        )
    args.encoder_kernel_size_list = getattr(args, "encoder_kernel_size_list", ENCODER_KERNELS[: args.encoder_layers])
    args.decoder_kernel_size_list = getattr(args, "decoder_kernel_size_list", DECODER_KERNELS[: args.decoder_layers])
    args.encoder_conv_type = getattr(args, "encoder_conv_type", None) or conv_type
    args.decoder_conv_type = getattr(args, "decoder_conv_type", None) or conv_type
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 256)
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", args.encoder_embed_dim)
    args.attention_dropout = getattr(args, "attention_dropout", 0.0)
    args.weight_dropout = getattr(args, "weight_dropout", args.attention_dropout)  # base_architecture's rule
    lightconv_iwslt_de_en(args)  # FFN 1024, 4 heads, no GLU, no input dropout


@register_model_architecture("mixer_lightconv", "mixer_small_lightconv")
def small_lightconv(args: argparse.Namespace) -> None:
    """LightConv at the leaderboard's CPU size (2+2 layers, d=256)."""
    small_conv(args, "lightweight")


@register_model_architecture("mixer_lightconv", "mixer_small_dynamicconv")
def small_dynamicconv(args: argparse.Namespace) -> None:
    """DynamicConv at the leaderboard's CPU size (2+2 layers, d=256)."""
    small_conv(args, "dynamic")
