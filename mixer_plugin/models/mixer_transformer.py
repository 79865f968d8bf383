"""``mixer_transformer``: fairseq's Transformer with a token mixer chosen per layer.

Only the three attention slots change.  Embeddings, FFNs, layer norms, residuals,
dropout, incremental decoding and checkpoint layout are the stock fairseq classes,
so ``--encoder-mixers attn --decoder-mixers attn --decoder-cross-mixers attn`` is
the stock ``transformer`` (same parameters, same initialisation).

``--encoder-layer-form ms`` swaps the encoder layer for the MS-Transformer layer of
Guo et al. (eq. 10): ``H' = norm(H + ReLU(mixer(H)))``, no FFN.
"""

import argparse
import logging
from typing import Callable, List, Optional, Sequence, Tuple, Union

import torch
from fairseq.data import Dictionary
from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerDecoderBase,
    TransformerEncoderBase,
    TransformerModel,
)
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import (
    TransformerDecoderLayerBase,
    TransformerEncoderLayerBase,
)
from fairseq.tasks import FairseqTask
from torch import Tensor, nn

from ..mixers import LayerMixer, MixerContext, MixerSpecError, Role, build_mixer, resolve_layers
from ..mixers.registry import parse_mixer_list
from .setups import add_setup_args, apply_setups

logger = logging.getLogger(__name__)

MIXER_FLAGS = {
    Role.ENCODER_SELF: ("encoder_mixers", "--encoder-layers"),
    Role.DECODER_SELF: ("decoder_mixers", "--decoder-layers"),
    Role.DECODER_CROSS: ("decoder_cross_mixers", "--decoder-layers"),
}


def _spec_type(flag: str) -> Callable[[str], str]:
    """argparse ``type=``: syntax, names and options are checked at parse time."""

    def check(text: str) -> str:
        import argparse

        try:
            parse_mixer_list(flag, text)
        except MixerSpecError as e:
            # argparse already prefixes "argument --encoder-mixers: "
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"{flag}: ")) from None
        return text

    return check


LAYER_FORMS = ("transformer", "ms")


def add_mixer_args(parser: argparse.ArgumentParser, roles: Sequence[Role] = tuple(MIXER_FLAGS)) -> None:
    for role in roles:
        dest, layers_flag = MIXER_FLAGS[role]
        parser.add_argument(
            role.flag,
            dest=dest,
            type=_spec_type(role.flag),
            metavar="SPECS",
            help=f"token mixer per layer ({role.value}): NAME[:KEY=VALUE...][*COUNT], "
            f"comma-separated; one entry for all layers or one per layer ({layers_flag})",
        )
    if Role.ENCODER_SELF in roles:
        parser.add_argument(
            "--encoder-layer-form",
            choices=LAYER_FORMS,
            help="transformer: the stock layer, mixer in place of self-attention (eq. 4-5 of "
            "Guo et al.); ms: their MS-Transformer layer, norm(x + ReLU(mixer(x))), no FFN (eq. 10)",
        )


def layer_mixers(cfg: TransformerConfig, role: Role) -> List[LayerMixer]:
    """The per-layer mixer list of one role, validated against the layer count."""
    dest, layers_flag = MIXER_FLAGS[role]
    layers = cfg.encoder.layers if role is Role.ENCODER_SELF else cfg.decoder.layers
    return resolve_layers(role.flag, getattr(cfg, dest, None) or "attn", layers, layers_flag)


class _LayerCounter:
    """Stock encoders/decoders build layers with ``build_*_layer(cfg)`` and no index;
    the mixers of layer i are those of the i-th call."""

    def _next_layer(self, cfg: TransformerConfig, *roles: Role):
        if not hasattr(self, "_layers_built"):
            self._layers_built = 0
            self._role_mixers = {role: layer_mixers(cfg, role) for role in roles}
        i = self._layers_built
        self._layers_built += 1
        return (i,) + tuple(self._role_mixers[role][i] for role in roles)

    @staticmethod
    def _wrap(layer: nn.Module, cfg: TransformerConfig) -> nn.Module:
        # what the stock build_*_layer does after constructing the layer
        checkpoint = cfg.checkpoint_activations
        if checkpoint:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        min_params_to_wrap = cfg.min_params_to_wrap if not checkpoint else 0
        return fsdp_wrap(layer, min_num_params=min_params_to_wrap)


