"""The base of mixers that compare queries with keys (self- or cross-attention).

:class:`AttentionMixer`: mixers that compare queries with keys (self or cross).
q/k/v/out projections named and initialised as fairseq's MultiheadAttention, the
key/value cache (kept by :mod:`~mixer_plugin.mixers.row_cache`), and the padding and
causal masks; subclasses implement :meth:`AttentionMixer.attend`.
"""

from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import kernels
from .base import MixerBase, State
from .registry import MixerContext, MixerSpecError, Role
from .row_cache import append_rows, reorder_rows


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
