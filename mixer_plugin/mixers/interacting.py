"""Interacting-head attention for NMT (Li and Luo 2022, "An Improved Transformer-Based
Neural Machine Translation Strategy: Interacting-Head Attention", doi:10.1155/2022/2998242;
section, algorithm and table numbers below are its own).

Every query head i is compared with every key head j.  The equations of §3.3 were lost
in extraction; Algorithm 1 survives and is what ``reading=sum`` implements:

    a_ij = q_i k_j^T (+ mask)                     Alg. 1 lines 7-17, all H^2 head pairs
    o_j  = softmax(sum_i a_ij) v_j                lines 18-34, one output per KEY head j
    out  = concat_j(o_j) W_O                      lines 35-37, then the usual output map

Since sum_i q_i k_j^T = (sum_i q_i) k_j^T, all H heads share ONE summed query
q_sum = sum_i q_i and head j is ordinary attention of q_sum over (k_j, v_j).  That is
computed here at the cost of ordinary multi-head attention (one SDPA call), never as
H^2 score maps; tests/mixer_refs/interacting.py keeps the literal double loop of
Algorithm 1 and the battery checks they agree in float64.  It has exactly the
parameters of ``attn`` (§3.2 (1) and §4.6.4: "does not bring more training
parameters"), so an ``attn`` state dict loads into it.

``reading=pairwise`` is the other reading of §3.3's prose: a "sub-sub-output" for every
(i, j) pair, softmax(q_i k_j^T * s) v_j, concatenated over j into the sub-output of
query head i and over i into the output, then projected: ``out_proj`` maps
H * H * d_v -> D, so it has H times the output-map parameters of ``attn`` and H times
its attention cost (H^2 score maps).  It is computed as one SDPA call per key head j
with the H query heads stacked along the query axis (softmax rows are independent, so
stacking is exact), which never copies k or v.

Scale ``s`` (``scale=``): Algorithm 1 line 6 computes ``temper = sqrt(d_k)`` and never
uses it (line 27 takes the softmax of the raw sum).  Each reading is an option:

* ``hdk`` (default): s = 1/sqrt(H d_k).  The sum of H head products has H times the
  variance of one (logit std ~1.4 against MHA's ~0.5 at H = 8 at initialisation, so
  attention starts peaked); this keeps the logits at the scale of one head.  With
  d_k = D/H it is 1/sqrt(D), the temper of the Keras project the authors name (§4.2),
  whose ScaledDotProductAttention divides by sqrt(d_model): the reference code's scale.
* ``dk``: s = 1/sqrt(d_k), what line 6 computes (and Vaswani et al.'s scale);
* ``none``: s = 1, Algorithm 1 as printed.

Algorithm 1 as printed also never empties ``temp_a`` between key heads j (lines
19-34), so key head j's softmax would take the sum over the pairs (i, j') of every
j' <= j.  The reference code starts each j afresh, and so does this module: head j
sums exactly its own H pairs (i, j).

``head_dim=`` sets d_k = d_v independently of H (§4.6.2 / §4.7: the paper combines its
model with a fixed head size); the default is D / H as in Algorithm 1 line 2.
"""

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from torch import Tensor, nn

from .attention_base import AttentionMixer
from .registry import ALL_ROLES, MixerContext, check_positive, option, register_mixer

SCALES = ("dk", "none", "hdk")


@dataclass(frozen=True)
class InteractingOptions:
    heads: Optional[int] = option(None, "heads H (default: the layer's attention heads)")
    head_dim: Optional[int] = option(None, "query/key/value width per head d_k (default: embed_dim / heads)")
    reading: str = option(
        "sum",
        "sum: Algorithm 1, softmax(sum_i q_i k_j^T) v_j; pairwise: softmax(q_i k_j^T) v_j for "
        "every (i, j), concatenated (§3.3 sub-sub-outputs)",
        choices=("sum", "pairwise"),
    )
    scale: str = option(
        "hdk",
        "logit scale: hdk = 1/sqrt(H d_k) (the reference code's 1/sqrt(d_model)), dk = 1/sqrt(d_k) "
        "(Alg. 1 line 6), none = 1 (Alg. 1 as printed)",
        choices=SCALES,
    )

    def validate(self) -> Optional[str]:
        return check_positive(self, "heads", "head_dim")


@register_mixer("interacting", InteractingOptions, roles=ALL_ROLES)
class InteractingHeadAttention(AttentionMixer):
    def __init__(self, ctx: MixerContext, opts: InteractingOptions):
        super().__init__(ctx, num_heads=opts.heads or ctx.num_heads, head_dim=opts.head_dim)
        H, d = self.num_heads, self.head_dim
        self.reading = opts.reading
        self.logit_scale = {"dk": d**-0.5, "none": 1.0, "hdk": (H * d) ** -0.5}[opts.scale]
        self.head_value_dim = self.value_dim  # d_v of one (key) head's values
        if self.reading == "pairwise":
            # The base reshapes attend()'s (B, H, T, value_dim) to (T, B, H * value_dim):
            # here one query head's sub-output is its H sub-sub-outputs side by side.
            self.value_dim = H * self.head_value_dim
            self.out_proj = nn.Linear(H * self.value_dim, self.embed_dim)  # H^2 d_v -> D
            nn.init.xavier_uniform_(self.out_proj.weight)
            nn.init.zeros_(self.out_proj.bias)

    def core_macs(self, T: int, S: int) -> int:
        H, d, dv = self.num_heads, self.head_dim, self.head_value_dim
        if self.reading == "sum":
            return T * H * d + self.pairs(T, S) * H * (d + dv)  # the query sum, then one attention
        return self.pairs(T, S) * H * H * (d + dv)  # every (i, j) head pair

    def attend(
        self,
        q: Tensor,
        streams: Dict[str, Tensor],
        key_padding_mask: Optional[Tensor],
        offset: int,
        need_weights: bool,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        B, H, T, d = q.shape
        k = self.split_heads(streams["k"], self.head_dim)  # (B, H, S, d)
        v = self.split_heads(streams["v"], self.head_value_dim)  # (B, H, S, dv)
        if self.reading == "sum":
            # Alg. 1: sum_i q_i k_j^T = (sum_i q_i) k_j^T, so head j attends with q_sum
            q_sum = q.sum(dim=1, keepdim=True).expand(B, H, T, d)  # (B, H, T, d), one query
            return self.soft_attention(q_sum, k, v, key_padding_mask, offset, need_weights, self.logit_scale)
        # pairwise: for key head j, the H query heads stacked along the query axis;
        # row i*T + t is query head i at position t
        q_all = q.reshape(B, 1, H * T, d).expand(B, H, H * T, d)  # (B, H_j, H_i*T, d)
        out, weights = self.soft_attention(
            q_all, k, v, key_padding_mask, offset, need_weights, self.logit_scale, repeat=H
        )  # (B, H_j, H_i*T, dv)
        out = out.view(B, H, H, T, self.head_value_dim).permute(0, 2, 3, 1, 4)  # (B, H_i, T, H_j, dv)
        if weights is not None:
            # the H x H sub-sub-attentions of a query, averaged over query heads i:
            # one (B, H_j, T, S) map per key head, as fairseq's alignment expects
            weights = weights.view(B, H, H, T, -1).mean(dim=2)
        return out.reshape(B, H, T, self.value_dim), weights  # sub-output of head i: concat over j
