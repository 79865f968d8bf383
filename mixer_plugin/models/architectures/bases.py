"""Model sizes shared by the paper tables.  Vocabularies are the papers' joint BPE
sizes (all embeddings shared), used only for parameter counts."""

import argparse

from fairseq.models.transformer import transformer_iwslt_de_en, transformer_vaswani_wmt_en_de_big

from . import Arch, mixer_base_architecture, register_base, register_table, set_defaults


@register_base("mixer_wmt", vocab=32000)
def wmt_architecture(args: argparse.Namespace) -> None:
    """transformer-base: d=512, FFN 2048, 8 heads, 6+6 layers."""
    mixer_base_architecture(args)


@register_base("mixer_iwslt", vocab=10000)
def iwslt_architecture(args: argparse.Namespace) -> None:
    """transformer_iwslt_de_en: d=512, FFN 1024, 4 heads, 6+6 layers."""
    transformer_iwslt_de_en(args)
    mixer_base_architecture(args)


@register_base("mixer_small", vocab=8000)
def small_architecture(args: argparse.Namespace) -> None:
    """2+2 layers, d=256: the CPU quickstart size (the shared data README's 5.7M baseline)."""
    set_defaults(
        args,
        encoder_embed_dim=256,
        encoder_ffn_embed_dim=1024,
        encoder_attention_heads=4,
        encoder_layers=2,
        decoder_layers=2,
    )
    set_defaults(
        args,
        decoder_embed_dim=args.encoder_embed_dim,
        decoder_ffn_embed_dim=args.encoder_ffn_embed_dim,
        decoder_attention_heads=args.encoder_attention_heads,
    )
    mixer_base_architecture(args)


@register_base("mixer_wmt_big", vocab=32000)
def wmt_big_architecture(args: argparse.Namespace) -> None:
    """transformer_vaswani_wmt_en_de_big: d=1024, FFN 4096, 16 heads, dropout 0.3."""
    transformer_vaswani_wmt_en_de_big(args)
    mixer_base_architecture(args)


# The CPU size's transformer: the baseline of every CPU experiment, in no paper's table
register_table(
    {
        "mixer_small_attn": Arch(
            "mixer_small", {}, (), ("debian_en_de",), note="CPU size (2+2 layers, d=256): the transformer"
        )
    }
)
