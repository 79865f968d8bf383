"""The common bases of the plugin's own mixers.

Interface (the one fairseq's stock layers already call MultiheadAttention with):
``forward(query, key, value, key_padding_mask, incremental_state, need_weights,
static_kv, attn_mask, need_head_weights) -> (out, weights_or_None)``, with
``query`` of shape ``(T, B, C)`` and ``out`` of shape ``(T, B, C)``.

* :class:`MixerBase`: that ``forward``, written once; the incremental-state buffer
  and beam reordering.  Every cached tensor is time-major ``(T, B, ...)``, so
  reordering is one ``index_select`` on dim 1; a self-attention cache grows in place
  (:func:`append_rows`).  Subclasses implement :meth:`MixerBase.mix`.
* :class:`WindowMixer`: self-mixers over a fixed window of neighbours,
  ``t-n+1 .. t+n-1`` (2n-1 positions) for an encoder and ``t-n+1 .. t`` (n positions)
  for a decoder.  :meth:`WindowMixer.with_context` builds it without an L x L matrix,
  and in incremental decoding keeps exactly the last ``n-1`` rows of each stream.
* :class:`AttentionMixer`: mixers that compare queries with keys (self or cross).
  q/k/v/out projections named and initialised as fairseq's MultiheadAttention, the
  key/value cache, and the padding and causal masks; subclasses implement
  :meth:`AttentionMixer.attend`.
"""

import math
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import FairseqIncrementalState
from torch import Tensor, nn

from . import kernels
from .registry import MixerContext, MixerSpecError, Role

State = Dict[str, Dict[str, Optional[Tensor]]]

# rows a self-mixer's cache is first allocated with; it doubles when full
FIRST_CACHE_ROWS = 16


def flat_storage(t: Tensor) -> Tensor:
    """All of ``t``'s storage as a 1-D tensor of its dtype (a view, no copy)."""
    return t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)


def spare_rows(cached: Tensor) -> int:
    """Rows of storage after the end of a contiguous time-major cache ``(S, B, ...)``,
    that :func:`append_rows` may fill in place (0 for any other tensor)."""
    row = math.prod(cached.shape[1:])
    if cached.dim() == 0 or cached.size(0) == 0 or row == 0 or not cached.is_contiguous():
        return 0
    return (flat_storage(cached).numel() - cached.storage_offset()) // row - cached.size(0)


def append_rows(cached: Optional[Tensor], new: Tensor) -> Tensor:
    """A decoder cache grown by one step: ``cached`` ``(S, B, ...)`` + ``new`` ``(T, B, ...)``
    -> ``(S + T, B, ...)``.

    ``torch.cat`` copies all S cached rows at every step, O(L^2) over an output of L
    tokens, and at long outputs that copy cost more than the attention itself
    (results/bench/bench_decode_ops_cpu_cat.md).  Here the cache is the prefix of a larger buffer:
    the step's rows are written into the spare rows after it, and only a full buffer is
    copied, into one twice the size.  Every cache this writes into was allocated here
    (or by :func:`reorder_rows`), so the spare rows belong to no other tensor; under
    autograd (a test differentiating through decoding) it falls back to ``torch.cat``.
    """
    if cached is None or cached.numel() == 0:
        cached = new[:0]
    if torch.is_grad_enabled() and (cached.requires_grad or new.requires_grad):
        return torch.cat([cached, new])
    S, T = cached.size(0), new.size(0)
    if cached.dtype == new.dtype and spare_rows(cached) >= T:
        start, count = cached.storage_offset(), (S + T) * math.prod(cached.shape[1:])
        grown = flat_storage(cached)[start : start + count].view(S + T, *cached.shape[1:])
    else:
        grown = new.new_empty((max(2 * (S + T), FIRST_CACHE_ROWS), *new.shape[1:]))[: S + T]
        grown[:S].copy_(cached)
    grown[S:].copy_(new)
    return grown


