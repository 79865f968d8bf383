"""Multi-scale self-attention beyond the registry battery (which covers both forms,
fixed and ratio scales, both omega readings: shapes, padding, causality,
incremental == full, beam reorder, naive eq. 6-9): the scale grammar, the eq. 11-12
schedule and the paper's worked example, banded == dense-masked attention, no L x L
matrix for small windows, the bounded decoder cache, spec errors, the MS-Transformer
layer of eq. 10, and the text classifier (model and CLI)."""

import pytest
import torch
import torch.nn.functional as F
from conftest import E2E_USER_DIR, e2e_fairseq
from mixer_cases import Case, make_mixer, run

from mixer_plugin.build import build
from mixer_plugin.mixers import MixerSpecError, Role
from mixer_plugin.mixers import multiscale as ms
from mixer_plugin.mixers.registry import parse_item

TINY = ["--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "4",
        "--decoder-embed-dim", "32", "--decoder-ffn-embed-dim", "64", "--decoder-attention-heads", "4",
        "--dropout", "0", "--share-all-embeddings"]  # fmt: skip
ENC, DEC = Role.ENCODER_SELF, Role.DECODER_SELF


# ------------------------------------------------------------------ scales
def test_scale_grammar():
    scales, counts = ms.parse_scales("1x5+3x2+n/16x2+N/8x1")
    assert [str(s) for s in scales] == ["1", "3", "n/16", "n/8"] and counts == [5, 2, 2, 1]
    assert ms.parse_scales("n+7")[0] == [ms.Scale(1, True), ms.Scale(7, False)]
    assert ms.parse_scales("1+3")[1] is None
    assert ms.format_scales(scales, [5, 2, 0, 1]) == "1x5+3x2+n/8x1"
    for bad in ["1x2+3", "0", "n/0", "n/x", "1+1", "", "3.5"]:
        with pytest.raises(ValueError):
            ms.parse_scales(bad)


def test_head_scales_follow_the_spec():
    m = make_mixer(Case("multiscale:scales=1x2+n/4x1+5x1", ENC))
    assert [str(s) for s in m.head_scales] == ["1", "1", "n/4", "5"]
    # no counts: eq. (12) with z = 0, 4 heads over 5 candidates -> the largest gets none
    m = make_mixer(Case("multiscale", ENC))
    assert [str(s) for s in m.head_scales] == ["1", "3", "n/16", "n/8"]


# ------------------------------------------------------- eq. (11)-(12)
def test_alpha_schedule_reproduces_the_papers_worked_example():
    """alpha = 0.5, N' = 10, three layers -> {5,2,2,1,0}, {4,2,2,1,1}, {2,2,2,2,2}."""
    assert ms.alpha_schedule(0.5, 3, 5, 10) == [[5, 2, 2, 1, 0], [4, 2, 2, 1, 1], [2, 2, 2, 2, 2]]
    # the paper's numbers are not the nearest-integer (Hamilton) rounding of the shares
    assert ms.alpha_schedule(0.5, 3, 5, 10, "largest_remainder")[0] == [4, 3, 1, 1, 1]


@pytest.mark.parametrize("rounding", ms.ROUNDINGS)
@pytest.mark.parametrize("alpha", [-1.0, 0.0, 0.5, 1.0])
def test_alpha_schedule_properties(alpha, rounding):
    for heads in (4, 8, 10, 16):
        sched = ms.alpha_schedule(alpha, 6, 5, heads, rounding)
        assert all(sum(layer) == heads and min(layer) >= 0 for layer in sched)
        top = sched[-1]
        assert max(top) - min(top) <= 1  # l = L: uniform (eq. 11), up to rounding
        if alpha > 0:  # more small-scale heads in shallow layers
            assert sched[0][0] >= sched[-1][0] and sched[0][-1] <= sched[-1][-1]
        if alpha < 0:
            assert sched[0][0] <= sched[-1][0] and sched[0][-1] >= sched[-1][-1]
        if alpha == 0:
            assert all(layer == top for layer in sched)


