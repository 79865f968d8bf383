"""Multi-scale multi-head self-attention, MSMSA (Guo et al., "Multi-Scale
Self-Attention for Text Classification", AAAI 2020).

Each head attends only within its own scale omega around the query (SASA, eq. 6-8);
the heads are concatenated and projected (eq. 9)::

    head(H, w)_{i,j} = SM(Q_ij C_ij(K, w)^T / sqrt(D)) C_ij(V, w)     (6)
    C_ij(x, w)       = [x_{i,j-w}, ..., x_{i,j+w}]                      (7)
    MSMSA(H, Omega)  = [head_1(H, w_1); ...; head_N'(H, w_N')] W^O       (9)

A scale is a fixed number (1, 3, ...) or a ratio of the example's own length N
(N/16, N/8, ...), clamped to >= 1.  The layer-wise distribution of heads over the
candidate scales (eq. 11-12) is :func:`alpha_schedule`.

Readings (spec options; docs/multiscale.md discusses each):

* ``omega=width`` (default): omega is the odd "scale size", the number of positions
  in the window, radius r = (omega - 1) / 2: Fig. 1 draws omega = 1, 3, 5 as windows
  of 1, 3, 5 tokens, the text forces scales to be odd, and omega = 1 is the
  FFN-like "self-attention with scale 1".  A ratio omega = floor(N / k) is rounded
  down to the nearest odd number.  ``omega=radius``: eq. (7) literally, r = omega,
  2 omega + 1 positions.
* ``length``: what N is.  ``sentence`` (the encoder's default): the example's own
  number of real tokens (padding excluded), per example in a padded batch.  A
  decoder cannot know its full length at step j, so ``prefix`` (the decoder's
  default): N = the number of real tokens up to and including j.  Prefix lengths
  give the same windows in a full (teacher-forced) forward and in incremental
  decoding; ``length=sentence`` on a decoder with ratio scales is an error.
* ``scaling=head`` (default): logits / sqrt(D') as in eq. (2); ``scaling=model``:
  / sqrt(D), eq. (6) as printed.
* Encoder: keys j-r .. j+r (eq. 7).  Decoder: the left half, j-r .. j, the same
  radius (as ``local``/``ngram`` keep n between encoder and decoder).  When every
  scale is fixed the decoder caches only the last max(r) key/value rows.

Computation: heads are grouped by scale, and each group is one call of
:func:`kernels.band_attention` (shared with ``local``).  A group whose window is
small next to the length runs blocked banded attention: queries in blocks of c,
each block against the c + W - 1 key rows its windows cover, so memory is
O(L (c + W)) and no L x L matrix is built.  Wide groups run dense SDPA with a band
mask (cheaper when the window covers most of the sequence).  ``kernel=`` forces one
path (the tests check they agree).  A ratio scale's radius is a tensor (per example
and query); the tile size comes from a host-side bound on it, so no radius is read
back from the device (no sync per decoding step).
"""

import math
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from .attention_base import AttentionMixer
from .kernels import Radius, band_attention
from .registry import MixerContext, MixerSpecError, Role, option, register_mixer

# the paper's candidates for text classification (Table 1): 1, 3, N/16, N/8, N/4
PAPER_SCALES = "1+3+n/16+n/8+n/4"
ROUNDINGS = ("cumceil", "largest_remainder")


# --------------------------------------------------------------------- scales
@dataclass(frozen=True)
class Scale:
    """A head's scale: the fixed number ``value``, or the ratio N / ``value``."""

    value: int
    ratio: bool

    def __str__(self) -> str:
        return f"n/{self.value}" if self.ratio else str(self.value)


_SCALE = re.compile(r"^(?:(?P<fixed>\d+)|n(?:/(?P<den>\d+))?)(?:x(?P<count>\d+))?$")


