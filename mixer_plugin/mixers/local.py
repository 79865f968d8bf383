"""Local attention: scaled dot-product attention restricted to the multiNN window.

The baseline of Loem et al. (Child et al. 2019; Beltagy et al. 2020): position t
attends to t-n+1..t+n-1 in the encoder and t-n+1..t in the decoder, the same
neighbourhood multiNN concatenates.  Keys and values are gathered into per-position
windows of 2n-1 (or n) slots, so memory is O(L n), never O(L^2).

    a_{t,w} = softmax_w(q_t . k_{t-n+1+w} / sqrt(d_h))   over slots w inside the
    h_t     = sum_w a_{t,w} v_{t-n+1+w}                   sentence and not padding
"""

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .base import State, TokenMixer
from .registry import MixerContext, MixerSpecError, option, register_mixer


@dataclass(frozen=True)
class LocalOptions:
    n: int = option(5, "context width: 2n-1 neighbours in the encoder, last n in the decoder")
    heads: Optional[int] = option(None, "heads (default: the layer's attention heads)")

    def validate(self) -> Optional[str]:
        if self.n < 1:
            return f"option n must be >= 1, got {self.n}"
        if self.heads is not None and self.heads < 1:
            return f"option heads must be >= 1, got {self.heads}"
        return None


@register_mixer("local", LocalOptions)
class LocalAttention(TokenMixer):
    def __init__(self, ctx: MixerContext, opts: LocalOptions):
        D = ctx.embed_dim
        H = opts.heads or ctx.num_heads
        if D % H:
            raise MixerSpecError(f"local: embed_dim {D} is not divisible by heads {H}")
        super().__init__(ctx, num_heads=H, head_dim=D // H, n=opts.n)
        self.scaling = self.head_dim**-0.5
        self.dropout = nn.Dropout(ctx.attention_dropout)
        # same parameterisation as fairseq's MultiheadAttention (4 D^2 + 4 D)
        self.q_proj = nn.Linear(D, D)
        self.k_proj = nn.Linear(D, D)
        self.v_proj = nn.Linear(D, D)
        self.out_proj = nn.Linear(D, D)
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=2**-0.5)  # as fairseq MHA
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.zeros_(self.out_proj.bias)

    def mix(self, x: Tensor, key_padding_mask: Optional[Tensor], incremental_state: Optional[State]) -> Tensor:
        T, B, D = x.shape
        H, d, W = self.num_heads, self.head_dim, self.window
        q = self.q_proj(x) * self.scaling  # (T, B, D)
        valid = x.new_ones(T, B, 1)  # 1 for a real token; window slots outside are 0
        if key_padding_mask is not None:
            valid = valid.masked_fill(key_padding_mask.transpose(0, 1).unsqueeze(-1), 0.0)
        win = self.neighbour_windows(
            {"k": self.k_proj(x), "v": self.v_proj(x), "valid": valid}, incremental_state
        )
        k = win["k"].reshape(T, B, H, d, W)  # (T, B, C, W) -> (T, B, H, d, W)
        v = win["v"].reshape(T, B, H, d, W)
        q = q.view(T, B, H, d)
        scores = torch.einsum("tbhd,tbhdw->tbhw", q, k)  # (T, B, H, W)
        # softmax in fp32 at least (fp16/bf16 logits overflow); fp64 stays fp64
        scores = scores.to(torch.promote_types(scores.dtype, torch.float32))
        allowed = win["valid"].view(T, B, 1, W) > 0.5
        # a finite floor instead of -inf: a padding query whose whole window is
        # padding gets uniform (ignored) weights rather than NaN
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        probs = F.softmax(scores, dim=-1).type_as(q)
        probs = self.dropout(probs)
        out = torch.einsum("tbhw,tbhdw->tbhd", probs, v).reshape(T, B, D)
        return self.out_proj(out)
