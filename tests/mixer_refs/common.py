"""Helpers shared by the naive references.

The references read widths and logit scales off the case's spec options, the
layer's heads (``case.heads``) and the input's width, never off the module under
test, so a module that stored a wrong scale or width would disagree with its
reference."""

import torch
import torch.nn.functional as F

from mixer_plugin.mixers import Role
from mixer_plugin.mixers.registry import parse_item

D, H = 16, 4  # the battery's model width and layer heads (mixer_cases.py)


def options(case):
    """The options dataclass the case's spec string sets."""
    return parse_item(case.role.flag, case.spec).options


def num_heads(case) -> int:
    """``heads=``, else the layer's attention heads."""
    return getattr(options(case), "heads", None) or case.heads


def valid(pad, b, s, T):
    """Position s of row b is a real token (inside the sequence, not padding)."""
    return 0 <= s < T and (pad is None or not bool(pad[b, s]))


def keys_of(case, x, enc):
    """The keys' input of a role: the encoder output for cross-attention, else x."""
    return enc if case.role is Role.DECODER_CROSS else x


def allowed_keys(case, pad, T, S):
    """(b, t, s) -> may query t of row b see key s (padding; the future in a decoder)."""
    if case.role is Role.DECODER_CROSS:
        return lambda b, t, s: valid(pad, b, s, S)
    causal = case.role is Role.DECODER_SELF
    return lambda b, t, s: (s <= t or not causal) and valid(pad, b, s, T)


def naive_attention(m, case, x, kv, allowed, temperature=1.0):
    """softmax(q k^T / (sqrt(d_h) temperature)) v per head, over the key positions
    ``allowed``, with fairseq's parameter names (q_proj, k_proj, v_proj, out_proj);
    d_h = D / heads."""
    T, B, D = x.shape
    H = num_heads(case)
    dh = D // H
    out = torch.zeros_like(x)
    for b in range(B):
        for t in range(T):
            q = m.q_proj(x[t, b]) * dh**-0.5 / temperature
            keys = [s for s in range(kv.size(0)) if allowed(b, t, s)]
            k = m.k_proj(kv[keys, b])  # (S', D)
            v = m.v_proj(kv[keys, b])
            heads = []
            for h in range(H):
                sl = slice(h * dh, (h + 1) * dh)
                a = F.softmax(k[:, sl] @ q[sl], dim=0)
                heads.append(a @ v[:, sl])
            out[t, b] = m.out_proj(torch.cat(heads))
    return out
