"""Hard retrieval attention beyond the registry battery (which covers eval mode:
shapes, padding, causality, incremental == full, beam reorder, naive eq. 11 + 6):
training-mode sampling and its straight-through gradient, masking under dropout,
and the Table 4 switches."""

import math

import pytest
import torch
import torch.nn.functional as F
from mixer_cases import Case, make_mixer, run

from mixer_plugin.build import build
from mixer_plugin.mixers import Role
from mixer_plugin.mixers import hard as hard_module

TINY = ["--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "4",
        "--decoder-embed-dim", "32", "--decoder-ffn-embed-dim", "64", "--decoder-attention-heads", "4",
        "--dropout", "0", "--share-all-embeddings"]  # fmt: skip
ROLES = [Role.ENCODER_SELF, Role.DECODER_SELF, Role.DECODER_CROSS]


def blocked_keys(m, pad, T, S, offset=0):
    """(B, 1, T, S) bool: padding keys, and for the decoder keys after the query."""
    blocked = torch.zeros(1, 1, T, S, dtype=torch.bool) if pad is None else pad.view(-1, 1, 1, S).expand(-1, 1, T, S)
    if m.causal:
        blocked = blocked | (torch.arange(S).view(1, S) > torch.arange(T).view(T, 1) + offset)
    return blocked


def heads_view(m, x):
    """(T, B, H*d) -> (B, H, T, d), as the mixer splits heads."""
    return m.split_heads(x, m.head_dim)


def test_inference_is_v_gathered_at_the_argmax_of_raw_scores():
    m = make_mixer(Case("hard", Role.ENCODER_SELF))
    x = torch.randn(6, 2, 16, dtype=torch.float64)
    q, k, v = heads_view(m, m.q_proj(x)), heads_view(m, m.k_proj(x)), heads_view(m, m.v_proj(x))
    index = (q @ k.transpose(-1, -2)).argmax(-1)  # eq. (11): raw scores  (B, H, T)
    picked = torch.stack([v[b, h, index[b, h]] for b in range(2) for h in range(4)]).view(2, 4, 6, 4)
    expected = m.out_proj(picked.permute(2, 0, 1, 3).reshape(6, 2, 16))
    torch.testing.assert_close(m(x, x, x)[0], expected, rtol=0, atol=1e-12)


def test_sample_frequencies_match_the_softmax():
    torch.manual_seed(0)
    m = make_mixer(Case("hard", Role.ENCODER_SELF)).train()
    S, N = 6, 20000
    scores = torch.randn(1, 1, 1, S, dtype=torch.float64) * 3
    p = F.softmax(scores * m.scaling, dim=-1).flatten()  # eq. (2)
    index, _, empty = m.sample(scores.expand(N, 1, 1, S), None, 0)  # N independent draws
    assert not empty.any()
    freq = torch.bincount(index.flatten(), minlength=S).double() / N
    std = (p * (1 - p) / N).sqrt()
    assert ((freq - p).abs() <= 5 * std + 1e-12).all(), (freq, p)


