"""The registry battery: every mixer x every role it supports x its option readings.

shapes; padding invariance (left and right padding, with garbage in the pads);
no causal leakage; incremental decoding == full forward, also with the padding
masks fairseq's decoder passes step by step; beam reorder; the vectorised module ==
a naive loop written straight from the paper's equations, for short and for long
(multi-block) sequences; empty and one-token sequences; low precision (bf16, and
torch.autocast forward + backward on CPU, fp16/bf16 on CUDA when present).
Equivalence checks run in float64 so tolerances can be tight."""

import pytest
import torch
from mixer_cases import Case, D, all_cases, make_mixer, run
from mixer_refs import ACTIVATIONS, NAIVE

from mixer_plugin.mixers import MIXER_REGISTRY, Role
from mixer_plugin.mixers.ngram import window_gemm

CASES = all_cases()
DECODER_CASES = [c for c in CASES if c.role is not Role.ENCODER_SELF]
SELF_DECODER_CASES = [c for c in CASES if c.role is Role.DECODER_SELF]
ids = lambda cases: [c.id for c in cases]  # noqa: E731
TOL = dict(rtol=1e-9, atol=1e-10)
# fairseq's MultiheadAttention takes its softmax in float32 whatever the input
# dtype (fairseq.utils.softmax), so the stock baseline only agrees to fp32 precision
STOCK_TOL = dict(rtol=1e-5, atol=1e-6)


def tol(case):
    return STOCK_TOL if case.spec.split(":")[0] == "attn" else TOL


def inputs(T=7, B=3, S=5, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, B, D, generator=g, dtype=torch.float64)
    enc = torch.randn(S, B, D, generator=g, dtype=torch.float64)
    return x, enc


# ------------------------------------------------------------------ coverage
def test_every_registered_mixer_has_cases_and_a_naive_reference():
    named = {c.spec.split(":")[0] for c in CASES}
    assert named == set(MIXER_REGISTRY)
    assert set(NAIVE) == set(MIXER_REGISTRY), "add a naive reference for the new mixer"


# -------------------------------------------------------------------- shapes
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_shapes(case):
    m = make_mixer(case)
    x, enc = inputs()
    out = run(m, case, x, enc)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert torch.isfinite(out).all()


# ------------------------------------------------------- padding invariance
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_padding_invariance(case, side):
    """A sentence alone == the same sentence padded in a batch (pads hold garbage)."""
    m = make_mixer(case)
    L, P = 5, 3
    x, enc = inputs(T=L + P, B=2, S=L + P, seed=2)
    alone_x, alone_enc = x[:L, :1].clone(), enc[:L, :1].clone()
    real = slice(P, P + L) if side == "left" else slice(0, L)
    pad = torch.ones(2, L + P, dtype=torch.bool)
    pad[0, real] = False
    pad[1] = False  # a second, unpadded row of full length
    if case.role is Role.DECODER_CROSS:
        # the padding is on the encoder side; the query is the sentence itself
        enc[real, :1] = alone_enc
        out = run(m, case, x[:L], enc, enc_padding_mask=pad)[:, :1]
        ref = run(m, case, alone_x, alone_enc)
    else:
        x[real, :1] = alone_x
        out = run(m, case, x, key_padding_mask=pad)[real, :1]
        ref = run(m, case, alone_x)
    torch.testing.assert_close(out, ref, **tol(case))


# ---------------------------------------------------------------- causality
@pytest.mark.parametrize("case", SELF_DECODER_CASES, ids=ids(SELF_DECODER_CASES))
def test_no_causal_leakage(case):
    m = make_mixer(case)
    x, _ = inputs()
    base = run(m, case, x)
    for t in range(x.size(0) - 1):
        y = x.clone()
        y[t + 1 :] = torch.randn_like(y[t + 1 :])
        torch.testing.assert_close(run(m, case, y)[: t + 1], base[: t + 1], **tol(case))


