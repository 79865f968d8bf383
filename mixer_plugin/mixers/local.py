"""Local attention: scaled dot-product attention restricted to the multiNN window.

The baseline of Loem et al. (Child et al. 2019; Beltagy et al. 2020): position t
attends to t-n+1..t+n-1 in the encoder and t-n+1..t in the decoder, the same
neighbourhood multiNN concatenates.  Queries are processed in blocks whose keys are
the rows their windows cover, so memory is O(L n), never O(L^2).

    a_{t,w} = softmax_w(q_t . k_{t-n+1+w} / sqrt(d_h))   over slots w inside the
    h_t     = sum_w a_{t,w} v_{t-n+1+w}                   sentence and not padding
"""

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .base import State, TokenMixer
from .registry import MixerContext, MixerSpecError, check_positive, option, register_mixer


@dataclass(frozen=True)
class LocalOptions:
    n: int = option(5, "context width: 2n-1 neighbours in the encoder, last n in the decoder")
    heads: Optional[int] = option(None, "heads (default: the layer's attention heads)")

    def validate(self) -> Optional[str]:
        return check_positive(self, "n", "heads")


@register_mixer("local", LocalOptions)
class LocalAttention(TokenMixer):
    def __init__(self, ctx: MixerContext, opts: LocalOptions):
        D = ctx.embed_dim
        H = opts.heads or ctx.num_heads
        if D % H:
            raise MixerSpecError(f"local: embed_dim {D} is not divisible by heads {H}")
        super().__init__(ctx, num_heads=H, head_dim=D // H, n=opts.n)
        self.scaling = self.head_dim**-0.5
        self.dropout_p = ctx.attention_dropout
        self.block = max(16, self.window)  # queries per score tile
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
        valid = x.new_ones(T, B, 1)  # 1 for a real token; context slots outside are 0
        if key_padding_mask is not None:
            valid = valid.masked_fill(key_padding_mask.transpose(0, 1).unsqueeze(-1), 0.0)
        ext = self.with_context(
            {"k": self.k_proj(x), "v": self.v_proj(x), "valid": valid}, incremental_state
        )  # each (T+W-1, B, C): the window of t is rows t..t+W-1

        # Blocked banded attention: queries in blocks of c attend to the c+W-1 context
        # rows their windows cover, one dense (c x c+W-1) score tile per block with a
        # band mask.  Memory is O(T (c+W-1)); the GEMMs stay dense and fast.
        c = min(T, self.block)
        nb = -(-T // c)  # ceil(T / c)
        grow = nb * c - T  # round T up to whole blocks; the extra rows are invalid
        q = F.pad(self.q_proj(x), (0, 0, 0, 0, 0, grow))  # (nb*c, B, D)
        span = c + W - 1

        def blocks(t: Tensor) -> Tensor:  # (nb*c + W-1, B, C) -> (nb, B, C, span)
            return F.pad(t, (0, 0, 0, 0, 0, grow)).unfold(0, span, c)

        k = blocks(ext["k"]).reshape(nb, B, H, d, span).permute(1, 2, 0, 4, 3)  # (B, H, nb, span, d)
        v = blocks(ext["v"]).reshape(nb, B, H, d, span).permute(1, 2, 0, 4, 3)
        q = q.view(nb, c, B, H, d).permute(2, 3, 0, 1, 4)  # (B, H, nb, c, d)
        slot = torch.arange(span, device=x.device) - torch.arange(c, device=x.device)[:, None]
        band = (slot >= 0) & (slot < W)  # (c, span): key row j is in query i's window
        ok = band & (blocks(ext["valid"]).squeeze(2).transpose(0, 1)[:, None, :, None, :] > 0.5)
        # additive mask with a finite floor, not -inf: a padding query whose window
        # holds only padding gets uniform (ignored) weights instead of NaN
        mask = torch.zeros(ok.shape, dtype=q.dtype, device=x.device)
        mask = mask.masked_fill(~ok, torch.finfo(q.dtype).min)  # (B, 1, nb, c, span)
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout_p if self.training else 0.0,
            scale=self.scaling,
        )  # (B, H, nb, c, d)
        out = out.permute(2, 3, 0, 1, 4).reshape(nb * c, B, D)[:T]
        return self.out_proj(out)