def test_straight_through_gradient_equals_dense_reference():
    """eq. (7)-(10): the custom backward == autograd of (onehot + P - P.detach()) @ V."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 3, 5, 7, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, 3, 7, 4, dtype=torch.float64, generator=g, requires_grad=True)
    index = torch.randint(0, 7, (2, 3, 5), generator=g)
    grad = torch.randn(2, 3, 5, 4, dtype=torch.float64, generator=g)

    probs = F.softmax(logits, -1)
    out = hard_module.retrieve(probs, v.permute(2, 0, 1, 3), index)  # time-major V: (S, B, H, dv)
    out.backward(grad)
    ours = logits.grad.clone(), v.grad.clone()
    logits.grad = v.grad = None

    probs = F.softmax(logits, -1)
    onehot = F.one_hot(index, 7).double()
    ref = (onehot + probs - probs.detach()) @ v
    torch.testing.assert_close(out, ref.detach(), rtol=0, atol=1e-12)  # forward: V[i]
    ref.backward(grad)
    torch.testing.assert_close(ours[0], logits.grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ours[1], v.grad, rtol=1e-12, atol=1e-12)


def test_k_samples_gradient_equals_dense_reference():
    """samples=k: the mean of k retrievals, and its straight-through gradient, == autograd
    of (mean of the k one-hots + P - P.detach()) @ V (a sampled key may repeat)."""
    g = torch.Generator().manual_seed(5)
    logits = torch.randn(2, 3, 5, 7, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, 3, 7, 4, dtype=torch.float64, generator=g, requires_grad=True)
    index = torch.randint(0, 7, (2, 3, 5, 4), generator=g)  # 4 samples a query
    grad = torch.randn(2, 3, 5, 4, dtype=torch.float64, generator=g)

    out = hard_module.retrieve(F.softmax(logits, -1), v.permute(2, 0, 1, 3), index)
    out.backward(grad)
    ours = logits.grad.clone(), v.grad.clone()
    logits.grad = v.grad = None

    probs = F.softmax(logits, -1)
    ref = (F.one_hot(index, 7).double().mean(dim=-2) + probs - probs.detach()) @ v
    torch.testing.assert_close(out, ref.detach(), rtol=0, atol=1e-12)
    ref.backward(grad)
    torch.testing.assert_close(ours[0], logits.grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ours[1], v.grad, rtol=1e-12, atol=1e-12)


def test_k_samples_keep_the_expectation_and_divide_the_variance():
    """The option's promise: the mean of k retrievals has one retrieval's expectation, P V,
    and a k-th of its variance."""
    torch.manual_seed(0)
    S, N, k = 6, 4000, 8
    scores = torch.randn(1, 1, 1, S, dtype=torch.float64) * 3
    values = torch.randn(S, 1, 1, 1, dtype=torch.float64)  # one scalar value per key, time-major
    outs = {}
    for samples in (1, k):
        m = make_mixer(Case(f"hard:samples={samples}", Role.ENCODER_SELF)).train()
        index, probs, _ = m.sample(scores.expand(N, 1, 1, S), None, 0)  # N independent queries
        outs[samples] = hard_module.retrieve(probs, values.expand(S, N, 1, 1), index).flatten()
        expected = float(probs[0].flatten() @ values.flatten())  # P V
        assert abs(outs[samples].mean().item() - expected) < 5 * outs[samples].std().item() / N**0.5
    ratio = (outs[k].var() / outs[1].var()).item()
    assert 0.7 / k < ratio < 1.4 / k, ratio


@pytest.mark.parametrize("spec", ["hard", "hard:samples=3"])
def test_module_gradient_equals_dense_reference(spec, monkeypatch):
    """The same check through the whole module in training mode (same samples)."""
    case = Case(spec, Role.DECODER_SELF)
    x = torch.randn(7, 3, 16, dtype=torch.float64)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[0, 5:] = True

    def grads():
        m = make_mixer(case).train()
        torch.manual_seed(11)
        run(m, case, x, key_padding_mask=pad).pow(2).sum().backward()
        return {n: p.grad for n, p in m.named_parameters()}

    ours = grads()

    def dense(probs, v, index):  # v: time-major (S, B, H, dv)
        onehot = F.one_hot(index, probs.size(-1)).to(probs.dtype)
        onehot = onehot.mean(dim=-2) if index.dim() == 4 else onehot  # samples=k
        return (onehot + probs - probs.detach()) @ v.permute(1, 2, 0, 3)

    monkeypatch.setattr(hard_module, "retrieve", dense)
    ref = grads()
    for name in ours:
        torch.testing.assert_close(ours[name], ref[name], rtol=1e-10, atol=1e-12, msg=name)


@pytest.mark.parametrize("role", ROLES, ids=[r.value for r in ROLES])
def test_masked_keys_are_never_sampled_even_with_dropout(role):
    torch.manual_seed(5)
    m = make_mixer(Case("hard", role), dropout=0.5).train()
    B, T, S = 64, 6, 6
    pad = torch.rand(B, S) < 0.3
    pad[:, 0] = False  # fairseq right-pads: position 0 is always a token
    if role is Role.ENCODER_SELF:
        pad[: B // 2, 0] = True  # and left padding too, for the encoder
    pad[1] = True  # a row with no key at all: every query of it must be empty
    blocked = blocked_keys(m, pad, T, S)  # padding, and the future for the decoder
    hits = torch.zeros(B, m.num_heads, T, S)
    for _ in range(20):
        scores = torch.randn(B, m.num_heads, T, S, dtype=torch.float64)
        index, probs, empty = m.sample(scores, pad, 0)
        chosen = F.one_hot(index, S).bool()  # (B, H, T, S)
        live = ~empty
        assert not (chosen & blocked & live.unsqueeze(-1)).any(), "a masked key was sampled"
        # a query is empty exactly when dropout (or the mask) left it no key
        survivors = probs.detach().masked_fill(blocked, 0).sum(-1) > 0
        assert torch.equal(live, survivors)
        hits += (chosen & live.unsqueeze(-1)).double()
    allowed = ~blocked.expand_as(hits)
    assert hits[allowed].sum() > 0 and hits[~allowed].sum() == 0


def test_attention_dropout_drops_keys_from_the_draws():
    """--attention-dropout reaches hard retrieval's sampling: some allowed keys are dropped, and a
    dropped key is never drawn.  (The registry battery's training comparison cannot show it for
    this mixer: a dropout mask shifts the RNG, so the draws differ even with the mask thrown away.)"""
    torch.manual_seed(7)
    m = make_mixer(Case("hard", Role.ENCODER_SELF), dropout=0.5).train()
    B, T, S = 32, 8, 8
    dropped_any = 0
    for _ in range(10):
        scores = torch.zeros(B, m.num_heads, T, S, dtype=torch.float64)  # every key equally likely
        index, probs, empty = m.sample(scores, None, 0)
        dropped = probs.detach() == 0  # (B, H, T, S)
        chosen = F.one_hot(index, S).bool()
        assert not (chosen & dropped & ~empty.unsqueeze(-1)).any(), "a dropped key was drawn"
        dropped_any += int(dropped.sum())
    assert dropped_any > 0.4 * 10 * B * m.num_heads * T * S  # about half the keys, at rate 0.5


@pytest.mark.parametrize("role", ROLES, ids=[r.value for r in ROLES])
def test_training_forward_masks_padding_and_the_future(role):
    """Through forward(): the sampler is handed exactly the padding (at offset 0),
    and no live query retrieves a padding key or, for the decoder, a future one."""
    case = Case("hard", role)
    m = make_mixer(case, dropout=0.3).train()
    calls = []
    sample = m.sample

    def spy(scores, key_padding_mask, offset):
        index, probs, empty = sample(scores, key_padding_mask, offset)
        calls.append((key_padding_mask, offset, index, empty))
        return index, probs, empty

    m.sample = spy
    B, T, S = 4, 6, 5 if role is Role.DECODER_CROSS else 6
    x = torch.randn(T, B, 16, dtype=torch.float64)
    enc = torch.randn(S, B, 16, dtype=torch.float64)
    pad = torch.zeros(B, S, dtype=torch.bool)
    pad[1, 3:] = pad[2, 4:] = True
    expected = pad.view(B, 1, 1, S).expand(B, 1, T, S)
    if role is Role.DECODER_SELF:
        expected = expected | torch.ones(T, S, dtype=torch.bool).triu(1)
    assert torch.equal(blocked_keys(m, pad, T, S), expected)
    for _ in range(10):
        if role is Role.DECODER_CROSS:
            run(m, case, x, enc, enc_padding_mask=pad)
        else:
            run(m, case, x, key_padding_mask=pad)
    assert len(calls) == 10
    for key_padding_mask, offset, index, empty in calls:
        assert torch.equal(key_padding_mask, pad) and offset == 0
        chosen = F.one_hot(index, S).bool() & expected & ~empty.unsqueeze(-1)  # (B, H, T, S)
        assert not chosen.any(), "a padding or future key was retrieved"


def test_train_soft_equals_stock_attention_in_training_mode():
    """``train=soft`` is plain scaled dot-product attention (dropout 0): same outputs
    as fairseq's MultiheadAttention with the same weights."""
    from mixer_cases import stock_attention

    case = Case("hard:train=soft", Role.DECODER_SELF)
    m = make_mixer(case).train()
    stock = stock_attention(Role.DECODER_SELF).double().train()
    stock.load_state_dict(m.state_dict())  # same parameter names and shapes
    x = torch.randn(6, 2, 16, dtype=torch.float64)
    torch.testing.assert_close(run(m, case, x), run(stock, Case("attn", Role.DECODER_SELF), x), rtol=1e-5, atol=1e-6)


