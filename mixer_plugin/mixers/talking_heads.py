"""Talking-heads attention (Shazeer, Lan, Cheng, Ding and Hou 2020, "Talking-Heads
Attention", arXiv:2003.02436), the interacting-head paper's third baseline (§2.3.3, §4.4).

Multi-head attention with two learned H x H maps across the heads dimension, one just
before and one just after the softmax (the paper's §4 pseudo-code, with
h_k = h = h_v = H heads)::

    J = q_h k_h^T / sqrt(d_k)          (B, H, T, S): per-head logits, as in MHA
    L = J P_l                           logits mixed across heads (P_l: H x H)
    W = softmax(L) over the keys
    U = W P_w                           weights mixed across heads (P_w: H x H)
    o_h = U_h v_h,  out = concat_h(o_h) W_O

Both maps act on each (query, key) cell separately, so masking (after P_l, before the
softmax, as Mesh TensorFlow adds its bias), padding invariance and incremental
decoding work exactly as in MHA: a new query row needs only the cached keys/values.

Initialisation (``init=``), which the paper does not state:

* ``identity`` (default): P_l = P_w = I, so the layer starts as plain MHA (a test checks
  it equals the stock ``attn`` with the same weights) and learns to mix;
* ``normal``: N(0, 1/H) entries, fan-in variance scaling, the default initialiser of
  a dense layer in the authors' Mesh TensorFlow code.

The H x H score maps are materialised (twice: logits and mixed weights), as in the
paper; no fused attention kernel can take a map between softmax and the value sum.
"""

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention_base import AttentionMixer
from .kernels import floor_of, fp32_at_least
from .registry import ALL_ROLES, MixerContext, check_positive, option, register_mixer


@dataclass(frozen=True)
class TalkingHeadsOptions:
    heads: Optional[int] = option(None, "heads H (default: the layer's attention heads)")
    init: str = option(
        "identity",
        "initial P_l, P_w: identity (starts as MHA) or normal (N(0, 1/H))",
        choices=("identity", "normal"),
    )

    def validate(self) -> Optional[str]:
        return check_positive(self, "heads")


def mix_heads(x: Tensor, p: Tensor) -> Tensor:
    """(B, H_in, T, S) x (H_in, H_out) -> (B, H_out, T, S): a map across heads, per cell."""
    return torch.einsum("bhts,hg->bgts", x, p.to(x.dtype))


@register_mixer("talking_heads", TalkingHeadsOptions, roles=ALL_ROLES)
class TalkingHeadsAttention(AttentionMixer):
    def __init__(self, ctx: MixerContext, opts: TalkingHeadsOptions):
        super().__init__(ctx, num_heads=opts.heads or ctx.num_heads)
        H = self.num_heads
        self.init = opts.init
        self.pre_softmax = nn.Parameter(torch.empty(H, H))  # P_l, [input head, output head]
        self.post_softmax = nn.Parameter(torch.empty(H, H))  # P_w
        self.reset_talking_heads()

    def reset_talking_heads(self) -> None:
        for p in (self.pre_softmax, self.post_softmax):
            if self.init == "identity":
                nn.init.eye_(p)
            else:
                nn.init.normal_(p, std=self.num_heads**-0.5)

    def core_macs(self, T: int, S: int) -> int:
        H = self.num_heads
        return super().core_macs(T, S) + 2 * self.pairs(T, S) * H * H  # P_l and P_w at every (query, key)

    def attend(
        self,
        q: Tensor,
        streams: Dict[str, Tensor],
        key_padding_mask: Optional[Tensor],
        offset: int,
        need_weights: bool,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        k = self.split_heads(streams["k"], self.head_dim)  # (B, H, S, d)
        v = self.split_heads(streams["v"], self.value_dim)  # (B, H, S, dv)
        # The logits, both head maps and the softmax in float32 at least, with autocast
        # off: under autocast the einsum would run in half precision, and no fused
        # kernel can take a map between the softmax and the value sum anyway.
        acc = fp32_at_least(q.dtype)
        with torch.autocast(q.device.type, enabled=False):
            logits = torch.matmul(q.to(acc) * self.scaling, k.to(acc).transpose(-1, -2))  # J: (B, H, T, S)
            logits = mix_heads(logits, self.pre_softmax)  # L = J P_l
            # a finite floor: a query that sees only padding gets uniform (ignored)
            # weights instead of NaN
            logits = self.mask_scores(logits, key_padding_mask, offset, floor_of(acc))
            weights = mix_heads(F.softmax(logits, dim=-1), self.post_softmax)  # U = softmax(L) P_w
            dropped = F.dropout(weights, p=self.dropout_p, training=self.training)
            out = torch.matmul(dropped, v.to(acc)).to(v.dtype)  # (B, H, T, dv)
        return out, (weights if need_weights else None)
