"""Attention kernels shared by the attention-like mixers.

Shapes: q ``(B, G, T, d)``, k ``(B, G, S, d)``, v ``(B, G, S, dv)`` (G heads), out
``(B, G, T, dv)``.  Query i sits at key row ``offset + i`` (``offset`` > 0 only for
decoder self-attention over a cache).

Two rules keep every call on a fused ``scaled_dot_product_attention`` kernel:

* inputs stay 4-D (SDPA sends 5-D inputs to its math kernel, which materialises
  every score and upcasts nothing on CPU), and
* masks stay small: padding is a ``(B, 1, 1, S)`` bias, causality is ``is_causal``
  or a ``(T, S)`` bias, a band is a per-block ``(c, c + W - 1)`` tile.  Nothing is
  ``O(B T S)``, except the band of a per-example window (``multiscale`` ratio
  scales), which depends on each example's length.

Masked entries get a finite floor, never ``-inf``: a query that sees nothing (a
padding row, or a row added to fill a block) gets uniform weights over garbage
that nobody reads, instead of NaN that would leak into the next layer through
``0 * NaN`` in the value sum.
"""

from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor

Radius = Union[int, Tensor]  # an int, or per example and query ``(B|1, T|1)``


def fp32_at_least(dtype: torch.dtype) -> torch.dtype:
    """The dtype a softmax runs in: float32, or float64 for float64 inputs."""
    return torch.promote_types(dtype, torch.float32)


def floor_of(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).min


def additive(ok: Tensor, dtype: torch.dtype) -> Tensor:
    """A bool "may see" mask -> an additive bias of ``dtype`` (0 or the floor)."""
    zero = torch.zeros((), dtype=dtype, device=ok.device)
    return torch.where(ok, zero, zero + floor_of(dtype))


def padding_bias(key_padding_mask: Tensor, dtype: torch.dtype) -> Tensor:
    """``(B, S)`` True at padding -> ``(B, 1, 1, S)`` additive bias."""
    B, S = key_padding_mask.shape
    return additive(~key_padding_mask, dtype).view(B, 1, 1, S)


def future(T: int, S: int, offset: int, device: torch.device, repeat: int = 1) -> Tensor:
    """``(repeat * T, S)`` bool, True where a key row lies after the query's row
    (query row ``r`` is query ``r % T``: ``repeat`` stacks the queries)."""
    rows = torch.arange(T, device=device).repeat(repeat) + offset
    return torch.arange(S, device=device).view(1, S) > rows.view(-1, 1)


def has_future(T: int, S: int, offset: int) -> bool:
    """Whether some key row lies after some query (not so for one decoding step)."""
    return S > offset + 1


def padding_before_tokens(key_padding_mask: Tensor) -> bool:
    """Whether a padding key comes before a real token in some row (left padding).
    One host sync; called only for a causal forward over T > 1 queries with padding,
    never in a decoding step."""
    return bool((key_padding_mask[:, :-1] & ~key_padding_mask[:, 1:]).any())


def mask_scores(
    scores: Tensor, key_padding_mask: Optional[Tensor], causal: bool, offset: int, fill: float, repeat: int = 1
) -> Tensor:
    """``scores`` ``(B, G, repeat*T, S)`` with every blocked (query, key) set to ``fill``:
    padding keys, and for a causal mixer keys after the query.  The two masks are
    applied one after the other, so no ``(B, T, S)`` mask is built."""
    B, _, TT, S = scores.shape
    if key_padding_mask is not None:
        scores = scores.masked_fill(key_padding_mask.view(B, 1, 1, S), fill)
    T = TT // repeat
    if causal and has_future(T, S, offset):
        scores = scores.masked_fill(future(T, S, offset, scores.device, repeat), fill)
    return scores


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    key_padding_mask: Optional[Tensor] = None,
    causal: bool = False,
    offset: int = 0,
    scale: Optional[float] = None,
    dropout_p: float = 0.0,
    need_weights: bool = False,
    repeat: int = 1,
) -> Tuple[Tensor, Optional[Tensor]]:
    """softmax(q k^T * scale) v over the keys each query may see (Vaswani et al. eq. 1).

    ``repeat``: q holds ``repeat`` stacks of the same T queries along its query axis
    (the interacting-head pairwise reading), for the causal mask.  With
    ``need_weights`` the scores are materialised (fp32 softmax) and the weights
    ``(B, G, repeat*T, S)`` returned, as fairseq's alignment needs; otherwise one
    fused SDPA call.
    """
    TT, S = q.size(2), k.size(2)
    T = TT // repeat
    scale = q.size(-1) ** -0.5 if scale is None else scale
    if need_weights:
        acc = fp32_at_least(q.dtype)
        scores = torch.matmul(q, k.transpose(-1, -2)).to(acc) * scale  # (B, G, TT, S)
        scores = mask_scores(scores, key_padding_mask, causal, offset, floor_of(acc), repeat)
        weights = F.softmax(scores, dim=-1)
        dropped = F.dropout(weights, p=dropout_p, training=dropout_p > 0)
        return torch.matmul(dropped.to(v.dtype), v), weights
    is_causal = False
    bias = None if key_padding_mask is None else padding_bias(key_padding_mask, q.dtype)  # (B, 1, 1, S)
    if causal and has_future(T, S, offset):
        if bias is not None and not padding_before_tokens(key_padding_mask):
            # padding only after the tokens (fairseq pads targets on the right): a
            # real query never reaches a padding key, so causality alone is exact
            bias = None
        if bias is None and offset == 0 and T == S and repeat == 1:
            is_causal = True
        else:
            fut = additive(~future(T, S, offset, q.device, repeat), q.dtype)  # (TT, S)
            # left padding under a causal mask: the one (B, 1, TT, S) bias
            bias = fut if bias is None else bias + fut
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p, is_causal=is_causal, scale=scale)
    return out, None


