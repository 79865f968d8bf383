"""Interacting-head attention: Algorithm 1 of the paper transcribed literally (loops
over the head pairs i, j, one score matrix per pair), and the pairwise reading
(a sub-sub-output per (i, j), §3.3).  The helpers are shared by the references of the
paper's baselines (talking_heads.py, fixed_head.py)."""

import torch
import torch.nn.functional as F

from .common import allowed_keys, keys_of, num_heads, options


def widths(case, D):
    """(H, d_k, d_v) from the case's options: ``head_dim=`` else D / H; ``value_dim=``
    else d_k."""
    opts, H = options(case), num_heads(case)
    d = getattr(opts, "head_dim", None) or D // H
    return H, d, getattr(opts, "value_dim", None) or d


def heads_of(m, case, x, kv, b):
    """Row b's queries, keys and values split into heads: (T, H, d), (S, H, d), (S, H, dv)."""
    H, d, dv = widths(case, x.size(-1))
    return (m.q_proj(x[:, b]).view(-1, H, d), m.k_proj(kv[:, b]).view(-1, H, d), m.v_proj(kv[:, b]).view(-1, H, dv))


def algorithm1_mask(allowed, b, T, S, dtype):
    """Alg. 1 lines 10-11: mmask = -1e9 * (1 - mask), mask 1 where a key may be seen."""
    mask = torch.tensor([[float(allowed(b, t, s)) for s in range(S)] for t in range(T)], dtype=dtype)
    return -1e9 * (1 - mask)


def per_query(m, case, x, enc, pad, head_outputs):
    """Row b, query t: ``out_proj(concat(head_outputs(q_t, K, V)))`` over the keys query t
    may see; q_t (H, d), K (S', H, d), V (S', H, dv).  Padding queries that see no key are
    left at 0 (they are compared nowhere)."""
    kv = keys_of(case, x, enc)
    (T, B, _), S = x.shape, kv.size(0)
    allowed = allowed_keys(case, pad, T, S)
    out = torch.zeros_like(x)
    for b in range(B):
        qs, ks, vs = heads_of(m, case, x, kv, b)
        for t in range(T):
            keys = [s for s in range(S) if allowed(b, t, s)]
            if keys:
                out[t, b] = m.out_proj(torch.cat(head_outputs(qs[t], ks[keys], vs[keys])))
    return out


def naive_interacting(m, case, x, enc, pad):
    kv = keys_of(case, x, enc)
    (T, B, _), S = x.shape, kv.size(0)
    opts = options(case)
    H, d, _ = widths(case, x.size(-1))
    scale = {"dk": d**-0.5, "none": 1.0, "hdk": (H * d) ** -0.5}[opts.scale]  # Alg. 1 line 6 and its readings
    allowed = allowed_keys(case, pad, T, S)
    out = torch.zeros_like(x)
    for b in range(B):
        qs, ks, vs = heads_of(m, case, x, kv, b)  # lines 3-5
        mmask = algorithm1_mask(allowed, b, T, S, x.dtype)
        if opts.reading == "sum":
            attn = []
            for i in range(H):  # lines 7-17
                for j in range(H):
                    a_ij = qs[:, i] @ ks[:, j].T  # line 9: (T, S)
                    attn.append(a_ij + mmask)  # line 12
            outputs = []
            for j in range(H):  # lines 18-34
                temp_a = [attn[i * H + j] for i in range(H)]  # lines 23-26
                sm = F.softmax(sum(temp_a) * scale, dim=-1)  # line 27 (times the scale option)
                outputs.append(sm @ vs[:, j])  # line 28: head j's values
            out[:, b] = m.out_proj(torch.cat(outputs, dim=-1))  # lines 35-37, then W_O
        else:
            sub_outputs = []
            for i in range(H):
                sub_sub = []
                for j in range(H):
                    sm = F.softmax((qs[:, i] @ ks[:, j].T) * scale + mmask, dim=-1)
                    sub_sub.append(sm @ vs[:, j])  # sub-sub-output (i, j)
                sub_outputs.append(torch.cat(sub_sub, dim=-1))  # sub-output of query head i
            out[:, b] = m.out_proj(torch.cat(sub_outputs, dim=-1))
    return out


NAIVE = {"interacting": naive_interacting}
READINGS = {
    "interacting": [
        ("interacting:reading=pairwise", None),
        ("interacting:scale=none", None),
        ("interacting:scale=dk", None),
        ("interacting:heads=2:head_dim=6", None),
        ("interacting:reading=pairwise:heads=2:head_dim=5:scale=hdk", None),
    ]
}
