"""Multi-head attention with a head size fixed independently of the number of heads
(Bhojanapalli, Yun, Rawat, Reddi and Kumar 2020, "Low-Rank Bottleneck in Multi-head
Attention Models"), the interacting-head paper's second baseline (§2.3.2, §4.4 (2)).

With D/H-wide heads, each head's T x S score map has rank <= D/H, which falls below the
sequence length once H > D / n (the low-rank bottleneck, §2.3.1).  Bhojanapalli et al.
keep the head size d_p fixed (they set it to the sequence length n) however many heads
there are; the interacting-head paper sets it to the mean training length (§4.6.2,
§4.7: d_p = n), which ``scripts/max_heads.py`` reads off a binarized dataset.

    q_h = x W_q^h,  k_h = m W_k^h,  v_h = m W_v^h       W^h in R^{D x d_p}
    o_h = softmax(q_h k_h^T / sqrt(d_p)) v_h,  out = concat_h(o_h) W_O,  W_O in R^{H d_p x D}

So the projections are D x H d_p instead of D x D: the layer has (H d_p / D) times the
parameters and projection cost of ``attn``.  ``value_dim=`` sets the value width d_v
separately (default d_v = d_p: Bhojanapalli et al. fix the whole head size).  With
d_p = d_v = D / H this is exactly ``attn``.
"""

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from torch import Tensor

from .attention_base import AttentionMixer
from .registry import ALL_ROLES, MixerContext, check_positive, option, register_mixer


@dataclass(frozen=True)
class FixedHeadOptions:
    head_dim: int = option(
        64,
        "query/key width per head d_p, independent of heads (default 64 = 512/8; the paper: the "
        "mean training length, see scripts/max_heads.py)",
    )
    heads: Optional[int] = option(None, "heads H (default: the layer's attention heads)")
    value_dim: Optional[int] = option(None, "value width per head d_v (default: head_dim)")

    def validate(self) -> Optional[str]:
        return check_positive(self, "head_dim", "heads", "value_dim")


@register_mixer("fixed_head", FixedHeadOptions, roles=ALL_ROLES)
class FixedHeadAttention(AttentionMixer):
    def __init__(self, ctx: MixerContext, opts: FixedHeadOptions):
        super().__init__(ctx, num_heads=opts.heads or ctx.num_heads, head_dim=opts.head_dim, value_dim=opts.value_dim)

    def attend(
        self,
        q: Tensor,
        streams: Dict[str, Tensor],
        key_padding_mask: Optional[Tensor],
        offset: int,
        need_weights: bool,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        k = self.split_heads(streams["k"], self.head_dim)  # (B, H, S, d_p)
        v = self.split_heads(streams["v"], self.value_dim)  # (B, H, S, d_v)
        return self.soft_attention(q, k, v, key_padding_mask, offset, need_weights)  # scale 1/sqrt(d_p)