# ----------------------------------------------------------- banded attention
def band_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    lo: Radius,
    hi: Radius,
    key_ok: Optional[Tensor],
    offset: int,
    scale: float,
    dropout_p: float = 0.0,
    kernel: str = "auto",
    block: int = 16,
    max_lo: Optional[int] = None,
    max_hi: Optional[int] = None,
    need_weights: bool = False,
) -> Tuple[Tensor, Optional[Tensor]]:
    """Attention where query i (key row ``p = offset + i``) sees the key rows
    ``p - lo .. p + hi`` that exist and are ``key_ok`` (``(B, S)`` bool or None).

    ``max_lo``/``max_hi``: host-side upper bounds of tensor radii (so no radius is
    ever read back from the device); ints are their own bound.  ``kernel``:
    ``banded`` (blocked tiles, memory O(T (c + W))), ``dense`` (one SDPA over all
    keys with a band mask) or ``auto`` (banded when a tile covers at most a quarter
    of the keys).  ``need_weights``: the ``(B, G, T, S)`` weights are materialised (fp32
    softmax) and returned too."""
    T, S = q.size(2), k.size(2)
    if need_weights:
        acc = fp32_at_least(q.dtype)
        scores = torch.matmul(q, k.transpose(-1, -2)).to(acc) * scale  # (B, G, T, S)
        scores = scores.masked_fill(~band_mask(lo, hi, key_ok, T, S, offset, q.device), floor_of(acc))
        weights = F.softmax(scores, dim=-1)
        dropped = F.dropout(weights, p=dropout_p, training=dropout_p > 0)
        return torch.matmul(dropped.to(v.dtype), v), weights
    Rl = lo if isinstance(lo, int) else max_lo
    Rr = hi if isinstance(hi, int) else max_hi
    if Rl is None or Rr is None:
        raise ValueError("band_attention: tensor radii need max_lo / max_hi bounds")
    W = Rl + Rr + 1
    if kernel == "auto":
        # banded when a query's tile is at most a quarter of the keys: below that the
        # fused dense kernel over all keys is as fast (CPU, L=64: dense 1.06x attn,
        # banded 0.98x; the layer benchmark in results/ has the figures)
        tile = min(T, max(block, W)) + W - 1  # key rows per banded query
        kernel = "banded" if 4 * tile <= S else "dense"
    if kernel == "banded":
        return banded_attention(q, k, v, lo, hi, key_ok, offset, scale, dropout_p, block, Rl, Rr), None
    return dense_band_attention(q, k, v, lo, hi, key_ok, offset, scale, dropout_p), None