def reorder_rows(cached: Tensor, order: Tensor, free: Optional[Tensor] = None) -> Tuple[Tensor, Optional[Tensor]]:
    """Beam reordering of a time-major self-attention cache (one that
    :func:`append_rows` made): ``(S, B, ...)`` -> ``(S, len(order), ...)`` on dim 1,
    with the same spare rows after it, so the next :func:`append_rows` still writes in
    place.  -> (the reordered cache, ``cached``'s whole storage, flat, now free).

    The reordered rows go into ``free`` (the storage the previous reorder released)
    when it is large enough: a fresh buffer of a long output's cache costs the kernel's
    page faults, several times the copy itself (docs/benchmarks.md, decoding), and
    beam search reorders at every step.  So a cache and its free twin alternate, and
    a buffer is only allocated when the cache outgrows them."""
    if torch.is_grad_enabled() and cached.requires_grad:  # append_rows' torch.cat fallback
        return cached.index_select(1, order), free
    S = cached.size(0)
    shape = (S + spare_rows(cached), order.numel(), *cached.shape[2:])
    n = math.prod(shape)
    if free is not None and free.dtype == cached.dtype and free.numel() >= n:
        buffer = free[:n].view(shape)
    else:
        buffer = cached.new_empty(shape)
    out = torch.index_select(cached, 1, order, out=buffer[:S])
    return out, flat_storage(cached)


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


