"""Stock fairseq attention: plain scaled dot-product attention."""

from .common import allowed_keys, keys_of, naive_attention


def naive_attn(m, case, x, enc, pad):
    kv = keys_of(case, x, enc)
    return naive_attention(m, case, x, kv, allowed_keys(case, pad, x.size(0), kv.size(0)))


NAIVE = {"attn": naive_attn}
