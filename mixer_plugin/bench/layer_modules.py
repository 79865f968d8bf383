"""What a layer benchmark times, built one way for all of them: every registered mixer with
the readings timed beside its defaults (``variants``), one of them built for one role as a layer
builds it (``build``), stock attention on SDPA's math kernel (``MATH``), the dtypes a run may ask
for and the causal mask; a benchmark's own specs are checked against the registry
(``spec_problem``) before anything is timed."""

import argparse
import dataclasses
from typing import Iterable, List, Optional, Tuple

import torch
from fairseq.modules import MultiheadAttention
from torch import nn

from ..mixers.registry import MIXER_REGISTRY, MixerContext, MixerSpecError, Role, build_mixer, check_role, parse_item

# registered variants benchmarked besides each mixer's defaults
# (the kernel=conv rows are eq. 5's grouped-conv formulation, timed beside the default per-slot GEMMs)
EXTRA_VARIANTS = {
    "ngram": [
        "ngram:global=1",
        "ngram:proj=slice:out=none",
        "ngram:kernel=conv",
        "ngram:proj=slice:out=none:kernel=conv",
    ],
    "hard": ["hard:train=soft"],
    "multiscale": ["multiscale:scales=nx8"],
}
MATH = "attn[math]"


class MathSDPA(nn.Module):
    """The stock module with SDPA forced onto the math (L x L) kernel."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, **kw) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(SDPBackend.MATH):
            return self.inner(**kw)


def variants() -> List[Tuple[str, str]]:
    """(label, spec string) for every registered mixer, `attn` first."""
    names = sorted(MIXER_REGISTRY, key=lambda n: (n != "attn", n))
    out = []
    for name in names:
        fields = {f.name for f in dataclasses.fields(MIXER_REGISTRY[name].options)}
        spec = f"{name}:n={{n}}" if "n" in fields else name
        out.append((name, spec))
        for extra in EXTRA_VARIANTS.get(name, []):
            out.append((extra, extra.replace(name, spec, 1)))
    return out


def build(spec: str, role: Role, args: argparse.Namespace) -> nn.Module:
    D, H = args.dim, args.heads

    def stock() -> MultiheadAttention:
        return MultiheadAttention(D, H, dropout=args.dropout, self_attention=True)

    ctx = MixerContext(
        role=role,
        layer_index=0,
        embed_dim=D,
        kv_dim=D,
        num_heads=H,
        attention_dropout=args.dropout,
        build_stock=stock,
    )
    flag = role.flag
    return build_mixer(parse_item(flag, spec.format(n=args.n)), ctx)


def spec_problem(spec: str, roles: Iterable[Role]) -> Optional[str]:
    """Why ``spec`` cannot be built in every one of ``roles`` (an unknown mixer or option, a
    bad value, a role the mixer does not fill), or None: a benchmark's own list of specs is
    checked against the registry before anything is timed."""
    try:
        for role in roles:
            check_role(parse_item(role.flag, spec), role)
    except MixerSpecError as e:
        return str(e)
    return None


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPE_SUFFIX = {"bfloat16": "bf16", "float16": "fp16"}


def future_mask(L: int, device: torch.device, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    # fairseq's buffered_future_mask: fill_with_neg_inf(zeros(L, L)).triu(1), in the model's dtype
    return torch.triu(torch.full((L, L), float("-inf"), device=device, dtype=dtype), 1)