class AttentionMixer(MixerBase):
    """Base for mixers that compare queries with keys, as self- or cross-attention.

    What it owns, so that subclasses only write their equation in :meth:`attend`:

    * projections named and initialised exactly as fairseq's ``MultiheadAttention``
      (``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``), so a checkpoint trained
      with ``attn`` loads into a subclass of the same widths and vice versa;
    * the key/value streams and their cache for incremental decoding: appended
      step by step for decoder self-attention (optionally only the last
      :attr:`cache_window` rows), computed once and kept for cross-attention;
    * the key padding mask (also cached for self-attention) and causality.

    Widths: ``num_heads`` heads of query/key width ``head_dim`` and value width
    ``value_dim`` (both default to ``embed_dim / num_heads``); ``out_proj`` maps
    ``num_heads * value_dim`` back to ``embed_dim``.
    """

    # cached key rows a decoder self-mixer keeps for later steps; None keeps all
    cache_window: Optional[int] = None

    def __init__(
        self,
        ctx: MixerContext,
        num_heads: int,
        head_dim: Optional[int] = None,
        value_dim: Optional[int] = None,
    ):
        super().__init__()
        D = ctx.embed_dim
        if num_heads < 1:
            raise MixerSpecError(f"option heads must be >= 1, got {num_heads}")
        if head_dim is None:
            if D % num_heads:
                raise MixerSpecError(f"embed_dim {D} is not divisible by heads {num_heads}")
            head_dim = D // num_heads
        self.role = ctx.role
        self.causal = ctx.role.causal
        self.cross = ctx.role is Role.DECODER_CROSS
        self.embed_dim = D
        self.kv_dim = ctx.kv_dim if self.cross else D
        # the stock decoder layer reads num_heads and head_dim off its self_attn
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.value_dim = value_dim or head_dim
        self.scaling = head_dim**-0.5
        self.dropout_p = ctx.attention_dropout
        H = num_heads
        self.q_proj = nn.Linear(D, H * self.head_dim)
        self.k_proj = nn.Linear(self.kv_dim, H * self.head_dim)
        self.v_proj = nn.Linear(self.kv_dim, H * self.value_dim)
        self.out_proj = nn.Linear(H * self.value_dim, D)
        self.reset_attention_parameters()

    def macs(self, T: int, S: int) -> int:
        linear = lambda m, n: n * m.in_features * m.out_features  # noqa: E731
        projections = (
            linear(self.q_proj, T) + linear(self.k_proj, S) + linear(self.v_proj, S) + linear(self.out_proj, T)
        )
        return projections + self.core_macs(T, S)

    def core_macs(self, T: int, S: int) -> int:
        """What :meth:`attend` multiplies: here scores and the weighted sum of values."""
        return self.pairs(T, S) * self.num_heads * (self.head_dim + self.value_dim)

    def reorder_incremental_state(self, incremental_state: State, new_order: Tensor) -> Optional[State]:
        if self.cross:
            buffer = self._get_input_buffer(incremental_state)
            if buffer and next(iter(buffer.values())).size(1) == new_order.numel():
                # Beam search only reorders hypotheses within a sentence, and all of
                # them share that sentence's encoder output, so the static cache is
                # unchanged; it is only gathered when finished sentences leave the
                # batch.  fairseq's MultiheadAttention relies on the same contract.
                return incremental_state
            return super().reorder_incremental_state(incremental_state, new_order)
        # self-attention: every cached stream was made by append_rows, so its storage
        # is this cache's own, and is reused as the next reorder's destination
        buffer = self._get_input_buffer(incremental_state)
        free = self.get_incremental_state(incremental_state, "mixer_free") or {}
        for name, x in buffer.items():
            buffer[name], free[name] = reorder_rows(x, new_order, free.get(name))
        self.set_incremental_state(incremental_state, "mixer_free", free)
        return self._set_input_buffer(incremental_state, buffer)

    def reset_attention_parameters(self) -> None:
        # fairseq MultiheadAttention.reset_parameters: the scaled init when keys and
        # values have the model width ("much better convergence" per fairseq)
        gain = 2**-0.5 if self.kv_dim == self.embed_dim else 1.0
        for proj in (self.k_proj, self.v_proj, self.q_proj):
            nn.init.xavier_uniform_(proj.weight, gain=gain)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.zeros_(self.out_proj.bias)

    def mix(
        self,
        x: Tensor,
        kv_input: Tensor,
        key_padding_mask: Optional[Tensor],
        incremental_state: Optional[State],
        need_weights: bool,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        T, B, _ = x.shape
        if self.cross or not self.fuse_qkv():
            q, new = self.q_proj(x), None
        else:
            # self-attention: q, k and v of the same input in one GEMM (one pass over x,
            # one larger matrix product), then split; the parameters stay fairseq's three
            q, k, v = F.linear(
                x,
                torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight]),
                torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]),
            ).split([self.q_proj.out_features, self.k_proj.out_features, self.v_proj.out_features], dim=-1)
            new = {"k": k, "v": v}
        streams, key_padding_mask, offset = self.keys_values(kv_input, key_padding_mask, incremental_state, new)
        q = self.split_heads(q, self.head_dim)  # (B, H, T, d)
        out, weights = self.attend(q, streams, key_padding_mask, offset, need_weights)  # (B, H, T, dv)
        out = out.permute(2, 0, 1, 3).reshape(T, B, self.num_heads * self.value_dim)  # (T, B, H * dv)
        return self.out_proj(out), weights  # (T, B, D)

    def attend(
        self,
        q: Tensor,
        streams: Dict[str, Tensor],
        key_padding_mask: Optional[Tensor],
        offset: int,
        need_weights: bool,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """The mixer's equation.

        q: ``(B, H, T, head_dim)``, unscaled.  ``streams``: what :meth:`project_kv`
        made of the keys' input, time-major ``(S, B, C)``, cached rows first.
        ``key_padding_mask``: ``(B, S)``, True at padding, or None.  ``offset``: the
        number of key rows before the first query, so query i sits at key row
        ``offset + i`` (decoder self-attention: it may see rows ``<= offset + i``).
        Returns ``(B, H, T, value_dim)`` and, when ``need_weights``, the weights
        ``(B, H, T, S)`` that fairseq's alignment averages over heads (or None).
        """
        raise NotImplementedError

    # ------------------------------------------------------------ keys, values
    def project_kv(self, kv_input: Tensor) -> Dict[str, Tensor]:
        """The cached streams of the keys' input, each ``(S, B, C)``."""
        return {"k": self.k_proj(kv_input), "v": self.v_proj(kv_input)}

    def fuse_qkv(self) -> bool:
        """Whether a self-mixer's streams are exactly k_proj(x), v_proj(x), so that q, k
        and v can come out of one matrix product (a subclass whose :meth:`project_kv`
        caches something else says no)."""
        return True

    def keys_values(
        self,
        kv_input: Tensor,
        key_padding_mask: Optional[Tensor],
        incremental_state: Optional[State],
        new: Optional[Dict[str, Tensor]] = None,
    ) -> Tuple[Dict[str, Tensor], Optional[Tensor], int]:
        """-> (streams, key_padding_mask over all key rows, offset).  ``new``: the
        streams of ``kv_input`` when the caller has them already.

        In incremental decoding fairseq's decoder passes the padding of the current
        step's column only, and None when that column has none; the padding of every
        key row is cached beside the keys from the first step that had any."""
        if incremental_state is None:
            return (new or self.project_kv(kv_input)), key_padding_mask, 0
        buffer = self._get_input_buffer(incremental_state)
        if self.cross:
            # static: the encoder output is the same at every step (fairseq's
            # static_kv), so it is projected once; its padding mask comes each step
            if not buffer:
                buffer = self.project_kv(kv_input)
                self._set_input_buffer(incremental_state, buffer)
            return dict(buffer), key_padding_mask, 0
        T, B = kv_input.shape[:2]
        new = dict(new or self.project_kv(kv_input))
        prev_len = next((x.size(0) for name, x in buffer.items() if name != "pad"), 0)
        if key_padding_mask is not None or "pad" in buffer:
            zeros = lambda n: torch.zeros(n, B, dtype=torch.bool, device=kv_input.device)  # noqa: E731
            new["pad"] = zeros(T) if key_padding_mask is None else key_padding_mask.t()  # (T, B)
            buffer.setdefault("pad", zeros(prev_len))
        streams = {name: append_rows(buffer.get(name), x) for name, x in new.items()}
        keep = (
            streams
            if self.cache_window is None
            else {name: x[max(0, x.size(0) - self.cache_window) :] for name, x in streams.items()}
        )
        self._set_input_buffer(incremental_state, dict(keep))  # a dict of its own: "pad" is popped below
        pad = streams.pop("pad", None)  # (S, B)
        return streams, (None if pad is None else pad.t()), prev_len

    # ---------------------------------------------------------------- helpers
    def split_heads(self, x: Tensor, dim: int) -> Tensor:
        """(L, B, H * dim) -> (B, H, L, dim)."""
        L, B, _ = x.shape
        return x.view(L, B, self.num_heads, dim).permute(1, 2, 0, 3)

    def soft_attention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        key_padding_mask: Optional[Tensor],
        offset: int,
        need_weights: bool = False,
        scale: Optional[float] = None,
        repeat: int = 1,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """Scaled dot-product attention (eq. 1-3 of Vaswani et al.) with this mixer's
        padding, causality and attention dropout: q ``(B, H, T, d)``, k ``(B, H, S, d)``,
        v ``(B, H, S, dv)`` -> ``(B, H, T, dv)``, weights or None."""
        return kernels.attention(
            q,
            k,
            v,
            key_padding_mask,
            self.causal,
            offset,
            self.scaling if scale is None else scale,
            self.dropout_p if self.training else 0.0,
            need_weights,
            repeat,
        )

    def mask_scores(self, scores: Tensor, key_padding_mask: Optional[Tensor], offset: int, fill: float) -> Tensor:
        """``(B, H, T, S)`` scores with padding keys (and, for a causal mixer, keys
        after the query) set to ``fill``."""
        return kernels.mask_scores(scores, key_padding_mask, self.causal, offset, fill)
