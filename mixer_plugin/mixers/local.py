"""Local attention: scaled dot-product attention restricted to the multiNN window.

The baseline of Loem et al. (arXiv:2207.13354; after Child et al. 2019, Beltagy et
al. 2020): position t attends to t-n+1..t+n-1 in the encoder and t-n+1..t in the
decoder, the same neighbourhood multiNN concatenates.

    a_{t,s} = softmax_s(q_t . k_s / sqrt(d_h))   over s in the window, inside the
    h_t     = sum_s a_{t,s} v_s                    sentence and not padding

It is ``AttentionMixer`` (fairseq's projections, initialisation and cache) with
one fixed band, computed by :func:`kernels.band_attention`: blocked tiles, memory
O(L n), never O(L^2).  A decoder caches only the last n-1 key/value rows.
"""

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from torch import Tensor

from .attention_base import AttentionMixer
from .kernels import band_attention, window_pairs
from .registry import MixerContext, check_positive, option, register_mixer


@dataclass(frozen=True)
class LocalOptions:
    n: int = option(5, "context width: 2n-1 neighbours in the encoder, last n in the decoder")
    heads: Optional[int] = option(None, "heads (default: the layer's attention heads)")
    kernel: str = option(
        "auto", "banded (O(L n) tiles), dense (one masked L x L call) or auto", choices=("auto", "banded", "dense")
    )

    def validate(self) -> Optional[str]:
        return check_positive(self, "n", "heads")


@register_mixer("local", LocalOptions)
class LocalAttention(AttentionMixer):
    def __init__(self, ctx: MixerContext, opts: LocalOptions):
        super().__init__(ctx, num_heads=opts.heads or ctx.num_heads)
        self.n = opts.n
        self.kernel = opts.kernel
        self.cache_window = self.n - 1  # step t needs rows t-n+1 .. t-1 of the past

    def extra_repr(self) -> str:
        return f"heads={self.num_heads}, n={self.n}"

    def core_macs(self, T: int, S: int) -> int:
        lo, hi = self.n - 1, (0 if self.causal else self.n - 1)
        return window_pairs(T, lo, hi) * self.num_heads * (self.head_dim + self.value_dim)

    def attend(
        self,
        q: Tensor,
        streams: Dict[str, Tensor],
        key_padding_mask: Optional[Tensor],
        offset: int,
        need_weights: bool,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        k = self.split_heads(streams["k"], self.head_dim)  # (B, H, S, d)
        v = self.split_heads(streams["v"], self.value_dim)  # (B, H, S, d)
        key_ok = None if key_padding_mask is None else ~key_padding_mask  # (B, S)
        lo, hi = self.n - 1, (0 if self.causal else self.n - 1)
        return band_attention(
            q,
            k,
            v,
            lo,
            hi,
            key_ok,
            offset,
            self.scaling,
            self.dropout_p if self.training else 0.0,
            self.kernel,
            need_weights=need_weights,
        )  # (B, H, T, d), weights or None
