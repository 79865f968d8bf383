"""Hard retrieval attention in eval mode: eq. (11) then eq. (6), one query and one
head at a time.  (Training mode is stochastic; tests/test_hard.py covers it.)"""

import torch

from .common import allowed_keys, keys_of, naive_attention, num_heads, options


def naive_hard(m, case, x, enc, pad):
    kv = keys_of(case, x, enc)
    allowed = allowed_keys(case, pad, x.size(0), kv.size(0))
    if options(case).decode == "soft":
        return naive_attention(m, case, x, kv, allowed)
    T, B, D = x.shape
    H = num_heads(case)
    dh = D // H
    out = torch.zeros_like(x)
    with torch.no_grad():
        for b in range(B):
            for t in range(T):
                q = m.q_proj(x[t, b])
                keys = [s for s in range(kv.size(0)) if allowed(b, t, s)]
                heads = []
                for h in range(H):
                    sl = slice(h * dh, (h + 1) * dh)
                    if not keys:  # a padding query that sees only padding retrieves nothing
                        heads.append(x.new_zeros(dh))
                        continue
                    raw = [float(m.k_proj(kv[s, b])[sl] @ q[sl]) for s in keys]  # eq. (1), unscaled
                    best = keys[max(range(len(keys)), key=raw.__getitem__)]  # eq. (11)
                    heads.append(m.v_proj(kv[best, b])[sl])  # eq. (6)
                out[t, b] = m.out_proj(torch.cat(heads))
    return out


NAIVE = {"hard": naive_hard}
READINGS = {
    "hard": [
        ("hard:decode=soft", None),  # Table 4: trained hard, decoded soft
        ("hard:values=retrieved", None),  # §4.3: project only the retrieved values
        ("hard:heads=2", None),
        ("hard:samples=4", None),  # the plugin's variance reduction (training only; eval is eq. 11)
    ]
}
