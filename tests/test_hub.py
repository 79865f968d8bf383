"""fairseq's hub interface on a model of this plugin: ``MixerTransformerModel.from_pretrained``
loads a checkpoint made by the stock ``fairseq-train``, encodes raw text with the prepared
corpus' joint sentencepiece model, and ``translate`` returns detokenised German.

The corpus is the runner's tiny one (``corpus`` in conftest.py) prepared by the real
``debian_en_de`` recipe, so the data folder is laid out as ``mixer-run`` leaves it
(``bin/``, ``subword/spm.joint.model``, ``raw/``); the model is a 2+2-layer ngram/ngram
model (cross-attention stays ``attn``) trained for a few updates with
``python -m fairseq_cli.train``.  Its translations are compared with those of the stock
``fairseq-interactive`` (same checkpoint, beam, length limits and batching).
"""

import math
import sys

import pytest
import torch
from conftest import E2E_TRAIN_ARGS, E2E_USER_DIR, e2e_fairseq, e2e_run
from fairseq.data.encoders.sentencepiece_bpe import SentencepieceBPE
from fairseq.modules import MultiheadAttention

from mixer_plugin.experiments.checkpoints import last_checkpoints
from mixer_plugin.mixers.ngram import NgramMixer
from mixer_plugin.models.mixer_transformer import MixerDecoderLayer, MixerEncoderLayer, MixerTransformerModel

TASK = ["--task", "translation", "--source-lang", "en", "--target-lang", "de"]
MODEL = [
    "--arch", "mixer_small_attn", "--encoder-mixers", "ngram", "--decoder-mixers", "ngram",
    "--encoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128", "--encoder-attention-heads", "4",
    "--share-all-embeddings",
]  # fmt: skip
UPDATES = 120  # a checkpoint every 40 updates, the last 2 kept: averaged below
LR = 0.005  # over E2E_TRAIN_ARGS' 1e-3: at 1e-3 the model says nothing yet (EOS first) after 120 updates
VOCAB = 400
BEAM = 4
# short limits keep an undertrained model's beam search quick; the same for both decoders
LIMITS = {"max_len_a": 1.2, "max_len_b": 10}
EXTRA = "The package could not be installed because of a missing dependency."


@pytest.fixture(scope="module")
def prepared(corpus, tmp_path_factory):
    """The tiny corpus through ``mixer-prepare debian_en_de``: what mixer-run leaves in
    work/data/debian_en_de."""
    root = tmp_path_factory.mktemp("hub_data") / "debian_en_de"
    e2e_run([sys.executable, "-m", "mixer_plugin.recipes", "debian_en_de", "--offline", "--workers", "1",
             "--corpus", corpus, "--root", root, "--vocab", VOCAB])  # fmt: skip
    for name in ("bin/dict.en.txt", "subword/spm.joint.model", "subword/test.en", "raw/test.en"):
        assert (root / name).is_file(), name
    return root


@pytest.fixture(scope="module")
def run(prepared, tmp_path_factory):
    """A save dir as mixer-run's train stage leaves it (work/<exp>/<model>/seed1)."""
    save = tmp_path_factory.mktemp("hub_run") / "seed1"
    e2e_fairseq(
        "train", prepared / "bin", "--user-dir", E2E_USER_DIR, *TASK, *MODEL, *E2E_TRAIN_ARGS,
        "--lr", LR, "--max-update", UPDATES, "--save-interval-updates", "40", "--keep-interval-updates", "2",
        "--save-dir", save,
    )  # fmt: skip
    assert (save / "checkpoint_last.pt").is_file()
    return save


def load(run, prepared, checkpoint="checkpoint_last.pt", spm_model=None):
    hub = MixerTransformerModel.from_pretrained(
        str(run),
        checkpoint_file=checkpoint,
        data_name_or_path=str(prepared / "bin"),
        bpe="sentencepiece",
        sentencepiece_model=str(spm_model or prepared / "subword" / "spm.joint.model"),
    )
    return hub.eval()


@pytest.fixture(scope="module")
def hub(run, prepared):
    return load(run, prepared)


def sentences(prepared):
    return (prepared / "raw" / "test.en").read_text(encoding="utf-8").splitlines()[:5] + [EXTRA]


def test_hub_holds_the_plugin_model_and_its_mixers(hub):
    assert len(hub.models) == 1
    model = hub.models[0]
    assert type(model) is MixerTransformerModel
    assert not model.training
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 2
    for layer in model.encoder.layers:
        assert isinstance(layer, MixerEncoderLayer) and layer.mixer.name == "ngram"
        assert isinstance(layer.self_attn, NgramMixer), type(layer.self_attn)
    for layer in model.decoder.layers:
        assert isinstance(layer, MixerDecoderLayer) and layer.self_mixer.name == "ngram"
        assert isinstance(layer.self_attn, NgramMixer), type(layer.self_attn)
        assert type(layer.encoder_attn) is MultiheadAttention  # cross: the stock attention
    assert model.mixer_summary() == [
        "encoder.0: self=ngram",
        "encoder.1: self=ngram",
        "decoder.0: self=ngram cross=attn",
        "decoder.1: self=ngram cross=attn",
    ]


