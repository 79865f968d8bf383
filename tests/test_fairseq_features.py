"""Stock fairseq features with every mixer in every role it takes.

A user switches ``--arch`` and expects the rest of fairseq's CLI to keep working.
For each registered mixer, one tiny model puts it in every role it supports
(``attn`` elsewhere) and is trained with ``--update-freq``,
``--checkpoint-activations``, encoder/decoder LayerDrop and ``--eval-bleu``; then
``fairseq-generate`` runs with each decoding feature (``--print-alignment``,
``--nbest``, ``--prefix-size``, sampling with temperature / top-k / top-p, diverse
beam groups, ``--diversity-rate``, ``--retain-dropout``) and ``fairseq-interactive``
reads raw text.

The tools run in this process through their own ``main`` functions, as fairseq's
``tests/test_binaries.py`` drives them (one interpreter start instead of ~60);
tests/test_cli.py runs the same tools as subprocesses.
"""

import logging
import re

import pytest
from conftest import E2E_MODEL_ARGS, E2E_SIZES, E2E_TRAIN_ARGS, E2E_USER_DIR
from fairseq import distributed_utils, options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq_cli import generate, interactive, train

from mixer_plugin.mixers import MIXER_REGISTRY, Role

FAMILIES = sorted(MIXER_REGISTRY)
TRAIN_FEATURES = [
    "--max-update", "4", "--update-freq", "2", "--checkpoint-activations",
    "--encoder-layerdrop", "0.2", "--decoder-layerdrop", "0.2",
    "--eval-bleu", "--eval-bleu-args", '{"beam": 2, "max_len_a": 1.2, "max_len_b": 10}',
]  # fmt: skip
GEN_BASE = [
    "--user-dir", E2E_USER_DIR, "--task", "translation", "--source-lang", "en", "--target-lang", "de",
    "--gen-subset", "test", "--max-len-a", "1.2", "--max-len-b", "10", "--batch-size", "16", "--cpu",
    "--required-batch-size-multiple", "1", "--seed", "3", "--num-workers", "0",
]  # fmt: skip
# feature -> (flags, hypotheses per sentence)
GENERATE = {
    "alignment-nbest-prefix": (["--beam", "3", "--nbest", "2", "--print-alignment", "--prefix-size", "1"], 2),
    "sampling-topk-temperature": (["--sampling", "--sampling-topk", "5", "--temperature", "0.7",
                                   "--beam", "2", "--nbest", "2"], 2),
    "sampling-topp": (["--sampling", "--sampling-topp", "0.9", "--beam", "2", "--nbest", "2"], 2),
    # one batch holding the whole test set: stock DiverseBeamSearch indexes its
    # per-batch group_overlap by sentence id (fairseq PR #5069), an IndexError for
    # any later batch, whatever the model
    "diverse-beam-groups": (["--beam", "4", "--diverse-beam-groups", "2", "--diverse-beam-strength", "0.5",
                             "--batch-size", "64"], 1),
    "diversity-rate": (["--beam", "4", "--diversity-rate", "0.5"], 1),
    "retain-dropout": (["--beam", "2", "--retain-dropout"], 1),
}  # fmt: skip


def family_specs(name):
    roles = MIXER_REGISTRY[name].roles
    return ["--encoder-mixers", name if Role.ENCODER_SELF in roles else "attn",
            "--decoder-mixers", name if Role.DECODER_SELF in roles else "attn",
            "--decoder-cross-mixers", name if Role.DECODER_CROSS in roles else "attn"]  # fmt: skip


def parse(parser, argv):
    return options.parse_args_and_arch(parser, [str(a) for a in argv])


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture(scope="module")
def training(e2e_data, tmp_path_factory):
    """mixer -> (checkpoint, training log messages), trained on first use."""
    cache = {}

    def get(name):
        if name not in cache:
            save_dir = tmp_path_factory.mktemp(f"features_{name}")
            argv = [e2e_data.bin, *E2E_MODEL_ARGS, *E2E_TRAIN_ARGS, *family_specs(name), *TRAIN_FEATURES,
                    "--save-dir", save_dir]  # fmt: skip
            cfg = convert_namespace_to_omegaconf(parse(options.get_training_parser(), argv))
            log, root = Collect(), logging.getLogger()
            level = root.level
            root.addHandler(log)
            root.setLevel(logging.INFO)
            try:
                distributed_utils.call_main(cfg, train.main)
            finally:
                root.removeHandler(log)
                root.setLevel(level)
            cache[name] = (save_dir / "checkpoint_last.pt", log.messages)
        return cache[name]

    return get


@pytest.fixture(scope="module")
def trained(training):
    """mixer -> its checkpoint."""
    return lambda name: training(name)[0]


def test_eval_bleu_checkpoint_loads_with_weights_only(trained):
    """--eval-bleu saves numpy arrays among the validation meters; the allowlist
    names exactly those globals (the rest of it: tests/test_ddp.py)."""
    import torch
    from test_ddp import pickled_globals

    from mixer_plugin.compat import eval_bleu_meter_globals

    path = str(trained("attn"))
    names = {f"{g.__module__}.{g.__qualname__}" for g in eval_bleu_meter_globals()}
    # the dtype class is not a pickled GLOBAL; unpickling builds an instance of it
    assert pickled_globals(path) == {"argparse.Namespace"} | names - {"numpy.dtypes.Int64DType"}
    metrics = torch.load(path, map_location="cpu", weights_only=True)["extra_state"]["metrics"]
    assert metrics["valid"], "the meters that hold the arrays are there"


