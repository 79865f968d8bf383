"""Multi-head neural n-gram (multiNN), Loem et al., "Are Neighbors Enough?
Multi-Head Neural n-gram can be Alternative to Self-attention" (arXiv:2207.13354).

Equation numbers are the Japanese version's (the complete one); the English
version's eq. (3)-(4) are JA (4)-(5).

    x_t^(k) = x_t W_x^(k)                                          (6)
    h_t^(k) = ReLU([x_{t-n+1}^(k); ...; x_{t+n-1}^(k)] W^(k))      (5)  encoder
    h_t^(k) = ReLU([x_{t-n+1}^(k); ...; x_t^(k)] W^(k))                 decoder
    x_global^(k) = max(x_1^(k), ..., x_L^(k))                       (7)
    h_t^(k) = ReLU([x_{t-n+1}^(k); ...; x_{t+n-1}^(k); x_global^(k)] W^(k))   (8)
    z_t = [h_t^(1); ...; h_t^(K)] W                                 (4)

Readings the paper leaves open, each a named option (docs/multinn.md):
  * ``proj=head`` (default): eq. (6), a per-head projection W_x^(k) to width d.
    ``proj=none``: the English eq. (4), W^(k) applied to the raw concatenated x
    (each head sees all D features; Sun & Iyyer's formulation).
    ``proj=slice``: no W_x^(k); head k reads its own d-slice of x.
  * ``out=W`` (default): eq. (4)'s output map W.  ``out=none``: the heads'
    concatenation is the output (needs K d_out = D).
  * ``proj=slice:out=none`` is the reading whose parameter counts match the paper's
    Tables 1-2 (62M at WMT 8+8): the mixer is a grouped convolution over the window,
    one group per head, + ReLU (+ the per-head global max term).
  * ``head_out=d`` (default): W^(k) maps to d, as W in R^{Kd x D} (eq. 4) requires.
    ``head_out=D``: the shape the text gives W^(k) (R^{(2n-1)d x D}); then W is
    R^{KD x D}.
  * Neighbours outside the sentence (and padding) are zero vectors, so padding
    never leaks into a window; the global max ignores padding.

Dropout (the paper states none; its recipe is fairseq's transformer's, whose
attention and activation dropout reach only attention and the FFN):
  * ``--attention-dropout`` p drops *window slots*: the term x_{t+w}^(k) W^(k)_w of
    eq. (5) (and eq. 8's global term) is zeroed for one (t, k, w) with probability p
    and the rest scaled by 1/(1-p).  That is what attention dropout does to
    a_{t,s} v_s, one neighbour's contribution to one head at one position, so the
    two mixers are regularised alike.  In eq. (5)'s terms the mask sits inside the
    concatenation: [m_1 x_{t-n+1}^(k); ...; m_W x_{t+n-1}^(k)] W^(k).
  * ``--activation-dropout`` p drops h_t^(k) after the ReLU of eq. (5), before
    eq. (4)'s W: the place fairseq's FFN drops after fc1's activation (eq. 5 is an
    FFN over the window, with W as its fc2).
  Both act only in training; at p = 0 the computation is unchanged.

Eq. (5) for every t and k at once is a grouped 1-D convolution (one group per head,
W = 2n-1 or n taps).  ``kernel=gemm`` (default) computes it as W batched GEMMs, one per
window slot, straight on the time-major ``(T, B, C)`` layout; ``kernel=conv`` calls
``conv1d``.  Same arithmetic; on CPU the GEMMs are 1.3-1.5x faster forward + backward
(no layout copies, and conv1d's grouped backward is slow; docs/benchmarks.md).
"""

import math
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .base import State
from .registry import MixerContext, MixerSpecError, check_positive, option, register_mixer
from .window_base import WindowMixer


@dataclass(frozen=True)
class NgramOptions:
    n: int = option(5, "context width: 2n-1 neighbours in the encoder, last n in the decoder")
    heads: Optional[int] = option(None, "heads K (default: the layer's attention heads)")
    head_dim: Optional[int] = option(None, "per-head width d (default: embed_dim / heads)")
    global_context: bool = option(False, "encoder only: add the max-pooled x_global^(k) (eq. 7-8)", key="global")
    proj: str = option(
        "head",
        "x_t^(k): head = eq. (6) x W_x^(k); none = raw x (EN eq. 4); slice = the k-th d-slice of x",
        choices=("head", "none", "slice"),
    )
    head_out: str = option("d", "width of h_t^(k): d (default) or D", choices=("d", "D"))
    out: str = option(
        "W", "W = eq. (4)'s output map; none = the heads' concatenation is the output", choices=("W", "none")
    )
    kernel: str = option(
        "gemm",
        "eq. (5) as one batched GEMM per window slot (gemm) or a grouped conv1d (conv)",
        choices=("gemm", "conv"),
    )

    def validate(self) -> Optional[str]:
        return check_positive(self, "n", "heads", "head_dim")


