"""Test cases generated from the registry: every registered mixer, in every role it
supports, with its default options, plus the named readings of its options.

A newly registered mixer is picked up automatically; its option readings that
change the computation go in ``READINGS`` of its module in ``tests/mixer_refs/``."""

from typing import List, NamedTuple

import torch
from fairseq.modules import MultiheadAttention
from mixer_refs import READINGS
from mixer_refs.common import D, H  # small, so fp64 naive loops stay fast

from mixer_plugin.mixers import MIXER_REGISTRY, MixerContext, Role, build_mixer
from mixer_plugin.mixers.registry import parse_item


class Case(NamedTuple):
    spec: str
    role: Role
    heads: int = H  # the layer's attention heads, the default of a mixer's heads=

    @property
    def id(self):
        return f"{self.spec}@{self.role.value}"


def all_cases() -> List[Case]:
    cases = []
    for name, entry in sorted(MIXER_REGISTRY.items()):
        for role in sorted(entry.roles, key=lambda r: r.value):
            cases.append(Case(name, role))
        for spec, roles in READINGS.get(name, []):
            for role in sorted(roles or entry.roles, key=lambda r: r.value):
                cases.append(Case(spec, role))
    return cases


def stock_attention(role: Role, dropout: float = 0.0):
    if role is Role.DECODER_CROSS:
        return MultiheadAttention(D, H, kdim=D, vdim=D, dropout=dropout, encoder_decoder_attention=True)
    return MultiheadAttention(D, H, dropout=dropout, self_attention=True)


def make_mixer(case: Case, dtype=torch.float64, dropout: float = 0.0, seed: int = 0, activation_dropout: float = 0.0):
    """The case's mixer, parameters drawn from ``seed``; ``dropout``: --attention-dropout."""
    torch.manual_seed(seed)
    ctx = MixerContext(
        role=case.role,
        layer_index=0,
        embed_dim=D,
        kv_dim=D,
        num_heads=case.heads,
        attention_dropout=dropout,
        build_stock=lambda: stock_attention(case.role, dropout),
        activation_dropout=activation_dropout,
    )
    module = build_mixer(parse_item(case.role.flag, case.spec), ctx)
    return module.to(dtype).eval()


def future_mask(T: int, dtype=torch.float64, device=None):
    return torch.triu(torch.full((T, T), float("-inf"), dtype=dtype, device=device), 1)


def run(
    module,
    case: Case,
    x,
    enc=None,
    key_padding_mask=None,
    enc_padding_mask=None,
    incremental_state=None,
    need_weights=False,
):
    """Call a mixer the way the stock fairseq layers do for its role.  With
    ``need_weights``: ``(out, per-head weights (H, B, T, S) or None)``."""
    if case.role is Role.DECODER_CROSS:
        out, weights = module(
            query=x,
            key=enc,
            value=enc,
            key_padding_mask=enc_padding_mask,
            incremental_state=incremental_state,
            static_kv=True,
            need_weights=need_weights,
            need_head_weights=need_weights,
        )
    else:
        attn_mask = None
        if case.role is Role.DECODER_SELF and incremental_state is None:
            attn_mask = future_mask(x.size(0), x.dtype, x.device)  # on x's device, as fairseq's decoder builds it
        out, weights = module(
            query=x,
            key=x,
            value=x,
            key_padding_mask=key_padding_mask,
            incremental_state=incremental_state,
            attn_mask=attn_mask,
            need_weights=need_weights,
            need_head_weights=need_weights,
        )
    return (out, weights) if need_weights else out
