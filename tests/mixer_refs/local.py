"""Local attention: softmax attention over the multiNN window only."""

from mixer_plugin.mixers import Role

from .common import naive_attention, options, valid


def naive_local(m, case, x, enc, pad):
    n, T = options(case).n, x.size(0)
    if case.role is Role.DECODER_SELF:
        allowed = lambda b, t, s: t - n < s <= t and valid(pad, b, s, T)  # noqa: E731
    else:
        allowed = lambda b, t, s: abs(t - s) < n and valid(pad, b, s, T)  # noqa: E731
    return naive_attention(m, case, x, x, allowed)


NAIVE = {"local": naive_local}
READINGS = {
    "local": [
        ("local:n=1", None),
        ("local:n=3:heads=2", None),
        ("local:n=2:kernel=banded", None),  # blocked tiles even where dense would be picked
        ("local:n=2:kernel=dense", None),  # one masked L x L call
    ]
}