# ------------------------------------------------- incremental == full forward
def step_by_step(m, case, x, enc, state, start=0):
    outs = [run(m, case, x[t : t + 1], enc, incremental_state=state) for t in range(start, x.size(0))]
    return torch.cat(outs, dim=0)


@pytest.mark.parametrize("case", DECODER_CASES, ids=ids(DECODER_CASES))
def test_incremental_equals_full(case):
    m = make_mixer(case)
    x, enc = inputs(T=9)
    full = run(m, case, x, enc)
    torch.testing.assert_close(step_by_step(m, case, x, enc, {}), full, **tol(case))


def fairseq_padding(side: str, T: int, B: int = 3) -> torch.Tensor:
    """(B, T) padding: row 0 unpadded, rows 1-2 padded by 3 and 1 on ``side``."""
    pad = torch.zeros(B, T, dtype=torch.bool)
    for row, n in ((1, 3), (2, 1)):
        pad[row, :n] = side == "left"
        pad[row, T - n :] = side == "right"
    return pad


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("case", DECODER_CASES, ids=ids(DECODER_CASES))
def test_incremental_with_fairseq_padding_masks(case, side, grad):
    """Step by step as fairseq's decoder drives its layers: self-attention gets the
    padding of the current column only, and None when that column has none;
    cross-attention gets the whole source padding every step.  Equals the full
    forward (with the whole padding mask) at every real position.  Without autograd
    (as fairseq-generate decodes) the key and value caches grow in place, with it by
    ``torch.cat``."""
    with torch.set_grad_enabled(grad):
        m = make_mixer(case)
        T = 8
        x, enc = inputs(T=T, B=3, S=T)
        pad = fairseq_padding(side, T)
        if case.role is Role.DECODER_CROSS:
            full = run(m, case, x, enc, enc_padding_mask=pad)
            state = {}
            steps = [run(m, case, x[t : t + 1], enc, enc_padding_mask=pad, incremental_state=state) for t in range(T)]
            real = torch.ones(T, 3, dtype=torch.bool)
        else:
            full = run(m, case, x, key_padding_mask=pad)
            state, steps = {}, []
            for t in range(T):
                column = pad[:, t : t + 1]  # (B, 1)
                steps.append(
                    run(
                        m,
                        case,
                        x[t : t + 1],
                        key_padding_mask=column if column.any() else None,
                        incremental_state=state,
                    )
                )
            real = ~pad.t()
        torch.testing.assert_close(torch.cat(steps)[real], full[real], **tol(case))


@pytest.mark.parametrize("case", DECODER_CASES, ids=ids(DECODER_CASES))
def test_beam_reorder(case):
    """Decode s steps, reorder the cached state like beam search does, decode on:
    equals a full forward over the reordered prefixes plus the new steps."""
    m = make_mixer(case)
    T, s = 8, 4
    x, enc = inputs(T=T, B=3)
    if case.role is Role.DECODER_CROSS:
        # the 3 rows are beams of one sentence, sharing its encoder output; fairseq's
        # own cross-attention relies on that and skips reordering its static k/v
        enc = enc[:, :1].expand_as(enc).contiguous()
    new_order = torch.tensor([2, 0, 0])
    state = {}
    step_by_step(m, case, x[:s], enc, state)
    m.reorder_incremental_state(state, new_order)
    y = x.clone()
    y[:s] = x[:s, new_order]  # the surviving hypotheses' prefixes ...
    y[s:] = torch.randn_like(y[s:])  # ... then different continuations
    enc_y = enc[:, new_order]
    continued = step_by_step(m, case, y, enc_y, state, start=s)
    torch.testing.assert_close(continued, run(m, case, y, enc_y)[s:], **tol(case))


