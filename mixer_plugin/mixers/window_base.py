"""The base of self-mixers over a fixed window of neighbours.

:class:`WindowMixer`: self-mixers over a fixed window of neighbours,
``t-n+1 .. t+n-1`` (2n-1 positions) for an encoder and ``t-n+1 .. t`` (n positions)
for a decoder.  :meth:`WindowMixer.with_context` builds it without an L x L matrix,
and in incremental decoding keeps exactly the last ``n-1`` rows of each stream.
"""

from typing import Dict, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from .base import MixerBase, State
from .registry import MixerContext, MixerSpecError


class WindowMixer(MixerBase):
    """Base for self-mixers over a fixed window of n neighbours (``ngram``).
    Subclasses implement :meth:`MixerBase.mix` over :meth:`with_context`."""

    def __init__(self, ctx: MixerContext, num_heads: int, head_dim: int, n: int):
        super().__init__()
        if n < 1:
            raise MixerSpecError(f"option n must be >= 1, got {n}")
        if num_heads < 1:
            raise MixerSpecError(f"option heads must be >= 1, got {num_heads}")
        self.embed_dim = ctx.embed_dim
        self.causal = ctx.role.causal
        self.n = n
        # 2n-1 neighbours in the encoder (t-n+1..t+n-1), the last n in the decoder
        self.window = n if self.causal else 2 * n - 1
        # the stock decoder layer reads these two off its self_attn
        self.num_heads = num_heads
        self.head_dim = head_dim

    def with_context(
        self,
        streams: Dict[str, Tensor],
        incremental_state: Optional[State],
    ) -> Dict[str, Tensor]:
        """Each ``(T, B, C)`` stream extended to ``(T + W - 1, B, C)`` so that the
        window of output position t is rows ``t .. t+W-1``: row ``t + w`` holds
        position ``t - (n-1) + w``.  The last slot of a decoder window is t itself;
        the middle slot of an encoder window is t.

        Positions outside the sequence are zeros (callers that must tell them from
        real tokens pass a validity stream: 1 for a token, 0 for outside/padding).
        A decoder takes its n-1 rows of history from ``incremental_state`` and
        stores the last n-1 rows back, which is all it ever needs.
        """
        h = self.n - 1
        out = {}
        if not self.causal:
            for name, x in streams.items():
                out[name] = F.pad(x, (0, 0, 0, 0, h, h))  # (h + T + h, B, C)
            return out
        buffer = self._get_input_buffer(incremental_state)
        for name, x in streams.items():
            prev = buffer.get(name) if incremental_state is not None else None
            if prev is None:
                prev = x.new_zeros((h,) + x.shape[1:])  # (n-1, B, C): before t=0
            out[name] = torch.cat([prev, x], dim=0)  # (n-1+T, B, C)
            if incremental_state is not None:
                buffer[name] = out[name][out[name].size(0) - h :]  # the last n-1 rows
        if incremental_state is not None:
            self._set_input_buffer(incremental_state, buffer)
        return out