def test_schedule_specs_and_the_alpha_spec_option_agree():
    specs = ms.schedule_specs(0.5, 3, ms.PAPER_SCALES, 10).split(",")
    assert specs[0] == "multiscale:scales=1x5+3x2+n/16x2+n/8x1"
    assert specs[2] == "multiscale:scales=1x2+3x2+n/16x2+n/8x2+n/4x2"
    from mixer_plugin.mixers.registry import MixerContext, build_mixer

    for layer, spec in enumerate(specs):
        ctx = MixerContext(ENC, layer, 40, 40, 10, 0.0, None)
        a = build_mixer(parse_item("--encoder-mixers", spec), ctx)
        b = build_mixer(parse_item("--encoder-mixers", f"multiscale:alpha=0.5:layers=3:scales={ms.PAPER_SCALES}"), ctx)
        assert a.head_scales == b.head_scales


def test_schedule_as_a_per_layer_flag_in_the_model():
    specs = ms.schedule_specs(1.0, 2, "1+3+5", 4)
    model = build("mixer_small_attn", 50, TINY + ["--encoder-mixers", specs, "--decoder-mixers", specs])
    assert model.mixer_summary()[:2] == [
        "encoder.0: self=multiscale:scales=1x3+3x1",
        "encoder.1: self=multiscale:scales=1x2+3x1+5x1",
    ]


# ------------------------------------------------- banded == dense-masked
@pytest.mark.parametrize("role", [ENC, DEC])
@pytest.mark.parametrize("scales", ["3+7+n/8+n/2", "1x2+5x1+9x1:omega=radius", "n/16+n/4+n/3+n"])
def test_banded_equals_dense_masked(role, scales):
    """The same module weights through the banded and the dense kernels, at a length
    where blocks, ragged last blocks and per-example ratio scales all occur."""
    banded = make_mixer(Case(f"multiscale:scales={scales}:kernel=banded", role), seed=3)
    dense = make_mixer(Case(f"multiscale:scales={scales}:kernel=dense", role), seed=3)
    T, B = 53, 3
    g = torch.Generator().manual_seed(0)
    x = torch.randn(T, B, 16, generator=g, dtype=torch.float64)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[1, :11] = True  # left padding (fairseq sources)
    pad[2, 40:] = True  # right padding (fairseq targets)
    a = run(banded, Case("", role), x, key_padding_mask=pad)
    b = run(dense, Case("", role), x, key_padding_mask=pad)
    real = ~pad.t()
    torch.testing.assert_close(a[real], b[real], rtol=1e-10, atol=1e-12)


def test_small_windows_never_build_an_L_by_L_matrix(monkeypatch):
    """Every SDPA call of a small-scale layer at L = 512 sees at most c + W - 1 keys."""
    widths = []
    sdpa = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, **kw):
        widths.append(k.size(-2))
        if attn_mask is not None:
            widths.append(attn_mask.size(-1))
        return sdpa(q, k, v, attn_mask=attn_mask, **kw)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    L = 512
    for role in (ENC, DEC):
        m = make_mixer(Case("multiscale:scales=1+3+n/16+n/8", role), dtype=torch.float32)
        run(m, Case("", role), torch.randn(L, 2, 16))
    # n/8 of 512: omega 64 -> width 63, radius 31: encoder W = 63, tile c + W - 1 = 125
    assert widths and max(widths) <= 125, widths


# ---------------------------------------------------- decoder cache bound
@pytest.mark.parametrize(
    "spec,bound",
    [("multiscale:scales=1+3+5+7", 3), ("multiscale:scales=1x1+2x3:omega=radius", 2), ("multiscale:scales=1x4", 0)],
)
def test_decoder_cache_is_bounded_by_the_largest_fixed_scale(spec, bound):
    m = make_mixer(Case(spec, DEC))
    assert m.cache_window == bound
    T = 20
    x = torch.randn(T, 2, 16, dtype=torch.float64)
    full = run(m, Case("", DEC), x)
    state, steps = {}, []
    for t in range(T):
        steps.append(run(m, Case("", DEC), x[t : t + 1], incremental_state=state))
        rows = {n: v.size(0) for n, v in m._get_input_buffer(state).items()}
        assert all(r == min(t + 1, bound) for r in rows.values()), (t, rows)
    torch.testing.assert_close(torch.cat(steps), full, rtol=1e-10, atol=1e-12)