@pytest.mark.parametrize("case", DECODER_CASES, ids=ids(DECODER_CASES))
def test_finished_sentences_leave_the_batch(case):
    """Beam search drops finished sentences: a reorder that shrinks the batch keeps
    exactly the surviving rows' state (static cross-attention caches included)."""
    m = make_mixer(case)
    T, s = 8, 4
    x, enc = inputs(T=T, B=3)
    keep = torch.tensor([2, 0])
    state = {}
    step_by_step(m, case, x[:s], enc, state)
    m.reorder_incremental_state(state, keep)
    y, enc_y = x[:, keep], enc[:, keep]
    continued = step_by_step(m, case, y, enc_y, state, start=s)
    torch.testing.assert_close(continued, run(m, case, y, enc_y)[s:], **tol(case))


@pytest.mark.parametrize("case", DECODER_CASES, ids=ids(DECODER_CASES))
def test_long_decoding_with_reorders_under_no_grad(case):
    """As fairseq's beam search drives a decoder: no autograd (the caches then grow in
    place and alternate with a free twin, see ``append_rows`` / ``reorder_rows``), 40
    steps (a self-attention cache outgrows its first buffer twice), reordered at every
    step from the third, once shrinking the batch.  Equals the full forward over the
    reordered sequences at every step."""
    m = make_mixer(case)
    T = 40
    x, enc = inputs(T=T, B=3)
    if case.role is Role.DECODER_CROSS:
        enc = enc[:, :1].expand_as(enc).contiguous()  # beams of one sentence
    reorders = {t: torch.tensor([2, 0, 0] if t % 2 else [1, 2, 0]) for t in range(3, 20)}
    reorders[20] = torch.tensor([1, 2])  # a sentence finished: the batch shrinks
    reorders.update({t: torch.tensor([1, 0]) for t in range(21, T)})
    state, steps = {}, []
    with torch.no_grad():
        for t in range(T):
            if t in reorders:
                order = reorders[t]
                m.reorder_incremental_state(state, order)
                x, enc = x[:, order], enc[:, order]  # the survivors' prefixes, then their own steps
                steps = [step[:, order] for step in steps]
            steps.append(run(m, case, x[t : t + 1], enc, incremental_state=state))
        full = run(m, case, x, enc)
    torch.testing.assert_close(torch.cat(steps), full, **tol(case))


# ------------------------------------------------- vectorised == naive loop
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_vectorised_equals_naive(case):
    m = make_mixer(case)
    x, enc = inputs(T=7, B=2, S=7)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, :2] = True  # row 1 left-padded by 2
    name = case.spec.split(":")[0]
    if case.role is Role.DECODER_CROSS:
        out = run(m, case, x, enc, enc_padding_mask=pad)
    else:
        out = run(m, case, x, key_padding_mask=pad)
    ref = NAIVE[name](m, case, x, enc, pad)
    real = ~pad.t() if case.role is not Role.DECODER_CROSS else torch.ones(7, 2, dtype=torch.bool)
    torch.testing.assert_close(out[real], ref[real], **tol(case))


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_attention_weights(case):
    """Asked for weights (fairseq's alignment does, on the last decoder layer), a mixer
    gives the same output, and per head ``(H, B, T, S)`` weights that put nothing on
    padding or future keys and, for a real query, sum to 1 (talking heads mix the
    weights across heads after the softmax, so only the zeros hold there)."""
    m = make_mixer(case)
    T = 7
    x, enc = inputs(T=T, B=3, S=T)
    pad = fairseq_padding("left" if case.role is not Role.DECODER_SELF else "right", T)
    kw = dict(enc_padding_mask=pad) if case.role is Role.DECODER_CROSS else dict(key_padding_mask=pad)
    plain = run(m, case, x, enc, **kw)
    with_weights, weights = run(m, case, x, enc, need_weights=True, **kw)
    real = torch.ones(T, 3, dtype=torch.bool) if case.role is Role.DECODER_CROSS else ~pad.t()
    torch.testing.assert_close(with_weights[real], plain[real], **tol(case))
    if weights is None:
        assert case.spec.split(":")[0] == "ngram", "only multiNN has no attention weights"
        return
    if case.spec == "attn" and weights.dim() == 3:
        weights = weights.unsqueeze(0)  # stock self-attention's fused path averages over heads
    H = weights.size(0)
    assert weights.shape == (H, 3, T, T) and H in (1, m.num_heads)
    rows = real.t().view(1, 3, T).expand(H, 3, T)  # real queries (a padding query's weights are never read)
    blocked = pad.view(1, 3, 1, T).expand(H, 3, T, T)
    if case.role is Role.DECODER_SELF:
        blocked = blocked | torch.ones(T, T, dtype=torch.bool).triu(1)
    assert (weights[rows][blocked[rows]] == 0).all()
    if not case.spec.startswith("talking_heads"):
        torch.testing.assert_close(weights.sum(-1)[rows], torch.ones_like(weights.sum(-1)[rows]))