def test_hub_encodes_raw_text_as_the_corpus_was_prepared(hub, prepared):
    """The sentencepiece pieces the hub makes of raw text are those the recipe wrote for
    fairseq-preprocess, and every piece is in the model's dictionary."""
    assert isinstance(hub.bpe, SentencepieceBPE)
    raw = (prepared / "raw" / "test.en").read_text(encoding="utf-8").splitlines()
    pieces = (prepared / "subword" / "test.en").read_text(encoding="utf-8").splitlines()
    assert [hub.apply_bpe(line) for line in raw] == pieces
    unk = hub.src_dict.unk()
    for line in raw[:20] + [EXTRA]:
        tokens = hub.encode(line)
        assert tokens[-1] == hub.src_dict.eos() and unk not in tokens.tolist(), line


def test_hub_translate_equals_fairseq_interactive(hub, run, prepared):
    """hub.translate gives the D- lines of the stock fairseq-interactive, and the hub's
    encoding and scores are the S- lines and scores interactive prints (the undertrained
    model says much the same for every input, so the scores are what sees the source)."""
    lines = sentences(prepared)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the subprocess below (conftest.e2e_env)
    try:
        translations = hub.translate(lines, beam=BEAM, **LIMITS)
        best = [hypos[0] for hypos in hub.generate([hub.encode(line) for line in lines], beam=BEAM, **LIMITS)]
    finally:
        torch.set_num_threads(threads)
    assert len(translations) == len(lines) and all(isinstance(t, str) for t in translations)
    # something to compare: were the model to say nothing (EOS first) for every line, raise LR or UPDATES
    assert any(t.strip() for t in translations), translations
    assert not any("\u2581" in t for t in translations), translations  # pieces joined, not shown
    assert translations == [hub.decode(h["tokens"]) for h in best]

    # the hub batches by the checkpoint's --max-tokens (2000: all lines in one batch);
    # fairseq-interactive gets the same batch
    proc = e2e_fairseq(
        "interactive", prepared / "bin", "--user-dir", E2E_USER_DIR, *TASK,
        "--path", run / "checkpoint_last.pt", "--beam", BEAM,
        "--max-len-a", LIMITS["max_len_a"], "--max-len-b", LIMITS["max_len_b"],
        "--bpe", "sentencepiece", "--sentencepiece-model", prepared / "subword" / "spm.joint.model",
        "--buffer-size", len(lines), "--max-tokens", "2000", "--cpu",
        input="".join(line + "\n" for line in lines),
    )  # fmt: skip
    source, detok = {}, {}
    for line in proc.stdout.splitlines():
        if line.startswith("S-"):
            tag, text = (line.split("\t") + [""])[:2]
            source[int(tag[2:])] = text
        elif line.startswith("D-"):
            tag, score, text = (line.split("\t") + [""])[:3]
            detok[int(tag[2:])] = (float(score), text)
    assert sorted(detok) == sorted(source) == list(range(len(lines))), proc.stdout[-3000:]
    assert [hub.string(hub.encode(line)) for line in lines] == [source[i] for i in range(len(lines))]
    assert translations == [detok[i][1] for i in range(len(lines))]
    for i, hypo in enumerate(best):  # interactive prints base-2 scores
        assert abs(hypo["score"].item() / math.log(2) - detok[i][0]) < 1e-4, (i, hypo["score"], detok[i])


def test_hub_loads_an_averaged_checkpoint(run, prepared):
    """The checkpoint mixer-run decodes when ``average_last`` > 1 (mixer-average's output)."""
    averaged = run / "averaged_last2.pt"
    e2e_run([sys.executable, "-m", "mixer_plugin.experiments.checkpoints", run, "--last", "2", "--output", averaged])
    hub = load(run, prepared, checkpoint=averaged.name)
    assert type(hub.models[0]) is MixerTransformerModel
    assert isinstance(hub.models[0].encoder.layers[0].self_attn, NgramMixer)
    last_two = last_checkpoints(run, 2)
    assert len(set(last_two)) == 2, last_two
    states = [torch.load(p, map_location="cpu", weights_only=True)["model"] for p in last_two]
    loaded = hub.models[0].state_dict()
    ngram = [k for k in loaded if k.startswith("encoder.layers.0.self_attn.")]
    assert ngram, sorted(loaded)[:20]
    for name in ngram:  # the ngram mixer's own weights, element-wise means of the two
        mean = (states[0][name].double() + states[1][name].double()) / 2
        assert torch.allclose(loaded[name].double(), mean, atol=1e-6), name
    out = hub.translate(sentences(prepared)[:2], beam=BEAM, **LIMITS)
    assert len(out) == 2 and all(isinstance(t, str) for t in out), out  # (at 40+80 updates, mostly empty)