def parse_scales(text: str) -> Tuple[List[Scale], Optional[List[int]]]:
    """``1x5+3x2+n/16x2+n/8`` -> scales and head counts (None when no entry has
    one).  Raises ValueError with a one-line reason."""
    scales, counts = [], []
    for entry in text.lower().split("+"):
        m = _SCALE.match(entry.strip())
        if not m:
            raise ValueError(f"scale {entry!r} is not N, n/K or N (each optionally xCOUNT)")
        if m.group("fixed") is not None:
            scale = Scale(int(m.group("fixed")), False)
        else:
            scale = Scale(int(m.group("den") or 1), True)
        if scale.value < 1:
            raise ValueError(f"scale {entry!r} must be >= 1 (a ratio n/K needs K >= 1)")
        scales.append(scale)
        counts.append(None if m.group("count") is None else int(m.group("count")))
    given = [c is not None for c in counts]
    if any(given) and not all(given):
        raise ValueError(f"scales={text}: give a head count (xCOUNT) for every scale or for none")
    if len(set(scales)) != len(scales):
        raise ValueError(f"scales={text}: a scale is listed twice")
    return scales, (counts if all(given) else None)


def format_scales(scales: Sequence[Scale], counts: Sequence[int]) -> str:
    """The inverse of :func:`parse_scales`; scales with no head are left out."""
    return "+".join(f"{s}x{c}" for s, c in zip(scales, counts) if c > 0)


# ------------------------------------------------------------ eq. (11)-(12)
def round_heads(shares: Sequence[float], rounding: str = "cumceil") -> List[int]:
    """Whole head counts summing to ``round(sum(shares))``.

    ``cumceil``: ceil of the running sum, differenced (the smallest scales first):
    it reproduces the paper's worked example.  ``largest_remainder`` (Hamilton): the
    floors, plus one for the largest fractional parts.
    """
    total = int(round(sum(shares)))
    if rounding == "cumceil":
        # a tolerance so that exact sums such as 2.0000000001 do not round up
        edges = [0] + [math.ceil(c - 1e-9) for c in _cumsum(shares)]
        edges[-1] = total
        return [b - a for a, b in zip(edges, edges[1:])]
    if rounding == "largest_remainder":
        floors = [math.floor(s + 1e-9) for s in shares]
        order = sorted(range(len(shares)), key=lambda k: (-(shares[k] - floors[k]), k))
        for k in order[: total - sum(floors)]:
            floors[k] += 1
        return floors
    raise ValueError(f"rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")


def _cumsum(xs: Sequence[float]) -> List[float]:
    out, acc = [], 0.0
    for x in xs:
        acc += x
        out.append(acc)
    return out


def alpha_schedule(
    alpha: float, num_layers: int, num_scales: int, heads: int, rounding: str = "cumceil"
) -> List[List[int]]:
    """Heads per scale per layer, eq. (11)-(12).

    ``z^l_k = 0`` for l = L or the last scale, else ``z^l_{k+1} + alpha / l`` (scales
    ordered small to large, layers counted from 1); ``n^l = softmax(z^l) N'``,
    rounded with :func:`round_heads`.  Returns ``counts[l - 1][k]``.
    """
    if num_layers < 1 or num_scales < 1 or heads < 1:
        raise ValueError("alpha_schedule needs num_layers, num_scales and heads >= 1")
    out = []
    for layer in range(1, num_layers + 1):
        step = 0.0 if layer == num_layers else alpha / layer
        z = [step * (num_scales - 1 - k) for k in range(num_scales)]  # (11)
        zmax = max(z)
        e = [math.exp(v - zmax) for v in z]
        out.append(round_heads([heads * v / sum(e) for v in e], rounding))  # (12)
    return out


def schedule_specs(
    alpha: float, num_layers: int, scales: str, heads: int, rounding: str = "cumceil", extra: str = ""
) -> str:
    """The per-layer ``--encoder-mixers`` list of eq. (11)-(12): one
    ``multiscale:scales=...`` item per layer with explicit head counts (``extra``,
    e.g. ``":omega=radius"``, is appended to every item)."""
    parsed, counts = parse_scales(scales)
    if counts is not None:
        raise ValueError("schedule_specs takes scales without head counts")
    return ",".join(
        f"multiscale:scales={format_scales(parsed, layer)}{extra}"
        for layer in alpha_schedule(alpha, num_layers, len(parsed), heads, rounding)
    )


