"""The model around the mixers: stock numerics for `attn`, named archs, spec errors,
model-level incremental decoding and beam search, and the stack fixes."""

import argparse
import io
import pickle

import pytest
import torch
from fairseq.data import Dictionary
from fairseq.models import ARCH_MODEL_REGISTRY
from fairseq.sequence_generator import SequenceGenerator

import mixer_plugin  # noqa: F401  (registers everything)
from mixer_plugin.build import _Task, build, model_args
from mixer_plugin.mixers import MIXER_REGISTRY, MixerSpecError, Role
from mixer_plugin.mixers.base import MixerBase
from mixer_plugin.models.architectures import ARCHITECTURES

TINY = [
    "--encoder-embed-dim",
    "32",
    "--encoder-ffn-embed-dim",
    "64",
    "--encoder-attention-heads",
    "4",
    "--decoder-embed-dim",
    "32",
    "--decoder-ffn-embed-dim",
    "64",
    "--decoder-attention-heads",
    "4",
    "--dropout",
    "0",
    "--share-all-embeddings",
]
EVERY_MIXER = ["--encoder-mixers", "ngram:global=1,local", "--decoder-mixers", "ngram:n=3,local:n=2"]


def test_all_attn_is_the_stock_transformer():
    """Same parameter names, shapes, initial values and outputs as fairseq's transformer."""
    torch.manual_seed(0)
    ours = build("mixer_small_attn", 50, TINY)
    args = model_args("transformer", TINY + ["--encoder-layers", "2", "--decoder-layers", "2"])
    torch.manual_seed(0)
    stock = ARCH_MODEL_REGISTRY["transformer"].build_model(args, _Task(50))
    a, b = ours.state_dict(), stock.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    ours.eval(), stock.eval()
    src = torch.randint(4, 50, (2, 6))
    prev = torch.randint(4, 50, (2, 5))
    lens = torch.tensor([6, 6])
    assert torch.equal(ours(src, lens, prev)[0], stock(src, lens, prev)[0])


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_named_architectures_build_and_run(arch):
    """Every named arch builds, runs, and trains every parameter it counts: a projection a
    mixer creates but never uses would inflate the parameter column the archs reproduce.
    40 tokens, so that every ratio scale of the multi-scale archs (down to n/16) spans more
    than the token itself (a one-token window leaves its head's q and k untrained)."""
    torch.manual_seed(0)
    model = build(arch, 64, ["--share-all-embeddings"]).train()
    src = torch.randint(4, 64, (1, 40))
    out = model(src, torch.tensor([40]), torch.randint(4, 64, (1, 40)))[0]
    assert out.shape == (1, 40, 64) and torch.isfinite(out).all()
    out.float().logsumexp(-1).sum().backward()
    untrained = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not untrained, untrained


def test_mixer_summary_reflects_specs():
    model = build("mixer_small_hybrid", 50, TINY + EVERY_MIXER)
    assert model.mixer_summary() == [
        "encoder.0: self=ngram:global=1",
        "encoder.1: self=local",
        "decoder.0: self=ngram:n=3 cross=attn",
        "decoder.1: self=local:n=2 cross=attn",
    ]


@pytest.mark.parametrize(
    "flags,slot,act",
    [
        ([], 0.0, 0.0),
        (["--attention-dropout", "0.2", "--activation-dropout", "0.3"], 0.2, 0.3),
        (["--relu-dropout", "0.3"], 0.0, 0.3),
    ],
)
def test_dropout_flags_reach_the_ngram_mixers(flags, slot, act):
    """fairseq's --attention-dropout and --activation-dropout reach every multiNN layer of a
    built model (window slots and the ReLU; docs/multinn.md), as they reach attention and
    the FFN; the legacy --relu-dropout stands in for --activation-dropout as in the stock
    layers."""
    model = build("mixer_small_hybrid", 50, TINY + EVERY_MIXER + flags)
    ngrams = [m for m in model.modules() if type(m).__name__ == "NgramMixer"]
    assert len(ngrams) == 2
    assert all((m.slot_dropout, m.activation_dropout) == (slot, act) for m in ngrams)


BAD_SPECS = [
    (["--encoder-mixers", "ngram,ngram,ngram"], "--encoder-mixers"),  # 3 specs, 2 layers
    (["--decoder-mixers", "ngram:global=1"], "--decoder-mixers"),  # encoder-only option
    (["--decoder-cross-mixers", "ngram"], "--decoder-cross-mixers"),  # role not supported
    (["--encoder-mixers", "ngram:heads=3"], "--encoder-mixers"),  # 32 % 3 != 0
    (["--decoder-mixers", "local", "--cross-self-attention"], "--cross-self-attention"),
]