def _context(
    role: Role,
    layer_index: int,
    embed_dim: int,
    kv_dim: int,
    num_heads: int,
    cfg: TransformerConfig,
    build_stock: Callable[[], nn.Module],
) -> MixerContext:
    return MixerContext(
        role=role,
        layer_index=layer_index,
        embed_dim=embed_dim,
        kv_dim=kv_dim,
        num_heads=num_heads,
        attention_dropout=cfg.attention_dropout,
        activation_dropout=cfg.activation_dropout or (cfg.relu_dropout or 0.0),  # as the stock layers read it
        build_stock=build_stock,
        num_layers=cfg.encoder.layers if role is Role.ENCODER_SELF else cfg.decoder.layers,
    )


class MixerEncoderLayer(TransformerEncoderLayerBase):
    def __init__(self, cfg: TransformerConfig, layer_index: int, mixer: LayerMixer, return_fc: bool = False):
        # plain attributes set before nn.Module.__init__ on purpose: the stock
        # __init__ calls build_self_attention, which needs them
        self.layer_index = layer_index
        self.mixer = mixer
        super().__init__(cfg, return_fc=return_fc)

    def build_self_attention(self, embed_dim: int, cfg: TransformerConfig) -> nn.Module:
        stock = lambda: super(MixerEncoderLayer, self).build_self_attention(embed_dim, cfg)  # noqa: E731
        ctx = _context(
            Role.ENCODER_SELF, self.layer_index, embed_dim, embed_dim, cfg.encoder.attention_heads, cfg, stock
        )
        return build_mixer(self.mixer, ctx)


class MSEncoderLayer(MixerEncoderLayer):
    """The MS-Transformer layer (Guo et al. eq. 10): ``H_{l+1} = norm(H_l +
    ReLU(mixer(H_l)))``.  The FFN is removed, so ``fc1``, ``fc2`` and
    ``final_layer_norm`` do not exist; dropout and ``--encoder-normalize-before``
    act as in the stock layer's attention block."""

    def __init__(self, cfg: TransformerConfig, layer_index: int, mixer: LayerMixer, return_fc: bool = False):
        super().__init__(cfg, layer_index, mixer, return_fc=return_fc)
        del self.final_layer_norm  # the stock __init__ builds it; eq. (10) has one norm

    def build_fc1(self, *args) -> None:
        return None  # no FFN (eq. 10)

    build_fc2 = build_fc1

    def forward(
        self, x: Tensor, encoder_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor] = None
    ) -> Union[Tensor, Tuple[Tensor, None]]:
        if attn_mask is not None:
            raise ValueError("the MS-Transformer layer does not take an attn_mask")
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        x, _ = self.self_attn(query=x, key=x, value=x, key_padding_mask=encoder_padding_mask, need_weights=False)
        x = self.dropout_module(torch.relu(x))  # (10): ReLU after the mixer
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        return (x, None) if self.return_fc else x


