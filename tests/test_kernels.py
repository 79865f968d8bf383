"""The shared attention kernels (mixer_plugin/mixers/kernels.py) and the masks the
attention-like mixers hand to ``scaled_dot_product_attention``: each kernel against an
explicit softmax, and no call that a fused kernel cannot take (5-D inputs, or a mask
of size B x T x S where padding alone is (B, 1, 1, S) and causality is is_causal)."""

import pytest
import torch
import torch.nn.functional as F
from mixer_cases import Case, make_mixer, run

from mixer_plugin.mixers import Role, kernels


def explicit(q, k, v, ok, scale):
    """softmax over the keys ``ok`` ((B|1, 1|G, T, S) bool) -> (B, G, T, dv); rows that
    see no key are NaN-free zeros (and never compared)."""
    scores = (q @ k.transpose(-1, -2) * scale).masked_fill(~ok, float("-inf"))
    return torch.nan_to_num(F.softmax(scores, -1)) @ v


def qkv(B=3, G=2, T=9, S=9, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, G, n, d, generator=g, dtype=torch.float64) for n in (T, S, S))


def padding(kind, B, S):
    pad = torch.zeros(B, S, dtype=torch.bool)
    if kind == "left":
        pad[1, :3] = pad[2, :1] = True
    elif kind == "right":
        pad[1, S - 3 :] = pad[2, S - 1 :] = True
    return pad


@pytest.mark.parametrize("pad_kind", ["none", "left", "right"])
@pytest.mark.parametrize("causal,T,S", [(False, 9, 7), (True, 9, 9), (True, 4, 9)])  # T < S: a cache before
@pytest.mark.parametrize("need_weights", [False, True])
def test_attention_equals_explicit_softmax(pad_kind, causal, T, S, need_weights):
    q, k, v = qkv(T=T, S=S)
    pad = None if pad_kind == "none" else padding(pad_kind, 3, S)
    offset = S - T if causal else 0
    out, weights = kernels.attention(q, k, v, pad, causal, offset, 0.4, need_weights=need_weights)
    ok = torch.ones(1, 1, T, S, dtype=torch.bool)
    if pad is not None:
        ok = ok & ~pad.view(3, 1, 1, S)
    if causal:
        ok = ok & (torch.arange(S) <= torch.arange(T)[:, None] + offset)
    ref = explicit(q, k, v, ok, 0.4)
    # queries that are tokens (right padding leaves padding queries out of the comparison)
    rows = torch.ones(3, T, dtype=torch.bool) if pad is None or not causal else ~pad[:, offset:]
    torch.testing.assert_close(out.transpose(1, 2)[rows], ref.transpose(1, 2)[rows], rtol=1e-10, atol=1e-12)
    assert (weights is not None) == need_weights
    if need_weights:
        torch.testing.assert_close(weights @ v, out)


def test_attention_with_stacked_queries():
    """``repeat``: the query axis holds two stacks of the same T positions; the causal
    mask follows the position, not the row."""
    q, k, v = qkv(T=6, S=6)
    q2 = torch.cat([q, 2 * q], dim=2)  # (B, G, 2T, d)
    out, _ = kernels.attention(q2, k, v, padding("left", 3, 6), True, 0, 0.5, repeat=2)
    for i, qi in enumerate((q, 2 * q)):
        ref, _ = kernels.attention(qi, k, v, padding("left", 3, 6), True, 0, 0.5)
        torch.testing.assert_close(out[:, :, 6 * i : 6 * (i + 1)], ref)