# -------------------------------------------------------------------- options
@dataclass(frozen=True)
class MultiScaleOptions:
    scales: str = option(
        PAPER_SCALES,
        "heads' scales, '+'-separated: N (fixed) or n/K (ratio of the length), each "
        "optionally xCOUNT heads; without counts heads are spread by eq. (12) with z=0 "
        "(or by alpha=)",
    )
    omega: str = option(
        "width", "omega is the window width (odd, r=(w-1)/2) or its radius (eq. 7)", choices=("width", "radius")
    )
    length: str = option(
        "auto",
        "N of a ratio: sentence (encoder default) or prefix (decoder default)",
        choices=("auto", "sentence", "prefix"),
    )
    heads: Optional[int] = option(None, "heads (default: the layer's attention heads)")
    alpha: Optional[float] = option(None, "eq. (11) alpha: heads per scale from the layer index")
    layers: Optional[int] = option(
        None,
        "eq. (11) L: the number of layers of the stack (default: the model's; a mixer built outside a model needs it)",
    )
    rounding: str = option("cumceil", "how eq. (12)'s head shares become whole heads", choices=ROUNDINGS)
    scaling: str = option("head", "logits / sqrt(D') (eq. 2) or / sqrt(D) (eq. 6)", choices=("head", "model"))
    kernel: str = option(
        "auto", "banded (O(L w)), dense (masked L x L) or auto per head group", choices=("auto", "banded", "dense")
    )

    def parsed(self) -> Tuple[List[Scale], Optional[List[int]]]:
        return parse_scales(self.scales)

    def validate(self) -> Optional[str]:
        try:
            scales, counts = self.parsed()
        except ValueError as e:
            return str(e)
        if self.omega == "width":
            even = [str(s) for s in scales if not s.ratio and s.value % 2 == 0]
            if even:
                return (
                    f"scale {even[0]} is even: with omega=width a scale is an odd window size "
                    "(the paper forces odd scales); use omega=radius for radii"
                )
        if self.heads is not None and self.heads < 1:
            return f"option heads must be >= 1, got {self.heads}"
        if self.layers is not None and self.alpha is None:
            return "option layers is eq. (11)'s L and needs alpha="
        if self.layers is not None and self.layers < 1:
            return f"option layers must be >= 1, got {self.layers}"
        if self.alpha is not None and counts is not None:
            return "with alpha= the head counts come from eq. (12): give scales without xCOUNT"
        return None