def test_ratio_scales_keep_the_whole_decoder_prefix():
    m = make_mixer(Case("multiscale:scales=1+3+n/2+n", DEC))
    assert m.cache_window is None and m.length == "prefix"


# ------------------------------------------------------------ spec errors
BAD_SPECS = [
    ("multiscale:scales=2+3", ENC, "even"),  # omega=width needs odd scales
    ("multiscale:scales=1x3+3x3", ENC, "6 heads"),  # counts must sum to the heads
    ("multiscale:scales=1+n/2:length=sentence", DEC, "length=prefix"),  # target length unknown
    ("multiscale:scales=1+n/2:length=prefix", ENC, "decoder's reading"),
    ("multiscale:alpha=0.5", ENC, "needs layers="),  # built outside a model: L unknown
    ("multiscale:layers=3", ENC, "needs alpha="),
    ("multiscale:alpha=0.5:layers=3:scales=1x2+3x2", ENC, "without xCOUNT"),
    ("multiscale:scales=1x2+3", ENC, "for every scale or for none"),
]
GOOD_SPECS = [
    ("multiscale:scales=1+3:length=sentence", DEC),  # all fixed: the length is never needed
    ("multiscale:scales=2+4:omega=radius", ENC),  # radii may be even
    ("multiscale:scales=1+3+5+7+9+11", ENC),  # more candidates than heads: eq. (12) gives some none
]


@pytest.mark.parametrize("spec,role,message", BAD_SPECS, ids=[s for s, _, _ in BAD_SPECS])
def test_spec_errors_are_one_line(spec, role, message):
    with pytest.raises(MixerSpecError) as e:
        make_mixer(Case(spec, role))
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("spec,role", GOOD_SPECS, ids=[s for s, _ in GOOD_SPECS])
def test_specs_that_build(spec, role):
    assert make_mixer(Case(spec, role)).num_heads == 4


@pytest.mark.parametrize("layers", [2, 4])
def test_alpha_layers_must_be_the_stack_depth(layers):
    with pytest.raises(MixerSpecError, match=f"layers={layers} but the stack has 3 layers"):
        build(
            "mixer_small_attn",
            50,
            TINY + ["--encoder-layers", "3", "--encoder-mixers", f"multiscale:alpha=0.5:layers={layers}:scales=1+3"],
        )


def test_alpha_takes_the_stack_depth_from_the_model():
    """Without layers=, eq. (11)'s L is the model's --encoder-layers."""
    ours = build(
        "mixer_small_attn",
        50,
        TINY + ["--encoder-layers", "3", "--encoder-mixers", "multiscale:alpha=0.5:scales=1+3+5"],
    )
    explicit = build(
        "mixer_small_attn",
        50,
        TINY + ["--encoder-layers", "3", "--encoder-mixers", "multiscale:alpha=0.5:layers=3:scales=1+3+5"],
    )
    scales = [[str(s) for s in layer.self_attn.head_scales] for layer in ours.encoder.layers]
    assert scales == [[str(s) for s in layer.self_attn.head_scales] for layer in explicit.encoder.layers]
    expected = [sum([[w] * c for w, c in zip("135", counts)], []) for counts in ms.alpha_schedule(0.5, 3, 3, 4)]
    assert scales == expected and scales[0] != scales[-1]


def test_scaling_model_reads_sqrt_D():
    head = make_mixer(Case("multiscale:scales=3x4", ENC))
    model = make_mixer(Case("multiscale:scales=3x4:scaling=model", ENC))
    assert head.scaling == 4**-0.5 and model.scaling == 16**-0.5


