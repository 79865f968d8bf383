"""The multiply-adds each mixer declares (``macs``, what the benchmarks put beside the
time) against torch's own FLOP counter on the math kernel, which computes the equation
densely: equal for every mixer whose equation is dense, at most the dense count for the
windowed ones (their equation skips what lies outside the window).

The cases come from the registry (``mixer_cases.all_cases``): a new mixer is checked here
without editing a list, and one that declares no count fails here, not first inside a
benchmark run."""

import pytest
import torch
from mixer_cases import Case, all_cases, make_mixer, run
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from mixer_plugin.bench.flops import module_macs
from mixer_plugin.mixers import MIXER_REGISTRY, Role

# counted by the FLOP counter: matmuls, linear layers and convolutions (not sums or maxima).
# Every mixer's declared count must equal it, except these banded ones, whose equation skips
# the scores outside their band that the math kernel still computes: theirs is at most it.
BANDED = ("local", "multiscale")
# the decoder's self-attention is left out: the math kernel scores every (query, key) pair
# under the future mask, where the declared count is the causal half (test_windowed_and_causal_counts)
CHECKED = [c for c in all_cases() if c.role is not Role.DECODER_SELF]


def counted_macs(m, case, T=12, B=2):
    x, enc = torch.randn(T, B, 16), torch.randn(T, B, 16)
    with FlopCounterMode(display=False) as fc, sdpa_kernel(SDPBackend.MATH):
        run(m, case, x, enc)
    return fc.get_total_flops() / 2 / B


def test_the_banded_mixers_are_registered():
    assert set(BANDED) <= set(MIXER_REGISTRY), "a renamed mixer would be held to the dense count"


@pytest.mark.parametrize("case", all_cases(), ids=[c.id for c in all_cases()])
def test_every_registered_mixer_declares_its_multiply_adds(case):
    """What the layer benchmarks price every module by (``bench.flops.module_macs``: the
    mixer's ``macs``, the stock formula for ``attn``), in every role the mixer fills."""
    m = make_mixer(case, dtype=torch.float32)
    try:
        macs = module_macs(m, 12, case.role)
    except (NotImplementedError, AttributeError) as e:
        pytest.fail(
            f"{type(m).__name__} ({case.id}) does not declare its multiply-adds, macs(T, S) "
            f"(MixerBase.macs; AttentionMixer gives one from core_macs): {e!r}"
        )
    assert isinstance(macs, int) and macs > 0


@pytest.mark.parametrize("case", CHECKED, ids=[c.id for c in CHECKED])
def test_declared_macs_match_the_counted_arithmetic(case):
    name = case.spec.split(":")[0]
    if name == "ngram" and "kernel=" not in case.spec:
        # the counter does not see the in-place baddbmm_ of the GEMM kernel; conv1d runs
        # the same sums (test_mixers checks the two kernels equal, gradients included)
        case = Case(f"{case.spec}:kernel=conv", case.role)
    m = make_mixer(case, dtype=torch.float32)
    counted, declared = counted_macs(m, case), module_macs(m, 12, case.role)
    if name in BANDED:
        assert declared <= counted
        return
    if name == "interacting" and "pairwise" not in case.spec:
        counted += 12 * m.num_heads * m.head_dim  # Algorithm 1's sum of the H queries: additions
    assert declared == counted


def test_windowed_and_causal_counts():
    """A window counts only the keys inside it; a causal mixer its past and itself."""
    local = make_mixer(Case("local:n=2", Role.ENCODER_SELF), dtype=torch.float32)
    dense = make_mixer(Case("fixed_head:head_dim=4", Role.ENCODER_SELF), dtype=torch.float32)
    projections = dense.macs(10, 10) - 100 * 4 * 8
    assert local.macs(10, 10) == projections + (3 * 10 - 2) * 4 * 8  # |t - s| <= 1 inside 10 positions
    causal = make_mixer(Case("fixed_head:head_dim=4", Role.DECODER_SELF), dtype=torch.float32)
    assert causal.macs(10, 10) == projections + 55 * 4 * 8  # 10 * 11 / 2 pairs
