"""Talking-heads attention (Shazeer et al. 2020, §4 pseudo-code), one query at a time:
per-head logits J, mixed across heads by P_l, softmax over the allowed keys, the
weights mixed across heads by P_w, then each head's weighted sum of its values."""

import torch
import torch.nn.functional as F

from .interacting import per_query, widths


def naive_talking_heads(m, case, x, enc, pad):
    H, d, _ = widths(case, x.size(-1))
    P_l, P_w = m.pre_softmax, m.post_softmax

    def heads(q, K, V):  # q (H, d), K (S', H, d), V (S', H, dv)
        n = range(K.size(0))
        J = [[q[h] @ K[s, h] / d**0.5 for s in n] for h in range(H)]
        L = [[sum(J[h][s] * P_l[h, g] for h in range(H)) for s in n] for g in range(H)]
        W = [F.softmax(torch.stack(row), dim=0) for row in L]
        U = [[sum(W[g][s] * P_w[g, h] for g in range(H)) for s in n] for h in range(H)]
        return [sum(U[h][s] * V[s, h] for s in n) for h in range(H)]

    return per_query(m, case, x, enc, pad, heads)


NAIVE = {"talking_heads": naive_talking_heads}
READINGS = {
    "talking_heads": [
        ("talking_heads:init=normal", None),  # the default identity maps leave P_l, P_w untested
        ("talking_heads:init=normal:heads=2", None),
    ]
}
