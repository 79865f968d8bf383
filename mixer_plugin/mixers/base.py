"""The common base of the plugin's own mixers, and the incremental-state type they share.

Interface (the one fairseq's stock layers already call MultiheadAttention with):
``forward(query, key, value, key_padding_mask, incremental_state, need_weights,
static_kv, attn_mask, need_head_weights) -> (out, weights_or_None)``, with
``query`` of shape ``(T, B, C)`` and ``out`` of shape ``(T, B, C)``.

:class:`MixerBase`: that ``forward``, written once; the incremental-state buffer
and beam reordering.  Every cached tensor is time-major ``(T, B, ...)``, so
reordering is one ``index_select`` on dim 1; a self-attention cache grows in place
(:func:`~mixer_plugin.mixers.row_cache.append_rows`).  Subclasses implement
:meth:`MixerBase.mix`.

The two bases a mixer usually starts from subclass it, each in a module of its own:
:class:`~mixer_plugin.mixers.window_base.WindowMixer` (a fixed window of neighbours) and
:class:`~mixer_plugin.mixers.attention_base.AttentionMixer` (queries compared with keys).
"""

from typing import Dict, Optional, Tuple

from fairseq.incremental_decoding_utils import FairseqIncrementalState
from torch import Tensor, nn

State = Dict[str, Dict[str, Optional[Tensor]]]


class MixerBase(FairseqIncrementalState, nn.Module):
    """fairseq's calling convention and incremental-state plumbing, shared by every
    mixer of the plugin.

    Convention: every cached tensor is time-major ``(T, B, ...)``, so beam
    reordering is one ``index_select`` on dim 1 for all of them.
    """

    causal: bool = False  # decoder self-attention: position t sees only t' <= t
    cross: bool = False  # decoder cross-attention: keys are the encoder output

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
        """fairseq's ``MultiheadAttention`` signature.  ``value`` and ``static_kv`` are
        implied by the role; ``attn_mask`` is the decoder's future mask, which the
        mixers build in.  Weights, when asked for and the mixer has them, come back as
        fairseq's: ``(H, B, T, S)`` per head, else their mean over heads ``(B, T, S)``."""
        if self.cross:
            kv_input = key  # (S, B, kv_dim): the encoder output
        else:
            self.check_self_call(query, key, attn_mask, incremental_state)
            kv_input = query
        if query.size(0) == 0:
            # no position to mix (an empty slice of a batch): an empty output, still a
            # function of the input so that backward runs
            return query * 0.0, None
        want = need_weights or need_head_weights
        out, weights = self.mix(query, kv_input, key_padding_mask, incremental_state, want)
        if not want or weights is None:
            return out, None
        weights = weights.transpose(0, 1)  # (B, H, T, S) -> (H, B, T, S)
        return out, (weights if need_head_weights else weights.mean(dim=0))

    def mix(
        self,
        x: Tensor,
        kv_input: Tensor,
        key_padding_mask: Optional[Tensor],
        incremental_state: Optional[State],
        need_weights: bool,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """``(T, B, C)`` queries, ``(S, B, C)`` keys' input (x itself for self-mixers)
        -> ``(T, B, C)`` and, if ``need_weights`` and the mixer has them, per-head
        weights ``(B, H, T, S)``."""
        raise NotImplementedError

    def macs(self, T: int, S: int) -> int:
        """Forward multiply-adds for one sequence of T queries over S keys (S = T for a
        self-mixer; a causal mixer's query t sees t+1 of them): the arithmetic the
        equation needs, whatever the kernel does.  Benchmarks put it beside the time."""
        raise NotImplementedError

    def pairs(self, T: int, S: int) -> int:
        """(query, key) pairs a full-width attention scores: all, or the causal half."""
        return T * (T + 1) // 2 if self.causal and S == T else T * S

    def _get_input_buffer(self, incremental_state: Optional[State]) -> Dict[str, Optional[Tensor]]:
        # the stock decoder layer calls this on its self_attn on every step
        result = self.get_incremental_state(incremental_state, "mixer_state")
        return {} if result is None else result

    def _set_input_buffer(self, incremental_state: State, buffer: Dict[str, Optional[Tensor]]) -> Optional[State]:
        return self.set_incremental_state(incremental_state, "mixer_state", buffer)

    def check_self_call(
        self, query: Tensor, key: Optional[Tensor], attn_mask: Optional[Tensor], incremental_state: Optional[State]
    ) -> None:
        """What the stock layers may pass a self-mixer.  The decoder's ``attn_mask`` is
        the future mask, which the plugin's mixers build in; an encoder passes none."""
        if key is not None and key is not query:
            raise ValueError(
                f"{type(self).__name__} as self-attention needs key = query "
                "(--cross-self-attention is not supported with non-attn mixers)"
            )
        if attn_mask is not None and not self.causal:
            raise ValueError(f"{type(self).__name__} does not take an attn_mask")
        if incremental_state is not None and not self.causal:
            raise ValueError("incremental decoding needs a causal (decoder) mixer")

    def reorder_incremental_state(self, incremental_state: State, new_order: Tensor) -> Optional[State]:
        buffer = self._get_input_buffer(incremental_state)
        if buffer:
            for k, v in buffer.items():
                if v is not None:
                    buffer[k] = v.index_select(1, new_order)  # time-major: batch is dim 1
            incremental_state = self._set_input_buffer(incremental_state, buffer)
        return incremental_state
