"""``attn``: fairseq's own MultiheadAttention, built by the stock layer code.

The baseline must keep stock numerics, so this mixer does not re-implement anything:
it asks the layer for exactly the module the stock TransformerLayer would build
(same arguments, same initialisation order).
"""

from torch import nn

from .registry import ALL_ROLES, MixerContext, NoOptions, register_mixer


@register_mixer("attn", NoOptions, roles=ALL_ROLES)
def build_stock_attention(ctx: MixerContext, opts: NoOptions) -> nn.Module:
    return ctx.build_stock()
