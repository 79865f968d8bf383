"""The training set-ups from outside fairseq (mixer_plugin/models/setups.py), model flags
that an ablation switches one at a time: Xu et al. 2020a's Lipschitz-constrained
initialisation and attention projections without bias, for every mixer in every role."""

import math

import pytest
import torch
from conftest import E2E_MODEL_ARGS, E2E_TRAIN_ARGS, e2e_fairseq
from fairseq.modules import MultiheadAttention

from mixer_plugin.build import build
from mixer_plugin.mixers import MIXER_REGISTRY, Role
from mixer_plugin.mixers.attention_base import AttentionMixer
from mixer_plugin.models.setups import ATTENTION_PROJECTIONS

TINY = ["--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "4",
        "--decoder-embed-dim", "32", "--decoder-ffn-embed-dim", "64", "--decoder-attention-heads", "4",
        "--share-all-embeddings"]  # fmt: skip


def everywhere(name):
    """``name`` in every role its mixer fills, ``attn`` elsewhere."""
    roles = MIXER_REGISTRY[name].roles
    return [
        "--encoder-mixers", name if Role.ENCODER_SELF in roles else "attn",
        "--decoder-mixers", name if Role.DECODER_SELF in roles else "attn",
        "--decoder-cross-mixers", name if Role.DECODER_CROSS in roles else "attn",
    ]  # fmt: skip


def attention_biases(model):
    return {
        f"{path}.{proj}": getattr(module, proj).bias
        for path, module in model.named_modules()
        if isinstance(module, (MultiheadAttention, AttentionMixer))
        for proj in ATTENTION_PROJECTIONS
    }


def test_lipschitz_init_bounds_every_linear_and_embedding():
    model = build("mixer_small_attn", 100, [*TINY, "--encoder-mixers", "ngram", "--param-init", "lipschitz"])
    emb = model.encoder.embed_tokens.weight
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.weight is not emb]
    for m in linears:
        assert m.weight.abs().max() <= 1 / math.sqrt(m.in_features)
        assert m.bias is None or not m.bias.any()
    # wide enough to be U(-bound, bound), not a narrower law
    assert max(m.weight.abs().max() * math.sqrt(m.in_features) for m in linears) > 0.99
    # the embeddings (the tied output projection too) drawn last, from their own law
    assert emb.abs().max() <= math.sqrt(2 / sum(emb.shape)) and not emb[model.encoder.padding_idx].any()
    for m in model.modules():
        if isinstance(m, torch.nn.LayerNorm):
            assert (m.weight == 1).all() and not m.bias.any()
    # fairseq's own initialisation (xavier, gain 1/sqrt(2) on q, k, v) leaves those bounds
    stock = build("mixer_small_attn", 100, TINY)
    assert any(
        m.weight.abs().max() > 1 / math.sqrt(m.in_features) for m in stock.modules() if isinstance(m, torch.nn.Linear)
    )


@pytest.mark.parametrize("name", sorted(MIXER_REGISTRY))
def test_attention_without_bias_stays_without_bias_in_training(name):
    torch.manual_seed(0)
    model = build("mixer_small_attn", 50, [*TINY, *everywhere(name), "--no-attention-bias"]).train()
    biases = attention_biases(model)
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    assert frozen == {f"{n}.bias" for n in biases}  # those, and nothing else
    if not biases:
        pytest.skip(f"{name} has no attention projections")
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=1e-2)
    src = torch.randint(4, 50, (3, 7))
    tgt = torch.randint(4, 50, (3, 6))
    for _ in range(2):
        logits, _ = model(src, torch.full((3,), 7), tgt)
        torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1)).backward()
        optimizer.step()
        optimizer.zero_grad()
    for path, bias in biases.items():
        assert not bias.any(), path


def test_setups_through_fairseq_train(e2e_data, tmp_path):
    """The flags reach the stock fairseq-train (its optimizer skips the frozen biases) and
    what it saves loads back the same."""
    save = tmp_path / "ckpt"
    e2e_fairseq(
        "train", e2e_data.bin, *E2E_MODEL_ARGS, *E2E_TRAIN_ARGS, "--max-update", "3", "--save-dir", save,
        "--param-init", "lipschitz", "--no-attention-bias",
    )  # fmt: skip
    state = torch.load(save / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    cfg = state["cfg"]["model"]
    assert cfg.no_attention_bias and cfg.param_init == "lipschitz"
    ends = tuple(f"{p}.bias" for p in ATTENTION_PROJECTIONS)
    # layer 0's self-mixers are ngram (E2E_MODEL_ARGS): its output projection is not attention's
    biases = {k: v for k, v in state["model"].items() if k.endswith(ends) and "layers.0.self_attn" not in k}
    # 4 projections of: local and attn in the encoder and the decoder, and 3 cross-attentions
    assert len(biases) == 4 * 7 and all(not v.any() for v in biases.values())
    assert state["model"]["encoder.layers.0.self_attn.out_proj.bias"].any()  # the ngram's trained
    assert state["model"]["decoder.layers.1.fc1.bias"].any()


@pytest.mark.parametrize("name", sorted(MIXER_REGISTRY))
def test_pre_norm_reaches_every_mixer(name):
    """fairseq's --encoder-normalize-before / --decoder-normalize-before (Neutron trains with
    a layer norm before each sub-layer): every self-mixer reads the layer-normed input, and
    the stacks end with a layer norm.  (Cross-attention is the stock layer's own code.)"""
    norm = ["--encoder-normalize-before", "--decoder-normalize-before", "--dropout", "0"]
    model = build("mixer_small_attn", 50, [*TINY, *everywhere(name), *norm]).eval()
    seen = {}

    def keep(slot):
        return lambda module, args, kwargs: seen.__setitem__(slot, kwargs.get("query", args[0] if args else None))

    enc, dec = model.encoder.layers[0], model.decoder.layers[0]
    enc.self_attn.register_forward_pre_hook(keep("encoder self"), with_kwargs=True)
    dec.self_attn.register_forward_pre_hook(keep("decoder self"), with_kwargs=True)
    x = {}
    enc.register_forward_pre_hook(lambda module, args: x.__setitem__("encoder", args[0]))
    dec.register_forward_pre_hook(lambda module, args: x.__setitem__("decoder", args[0]))
    src, tgt = torch.randint(4, 50, (2, 6)), torch.randint(4, 50, (2, 5))
    with torch.no_grad():
        model(src, torch.full((2,), 6), tgt)
        torch.testing.assert_close(seen["encoder self"], enc.self_attn_layer_norm(x["encoder"]))
        torch.testing.assert_close(seen["decoder self"], dec.self_attn_layer_norm(x["decoder"]))
    assert model.encoder.layer_norm is not None and model.decoder.layer_norm is not None