def test_table4_switches_load_the_same_weights():
    """Train soft / decode hard and train hard / decode soft need no retraining: the
    hard model has exactly the stock model's parameters, so either checkpoint loads
    into the other with only the mixer spec changed."""
    torch.manual_seed(0)
    soft = build("mixer_small_attn", 50, TINY)
    hard = build("mixer_small_hard_dec", 50, TINY)
    assert soft.state_dict().keys() == hard.state_dict().keys()
    hard.load_state_dict(soft.state_dict())  # strict
    decode_soft = build(
        "mixer_small_hard_dec",
        50,
        TINY + ["--decoder-mixers", "hard:decode=soft", "--decoder-cross-mixers", "hard:decode=soft"],
    )
    decode_soft.load_state_dict(soft.state_dict())
    for m in (soft, hard, decode_soft):
        m.eval()
    src, lens, prev = torch.randint(4, 50, (2, 6)), torch.tensor([6, 6]), torch.randint(4, 50, (2, 5))
    # decode=soft on the same weights is the soft model; decode=hard is not
    torch.testing.assert_close(decode_soft(src, lens, prev)[0], soft(src, lens, prev)[0], rtol=1e-5, atol=1e-5)
    assert not torch.allclose(hard(src, lens, prev)[0], soft(src, lens, prev)[0], atol=1e-3)


