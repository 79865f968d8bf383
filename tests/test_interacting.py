"""Interacting-head attention and its baselines (talking-heads, fixed head size), beyond
the registry battery: the efficient forms against the paper's literal loops at more
heads, equivalences with the stock fairseq attention, parameter claims, the §3.4
max-heads rule on binarized data, and one end-to-end train -> generate run."""

import json
import sys

import numpy as np
import pytest
import torch
from conftest import E2E_TRAIN_ARGS, E2E_USER_DIR, e2e_fairseq, e2e_run
from fairseq.data import indexed_dataset
from fairseq.modules import MultiheadAttention
from mixer_cases import Case, run
from mixer_refs import NAIVE

from mixer_plugin.mixers import MixerContext, Role, build_mixer
from mixer_plugin.mixers.registry import parse_item

ROLES = list(Role)
STOCK_TOL = dict(rtol=1e-5, atol=1e-6)  # fairseq's MHA takes its softmax in float32
TIGHT = dict(rtol=1e-10, atol=1e-11)


def stock(role: Role, D: int, H: int):
    if role is Role.DECODER_CROSS:
        return MultiheadAttention(D, H, kdim=D, vdim=D, encoder_decoder_attention=True)
    return MultiheadAttention(D, H, self_attention=True)


def mixer(spec: str, role: Role, D: int = 32, H: int = 8, seed: int = 0):
    torch.manual_seed(seed)
    ctx = MixerContext(
        role=role,
        layer_index=0,
        embed_dim=D,
        kv_dim=D,
        num_heads=H,
        attention_dropout=0.0,
        build_stock=lambda: stock(role, D, H),
    )
    return build_mixer(parse_item(role.flag, spec), ctx).double().eval()


def inputs(D=32, T=6, B=3, S=5, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, B, D, generator=g, dtype=torch.float64)
    enc = torch.randn(S, B, D, generator=g, dtype=torch.float64)
    pad_x = torch.zeros(B, T, dtype=torch.bool)
    pad_x[1, 4:] = True  # right padding, as fairseq pads targets
    pad_enc = torch.zeros(B, S, dtype=torch.bool)
    pad_enc[2, :2] = True  # left padding, as fairseq pads sources
    return x, enc, pad_x, pad_enc


def forward(m, role, x, enc, pad_x, pad_enc, **kw):
    case = Case("-", role)
    if role is Role.DECODER_CROSS:
        return run(m, case, x, enc, enc_padding_mask=pad_enc, **kw)
    return run(m, case, x, key_padding_mask=pad_x, **kw)


def stepwise(m, role, x, enc, pad_enc):
    state = {}
    case = Case("-", role)
    steps = [
        run(m, case, x[t : t + 1], enc, enc_padding_mask=pad_enc, incremental_state=state) for t in range(x.size(0))
    ]
    return torch.cat(steps)


def real_rows(role, pad_x):
    """Query positions that are tokens (padding queries are never read)."""
    return ~pad_x.t() if role is not Role.DECODER_CROSS else torch.ones_like(pad_x.t())


def assert_same_as_stock(m, ref, role):
    """Full forward (token rows) and, for decoder roles, step-by-step decoding agree."""
    x, enc, pad_x, pad_enc = inputs(D=m.embed_dim)
    real = real_rows(role, pad_x)
    ours = forward(m, role, x, enc, pad_x, pad_enc)
    torch.testing.assert_close(ours[real], forward(ref, role, x, enc, pad_x, pad_enc)[real], **STOCK_TOL)
    if role is not Role.ENCODER_SELF:
        torch.testing.assert_close(
            stepwise(m, role, x, enc, pad_enc), stepwise(ref, role, x, enc, pad_enc), **STOCK_TOL
        )


