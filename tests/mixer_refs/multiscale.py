"""Multi-scale multi-head self-attention, eq. (6)-(9) of Guo et al., one query and
one head at a time.  Windows are taken over token positions (padding removed), so
the loop does not share the module's row arithmetic."""

import torch
import torch.nn.functional as F

from mixer_plugin.mixers import Role

from .common import num_heads, options, valid


def naive_multiscale(m, case, x, enc, pad):
    T, B, D = x.shape
    H = num_heads(case)
    dh = D // H
    opts = options(case)
    causal = case.role is Role.DECODER_SELF
    temper = (D if opts.scaling == "model" else dh) ** -0.5  # eq. (6) prints sqrt(D); eq. (2) sqrt(D')
    out = torch.zeros_like(x)
    for b in range(B):
        real = [s for s in range(T) if valid(pad, b, s, T)]
        pos = {s: j for j, s in enumerate(real)}  # row -> token position
        for t in real:
            j = pos[t]
            q = m.q_proj(x[t, b])
            outs_h = []
            for h in range(H):
                scale = m.head_scales[h]
                if scale.ratio:
                    # N: the sentence's length, or in a decoder what it has seen so far
                    N = j + 1 if causal else len(real)
                    omega = max(1, N // scale.value)
                else:
                    omega = scale.value
                if opts.omega == "radius":
                    r = omega  # eq. (7) literally: x_{j-w} .. x_{j+w}
                else:
                    r = (omega - 1 if omega % 2 else omega - 2) // 2  # the largest odd width <= omega
                right = 0 if causal else r
                keys = [s for s in real if j - r <= pos[s] <= j + right]  # C_ij(x, w), eq. (7)
                k = m.k_proj(x[keys, b])[:, h * dh : (h + 1) * dh]
                v = m.v_proj(x[keys, b])[:, h * dh : (h + 1) * dh]
                a = F.softmax(k @ q[h * dh : (h + 1) * dh] * temper, dim=0)  # eq. (6)
                outs_h.append(a @ v)
            out[t, b] = m.out_proj(torch.cat(outs_h))  # eq. (9)
    return out


NAIVE = {"multiscale": naive_multiscale}

DEC = [Role.DECODER_SELF]
READINGS = {
    "multiscale": [
        ("multiscale:scales=1x2+n/2x1+nx1", None),  # width: self-only heads, ratio heads
        ("multiscale:scales=2+3+n/4+n:omega=radius", None),  # eq. (7) radius reading
        ("multiscale:scales=1+3+5+7", None),  # all fixed: the decoder cache is bounded
        ("multiscale:scales=1x1+2x1+3x2:omega=radius:scaling=model", None),  # eq. (6) sqrt(D)
        ("multiscale:scales=3+5+n/2+n:kernel=banded", None),  # every group banded
        ("multiscale:scales=3+5+n/2+n:kernel=dense", None),  # every group dense-masked
        ("multiscale:scales=1+3+n/2:alpha=0.5:layers=2", None),  # eq. (11)-(12) layer 1 of 2
        ("multiscale:scales=1x4", None),  # every head sees only itself
        ("multiscale:scales=3+n/2:length=prefix:omega=radius", DEC),  # explicit decoder reading
    ]
}