# ------------------------------------------------ Table 4 switches, end to end
HARD_EVERYWHERE = ["--encoder-mixers", "hard", "--decoder-mixers", "hard", "--decoder-cross-mixers", "hard"]
ATTN_EVERYWHERE = ["--encoder-mixers", "attn", "--decoder-mixers", "attn", "--decoder-cross-mixers", "attn"]


def _train(e2e_data, save_dir, mixers):
    from conftest import E2E_MODEL_ARGS, E2E_TRAIN_ARGS, e2e_fairseq

    # later flags win in argparse: the shared hybrid's mixers are replaced
    e2e_fairseq("train", e2e_data.bin, *E2E_MODEL_ARGS, *E2E_TRAIN_ARGS, *mixers,
                "--save-dir", save_dir, "--max-update", "8", "--attention-dropout", "0.1")  # fmt: skip
    return save_dir / "checkpoint_last.pt"


def _generate(e2e_data, checkpoint, overrides=None):
    from conftest import E2E_SIZES, E2E_USER_DIR, e2e_fairseq

    extra = ["--model-overrides", repr(overrides)] if overrides else []
    proc = e2e_fairseq(
        "generate", e2e_data.bin, "--user-dir", E2E_USER_DIR, "--task", "translation",
        "--source-lang", "en", "--target-lang", "de", "--path", checkpoint, "--gen-subset", "test",
        "--beam", "4", "--max-len-a", "0", "--max-len-b", "6", "--batch-size", "16", "--cpu",
        "--required-batch-size-multiple", "1", *extra,
    )  # fmt: skip
    log = proc.stdout + proc.stderr
    assert f"Translated {E2E_SIZES['test']} sentences" in log, log[-3000:]
    return log