@pytest.mark.parametrize("kernel", ["banded", "dense"])
def test_band_attention_with_random_windows_and_offsets(kernel):
    """Per-query radii and a key cache in front of the queries (offset > 0)."""
    g = torch.Generator().manual_seed(1)
    B, G, T, S, d = 2, 3, 37, 45, 5
    q, k, v = (torch.randn(B, G, n, d, generator=g, dtype=torch.float64) for n in (T, S, S))
    lo = torch.randint(0, 9, (B, T), generator=g)
    hi = torch.randint(0, 4, (B, T), generator=g)
    key_ok = torch.rand(B, S, generator=g) > 0.2
    offset = S - T
    out, _ = kernels.band_attention(q, k, v, lo, hi, key_ok, offset, 0.3, kernel=kernel, block=4, max_lo=8, max_hi=3)
    delta = torch.arange(S) - torch.arange(T)[:, None] - offset
    ok = (delta >= -lo[..., None]) & (delta <= hi[..., None]) & key_ok[:, None, :]  # (B, T, S)
    ref = explicit(q, k, v, ok[:, None], 0.3)
    seen = ok.any(-1)[:, None, :, None].expand_as(ref)  # rows with no key: undefined
    torch.testing.assert_close(out[seen], ref[seen], rtol=1e-10, atol=1e-12)


def test_band_attention_needs_bounds_for_tensor_radii():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="max_lo"):
        kernels.band_attention(q, k, v, torch.ones(3, 9, dtype=torch.long), 1, None, 0, 0.5)


# ------------------------------------------------ what the mixers pass to SDPA
@pytest.fixture
def sdpa_calls(monkeypatch):
    calls = []
    sdpa = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, is_causal=False, **kw):
        calls.append((q.dim(), None if attn_mask is None else tuple(attn_mask.shape), is_causal))
        return sdpa(q, k, v, attn_mask=attn_mask, is_causal=is_causal, **kw)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    return calls


SOFT = ["fixed_head:head_dim=4", "interacting", "hard:decode=soft"]
B, T = 3, 9


def call(spec, role, pad_kind, step=False):
    case = Case(spec, role)
    m = make_mixer(case)
    x = torch.randn(T, B, 16, dtype=torch.float64)
    pad = None if pad_kind == "none" else padding(pad_kind, B, T)
    if role is Role.DECODER_CROSS:
        return run(m, case, x[:1] if step else x, x, enc_padding_mask=pad, incremental_state={} if step else None)
    if step:  # one decoding step after 4 cached ones; fairseq passes the column's padding
        state = {}
        for t in range(5):
            column = None if pad is None else pad[:, t : t + 1]
            run(m, case, x[t : t + 1], key_padding_mask=column, incremental_state=state)
        return
    return run(m, case, x, key_padding_mask=pad)


@pytest.mark.parametrize("spec", SOFT)
@pytest.mark.parametrize("role,pad_kind,expected", [
    (Role.ENCODER_SELF, "none", (None, False)),
    (Role.ENCODER_SELF, "left", ((B, 1, 1, T), False)),
    (Role.DECODER_CROSS, "left", ((B, 1, 1, T), False)),
    (Role.DECODER_SELF, "none", (None, True)),
    (Role.DECODER_SELF, "right", (None, True)),  # fairseq's targets: causality alone is exact
])  # fmt: skip
def test_full_forward_masks_are_small(sdpa_calls, spec, role, pad_kind, expected):
    call(spec, role, pad_kind)
    assert sdpa_calls == [(4, *expected)]


@pytest.mark.parametrize("spec", SOFT)
def test_decoding_steps_pass_at_most_a_padding_row(sdpa_calls, spec):
    call(spec, Role.DECODER_SELF, "left", step=True)
    assert len(sdpa_calls) == 5
    for dim, mask, is_causal in sdpa_calls:
        assert dim == 4 and not is_causal and (mask is None or mask == (B, 1, 1, mask[-1])), sdpa_calls


@pytest.mark.parametrize("role", [Role.ENCODER_SELF, Role.DECODER_SELF])
@pytest.mark.parametrize("kernel", ["banded", "dense"])
def test_local_runs_4d_sdpa(sdpa_calls, role, kernel):
    """5-D inputs send SDPA to its math kernel; the banded tiles fold blocks into the batch."""
    call(f"local:n=2:kernel={kernel}", role, "left")
    assert sdpa_calls and all(dim == 4 for dim, _, _ in sdpa_calls), sdpa_calls
