"""A decoder self-attention cache that grows and is beam-reordered in place.

The cache is time-major ``(S, B, ...)`` and is the prefix of a larger buffer, so a decoding
step writes only its own rows (:func:`append_rows`) and beam reordering writes into the
storage the previous reorder released (:func:`reorder_rows`).  ``AttentionMixer`` keeps its
key/value streams this way.
"""

import math
from typing import Optional, Tuple

import torch
from torch import Tensor

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