# ------------------------------------------------- MS-Transformer layer (eq. 10)
def test_ms_layer_is_eq_10_without_ffn():
    torch.manual_seed(0)
    args = TINY + ["--encoder-mixers", "multiscale:scales=1+3+n/2+n", "--encoder-layer-form", "ms"]
    model = build("mixer_small_attn", 50, args).double().eval()
    layer = model.encoder.layers[0]
    names = {n for n, _ in layer.named_parameters()}
    assert not any(n.startswith(("fc1", "fc2", "final_layer_norm")) for n in names), names
    assert model.mixer_summary()[0].endswith("layer=ms (eq. 10, no FFN)")
    x = torch.randn(6, 2, 32, dtype=torch.float64)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1, :2] = True
    mixed, _ = layer.self_attn(query=x, key=x, value=x, key_padding_mask=pad)
    expected = layer.self_attn_layer_norm(x + torch.relu(mixed))  # (10)
    torch.testing.assert_close(layer(x, pad), expected)
    # the decoder and the default encoder layer keep their FFN
    stock = build("mixer_small_attn", 50, TINY)
    assert hasattr(stock.encoder.layers[0], "fc1") and hasattr(model.decoder.layers[0], "fc1")


def test_ms_layer_arch_trains_a_step():
    model = build("mixer_iwslt_mstrans_enc", 60, ["--share-all-embeddings", "--encoder-layers", "6"]).train()
    src, prev = torch.randint(4, 60, (2, 9)), torch.randint(4, 60, (2, 7))
    out = model(src, torch.tensor([9, 9]), prev)[0]
    out.float().logsumexp(-1).mean().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


# --------------------------------------------------------------- classifier
def classifier(arch="mixer_cls_ms", extra=()):
    from fairseq import options
    from fairseq.data import Dictionary
    from fairseq.tasks.sentence_prediction import SentencePredictionTask

    d = Dictionary()
    for i in range(60):
        d.add_symbol(f"w{i}")
    labels = Dictionary()
    for i in range(5):
        labels.add_symbol(f"c{i}")
    argv = ["/dev/null", "--task", "sentence_prediction", "--num-classes", "5", "--init-token", "0",
            "--criterion", "sentence_prediction",
            "--arch", arch, "--encoder-embed-dim", "40", "--encoder-ffn-embed-dim", "40",
            "--dropout", "0", "--attention-dropout", "0", *extra]  # fmt: skip
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    task = SentencePredictionTask(args, d, labels)
    torch.manual_seed(0)
    return task.build_model(args), task, args


@pytest.mark.parametrize("arch", ["mixer_cls_ms", "mixer_cls_transformer"])
def test_classifier_builds_and_trains_a_step(arch):
    from fairseq.criterions.sentence_prediction import SentencePredictionCriterion

    model, task, args = classifier(arch)
    assert len(model.encoder.layers) == 3
    if arch == "mixer_cls_ms":
        assert model.mixer_summary()[0] == (
            "encoder.0: self=multiscale:scales=1x5+3x2+n/16x2+n/8x1 layer=ms (eq. 10, no FFN)"
        )
        assert model.encoder.layers[0].fc1 is None  # eq. (10): no FFN
    src = torch.randint(4, 64, (4, 12))
    src[:, 0] = 0  # the [CLS] node, as --init-token 0 puts it
    src[1, 9:] = 1  # right padding, as sentence_prediction pads
    sample = {"net_input": {"src_tokens": src, "src_lengths": torch.tensor([12, 9, 12, 12])},
              "target": torch.tensor([0, 3, 1, 4]), "ntokens": 45}  # fmt: skip
    from fairseq.criterions.sentence_prediction import SentencePredictionConfig

    crit = SentencePredictionCriterion(SentencePredictionConfig(), task)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(2):
        loss, size, log = crit(model.train(), sample)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert size == 4 and log["ncorrect"] >= 0 and losses[1] < losses[0]


@pytest.mark.parametrize("pooling", ["concat", "sum", "cls", "max"])
def test_classifier_features_ignore_padding(pooling):
    model, _, _ = classifier(extra=["--pooling", pooling])
    model = model.double().eval()
    src = torch.randint(4, 64, (2, 10))
    src[:, 0] = 0
    src[1, 6:] = 1
    alone = src[1:, :6]
    head = "sentence_classification_head"
    both = model(src, classification_head_name=head)[0]
    torch.testing.assert_close(both[1:], model(alone, classification_head_name=head)[0])
    feats, _ = model(alone)  # (T, B, C) without a head
    assert feats.shape == (6, 1, 40)


