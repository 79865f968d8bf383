"""End to end through the stock CLIs: fairseq-preprocess -> fairseq-train ->
fairseq-generate / fairseq-interactive -> sacrebleu, checkpoint resume,
--num-batch-buckets under numpy 2, and bad mixer specs failing at startup.

Every fairseq tool runs in a subprocess (``python -m fairseq_cli.<tool>``) with
``--user-dir mixer_plugin``, exactly as a user would run it.
"""

import json
import os
import re
import signal
import subprocess
import sys

import pytest
import sacrebleu
import torch
from conftest import (
    E2E_MODEL_ARGS,
    E2E_SIZES,
    E2E_TRAIN_ARGS,
    E2E_USER_DIR,
    e2e_copy_checkpoint_dir,
    e2e_describe,
    e2e_fairseq,
    e2e_popen,
    e2e_run,
    e2e_wait,
)

TRAIN_UPDATES = 20  # the shared model; the resume test continues it to RESUME_UPDATES
RESUME_UPDATES = 24
WEIGHTS_ONLY_ERRORS = ("Weights only load failed", "UnpicklingError", "Unsupported global")


def train(data, save_dir, max_update, *extra, **kwargs):
    return e2e_fairseq(
        "train", data.bin, *E2E_MODEL_ARGS, *E2E_TRAIN_ARGS,
        "--save-dir", save_dir, "--max-update", max_update, *extra, **kwargs,
    )  # fmt: skip


def updates_logged(log: str):
    """num_updates of every train_inner line, in order."""
    return [int(m) for m in re.findall(r"\| train_inner \|.*?num_updates=(\d+)", log)]


def load_checkpoint_weights_only(path):
    import mixer_plugin  # noqa: F401  (the allowlist in mixer_plugin.compat)

    return torch.load(path, map_location="cpu", weights_only=True)


@pytest.fixture(scope="module")
def cli_trained(e2e_data, tmp_path_factory):
    """The hybrid (every mixer) trained for TRAIN_UPDATES updates."""
    save_dir = tmp_path_factory.mktemp("cli_trained")
    proc = train(e2e_data, save_dir, TRAIN_UPDATES)
    assert updates_logged(proc.stdout)[-1] == TRAIN_UPDATES, proc.stdout[-3000:]
    # the per-layer mixer summary the model logs at build: every mixer is in use
    for line in ("encoder.0: self=ngram:global=1", "encoder.1: self=local", "encoder.2: self=attn",
                 "decoder.0: self=ngram cross=attn", "decoder.1: self=local cross=attn",
                 "decoder.2: self=attn cross=attn"):  # fmt: skip
        assert line in proc.stdout + proc.stderr, line
    for name in ("checkpoint_best.pt", "checkpoint_last.pt"):
        assert (save_dir / name).is_file(), name
    return save_dir


def parse_generate(stdout: str):
    """{sentence id: hypothesis text} from fairseq-generate's H- lines."""
    hyps = {}
    for line in stdout.splitlines():
        if line.startswith("H-"):
            tag, _score, text = (line.split("\t") + [""])[:3]
            idx = int(tag[2:])
            assert idx not in hyps, f"two hypotheses for sentence {idx} (--nbest is 1)"
            hyps[idx] = text
    return hyps


def test_generate_beam_search_and_sacrebleu(e2e_data, cli_trained, tmp_path):
    proc = e2e_fairseq(
        "generate", e2e_data.bin, "--user-dir", E2E_USER_DIR,
        "--task", "translation", "--source-lang", "en", "--target-lang", "de",
        "--path", cli_trained / "checkpoint_best.pt", "--gen-subset", "test",
        "--beam", "4", "--nbest", "1", "--max-len-a", "1.2", "--max-len-b", "10",
        "--batch-size", "32", "--cpu", "--seed", "1",
        # stock fairseq drops the last batch when its size is not a multiple of
        # --required-batch-size-multiple (default 8): up to 7 of the longest test
        # sentences get no hypothesis (facebookresearch/fairseq#5036)
        "--required-batch-size-multiple", "1",
    )  # fmt: skip
    hyps = parse_generate(proc.stdout)
    n_test = E2E_SIZES["test"]
    assert sorted(hyps) == list(range(n_test)), proc.stdout[-3000:]
    assert f"Translated {n_test} sentences" in proc.stdout + proc.stderr
    assert re.search(r"Generate test with beam=4: BLEU4 = [\d.]+", proc.stdout), proc.stdout[-2000:]

    hyp_file = tmp_path / "hyp.de"
    hyp_file.write_text("".join(hyps[i] + "\n" for i in range(n_test)), encoding="utf-8")
    refs = e2e_data.raw / "test.de"
    score = e2e_run([sys.executable, "-m", "sacrebleu", refs, "-i", hyp_file, "-m", "bleu", "--format", "json"])
    result = json.loads(score.stdout)
    assert result["name"] == "BLEU"
    # the CLI scored every line of the decoded file against its reference, in order
    refs_lines = refs.read_text(encoding="utf-8").splitlines()
    expected = sacrebleu.corpus_bleu([hyps[i] for i in range(n_test)], [refs_lines]).score
    assert abs(result["score"] - expected) <= 0.05 + 1e-9, (result["score"], expected)
    assert result["signature"].startswith("nrefs:1|") and "|version:" in result["signature"]