@register_mixer("ngram", NgramOptions)
class NgramMixer(WindowMixer):
    def __init__(self, ctx: MixerContext, opts: NgramOptions):
        D = ctx.embed_dim
        K = opts.heads or ctx.num_heads
        if opts.head_dim is not None:
            d = opts.head_dim
        elif D % K:
            raise MixerSpecError(f"ngram: embed_dim {D} is not divisible by heads {K}; set head_dim")
        else:
            d = D // K
        d_in = D if opts.proj == "none" else d  # width of each x_t^(k)
        d_out = d if opts.head_out == "d" else D  # width of each h_t^(k)
        if opts.proj == "slice" and K * d != D:
            raise MixerSpecError(f"ngram: proj=slice needs heads * head_dim = embed_dim ({K} * {d} != {D})")
        if opts.out == "none" and K * d_out != D:
            raise MixerSpecError(
                f"ngram: out=none needs the heads' concatenation to be embed_dim wide ({K} * {d_out} != {D})"
            )
        super().__init__(ctx, num_heads=K, head_dim=d_in, n=opts.n)
        if opts.global_context and self.causal:
            raise MixerSpecError(
                "ngram option global is encoder-only: eq. (7) pools over the whole sequence, which a decoder cannot see"
            )
        self.d_in, self.d_out = d_in, d_out
        self.proj = opts.proj
        self.kernel = opts.kernel
        self.global_context = opts.global_context
        self.slot_dropout = ctx.attention_dropout  # window slots (module docstring)
        self.activation_dropout = ctx.activation_dropout  # h_t^(k) after the ReLU

        # eq. (6): all K projections W_x^(k) in one matrix (no bias: a zero vector
        # must mean "no neighbour" at sentence edges and padding)
        self.in_proj = nn.Linear(D, K * d_in, bias=False) if opts.proj == "head" else None
        # eq. (5): W^(k) in R^{(window * d) x d_out} for each head k
        self.ngram_weight = nn.Parameter(torch.empty(K, self.window * d_in, d_out))
        self.ngram_bias = nn.Parameter(torch.zeros(K, d_out))
        # eq. (8): the rows of W^(k) that multiply x_global^(k), kept apart so the
        # global term is computed once per sentence rather than once per position
        self.global_weight = nn.Parameter(torch.empty(K, d_in, d_out)) if opts.global_context else None
        # eq. (4): W in R^{K d_out x D}
        self.out_proj = nn.Linear(K * d_out, D) if opts.out == "W" else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in_proj is not None:
            nn.init.xavier_uniform_(self.in_proj.weight)
        fan_in = self.ngram_weight.size(1) + (self.d_in if self.global_context else 0)
        bound = math.sqrt(6.0 / (fan_in + self.d_out))  # xavier over the whole W^(k)
        nn.init.uniform_(self.ngram_weight, -bound, bound)
        if self.global_weight is not None:
            nn.init.uniform_(self.global_weight, -bound, bound)
        if self.out_proj is not None:
            nn.init.xavier_uniform_(self.out_proj.weight)
            nn.init.zeros_(self.out_proj.bias)

    def macs(self, T: int, S: int) -> int:
        K, d, d_out = self.num_heads, self.d_in, self.d_out
        total = T * K * self.window * d * d_out  # eq. (5): W neighbours through W^(k), every head
        if self.in_proj is not None:
            total += T * self.in_proj.in_features * self.in_proj.out_features  # eq. (6)
        if self.global_weight is not None:
            total += K * d * d_out  # eq. (8): the global term, once per sentence
        if self.out_proj is not None:
            total += T * self.out_proj.in_features * self.out_proj.out_features  # eq. (4)
        return total

    def heads_input(self, x: Tensor) -> Tensor:
        """x_t^(k) of every head side by side: ``(T, B, D)`` -> ``(T, B, K*d)``."""
        if self.proj == "head":
            return self.in_proj(x)  # eq. (6)
        if self.proj == "none":
            return x.repeat(1, 1, self.num_heads)  # every head reads all of x
        return x  # slice: head k's d features are x's k-th slice already

    def mix(
        self,
        x: Tensor,
        kv_input: Tensor,
        key_padding_mask: Optional[Tensor],
        incremental_state: Optional[State],
        need_weights: bool,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        T, B, _ = x.shape
        K, d = self.num_heads, self.d_in
        xk = self.heads_input(x)  # (T, B, K*d)
        if key_padding_mask is not None:
            pad = key_padding_mask.transpose(0, 1).unsqueeze(-1)  # (T, B, 1)
            xk = xk.masked_fill(pad, 0.0)
        ext = self.with_context({"x": xk}, incremental_state)["x"]  # (T+W-1, B, K*d)
        # eq. (5) for all t and k at once; the (T, W*d) windows are never built
        W = self.ngram_weight.view(K, self.window, d, self.d_out)  # row w*d + i: slot w, feature i
        keep = self.slot_keep(T * B, x)  # (W+1, K, T*B, 1) or None: the global term is slot W
        if keep is None:
            window_sums = window_gemm if self.kernel == "gemm" else window_conv
            h = window_sums(ext, W, T)  # (T, B, K*d_out)
        else:
            window_sums = window_gemm if self.kernel == "gemm" else window_unfold
            h = window_sums(ext, W, T, keep[: self.window])
        h = h.reshape(T * B, K, self.d_out) + self.ngram_bias  # (T*B, K, d_out)
        if self.global_weight is not None:
            g = self.global_max(xk, key_padding_mask).view(B, K, d)  # eq. (7)
            hg = torch.einsum("bki,kio->bko", g, self.global_weight)  # (B, K, d_out)
            if keep is None:
                h = h.view(T, B, K, self.d_out) + hg  # eq. (8), broadcast over t
            else:
                h = h.view(T, B, K, self.d_out) + hg * keep[-1].view(K, T, B, 1).permute(1, 2, 0, 3)
        h = torch.relu(h).reshape(T, B, K * self.d_out)  # concat heads
        h = F.dropout(h, p=self.activation_dropout, training=self.training)
        return (h if self.out_proj is None else self.out_proj(h)), None  # eq. (4)

    def slot_keep(self, rows: int, like: Tensor) -> Optional[Tensor]:
        """The attention-dropout analogue (module docstring): a scaled keep mask per
        window slot (and one for eq. 8's global term), head and output row ``(W+1, K,
        rows, 1)``, values 0 or 1/(1-p); None when it does nothing (eval, or p = 0)."""
        p = self.slot_dropout
        if not self.training or p <= 0:
            return None
        keep = like.new_empty(self.window + 1, self.num_heads, rows, 1)
        return keep.bernoulli_(1 - p).div_(1 - p) if p < 1 else keep.zero_()

    @staticmethod
    def global_max(xk: Tensor, key_padding_mask: Optional[Tensor]) -> Tensor:
        """eq. (7) over real tokens only: (T, B, C) -> (B, C).  An empty sequence, or a
        row that is all padding, has no maximum and gets zeros; a real inf or NaN stays."""
        if xk.size(0) == 0:
            return xk.new_zeros(xk.shape[1:])
        if key_padding_mask is None:
            return xk.max(dim=0).values
        pad = key_padding_mask.transpose(0, 1).unsqueeze(-1)  # (T, B, 1)
        g = xk.masked_fill(pad, float("-inf")).max(dim=0).values
        return g.masked_fill(pad.all(dim=0), 0.0)


def window_gemm(ext: Tensor, weight: Tensor, T: int, keep: Optional[Tensor] = None) -> Tensor:
    """Eq. (5) before its bias and ReLU, for every position and head:

        out[t, b, k] = sum_w keep[w, k, t*B + b] * (ext[t + w, b, k] @ weight[k, w])

    ext ``(T+W-1, B, K*d)`` (the context-extended, time-major input), weight
    ``(K, W, d, d_out)``, ``keep`` ``(W, K, T*B, 1)`` the window-slot dropout mask or None
    (all ones) -> ``(T, B, K*d_out)``.  Under autocast it runs in the autocast dtype, as
    conv1d would."""
    device = ext.device.type
    if torch.is_autocast_enabled(device):
        dtype = torch.get_autocast_dtype(device)
        with torch.autocast(device, enabled=False):
            keep = None if keep is None else keep.to(dtype)
            return _WindowGemm.apply(ext.to(dtype).contiguous(), weight.to(dtype), T, keep)
    return _WindowGemm.apply(ext.contiguous(), weight, T, keep)


def window_unfold(ext: Tensor, weight: Tensor, T: int, keep: Tensor) -> Tensor:
    """The sums of :func:`window_gemm` with a slot mask, from the unfolded windows
    ``(T, B, K, W, d)`` and autograd: ``kernel=conv``'s path under window-slot dropout
    (conv1d cannot mask a tap per output position), and the check of the GEMM's
    masked backward."""
    K, W, d, d_out = weight.shape
    B = ext.size(1)
    windows = ext.unfold(0, W, 1).reshape(T, B, K, d, W)  # windows[t, b, k, i, w] = ext[t + w, b, k*d + i]
    mask = keep.view(W, K, T, B).permute(2, 3, 1, 0)  # (T, B, K, W)
    h = torch.einsum("tbkiw,tbkw,kwio->tbko", windows, mask.to(ext.dtype), weight)  # (T, B, K, d_out)
    return h.reshape(T, B, K * d_out)


def window_conv(ext: Tensor, weight: Tensor, T: int) -> Tensor:
    """The same sums as :func:`window_gemm`, as ``conv1d`` with one group per head and
    the W slots as taps (``kernel=conv``), in its ``(B, C, T)`` layout both ways."""
    K, W, d, d_out = weight.shape
    taps = weight.permute(0, 3, 2, 1).reshape(K * d_out, d, W)  # taps[k*d_out + o, i, w] = W^(k)[w*d + i, o]
    h = F.conv1d(ext.permute(1, 2, 0), taps, groups=K)  # (B, K*d_out, T)
    return h.permute(2, 0, 1).reshape(T, ext.shape[1], K * d_out)


class _WindowGemm(torch.autograd.Function):
    """One batched GEMM per window slot w, over all K heads at once.  Every operand is
    a strided view of the time-major tensors (head k of row r is at ``r*K*d + k*d``),
    so nothing is transposed or unfolded; only the accumulators are head-major, so
    that each slot adds into them with one ``baddbmm_``.  The backward is written out
    because autograd's would give each slot's input slice its own full-size zero
    gradient and add W of them."""

    @staticmethod
    def forward(ctx: Any, ext: Tensor, weight: Tensor, T: int, keep: Optional[Tensor]) -> Tensor:
        Te, B, _ = ext.shape
        K, W, d, d_out = weight.shape
        rows = ext.view(Te * B, K, d).transpose(0, 1)  # (K, Te*B, d), a view
        out = ext.new_zeros(K, T * B, d_out)  # head-major accumulator
        for w in range(W):  # slot w of row t is row t + w of ext
            if keep is None:
                out.baddbmm_(rows[:, w * B : (w + T) * B], weight[:, w])
            else:  # window-slot dropout: slot w's term masked per (head, output row)
                out.addcmul_(torch.bmm(rows[:, w * B : (w + T) * B], weight[:, w]), keep[w])
        ctx.save_for_backward(ext, weight, keep)
        ctx.T = T
        return out.transpose(0, 1).reshape(T, B, K * d_out)  # (T, B, K*d_out)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tuple[Optional[Tensor], Optional[Tensor], None, None]:
        ext, weight, keep = ctx.saved_tensors
        T = ctx.T
        Te, B, C = ext.shape
        K, W, d, d_out = weight.shape
        g = grad.reshape(T * B, K, d_out).transpose(0, 1).contiguous()  # (K, T*B, d_out)
        # slot w's output gradient: g itself, or g through its keep mask
        g_slot = (lambda w: g) if keep is None else (lambda w: g * keep[w])  # noqa: E731
        grad_ext = grad_weight = None
        if ctx.needs_input_grad[0]:
            g_rows = ext.new_zeros(K, Te * B, d)  # head-major
            for w in range(W):
                g_rows[:, w * B : (w + T) * B].baddbmm_(g_slot(w), weight[:, w].transpose(1, 2))
            grad_ext = g_rows.transpose(0, 1).reshape(Te, B, C)
        if ctx.needs_input_grad[1]:
            rows = ext.view(Te * B, K, d).transpose(0, 1)  # (K, Te*B, d)
            grad_weight = torch.stack(
                [torch.bmm(rows[:, w * B : (w + T) * B].transpose(1, 2), g_slot(w)) for w in range(W)], dim=1
            )  # (K, W, d, d_out)
        return grad_ext, grad_weight, None, None