def test_classifier_needs_the_cls_token():
    model, _, _ = classifier()
    with pytest.raises(ValueError, match="--init-token 0"):
        model(torch.randint(4, 64, (2, 5)), classification_head_name="sentence_classification_head")


def test_classifier_cli_trains_and_validates(tmp_path):
    """fairseq-preprocess -> fairseq-train --task sentence_prediction (20 updates of a
    small MS classifier) -> fairseq-validate on test: the stock tools, end to end."""
    from mixer_plugin.paths import SHARED_DATA

    data = SHARED_DATA / "cls-section"
    if not (data / "train.input0").is_file():
        pytest.skip("the shared cls-section corpus is not on this machine")
    raw = tmp_path / "raw"
    raw.mkdir()
    sizes = {"train": 300, "valid": 40, "test": 40}
    classes = set()
    for split, n in sizes.items():
        with open(data / f"{split}.input0", encoding="utf-8") as f:
            text = [" ".join(next(f).split()[:40]) for _ in range(n)]  # whitespace words, cut to 40
        with open(data / f"{split}.label", encoding="utf-8") as f:
            labels = [next(f).strip() for _ in range(n)]
        classes.update(labels)
        (raw / f"{split}.input0").write_text("".join(t + "\n" for t in text), encoding="utf-8")
        (raw / f"{split}.label").write_text("".join(t + "\n" for t in labels), encoding="utf-8")
    (raw / "label.dict").write_text("".join(f"{c} 1\n" for c in sorted(classes)), encoding="utf-8")
    bin_ = tmp_path / "bin"
    for kind in ("input0", "label"):
        extra = ["--srcdict", raw / "label.dict"] if kind == "label" else ["--nwordssrc", "1000"]
        e2e_fairseq("preprocess", "--only-source", "--trainpref", raw / f"train.{kind}",
                    "--validpref", raw / f"valid.{kind}", "--testpref", raw / f"test.{kind}",
                    "--destdir", bin_ / kind, "--workers", "1", *extra)  # fmt: skip
    task = ["--user-dir", E2E_USER_DIR, "--task", "sentence_prediction", "--num-classes", str(len(classes)),
            "--init-token", "0", "--max-positions", "64", "--shorten-method", "truncate",
            "--criterion", "sentence_prediction", "--cpu", "--num-workers", "0",
            "--required-batch-size-multiple", "1"]  # fmt: skip
    proc = e2e_fairseq(
        "train", bin_, *task, "--arch", "mixer_cls_ms", "--encoder-embed-dim", "40",
        "--encoder-mixers", ms.schedule_specs(0.5, 3, ms.PAPER_SCALES, 10),
        "--optimizer", "adam", "--lr", "1e-3", "--batch-size", "16", "--max-update", "20",
        "--save-dir", tmp_path / "ckpt", "--no-epoch-checkpoints", "--log-format", "simple",
        "--log-interval", "5", "--no-progress-bar", "--seed", "1",
        "--best-checkpoint-metric", "accuracy", "--maximize-best-checkpoint-metric",
    )  # fmt: skip
    log = proc.stdout + proc.stderr
    assert "encoder.0: self=multiscale:scales=1x5+3x2+n/16x2+n/8x1" in log
    assert "num_updates 20" in log or "num_updates=20" in log, log[-2000:]
    proc = e2e_fairseq("validate", bin_, *task, "--path", tmp_path / "ckpt" / "checkpoint_best.pt",
                       "--valid-subset", "test", "--batch-size", "16")  # fmt: skip
    line = [x for x in (proc.stdout + proc.stderr).splitlines() if "valid on 'test' subset" in x]
    assert line and " accuracy " in line[-1], proc.stdout[-2000:]
    acc = float(line[-1].split(" accuracy ")[1].split()[0])
    n = sizes["test"]
    assert any(abs(acc - 100 * k / n) < 1e-3 for k in range(n + 1)), (acc, n)  # a share of the n examples
    assert f"| bsz {sizes['test']}" in line[-1], line[-1]  # every test example scored