# ---------------------------------------------------------------------- mixer
@register_mixer("multiscale", MultiScaleOptions)
class MultiScaleAttention(AttentionMixer):
    """MSMSA (eq. 6-9) as encoder or decoder self-attention."""

    def __init__(self, ctx: MixerContext, opts: MultiScaleOptions):
        scales, counts = opts.parsed()
        H = opts.heads or ctx.num_heads
        super().__init__(ctx, num_heads=H)
        causal = ctx.role is Role.DECODER_SELF
        length = opts.length if opts.length != "auto" else ("prefix" if causal else "sentence")
        if length == "prefix" and not causal:
            raise MixerSpecError(
                "multiscale: length=prefix is the decoder's reading; an encoder "
                "sees its whole sentence (use length=sentence)"
            )
        if length == "sentence" and causal and any(s.ratio for s in scales):
            raise MixerSpecError(
                "multiscale: a ratio scale in a decoder needs length=prefix (the target "
                "length is unknown while decoding); or use fixed scales"
            )
        if opts.alpha is not None:
            L = opts.layers or ctx.num_layers
            if L is None:
                raise MixerSpecError("multiscale: alpha= outside a model needs layers= (eq. 11's L)")
            if ctx.num_layers is not None and L != ctx.num_layers:
                raise MixerSpecError(
                    f"multiscale: layers={L} but the stack has {ctx.num_layers} layers "
                    "(eq. 11's L is the stack's depth)"
                )
            if ctx.layer_index >= L:
                raise MixerSpecError(
                    f"multiscale: layer {ctx.layer_index + 1} but layers={L} (eq. 11's L must be the stack's depth)"
                )
            counts = alpha_schedule(opts.alpha, L, len(scales), H, opts.rounding)[ctx.layer_index]
        elif counts is None:  # eq. (12) with z = 0: the top layer's even spread
            counts = alpha_schedule(0.0, 1, len(scales), H, opts.rounding)[0]
        if sum(counts) != H:
            raise MixerSpecError(
                f"multiscale: scales={opts.scales} gives {sum(counts)} heads but the layer "
                f"has {H} (option heads, or the layer's attention heads)"
            )
        self.opts = opts
        self.length = length
        self.groups = [(s, c) for s, c in zip(scales, counts) if c > 0]  # contiguous head ranges
        self.head_scales = [s for s, c in self.groups for _ in range(c)]
        if opts.scaling == "model":
            self.scaling = self.embed_dim**-0.5
        if causal and not any(s.ratio for s, _ in self.groups):
            # step j needs key rows j-r .. j: the last max(r) rows are all it keeps
            self.cache_window = max(self.radius(s.value) for s, _ in self.groups)

    def extra_repr(self) -> str:
        return f"heads={self.num_heads}, scales={format_scales(*zip(*self.groups))}, omega={self.opts.omega}"

    # ---------------------------------------------------------------- scales
    def radius(self, omega: Radius) -> Radius:
        """r from a (clamped) omega: the literal eq. (7) radius, or (omega-1)/2 of
        the largest odd width <= omega."""
        return omega if self.opts.omega == "radius" else (omega - 1) // 2

    def window(
        self, scale: Scale, key_ok: Optional[Tensor], B: int, T: int, S: int, offset: int, device: torch.device
    ) -> Tuple[Radius, Radius, int]:
        """(left, right) radius of a head group, each an int or ``(B, 1|T)`` tensor,
        and a host-side bound on the left one (the length N is at most S)."""
        if not scale.ratio:
            r = self.radius(scale.value)
            return r, (0 if self.causal else r), r
        if self.length == "sentence":  # the example's own length (S == T: no cache)
            n = torch.full((B, 1), S, device=device) if key_ok is None else key_ok.sum(1, keepdim=True)
        else:  # prefix: real tokens up to and including the query
            rows = torch.arange(T, device=device) + offset
            n = (rows + 1).view(1, T) if key_ok is None else key_ok.long().cumsum(1)[:, rows]
        r = self.radius((n // scale.value).clamp(min=1))  # omega = max(1, floor(N / K))
        bound = self.radius(max(1, S // scale.value))
        return r, (0 if self.causal else r), bound

    def core_macs(self, T: int, S: int) -> int:
        """Each head group's band at this length (ratio scales of the whole length in the
        encoder, of the prefix in the decoder).  A window of one key costs nothing: its
        softmax is 1 and the head returns its own value."""
        total = 0
        for scale, count in self.groups:
            widths = []
            for t in range(T):
                n = (t + 1) if self.length == "prefix" else T  # the N of a ratio scale
                r = self.radius(max(1, n // scale.value) if scale.ratio else scale.value)
                lo, hi = min(t, r), (0 if self.causal else min(T - 1 - t, r))
                widths.append(lo + hi + 1)
            total += sum(w for w in widths if w > 1) * count * (self.head_dim + self.value_dim)
        return total

    # --------------------------------------------------------------- eq. 6-9
    def attend(
        self,
        q: Tensor,
        streams: Dict[str, Tensor],
        key_padding_mask: Optional[Tensor],
        offset: int,
        need_weights: bool,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        B, H, T, _ = q.shape
        k = self.split_heads(streams["k"], self.head_dim)  # (B, H, S, d)
        v = self.split_heads(streams["v"], self.value_dim)  # (B, H, S, dv)
        S = k.size(2)
        key_ok = None if key_padding_mask is None else ~key_padding_mask  # (B, S)
        p = self.dropout_p if self.training else 0.0
        outs, weights, h0 = [], [], 0
        for scale, count in self.groups:
            heads = slice(h0, h0 + count)
            h0 += count
            lo, hi, bound = self.window(scale, key_ok, B, T, S, offset, q.device)
            qg, kg, vg = q[:, heads], k[:, heads], v[:, heads]
            if bound == 0 and not need_weights:
                # every window is the query alone: softmax over one key is 1, so the
                # head returns its own value (times attention dropout of that 1)
                keep = F.dropout(vg.new_ones(B, count, T, 1), p, self.training)
                outs.append(vg[:, :, offset:] * keep)
                continue
            out, w = band_attention(
                qg,
                kg,
                vg,
                lo,
                hi,
                key_ok,
                offset,
                self.scaling,
                p,
                self.opts.kernel,
                max_lo=bound,
                max_hi=0 if self.causal else bound,
                need_weights=need_weights,
            )
            outs.append(out)
            weights.append(w)
        # (B, H, T, dv): heads in spec order (eq. 9); weights (B, H, T, S) when asked for
        return torch.cat(outs, dim=1), (torch.cat(weights, dim=1) if need_weights else None)