def test_interactive_reads_stdin(e2e_data, cli_trained):
    lines = e2e_data.lines("test", "en")[:2]
    proc = e2e_fairseq(
        "interactive", e2e_data.bin, "--user-dir", E2E_USER_DIR,
        "--task", "translation", "--source-lang", "en", "--target-lang", "de",
        "--path", cli_trained / "checkpoint_last.pt",
        "--beam", "4", "--buffer-size", "2", "--batch-size", "2", "--cpu",
        input="".join(line + "\n" for line in lines),
    )  # fmt: skip
    h_lines = [line for line in proc.stdout.splitlines() if line.startswith("H-")]
    assert [line.split("\t")[0] for line in h_lines] == ["H-0", "H-1"], proc.stdout[-3000:]
    for line in h_lines:
        tag, score, text = line.split("\t")
        float(score)
        assert text.strip(), line


def test_resume_from_checkpoint_last(e2e_data, cli_trained, tmp_path):
    save_dir = e2e_copy_checkpoint_dir(cli_trained, tmp_path / "resumed")
    proc = train(e2e_data, save_dir, RESUME_UPDATES)
    log = proc.stdout + proc.stderr
    for err in WEIGHTS_ONLY_ERRORS:
        assert err not in log
    loaded = re.search(r"Loaded checkpoint (\S+) \(epoch (\d+) @ (\d+) updates\)", log)
    assert loaded, log[-3000:]
    assert loaded.group(1).endswith("checkpoint_last.pt")
    assert int(loaded.group(3)) == TRAIN_UPDATES
    assert updates_logged(proc.stdout) == list(range(TRAIN_UPDATES + 1, RESUME_UPDATES + 1))
    assert f"num_updates: {RESUME_UPDATES} >= max_update: {RESUME_UPDATES}" in log

    state = load_checkpoint_weights_only(save_dir / "checkpoint_last.pt")
    assert state["optimizer_history"][-1]["num_updates"] == RESUME_UPDATES
    assert "encoder.layers.0.self_attn.global_weight" in state["model"]


def test_a_training_resumed_after_its_first_epoch_continues_bit_for_bit(e2e_data, tmp_path):
    """Stopped at update 9 (epoch 2 of 6 updates each) and resumed to 16, a training ends
    with the weights of the one that ran 16 updates in one go.  Stock fairseq rebuilt
    the resumed run's batches with the seed of the epoch it resumed in, so from its first
    update on it saw the same sentences grouped and ordered otherwise (mixer_plugin.compat,
    patch 3); the weights came apart from update 10 on."""
    import mixer_plugin  # noqa: F401  (the allowlist in mixer_plugin.compat)

    batches = ["--max-tokens", "8000"]  # six updates an epoch
    train(e2e_data, tmp_path / "once", 16, *batches)
    train(e2e_data, tmp_path / "resumed", 9, *batches)
    proc = train(e2e_data, tmp_path / "resumed", 16, *batches)
    assert re.search(r"Loaded checkpoint \S+ \(epoch 2 @ 9 updates\)", proc.stdout + proc.stderr)
    once, resumed = (
        torch.load(tmp_path / d / "checkpoint_last.pt", map_location="cpu", weights_only=True)["model"]
        for d in ("once", "resumed")
    )
    assert [k for k in once if not torch.equal(once[k], resumed[k])] == []


def test_bf16_trains_and_decodes_in_bfloat16_without_a_tpu(e2e_data, tmp_path):
    """``--bf16`` without torch_xla: stock fairseq takes it to mean ``--tpu`` and fails
    before the first update (``'NoneType' object has no attribute 'xla_device'``, on a
    GPU as here), and its generate ignores it.  With mixer_plugin.compat (patch 4) the
    model trains in bfloat16 with float32 master weights, and decodes in bfloat16."""
    save_dir = tmp_path / "bf16"
    fp32 = train(e2e_data, tmp_path / "fp32", 3)
    proc = train(e2e_data, save_dir, 3, "--bf16")
    assert "training in bfloat16 on the CPU" in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert updates_logged(proc.stdout)[-1] == 3
    # the same seed and batches; only the arithmetic's precision differs
    losses = [re.findall(r"\| train_inner \|.*? loss=([\d.]+)", p.stdout) for p in (fp32, proc)]
    assert len(losses[1]) == 3 and losses[0] != losses[1], losses

    decode = [
        "generate", e2e_data.bin, "--user-dir", E2E_USER_DIR,
        "--task", "translation", "--source-lang", "en", "--target-lang", "de",
        "--path", save_dir / "checkpoint_last.pt", "--gen-subset", "test", "--max-sentences", "4",
        "--beam", "2", "--max-len-b", "5", "--cpu", "--required-batch-size-multiple", "1",
    ]  # fmt: skip
    fp32, bf16 = (e2e_fairseq(*decode, *flags).stdout for flags in ([], ["--bf16"]))
    assert len(parse_generate(bf16)) == E2E_SIZES["test"], bf16[-2000:]
    # a decode that ignored --bf16 ran in float32 and printed the same scores, bit for bit
    scores = [[line.split("\t", 1)[1] for line in out.splitlines() if line.startswith("P-")] for out in (fp32, bf16)]
    assert len(scores[0]) == E2E_SIZES["test"] and scores[0] != scores[1]