# ------------------------------------------- efficient == Algorithm 1, more heads
SPECS = [
    "interacting",
    "interacting:scale=none",
    "interacting:scale=dk",
    "interacting:heads=16",
    "interacting:reading=pairwise",
    "interacting:reading=pairwise:heads=2:head_dim=12",
]


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.value)
@pytest.mark.parametrize("spec", SPECS)
def test_efficient_equals_algorithm1_fp64(spec, role):
    """The one-SDPA forms == the literal double loop over head pairs (i, j) of
    Algorithm 1 (or of the pairwise reading), D=32 and up to 16 heads, in float64."""
    m = mixer(spec, role)
    x, enc, pad_x, pad_enc = inputs()
    out = forward(m, role, x, enc, pad_x, pad_enc)
    ref = NAIVE["interacting"](m, Case(spec, role, heads=8), x, enc, pad_enc if role is Role.DECODER_CROSS else pad_x)
    real = real_rows(role, pad_x)
    torch.testing.assert_close(out[real], ref[real], **TIGHT)


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.value)
def test_sum_reading_is_stock_attention_with_the_summed_query(role):
    """sum_i q_i k_j^T = (sum_i q_i) k_j^T: interacting == fairseq's own MHA whose query
    map is replaced by sum_i W_q^i (the same for every head), incremental decoding too."""
    D, H = 32, 8
    m = mixer("interacting:scale=dk", role, D, H)  # MHA's 1/sqrt(d_k)
    ref = stock(role, D, H).double().eval()
    ref.load_state_dict(m.state_dict())  # same names and shapes: an attn checkpoint loads
    with torch.no_grad():
        w = m.q_proj.weight.view(H, D // H, D).sum(0)  # (d, D): sum over query heads
        ref.q_proj.weight.copy_(w.repeat(H, 1))
        ref.q_proj.bias.copy_(m.q_proj.bias.view(H, D // H).sum(0).repeat(H))
    assert_same_as_stock(m, ref, role)


def logit_std(m, x, scale):
    """Standard deviation of q . k * scale over all query/key pairs and heads (one
    summed query for interacting heads, as Algorithm 1 sums the head products)."""
    H = m.num_heads
    q = m.q_proj(x).view(len(x), H, -1)
    k = m.k_proj(x).view(len(x), H, -1)
    if isinstance(m, MultiheadAttention):
        return (torch.einsum("thd,shd->hts", q, k) * scale).std()
    return (torch.einsum("td,shd->hts", q.sum(1), k) * scale).std()


def test_default_scale_keeps_logits_at_one_heads_scale():
    """Summing H head products multiplies the logit variance by H.  The default scale
    (hdk, the reference code's 1/sqrt(d_model)) brings the logits back to MHA's spread
    at initialisation; Algorithm 1 line 6's 1/sqrt(d_k) leaves them sqrt(H) wider."""
    D, H = 512, 8
    x = torch.randn(200, D, dtype=torch.float64)
    stds = {}
    for spec in ("interacting", "interacting:scale=dk"):
        m = mixer(spec, Role.ENCODER_SELF, D, H, seed=1)
        stds[spec] = float(logit_std(m, x, m.logit_scale))
    mha = float(logit_std(stock(Role.ENCODER_SELF, D, H).double(), x, (D // H) ** -0.5))
    assert stds["interacting"] == pytest.approx(mha, rel=0.2)
    assert stds["interacting:scale=dk"] == pytest.approx(mha * H**0.5, rel=0.2)


@pytest.mark.parametrize("spec", ["interacting", "interacting:reading=pairwise", "interacting:scale=dk"])
@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.value)
def test_one_head_is_plain_attention(spec, role):
    """With H = 1 there is one head pair: both readings are scaled dot-product attention
    (and H d_k = d_k, so every scale option is 1/sqrt(d_k))."""
    m = mixer(spec, role, D=16, H=1)
    ref = stock(role, 16, 1).double().eval()
    ref.load_state_dict(m.state_dict())
    assert_same_as_stock(m, ref, role)


def test_parameter_counts():
    """§3.2 (1) / §4.6.4: the sum reading adds no parameters; the pairwise reading's
    output map reads H^2 d_v; talking-heads adds 2 H^2; fixed head size scales with H d_p."""
    D, H = 32, 8
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    attn = count(stock(Role.ENCODER_SELF, D, H))
    assert count(mixer("interacting", Role.ENCODER_SELF, D, H)) == attn
    pairwise = mixer("interacting:reading=pairwise", Role.ENCODER_SELF, D, H)
    assert pairwise.out_proj.in_features == H * H * (D // H)
    assert count(pairwise) == attn + (H - 1) * D * D
    assert count(mixer("talking_heads", Role.ENCODER_SELF, D, H)) == attn + 2 * H * H
    fixed = mixer("fixed_head:head_dim=10", Role.ENCODER_SELF, D, H)
    assert count(fixed) == 4 * D * H * 10 + 3 * H * 10 + D


# ------------------------------------------------------------------ talking heads
@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.value)
def test_talking_heads_identity_is_stock_attention(role):
    """P_l = P_w = I (the default init): fairseq's own MHA with the same weights, in the
    full forward, step-by-step decoding and the per-head attention weights."""
    D, H = 32, 8
    m = mixer("talking_heads", role, D, H)
    ref = stock(role, D, H).double().eval()
    missing = m.load_state_dict(ref.state_dict(), strict=False).missing_keys
    assert sorted(missing) == ["post_softmax", "pre_softmax"]
    assert torch.equal(m.pre_softmax, torch.eye(H, dtype=m.pre_softmax.dtype))
    assert_same_as_stock(m, ref, role)
    if role is Role.DECODER_CROSS:
        x, enc, _, pad_enc = inputs(D)
        kw = dict(
            query=x,
            key=enc,
            value=enc,
            key_padding_mask=pad_enc,
            static_kv=True,
            need_weights=True,
            need_head_weights=True,
        )
        torch.testing.assert_close(m(**kw)[1], ref(**kw)[1].double(), **STOCK_TOL)  # (H, B, T, S)


def test_talking_heads_mixing_changes_the_output_and_learns():
    """With non-identity maps the layer is no longer MHA (so the test above can fail),
    and both maps receive gradient."""
    role = Role.DECODER_SELF
    m = mixer("talking_heads:init=normal", role)
    ref = stock(role, 32, 8).double().eval()
    ref.load_state_dict({k: v for k, v in m.state_dict().items() if "softmax" not in k})
    x, enc, pad_x, pad_enc = inputs()
    out = forward(m.train(), role, x, enc, pad_x, pad_enc)
    assert (out - forward(ref, role, x, enc, pad_x, pad_enc)).abs().max() > 1e-3
    out[real_rows(role, pad_x)].pow(2).sum().backward()
    assert m.pre_softmax.grad.abs().sum() > 0 and m.post_softmax.grad.abs().sum() > 0


# ------------------------------------------------------------- fixed head size
@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.value)
def test_fixed_head_at_d_over_h_is_stock_attention(role):
    D, H = 32, 8
    m = mixer(f"fixed_head:head_dim={D // H}", role, D, H)
    ref = stock(role, D, H).double().eval()
    m.load_state_dict(ref.state_dict())  # strict: the same parameters
    assert_same_as_stock(m, ref, role)


# ---------------------------------------------------------- §3.4 max-heads rule
from mixer_plugin.analysis import max_heads  # noqa: E402


def write_dataset(prefix, lengths):
    """A binarized fairseq dataset (mmap) whose sentences have these lengths plus EOS."""
    builder = indexed_dataset.make_builder(f"{prefix}.bin", "mmap", vocab_size=100)
    for n in lengths:
        builder.add_item(torch.IntTensor(np.arange(4, 4 + n + 1) % 100))  # n tokens + EOS
    builder.finalize(f"{prefix}.idx")


@pytest.fixture()
def tiny_bin(tmp_path):
    write_dataset(tmp_path / "train.en-de.en", [3, 5, 7])
    write_dataset(tmp_path / "train.en-de.de", [2, 4, 6])
    return tmp_path


def test_max_heads_rule_on_a_tiny_dataset(tiny_bin, capsys):
    out = tiny_bin / "r.json"
    max_heads.main([str(tiny_bin), "--d-model", "18", "--json", str(out)])
    r = json.loads(out.read_text())
    assert r["mean_length"] == pytest.approx(4.5)  # (3+5+7+2+4+6) / 6, EOS not counted
    assert r["max_heads"] == pytest.approx(4.0)  # 18 / 4.5
    assert (r["max_heads_int"], r["max_heads_dividing_d_model"], r["fixed_head_dim"]) == (4, 3, 5)
    assert r["per_language"]["en"]["mean_length"] == pytest.approx(5.0)
    max_heads.main([str(tiny_bin), "--d-model", "18", "--side", "tgt", "--count-eos", "--json", str(out)])
    assert json.loads(out.read_text())["mean_length"] == pytest.approx(5.0)  # (3+5+7) / 3
    max_heads.main([str(tiny_bin / "train.en-de.de"), "--d-model", "512"])  # one dataset by prefix
    assert "d_model / n = 512 / 4.00 = 128.00" in capsys.readouterr().out


def bad_inputs(tmp_path):
    ok = tmp_path / "ok"
    ok.mkdir()
    write_dataset(ok / "train.en-de.en", [3])
    write_dataset(ok / "train.en-de.de", [3])
    write_dataset(ok / "train.de-en.de", [3])
    write_dataset(ok / "train.de-en.en", [3])
    broken = tmp_path / "broken"
    broken.mkdir()
    for lang in ("en", "de"):
        (broken / f"train.en-de.{lang}.idx").write_bytes(b"not an index at all")
        (broken / f"train.en-de.{lang}.bin").write_bytes(b"")
    half = tmp_path / "half"
    half.mkdir()
    write_dataset(half / "train.en-de.en", [3])
    (half / "train.en-de.en.bin").unlink()
    return {
        "missing directory": ([str(tmp_path / "nope")], "nope"),
        "no train split": ([str(tmp_path)], "no binarized 'train' split"),
        "two pairs": ([str(ok)], "--source-lang"),
        "pair not there": ([str(ok), "-s", "en", "-t", "fr"], "en-fr"),
        "one of -s/-t": ([str(ok), "-s", "en"], "--target-lang"),
        "corrupt index": ([str(broken)], "train.en-de.en.idx"),
        "missing .bin": ([str(half / "train.en-de.en")], "train.en-de.en.bin"),
        "side of one dataset": ([str(half / "train.en-de.en"), "--side", "src"], "--side"),
        "bad d_model": ([str(ok), "--d-model", "0"], "--d-model"),
    }


def test_max_heads_bad_input_is_one_line(tmp_path, capsys):
    for what, (argv, needle) in bad_inputs(tmp_path).items():
        with pytest.raises(SystemExit) as e:
            max_heads.main(argv)
        assert e.value.code == 2, what
        err = capsys.readouterr().err.strip().splitlines()
        assert needle in err[-1] and "error" in err[-1], (what, err)
        if what != "bad d_model":  # argparse prints its usage line first
            assert len(err) == 1, (what, err)


def test_max_heads_on_preprocessed_text_counts_its_tokens(e2e_data):
    """Through fairseq-preprocess: the mean is the mean whitespace-token count of the
    raw training text (fairseq's tokenizer splits on whitespace; EOS not counted)."""
    proc = e2e_run(
        [
            sys.executable,
            "-m",
            "mixer_plugin.analysis.max_heads",
            e2e_data.bin,
            "--d-model",
            "512",
            "--json",
            e2e_data.bin / "max_heads.json",
        ]
    )
    r = json.loads((e2e_data.bin / "max_heads.json").read_text())
    words = [len(line.split()) for lang in ("en", "de") for line in e2e_data.lines("train", lang)]
    assert r["mean_length"] == pytest.approx(sum(words) / len(words))
    assert f"{r['max_heads']:.2f}" in proc.stdout


# ------------------------------------------------------- end to end, stock CLIs
def test_train_and_generate_with_every_new_mixer(e2e_data, tmp_path):
    """fairseq-train then fairseq-generate (beam search over the kv cache) with the three
    mixers and both interacting readings in all three roles."""
    model = [
        "--user-dir", E2E_USER_DIR, "--task", "translation", "--source-lang", "en", "--target-lang", "de",
        "--arch", "mixer_small_attn", "--share-all-embeddings",
        "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "4",
        "--decoder-embed-dim", "32", "--decoder-ffn-embed-dim", "64", "--decoder-attention-heads", "4",
        "--encoder-mixers", "interacting,talking_heads",
        "--decoder-mixers", "talking_heads:init=normal,interacting:reading=pairwise",
        "--decoder-cross-mixers", "interacting:scale=hdk,fixed_head:head_dim=12",
    ]  # fmt: skip
    proc = e2e_fairseq("train", e2e_data.bin, *model, *E2E_TRAIN_ARGS, "--save-dir", tmp_path, "--max-update", "3")
    log = proc.stdout + proc.stderr
    for line in (
        "encoder.1: self=talking_heads",
        "decoder.1: self=interacting:reading=pairwise cross=fixed_head:head_dim=12",
    ):
        assert line in log, line
    gen = e2e_fairseq(
        "generate",
        e2e_data.bin,
        "--user-dir",
        E2E_USER_DIR,
        "--task",
        "translation",
        "--source-lang",
        "en",
        "--target-lang",
        "de",
        "--path",
        tmp_path / "checkpoint_last.pt",
        "--gen-subset",
        "test",
        "--beam",
        "2",
        "--batch-size",
        "16",
        "--max-len-b",
        "8",
        "--required-batch-size-multiple",
        "1",
        "--cpu",
    )
    hyps = [line for line in gen.stdout.splitlines() if line.startswith("H-")]
    assert len(hyps) == len(e2e_data.lines("test", "de"))