@pytest.mark.parametrize("trained,decoded", [("hard", "hard"), ("hard", "soft"), ("soft", "hard")])
def test_table4_train_decode_switches_through_fairseq_generate(e2e_data, tmp_path_factory, trained, decoded):
    """Table 4: a model trained with one attention is decoded with the other by
    fairseq's own --model-overrides, without retraining."""
    cache = tmp_path_factory.getbasetemp() / f"hard_trained_{trained}"
    checkpoint = cache / "checkpoint_last.pt"
    if not checkpoint.is_file():
        _train(e2e_data, cache, HARD_EVERYWHERE if trained == "hard" else ATTN_EVERYWHERE)
    spec = {"hard": "hard", "soft": "hard:decode=soft"}[decoded]
    roles = ("encoder_mixers", "decoder_mixers", "decoder_cross_mixers")
    overrides = None if (trained, decoded) == ("hard", "hard") else {r: spec for r in roles}
    log = _generate(e2e_data, checkpoint, overrides)
    assert f"decoder.1: self={spec} cross={spec}" in log, log[-3000:]  # the model that decoded


# ------------------------------------------------ diagnostics without training
def test_head_stats_read_flat_and_sharp_distributions():
    from mixer_plugin.analysis.hard_diagnostics import head_stats

    probs = torch.zeros(1, 2, 3, 4, dtype=torch.float64)
    probs[0, 0] = 0.25  # head 0: flat over 4 keys
    probs[0, 1, :, 1] = 1.0  # head 1: one-hot
    probs[0, :, 2] = 0.0  # query 2: no key left (a padding query): not counted
    probs[0, :, 2, 0] = 1.0
    real = torch.tensor([[True, True, True]])
    entropy, relative, largest, count = head_stats(probs, real)
    torch.testing.assert_close(count, torch.tensor([2.0, 0.0], dtype=torch.float64))  # one-hot rows: one key
    torch.testing.assert_close(entropy / 2, torch.tensor([math.log(4), 0.0], dtype=torch.float64))
    torch.testing.assert_close(relative[0] / 2, torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(largest[0] / 2, torch.tensor(0.25, dtype=torch.float64))


def test_diagnostics_leave_the_model_as_it_was():
    from mixer_plugin.analysis.hard_diagnostics import diagnose, hard_modules

    torch.manual_seed(0)
    model = build("mixer_small_hard_dec", 50, TINY).eval()
    src, lens, prev = torch.randint(4, 50, (2, 6)), torch.tensor([6, 6]), torch.randint(4, 50, (2, 5))
    before = model(src, lens, prev)[0]
    batch = {"net_input": {"src_tokens": src, "src_lengths": lens, "prev_output_tokens": prev},
             "target": torch.randint(4, 50, (2, 5))}  # fmt: skip
    result = diagnose(model, [batch], pad=1, draws=2)
    assert len(result["heads"]) == len(hard_modules(model)) * 4
    assert all(0 <= r["entropy_vs_uniform"] <= 1 + 1e-9 and 0 < r["max_prob"] <= 1 for r in result["heads"])
    n = result["nll"]
    assert n["sampled"] != n["argmax"] and n["soft"] != n["argmax"]
    assert not model.training and all(m.decode_mode == "hard" and not m.training for m in hard_modules(model).values())
    torch.testing.assert_close(model(src, lens, prev)[0], before)  # spied: the same outputs


def test_diagnostics_on_a_trained_checkpoint(e2e_data, tmp_path_factory, tmp_path):
    import json
    import subprocess
    import sys

    cache = tmp_path_factory.getbasetemp() / "hard_trained_hard"
    checkpoint = cache / "checkpoint_last.pt"
    if not checkpoint.is_file():
        _train(e2e_data, cache, HARD_EVERYWHERE)
    out = tmp_path / "diag.json"
    proc = subprocess.run(
        [sys.executable, "-m", "mixer_plugin.analysis.hard_diagnostics", str(checkpoint), str(e2e_data.bin),
         "--max-sentences", "40", "--draws", "2", "--json", str(out), "--md", str(tmp_path / "diag.md")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    modules = {r["module"] for r in result["heads"]}
    assert len(modules) == 9 and "decoder.layers.2.encoder_attn" in modules  # 3 + 3 self, 3 cross
    assert all(r["queries"] > 0 and 0 < r["max_prob"] <= 1 for r in result["heads"])
    assert all(math.isfinite(v) for v in result["nll"].values())
    assert "| sampled (eq. 4-5, as trained; 2 draws) |" in (tmp_path / "diag.md").read_text()