@pytest.mark.parametrize("extra,flag", BAD_SPECS, ids=[" ".join(e) for e, _ in BAD_SPECS])
def test_bad_specs_fail_at_build_naming_the_flag(extra, flag):
    with pytest.raises(MixerSpecError) as e:
        build("mixer_small_attn", 50, TINY + extra)
    message = str(e.value)
    assert flag in message and "\n" not in message


SYNTAX_ERRORS = ["foo", "ngram:n=0", "ngram:foo=1", "ngram:n=x", "ngram*0", "ngram:proj=other", "local:n"]


@pytest.mark.parametrize("spec", SYNTAX_ERRORS)
def test_bad_spec_syntax_is_an_argparse_error(spec, capsys):
    with pytest.raises(SystemExit):
        model_args("mixer_small_attn", ["--encoder-mixers", spec])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --encoder-mixers" in err, err


def _hybrid(seed=0):
    torch.manual_seed(seed)
    return build("mixer_small_hybrid", 60, TINY + EVERY_MIXER).double().eval()


def test_model_incremental_decoding_equals_full_forward():
    model = _hybrid()
    src = torch.randint(4, 60, (3, 7))
    src[0, :3] = model.encoder.padding_idx  # fairseq left-pads sources
    lens = (src != model.encoder.padding_idx).sum(1)
    prev = torch.randint(4, 60, (3, 6))
    enc = model.encoder(src, lens)
    full = model.decoder(prev, enc)[0]
    state = {}
    steps = [model.decoder(prev[:, : t + 1], enc, incremental_state=state)[0] for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-6)


def test_beam_search_matches_full_forward_scores():
    """Beam search through fairseq's SequenceGenerator (incremental state, beam
    reordering) scores each hypothesis as a full forward pass does."""
    model = _hybrid(1)
    d = Dictionary()
    for i in range(60 - len(d)):
        d.add_symbol(f"w{i}")
    gen = SequenceGenerator([model], d, beam_size=4, max_len_b=8, min_len=8)
    src = torch.randint(4, 60, (2, 6))
    lens = torch.tensor([6, 6])
    hyps = gen.forward({"net_input": {"src_tokens": src, "src_lengths": lens}})
    for b, beams in enumerate(hyps):
        assert len(beams) == 4
        for hyp in beams:
            tokens = hyp["tokens"]
            prev = torch.cat([tokens.new([d.eos()]), tokens[:-1]]).unsqueeze(0)
            logits = model(src[b : b + 1], lens[b : b + 1], prev)[0]
            lprobs = torch.log_softmax(logits.float(), -1)[0]
            pos = lprobs.gather(1, tokens.unsqueeze(1)).squeeze(1)
            torch.testing.assert_close(pos.float(), hyp["positional_scores"].float(), rtol=1e-4, atol=1e-4)


class NotAllowlisted:
    pass


def test_checkpoint_classes_load_with_weights_only():
    state = {"args": argparse.Namespace(arch="mixer_small_attn"), "model": {"w": torch.ones(2)}}
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=True)
    assert loaded["args"].arch == "mixer_small_attn"

    buf = io.BytesIO()
    torch.save({"x": NotAllowlisted()}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):  # weights_only is still on for anything else
        torch.load(buf, weights_only=True)


def test_numpy2_bucketing_fixes():
    import numpy as np
    from fairseq.data import data_utils
    from fairseq.data.language_pair_dataset import LanguagePairDataset

    sizes = np.array([3, 9, 4, 12, 7, 5, 8, 10])
    buckets = data_utils.get_buckets(sizes, 4)
    assert list(buckets) == sorted(set(buckets)) and buckets[-1] == 12

    d = Dictionary()
    for w in "abcdefgh":
        d.add_symbol(w)
    src = [torch.tensor([d.index("a")] * int(n) + [d.eos()]) for n in sizes]
    ds = LanguagePairDataset(src, sizes + 1, d, tgt=src, tgt_sizes=sizes + 1, tgt_dict=d, num_buckets=3)
    assert ds.buckets is not None and len(ds.buckets) <= 3


# ------------------------------------------- every mixer in every role it takes
def _family_specs(spec):
    """--encoder/--decoder/--decoder-cross mixers: ``spec`` in every role its mixer
    supports, ``attn`` elsewhere."""
    roles = MIXER_REGISTRY[spec.split(":")[0]].roles
    return [
        "--encoder-mixers",
        spec if Role.ENCODER_SELF in roles else "attn",
        "--decoder-mixers",
        spec if Role.DECODER_SELF in roles else "attn",
        "--decoder-cross-mixers",
        spec if Role.DECODER_CROSS in roles else "attn",
    ]


FAMILIES = sorted(MIXER_REGISTRY)


def _family(spec, seed=0):
    torch.manual_seed(seed)
    return build("mixer_small_attn", 60, TINY + _family_specs(spec))