class MixerDecoderLayer(TransformerDecoderLayerBase):
    def __init__(
        self,
        cfg: TransformerConfig,
        layer_index: int,
        self_mixer: LayerMixer,
        cross_mixer: LayerMixer,
        no_encoder_attn: bool = False,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
    ):
        self.layer_index = layer_index  # set before nn.Module.__init__: see encoder layer
        self.self_mixer = self_mixer
        self.cross_mixer = cross_mixer
        if cfg.cross_self_attention and self.self_mixer.name != "attn":
            raise MixerSpecError(
                f"--cross-self-attention needs attn decoder self-mixers, "
                f"--decoder-mixers gives {self.self_mixer.name} at layer {layer_index}"
            )
        super().__init__(cfg, no_encoder_attn, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)

    def build_self_attention(
        self, embed_dim: int, cfg: TransformerConfig, add_bias_kv: bool = False, add_zero_attn: bool = False
    ) -> nn.Module:
        stock = lambda: super(MixerDecoderLayer, self).build_self_attention(  # noqa: E731
            embed_dim, cfg, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn
        )
        ctx = _context(
            Role.DECODER_SELF, self.layer_index, embed_dim, embed_dim, cfg.decoder.attention_heads, cfg, stock
        )
        return build_mixer(self.self_mixer, ctx)

    def build_encoder_attention(self, embed_dim: int, cfg: TransformerConfig) -> nn.Module:
        stock = lambda: super(MixerDecoderLayer, self).build_encoder_attention(embed_dim, cfg)  # noqa: E731
        ctx = _context(
            Role.DECODER_CROSS,
            self.layer_index,
            embed_dim,
            cfg.encoder.embed_dim,
            cfg.decoder.attention_heads,
            cfg,
            stock,
        )
        return build_mixer(self.cross_mixer, ctx)


class MixerTransformerEncoder(_LayerCounter, TransformerEncoderBase):
    def build_encoder_layer(self, cfg: TransformerConfig) -> nn.Module:
        i, mixer = self._next_layer(cfg, Role.ENCODER_SELF)
        form = getattr(cfg, "encoder_layer_form", None) or "transformer"
        layer_class = MSEncoderLayer if form == "ms" else MixerEncoderLayer
        layer = layer_class(cfg, i, mixer, return_fc=self.return_fc)
        return self._wrap(layer, cfg)


class MixerTransformerDecoder(_LayerCounter, TransformerDecoderBase):
    def build_decoder_layer(self, cfg: TransformerConfig, no_encoder_attn: bool = False) -> nn.Module:
        i, self_mixer, cross_mixer = self._next_layer(cfg, Role.DECODER_SELF, Role.DECODER_CROSS)
        layer = MixerDecoderLayer(cfg, i, self_mixer, cross_mixer, no_encoder_attn)
        return self._wrap(layer, cfg)


@register_model("mixer_transformer")
class MixerTransformerModel(TransformerModel):
    """Transformer whose attention slots are token mixers, chosen per layer with
    ``--encoder-mixers``, ``--decoder-mixers`` and ``--decoder-cross-mixers``."""

    @classmethod
    def add_args(cls, parser: argparse.ArgumentParser) -> None:
        super().add_args(parser)
        add_mixer_args(parser)
        add_setup_args(parser)

    @classmethod
    def build_model(cls, args: argparse.Namespace, task: FairseqTask) -> "MixerTransformerModel":
        from .architectures import mixer_base_architecture

        mixer_base_architecture(args)
        if getattr(args, "encoder_layers_to_keep", None) or getattr(args, "decoder_layers_to_keep", None):
            raise MixerSpecError("--encoder/decoder-layers-to-keep is not supported by mixer_transformer")
        model = super().build_model(args, task)
        apply_setups(model, args, task.source_dictionary.pad())
        for line in model.mixer_summary():
            logger.info(line)
        return model

    @classmethod
    def build_encoder(
        cls, cfg: TransformerConfig, src_dict: Dictionary, embed_tokens: nn.Embedding
    ) -> MixerTransformerEncoder:
        return MixerTransformerEncoder(cfg, src_dict, embed_tokens)

    @classmethod
    def build_decoder(
        cls, cfg: TransformerConfig, tgt_dict: Dictionary, embed_tokens: nn.Embedding
    ) -> MixerTransformerDecoder:
        return MixerTransformerDecoder(cfg, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention)

    def mixer_summary(self) -> List[str]:
        """One line per layer: which mixer fills each slot (logged at build)."""
        lines = []
        for i, layer in enumerate(self.encoder.layers):
            form = " layer=ms (eq. 10, no FFN)" if isinstance(layer, MSEncoderLayer) else ""
            lines.append(f"encoder.{i}: self={layer.mixer.describe()}{form}")
        for i, layer in enumerate(self.decoder.layers):
            lines.append(f"decoder.{i}: self={layer.self_mixer.describe()} cross={layer.cross_mixer.describe()}")
        return lines