def banded_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    lo: Radius,
    hi: Radius,
    key_ok: Optional[Tensor],
    offset: int,
    scale: float,
    dropout_p: float,
    block: int,
    Rl: int,
    Rr: int,
) -> Tensor:
    """Queries in blocks of c; each block is one dense ``c x (c + W - 1)`` tile
    against the key rows its windows cover (W = Rl + Rr + 1), as one 4-D SDPA call
    with the blocks folded into the batch."""
    B, G, T, d = q.shape
    S, dv = k.size(2), v.size(-1)
    W = Rl + Rr + 1
    c = min(T, max(block, W))
    nb = -(-T // c)  # ceil(T / c)
    grow = nb * c - T  # queries padded to whole blocks; the extra rows are dropped
    span = c + W - 1
    # key rows padded so that block n's windows are rows n*c .. n*c+span-1 of kp:
    # kp row u holds key row u - Rl + offset
    kp = F.pad(k, (0, 0, Rl, grow + Rr))[:, :, offset:]  # (B, G, nb*c + W-1, d)
    vp = F.pad(v, (0, 0, Rl, grow + Rr))[:, :, offset:]
    kb = kp.unfold(2, span, c).permute(0, 2, 1, 4, 3).reshape(B * nb, G, span, d)  # (B nb, G, span, d)
    vb = vp.unfold(2, span, c).permute(0, 2, 1, 4, 3).reshape(B * nb, G, span, dv)
    qb = F.pad(q, (0, 0, 0, grow)).reshape(B, G, nb, c, d).transpose(1, 2).reshape(B * nb, G, c, d)

    # delta[i, s]: key distance (key row - query row) of slot s for block query i
    delta = torch.arange(span, device=q.device) - torch.arange(c, device=q.device)[:, None] - Rl  # (c, span)
    ok = (delta >= -_per_query(lo, nb, c)) & (delta <= _per_query(hi, nb, c))  # (B|1, nb|1, c|1, span)
    ok_rows = torch.ones(1, S, dtype=torch.bool, device=q.device) if key_ok is None else key_ok
    ok_rows = F.pad(ok_rows, (Rl, grow + Rr), value=False)[:, offset:].unfold(1, span, c)  # (B|1, nb, span)
    ok = (ok & ok_rows[:, :, None, :]).expand(B, nb, c, span).reshape(B * nb, 1, c, span)
    mask = additive(ok, q.dtype)  # O(B T W), as the scores themselves
    out = F.scaled_dot_product_attention(
        qb, kb, vb, attn_mask=mask, dropout_p=dropout_p, scale=scale
    )  # (B nb, G, c, dv)
    return out.view(B, nb, G, c, dv).transpose(1, 2).reshape(B, G, nb * c, dv)[:, :, :T]


def dense_band_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    lo: Radius,
    hi: Radius,
    key_ok: Optional[Tensor],
    offset: int,
    scale: float,
    dropout_p: float = 0.0,
) -> Tensor:
    """The same attention as :func:`banded_attention` through one dense SDPA over
    all key rows, with a ``(B|1, 1, T, S)`` band mask, or only the ``(B, 1, 1, S)``
    padding bias when int radii cover the whole sequence."""
    T, S = q.size(2), k.size(2)
    covered = isinstance(lo, int) and isinstance(hi, int) and min(lo, hi) >= S - 1
    if covered:
        bias = None if key_ok is None else padding_bias(~key_ok, q.dtype)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p, scale=scale)
    bias = additive(band_mask(lo, hi, key_ok, T, S, offset, q.device), q.dtype)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p, scale=scale)


def band_mask(
    lo: Radius, hi: Radius, key_ok: Optional[Tensor], T: int, S: int, offset: int, device: torch.device
) -> Tensor:
    """``(B|1, 1, T, S)`` bool: key row s is in query i's band and ``key_ok``."""
    delta = torch.arange(S, device=device) - torch.arange(T, device=device)[:, None] - offset  # (T, S)
    ok = (delta >= -_per_query(lo, 1, T)) & (delta <= _per_query(hi, 1, T))  # (B|1, 1, T, S)
    ok = ok.view(-1, 1, T, S)
    return ok if key_ok is None else ok & key_ok.view(-1, 1, 1, S)


def window_pairs(T: int, lo: int, hi: int) -> int:
    """(query, key) pairs of a band over T positions: query t sees t-lo .. t+hi inside the sequence."""
    return sum(min(T - 1, t + hi) - max(0, t - lo) + 1 for t in range(T))


def _per_query(r: Radius, nb: int, c: int) -> Radius:
    """A radius as ``(B|1, nb|1, c|1, 1)`` for queries in nb blocks of c (an int
    stays an int); tensors come as ``(B|1, T|1)``.  Dense attention is nb = 1."""
    if isinstance(r, int):
        return r
    B, T = r.shape
    if T == 1:
        return r.view(B, 1, 1, 1)
    r = F.pad(r, (0, nb * c - T))  # padded queries: radius 0, they only see themselves
    return r.view(B, nb, c, 1)