def _batch(model, B=3, S=7, T=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 60, (B, S), generator=g)
    src[1, :3] = model.encoder.padding_idx  # fairseq left-pads sources
    lens = (src != model.encoder.padding_idx).sum(1)
    prev = torch.randint(4, 60, (B, T), generator=g)
    return src, lens, prev


class HostSync(RuntimeError):
    pass


@pytest.fixture
def no_host_sync(monkeypatch):
    """While any plugin mixer runs, reading a tensor's value back to Python (what
    blocks a GPU until its queue drains) raises HostSync."""
    running = []

    def guarded(name):
        original = getattr(torch.Tensor, name)

        def method(self, *args, **kwargs):
            if running:
                raise HostSync(f"Tensor.{name} inside {running[-1]}")
            return original(self, *args, **kwargs)

        return method

    for name in ("item", "tolist", "__bool__", "__int__", "__float__", "__index__"):
        monkeypatch.setattr(torch.Tensor, name, guarded(name))

    def enter(module, args):
        running.append(type(module).__name__)

    def leave(module, args, out):
        running.pop()

    def watch(model):
        for module in model.modules():
            if isinstance(module, MixerBase):
                module.register_forward_pre_hook(enter)
                module.register_forward_hook(leave)
        return model

    return watch


@pytest.mark.parametrize("name", FAMILIES)
def test_decoding_steps_never_sync_with_the_host(name, no_host_sync):
    """Beam search through fairseq's SequenceGenerator with alignment weights asked
    for (the last layer's cross mixer returns them every step): no mixer reads a
    value back to the host.  Left-padded sources, ratio scales of multiscale."""
    model = no_host_sync(_family(name).eval())
    d = Dictionary()
    for i in range(60 - len(d)):
        d.add_symbol(f"w{i}")
    src, lens, _ = _batch(model)
    gen = SequenceGenerator([model], d, beam_size=3, max_len_b=6, min_len=6)
    hyps = gen.forward({"net_input": {"src_tokens": src, "src_lengths": lens}})
    assert len(hyps) == 3 and all(h[0]["attention"].shape == (7, 7) for h in hyps)


LOW_PRECISION = [torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", LOW_PRECISION, ids=lambda t: str(t)[6:])
@pytest.mark.parametrize("name", FAMILIES)
def test_whole_model_in_half_and_bfloat16(name, dtype):
    """What --fp16 / --bf16 do to the model (``.half()``, ``.bfloat16()``): forward and
    incremental decoding finite and close to float32, backward finite.  Hard
    retrieval's argmax may flip on a near tie, which changes a whole sentence, so its
    closeness is checked decoding soft (the same module and weights)."""
    for spec in [name] if name != "hard" else ["hard", "hard:decode=soft"]:
        ref_model = _family(spec).eval()
        src, lens, prev = _batch(ref_model)
        ref = ref_model(src, lens, prev)[0].log_softmax(-1)
        model = _family(spec).to(dtype).eval()
        enc = model.encoder(src, lens)
        state = {}
        steps = [model.decoder(prev[:, : t + 1], enc, incremental_state=state)[0] for t in range(6)]
        for got in (model(src, lens, prev)[0], torch.cat(steps, dim=1)):
            got = got.float().log_softmax(-1)
            assert torch.isfinite(got).all()
            if spec != "hard":
                torch.testing.assert_close(got, ref, rtol=0, atol=0.1)
    model = _family(name).to(dtype).train()
    model(src, lens, prev)[0].float().logsumexp(-1).mean().backward()
    assert all(torch.isfinite(p.grad.float()).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize(
    "arch,conv", [("mixer_small_lightconv", "Lightweight"), ("mixer_small_dynamicconv", "Dynamic")]
)
def test_fairseqs_convolutions_take_the_recipes_flags(arch, conv):
    """fairseq's LightConv / DynamicConv as the leaderboard's peers: each arch builds its own
    convolution (fairseq's argparse default would make both dynamic), Wu et al.'s kernel
    for each layer's depth, and the recipe's dropouts reach it: --activation-dropout after
    the FFN's ReLU (the model's --relu-dropout), --attention-dropout on the kernel weights."""
    model = build(
        arch, 50, TINY + ["--attention-dropout", "0.2", "--activation-dropout", "0.3"] + ["--encoder-layers", "6"]
    )
    convs = [layer.conv for layer in model.encoder.layers]
    assert all(type(c).__name__.startswith(conv) for c in convs + [layer.conv for layer in model.decoder.layers])
    assert [c.kernel_size for c in convs] == [3, 7, 15, 31, 31, 31]
    assert [layer.conv.kernel_size for layer in model.decoder.layers] == [3, 7]
    assert {layer.relu_dropout_module.p for layer in model.encoder.layers} == {0.3}
    assert {c.weight_dropout_module.p for c in convs} == {0.2}
    with pytest.raises(ValueError, match="--encoder-kernel-size-list"):
        build(arch, 50, TINY + ["--encoder-layers", "8"])
