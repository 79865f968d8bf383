"""Fixed head size (Bhojanapalli et al. 2020): scaled dot-product attention per head with
query/key width d_p and value width d_v independent of H and D, one query at a time."""

import torch.nn.functional as F

from .interacting import per_query, widths


def naive_fixed_head(m, case, x, enc, pad):
    H, d_p, _ = widths(case, x.size(-1))

    def heads(q, K, V):  # q (H, d_p), K (S', H, d_p), V (S', H, d_v)
        out = []
        for h in range(H):
            a = F.softmax(K[:, h] @ q[h] / d_p**0.5, dim=0)  # (S',)
            out.append(a @ V[:, h])  # (d_v,)
        return out

    return per_query(m, case, x, enc, pad, heads)


NAIVE = {"fixed_head": naive_fixed_head}
READINGS = {
    "fixed_head": [
        ("fixed_head:head_dim=5", None),
        ("fixed_head:head_dim=3:value_dim=7:heads=2", None),
    ]
}
