"""The common base of the plugin's own mixers.

Interface (the one fairseq's stock layers already call MultiheadAttention with):
``forward(query, key, value, key_padding_mask, incremental_state, need_weights,
static_kv, attn_mask, need_head_weights) -> (out, weights_or_None)``, with
``query`` of shape ``(T, B, C)`` and ``out`` of shape ``(T, B, C)``.

Self-mixers here are *local*: position t sees a window of neighbours.  The window is
``t-n+1 .. t+n-1`` (2n-1 positions) for an encoder and ``t-n+1 .. t`` (n positions)
for a decoder.  :meth:`TokenMixer.neighbour_windows` builds it without an L x L
matrix, and, in incremental decoding, keeps exactly the last ``n-1`` rows of each
stream in fairseq's ``incremental_state``.
"""

from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fairseq.incremental_decoding_utils import FairseqIncrementalState

from .registry import MixerContext, MixerSpecError

State = Dict[str, Dict[str, Optional[Tensor]]]


class TokenMixer(FairseqIncrementalState, nn.Module):
    """Base for local self-mixers.  Subclasses implement :meth:`mix`.

    Incremental-state convention: every cached tensor is time-major ``(T, B, ...)``,
    so beam reordering is one ``index_select`` on dim 1 for all of them.
    """

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

    # ---------------------------------------------------------------- interface
    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor],
        value: Optional[Tensor],
        key_padding_mask: Optional[Tensor] = None,
        incremental_state: Optional[State] = None,
        need_weights: bool = False,
        static_kv: bool = False,
        attn_mask: Optional[Tensor] = None,
        need_head_weights: bool = False,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        if key is not None and key is not query:
            raise ValueError(
                f"{type(self).__name__} is a self-mixer: key must be the query "
                "(--cross-self-attention is not supported with non-attn mixers)"
            )
        if attn_mask is not None and not self.causal:
            # the decoder passes the future mask; causality is built into the
            # window here, so it is redundant.  An encoder mask is not expected.
            raise ValueError(f"{type(self).__name__} does not take an attn_mask")
        if incremental_state is not None and not self.causal:
            raise ValueError("incremental decoding needs a causal (decoder) mixer")
        return self.mix(query, key_padding_mask, incremental_state), None

    def mix(
        self,
        x: Tensor,
        key_padding_mask: Optional[Tensor],
        incremental_state: Optional[State],
    ) -> Tensor:
        raise NotImplementedError

    # ------------------------------------------------------- incremental state
    def _get_input_buffer(self, incremental_state: Optional[State]):
        # the stock decoder layer calls this on its self_attn on every step
        result = self.get_incremental_state(incremental_state, "mixer_state")
        return {} if result is None else result

    def _set_input_buffer(self, incremental_state: State, buffer):
        return self.set_incremental_state(incremental_state, "mixer_state", buffer)

    def reorder_incremental_state(self, incremental_state: State, new_order: Tensor):
        buffer = self._get_input_buffer(incremental_state)
        if buffer:
            for k, v in buffer.items():
                if v is not None:
                    buffer[k] = v.index_select(1, new_order)  # time-major: batch is dim 1
            incremental_state = self._set_input_buffer(incremental_state, buffer)
        return incremental_state

    # ---------------------------------------------------------------- windows
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