LONG_CASES = [c for c in CASES if c.spec.split(":")[0] in ("local", "multiscale", "ngram")]


@pytest.mark.parametrize("case", LONG_CASES, ids=ids(LONG_CASES))
def test_long_sequences_equal_naive(case):
    """T = 37, longer than one 16-query block of the banded kernels (3 blocks), with
    left and right padding in the batch."""
    m = make_mixer(case)
    T = 37
    x, enc = inputs(T=T, B=3, S=T, seed=5)
    pad = fairseq_padding("left", T)
    pad[2] = fairseq_padding("right", T)[2]
    out = run(m, case, x, key_padding_mask=pad)
    ref = NAIVE[case.spec.split(":")[0]](m, case, x, enc, pad)
    real = ~pad.t()
    torch.testing.assert_close(out[real], ref[real], **tol(case))


# ------------------------------------------------ empty and one-token inputs
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_single_token_equals_naive(case):
    m = make_mixer(case)
    x, enc = inputs(T=1, B=2, S=1)
    out = run(m, case, x, enc)
    ref = NAIVE[case.spec.split(":")[0]](m, case, x, enc, None)
    torch.testing.assert_close(out, ref, **tol(case))


STOCK_EMPTY = pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="fairseq's own MultiheadAttention asserts on an empty self-attention (stock behaviour)",
)
EMPTY_CASES = [
    pytest.param(c, marks=STOCK_EMPTY) if c.spec == "attn" and c.role is not Role.DECODER_CROSS else c for c in CASES
]


@pytest.mark.parametrize("case", EMPTY_CASES, ids=ids(CASES))
def test_empty_sequence_gives_empty_output(case):
    """T = 0 queries (an empty batch slice) -> a (0, B, C) output, in eval and in
    training (forward + backward), not a crash."""
    m = make_mixer(case)
    x, enc = inputs(T=0, B=2, S=4)
    for mode in (False, True):
        m.train(mode)
        xg = x.clone().requires_grad_()
        out = run(m, case, xg, enc)
        assert out.shape == (0, 2, D)
        out.sum().backward()


# --------------------------------------------------------- precision / dtype
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_low_precision_runs_finite(case, dtype):
    """CPU stand-in for the GPU fp16/bf16 check: forward + backward stay finite."""
    m = make_mixer(case, dtype=dtype).train()
    x, enc = inputs()
    x, enc = x.to(dtype).requires_grad_(), enc.to(dtype)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    # right padding, as fairseq pads targets (stock attention gives NaN rows for
    # a left-padded decoder, whose first query sees only padding)
    pad[0, 4:] = True
    if case.role is Role.DECODER_CROSS:
        out = run(m, case, x, enc, enc_padding_mask=torch.zeros(3, 5, dtype=torch.bool))
    else:
        out = run(m, case, x, key_padding_mask=pad)
    out.float().pow(2).mean().backward()
    assert torch.isfinite(out.float()).all()
    assert all(torch.isfinite(p.grad.float()).all() for p in m.parameters() if p.grad is not None)


AUTOCAST = [("cpu", torch.bfloat16), ("cuda", torch.float16), ("cuda", torch.bfloat16)]


def retrieves_hard(case) -> bool:
    """An eval forward that picks one key by argmax (``hard`` decoding)."""
    return case.spec.split(":")[0] == "hard" and "decode=soft" not in case.spec