def test_num_batch_buckets_under_numpy2(e2e_data, tmp_path):
    # stock fairseq calls np.percentile(interpolation=) and np.compat here, both gone
    # in numpy 2.4 (TypeError / AttributeError); mixer_plugin.compat reroutes them
    save_dir = tmp_path / "buckets"
    proc = train(e2e_data, save_dir, 3, "--num-batch-buckets", "4")
    log = proc.stdout + proc.stderr
    buckets = re.search(r"bucketing source lengths: \[(.*)\]", log)
    assert buckets, log[-3000:]
    assert updates_logged(proc.stdout)[-1] == 3
    assert (save_dir / "checkpoint_last.pt").is_file()


# ---------------------------------------------------------------- bad mixer specs
# case: (the flag, its bad value, what the error line says besides the flag)
BAD_SPECS = {
    "unknown-mixer": ("--encoder-mixers", "foo", "unknown mixer 'foo'"),
    "list-length": ("--encoder-mixers", "ngram,ngram,ngram", "3 mixers given but --encoder-layers is 2"),
    "n-below-1": ("--encoder-mixers", "ngram:n=0", "option n must be >= 1"),
    "global-on-decoder": ("--decoder-mixers", "ngram:global=1", "encoder-only"),
    "unsupported-role": ("--decoder-cross-mixers", "ngram", "cannot be used as decoder_cross"),
    "unknown-option": ("--encoder-mixers", "ngram:foo=1", "has no option 'foo'"),
}

# the stock 2+2-layer mixer_small_hybrid, shrunk; only the bad flag differs
BAD_SPEC_BASE = [
    "--user-dir", E2E_USER_DIR, "--task", "translation", "--source-lang", "en", "--target-lang", "de",
    "--arch", "mixer_small_hybrid",
    "--encoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128", "--encoder-attention-heads", "4",
    "--decoder-embed-dim", "64", "--decoder-ffn-embed-dim", "128", "--decoder-attention-heads", "4",
    "--cpu", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "2000", "--max-update", "2",
    "--num-workers", "0", "--no-progress-bar",
]  # fmt: skip


@pytest.fixture(scope="module")
def cli_bad_spec_runs(e2e_data, tmp_path_factory):
    """All bad-spec trainings started at once (each one only pays fairseq's start-up),
    then collected: {case: CompletedProcess}, plus each one's save dir."""
    root = tmp_path_factory.mktemp("cli_bad_specs")
    started = {}
    try:
        for case, (flag, value, _) in BAD_SPECS.items():
            save_dir = root / case
            argv = [sys.executable, "-m", "fairseq_cli.train", str(e2e_data.bin), *BAD_SPEC_BASE,
                    "--save-dir", str(save_dir), flag, value]  # fmt: skip
            started[case] = (argv, save_dir, e2e_popen(argv, stdin=subprocess.DEVNULL))
        return {case: (e2e_wait(proc, argv, timeout=300), save_dir) for case, (argv, save_dir, proc) in started.items()}
    finally:
        for _, _, proc in started.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.mark.parametrize("case", list(BAD_SPECS))
def test_bad_mixer_spec_fails_at_startup(cli_bad_spec_runs, case):
    flag, _value, message = BAD_SPECS[case]
    done, save_dir = cli_bad_spec_runs[case]
    rc, out, err = done.returncode, done.stdout, done.stderr
    context = e2e_describe(done, done.args)
    assert rc != 0, context
    error_lines = [line for line in err.splitlines() if flag in line and message in line]
    assert error_lines, context
    # one line, as the last thing on stderr (argparse error or the exception line)
    assert err.strip().splitlines()[-1] in error_lines, context
    assert "Traceback" not in err or "MixerSpecError" in err.strip().splitlines()[-1], context
    # failed before any training: nothing written to the checkpoint directory
    assert "train_inner" not in out
    assert not save_dir.exists() or not any(save_dir.iterdir()), sorted(save_dir.iterdir())
