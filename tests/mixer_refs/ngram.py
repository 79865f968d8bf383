"""multiNN: eq. (4)-(8) of the JA paper, one position and one head at a time."""

import torch

from mixer_plugin.mixers import Role

from .common import num_heads, options, valid


def naive_ngram(m, case, x, enc, pad):
    T, B, D = x.shape
    opts = options(case)
    K, n = num_heads(case), opts.n
    d = opts.head_dim or D // K  # the head width; x_t^(k) is D wide when proj=none
    out = torch.zeros_like(x)
    for b in range(B):
        for t in range(T):
            hs = []
            for k in range(K):

                def xk(s):  # eq. (6); zero outside the sentence and at padding
                    if not valid(pad, b, s, T):
                        return x.new_zeros(D if opts.proj == "none" else d)
                    if opts.proj == "none":
                        return x[s, b]  # EN eq. (4): every head reads all of x
                    if opts.proj == "slice":
                        return x[s, b, k * d : (k + 1) * d]  # head k's own slice
                    return m.in_proj.weight[k * d : (k + 1) * d] @ x[s, b]

                causal = case.role is Role.DECODER_SELF
                span = range(t - n + 1, t + 1) if causal else range(t - n + 1, t + n)
                parts = [xk(s) for s in span]
                weight = m.ngram_weight[k]
                if opts.global_context:  # eq. (7)-(8)
                    reals = [xk(s) for s in range(T) if valid(pad, b, s, T)]
                    parts.append(torch.stack(reals).max(dim=0).values)
                    weight = torch.cat([weight, m.global_weight[k]], dim=0)
                hs.append(torch.relu(torch.cat(parts) @ weight + m.ngram_bias[k]))  # eq. (5)
            z = torch.cat(hs)
            out[t, b] = z if opts.out == "none" else m.out_proj(z)  # eq. (4)
    return out


NAIVE = {"ngram": naive_ngram}
ACTIVATIONS = {"ngram"}  # eq. (5)'s ReLU

READINGS = {
    "ngram": [
        ("ngram:global=1", {Role.ENCODER_SELF}),
        ("ngram:n=1", None),
        ("ngram:n=3:heads=1", None),  # Sun & Iyyer: one head
        ("ngram:proj=none:heads=2", None),  # EN eq. (4): W^(k) on raw x
        ("ngram:head_out=D:global=1", {Role.ENCODER_SELF}),
        ("ngram:head_dim=3:heads=2", None),
        ("ngram:proj=slice:out=none", None),  # the paper-size reading: a grouped conv + ReLU
        ("ngram:proj=slice:out=none:global=1:n=2", {Role.ENCODER_SELF}),
        ("ngram:kernel=conv", None),  # eq. (5) as a grouped conv1d instead of per-slot GEMMs
        ("ngram:proj=slice:out=none:kernel=conv", None),
    ]
}