@pytest.mark.parametrize("name", FAMILIES)
def test_training_features(name, training):
    """--update-freq 2, --checkpoint-activations, LayerDrop and --eval-bleu: four
    updates of two batches each, then validation with BLEU."""
    checkpoint, log = training(name)
    assert checkpoint.is_file()
    assert any("num_updates: 4 >= max_update: 4" in m for m in log), log[-20:]
    valid = [m for m in log if "valid on 'valid' subset" in m]
    assert valid and "| bleu " in valid[-1], valid


def read_generate(path):
    """{sentence: (target tokens, [(hypothesis tokens, alignment or None), ...])}"""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        tag, _, rest = line.partition("\t")
        kind, _, idx = tag.partition("-")
        if not idx.isdigit():
            continue
        entry = out.setdefault(int(idx), [None, []])
        if kind == "T":
            entry[0] = rest.replace("<<unk>>", "<unk>").split()  # T- lines escape unknown words
        elif kind == "H":
            entry[1].append([rest.split("\t")[-1].split(), None])
        elif kind == "A":
            entry[1][-1][1] = [tuple(map(int, pair.split("-"))) for pair in rest.split()]
    return out


@pytest.mark.parametrize("feature", list(GENERATE))
@pytest.mark.parametrize("name", FAMILIES)
def test_generate_features(name, feature, trained, e2e_data, tmp_path):
    flags, per_sentence = GENERATE[feature]
    results = tmp_path / "gen"
    args = parse(options.get_generation_parser(), [e2e_data.bin, *GEN_BASE, *flags, "--path", trained(name),
                                                   "--results-path", results])  # fmt: skip
    generate.main(args)
    sentences = read_generate(results / "generate-test.txt")
    assert sorted(sentences) == list(range(E2E_SIZES["test"]))
    sources = {i: len(line.split()) for i, line in enumerate(e2e_data.lines("test", "en"))}
    for i, (target, hyps) in sentences.items():
        assert len(hyps) == per_sentence, (i, hyps)
        for tokens, alignment in hyps:
            if "prefix" in feature:
                assert tokens[:1] == target[:1], (tokens, target)  # --prefix-size 1 forces it
            if "alignment" in feature:
                # one (source, target) pair per target token, inside both sentences
                assert alignment is not None and len(alignment) == len(tokens), (tokens, alignment)
                assert all(0 <= s <= sources[i] and 0 <= t < len(tokens) for s, t in alignment), alignment


@pytest.mark.parametrize("name", FAMILIES)
def test_interactive(name, trained, e2e_data, tmp_path, capsys):
    lines = e2e_data.lines("test", "en")[:3]
    source = tmp_path / "input.en"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    args = parse(options.get_interactive_generation_parser(),
                 [e2e_data.bin, "--user-dir", E2E_USER_DIR, "--task", "translation", "--source-lang", "en",
                  "--target-lang", "de", "--path", trained(name), "--beam", "3", "--buffer-size", "2",
                  "--batch-size", "2", "--cpu", "--input", source, "--print-alignment",
                  "--num-workers", "0"])  # fmt: skip
    interactive.main(args)
    out = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in out if line.startswith("H-")] == ["H-0", "H-1", "H-2"], out[-20:]
    assert len([line for line in out if line.startswith("A-")]) == 3


def test_a_longer_budget_resumed_is_the_unbroken_longer_run(e2e_data, tmp_path):
    """The converged protocol's version 3 continues runs that stopped at the old cap with a
    larger ``--max-update``, and every run pauses at a checkpoint and resumes across sessions.
    That is the unbroken longer run only if nothing of the training depends on the budget
    (inverse square root does not) and the resumed run restores everything it carries: the
    weights, Adam's moments, the schedule, the data order mid-epoch and dropout's RNG (every
    dropout on: residual, attention, activation, multiNN's window slots).  So the two runs
    must end with the same parameters, bit for bit, and log the same losses."""
    from conftest import e2e_fairseq

    flags = [
        str(e2e_data.bin), *E2E_MODEL_ARGS, *E2E_TRAIN_ARGS,
        "--dropout", "0.1", "--attention-dropout", "0.1", "--activation-dropout", "0.1",
        "--save-interval-updates", "6", "--max-tokens", "600",
    ]  # fmt: skip

    def train(save_dir, budget):
        out = e2e_fairseq("train", *flags, "--save-dir", save_dir, "--max-update", budget).stdout
        return re.findall(r"\| train_inner \|.* loss=([\d.]+)", out)

    import torch

    resumed, unbroken = tmp_path / "resumed", tmp_path / "unbroken"
    first = train(resumed, "6")
    later = train(resumed, "12")  # continues from checkpoint_last.pt (update 6, mid-epoch)
    whole = train(unbroken, "12")
    assert len(first) == 6 and first + later == whole
    a, b = (torch.load(d / "checkpoint_last.pt", weights_only=False)["model"] for d in (resumed, unbroken))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