@pytest.mark.parametrize("device,dtype", AUTOCAST, ids=[f"{d}-{str(t)[6:]}" for d, t in AUTOCAST])
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_autocast_forward_backward(case, device, dtype):
    """fairseq's --amp: float32 weights under torch.autocast.  Eval: close to float32.
    Train (attention dropout 0.1): output and every gradient finite."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a GPU (the CUDA autocast check)")
    x, enc = inputs(T=9, B=3, S=7)
    x, enc = x.float().to(device), enc.float().to(device)
    pad = fairseq_padding("right", 7 if case.role is Role.DECODER_CROSS else 9).to(device)
    kw = dict(enc_padding_mask=pad) if case.role is Role.DECODER_CROSS else dict(key_padding_mask=pad)
    real = torch.ones(9, 3, dtype=torch.bool) if case.role is Role.DECODER_CROSS else ~pad.t().cpu()

    m = make_mixer(case, dtype=torch.float32).to(device)
    ref = run(m, case, x, enc, **kw).cpu()[real]
    with torch.autocast(device_type=device, dtype=dtype):
        out = run(m, case, x, enc, **kw).float().cpu()[real]
    close = ((out - ref).abs() <= 0.05 + 0.05 * ref.abs()).all(dim=-1)  # per position
    # hard retrieval's argmax may flip on a near tie in low precision: a few
    # positions retrieve another key; everything else must agree
    assert close.float().mean() >= (0.9 if retrieves_hard(case) else 1.0), (out - ref).abs().max()

    m = make_mixer(case, dtype=torch.float32, dropout=0.1).to(device).train()
    xg = x.clone().requires_grad_()
    with torch.autocast(device_type=device, dtype=dtype):
        out = run(m, case, xg, enc, **kw)
    out.float().pow(2).mean().backward()
    assert torch.isfinite(out.float()).all()
    assert torch.isfinite(xg.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)


# ------------------------------------------------------------------ dropout
def samples_in_training(case) -> bool:
    """A training forward that draws its retrievals (``hard``): random at any dropout."""
    return case.spec.split(":")[0] == "hard"


def forward_seeded(m, case, seed=5):
    """One forward with the global RNG (dropout masks, hard's samples) at ``seed``."""
    x, enc = inputs()
    torch.manual_seed(seed)
    return run(m, case, x, enc)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_dropout_at_rate_zero_is_the_eval_computation(case):
    """At rate 0 (both flags) a training forward is the evaluation forward, bit for bit:
    no mask is drawn and no other kernel runs.  (``hard`` samples in training whatever
    the rate; two seeded training forwards must agree instead.)"""
    m = make_mixer(case)
    if samples_in_training(case):
        m.train()
        assert torch.equal(forward_seeded(m, case), forward_seeded(m, case))
        return
    ref = forward_seeded(m.eval(), case)
    assert torch.equal(forward_seeded(m.train(), case), ref)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_attention_dropout_acts_in_training_only(case):
    """--attention-dropout reaches every mixer (what each drops: its module docstring):
    in training it changes the output, in evaluation it changes nothing."""
    plain, dropped = make_mixer(case), make_mixer(case, dropout=0.3)
    assert torch.equal(forward_seeded(dropped.eval(), case), forward_seeded(plain.eval(), case))
    if samples_in_training(case):
        # a mask shifts the RNG its draws use, so its training forward differs with the mask thrown
        # away too: tests/test_hard.py::test_attention_dropout_drops_keys_from_the_draws instead
        return
    assert not torch.allclose(forward_seeded(dropped.train(), case), forward_seeded(plain.train(), case))


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_activation_dropout_reaches_every_activation(case):
    """--activation-dropout acts after a mixer's own activation (``ACTIVATIONS`` of its
    reference module: multiNN's ReLU), in training only; a mixer without one is
    unchanged by it."""
    plain, dropped = make_mixer(case), make_mixer(case, activation_dropout=0.3)
    assert torch.equal(forward_seeded(dropped.eval(), case), forward_seeded(plain.eval(), case))
    changed = not torch.equal(forward_seeded(dropped.train(), case), forward_seeded(plain.train(), case))
    assert changed == (case.spec.split(":")[0] in ACTIVATIONS)


NGRAM_CASES = [c for c in CASES if c.spec.split(":")[0] == "ngram"]


@pytest.mark.parametrize("case", NGRAM_CASES, ids=ids(NGRAM_CASES))
def test_ngram_slot_dropout_kernels_agree(case):
    """Window-slot dropout through the GEMM kernel's own backward equals autograd
    through the unfolded windows (``kernel=conv``'s path under dropout), with the same
    mask: output and every gradient."""
    spec = case.spec.replace(":kernel=conv", "")
    grads = []
    for kernel in ("gemm", "conv"):
        c = Case(f"{spec}:kernel={kernel}", case.role)
        m = make_mixer(c, seed=3, dropout=0.4).train()
        x, enc = inputs(T=9, B=3)
        xg = x.clone().requires_grad_()
        torch.manual_seed(11)
        out = run(m, c, xg, enc, key_padding_mask=fairseq_padding("left", 9))
        out.pow(2).sum().backward()
        grads.append([out, xg.grad] + [p.grad for p in m.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, **TOL)


def test_ngram_slot_dropout_drops_whole_slots():
    """At rate 1 every slot (and the global term) is dropped: eq. (5) is its bias alone,
    so every position's output is the same."""
    case = next(c for c in CASES if c.spec == "ngram:global=1")
    m = make_mixer(case, dropout=1.0).train()
    out = forward_seeded(m, case)
    assert torch.allclose(out, out[:1].expand_as(out))


# ----------------------------------------------------------- mixer-specific
NGRAM_GEMM_CASES = [c for c in CASES if c.spec.split(":")[0] == "ngram" and "kernel=" not in c.spec]


@pytest.mark.parametrize("case", NGRAM_GEMM_CASES, ids=ids(NGRAM_GEMM_CASES))
def test_ngram_gemm_gradients_equal_conv(case):
    """The per-slot GEMM kernel writes its own backward: every gradient (input,
    W_x, W^(k), bias, global, W) must equal autograd's through conv1d, with padding."""
    gemm = make_mixer(case, seed=3)
    conv = make_mixer(Case(f"{case.spec}:kernel=conv", case.role), seed=3)
    x, enc = inputs(T=9, B=3, S=7)
    pad = fairseq_padding("left", 7 if case.role is Role.DECODER_CROSS else 9)
    kw = dict(enc_padding_mask=pad) if case.role is Role.DECODER_CROSS else dict(key_padding_mask=pad)
    grads = []
    for m in (gemm, conv):
        xg = x.clone().requires_grad_()
        out = run(m, case, xg, enc, **kw)
        out.pow(2).sum().backward()
        grads.append([out, xg.grad] + [p.grad for p in m.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, **TOL)


def test_window_gemm_gradcheck():
    g = torch.Generator().manual_seed(0)
    ext = torch.randn(6, 2, 3 * 2, generator=g, dtype=torch.float64, requires_grad=True)  # T+W-1=6, K=3, d=2
    weight = torch.randn(3, 4, 2, 5, generator=g, dtype=torch.float64, requires_grad=True)  # W=4, d_out=5
    assert torch.autograd.gradcheck(lambda e, w: window_gemm(e, w, 3), (ext, weight))


def test_ngram_global_max_keeps_overflow():
    """eq. (7)'s max must not turn an overflow into a finite number: an inf in one
    real token reaches every position through the global term, even positions whose
    window never sees that token."""
    case = next(c for c in CASES if c.spec == "ngram:global=1")
    m = make_mixer(case)
    x, _ = inputs(T=12, B=1)
    m.ngram_weight.data.zero_()  # only the global term remains
    x[0, 0] = float("inf")
    out = run(m, case, x)
    assert not torch.isfinite(out[-1]).all()
