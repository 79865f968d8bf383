"""CPU data parallelism through the stock CLI: 2 gloo ranks under torchrun
(scripts/ddp_cpu_worker.sh) train bit-exactly like 1 process at --update-freq 2,
also across a 2-rank resume, where rank 0 broadcasts the loaded checkpoint state to
rank 1 (a torch.save/torch.load round trip under weights_only=True, which is what
the allowlist in mixer_plugin/compat.py is for).

The model is the hybrid of tests/conftest.py, which uses every mixer: ngram with
global context, local and attn in the encoder; ngram, local and attn in the decoder;
attn as cross-attention.  All dropout is off, so the two runs see the same numbers.
"""

import io
import re
import socket
import sys

import pytest
import torch
from conftest import (
    E2E_MODEL_ARGS,
    E2E_REPO,
    E2E_TRAIN_ARGS,
    e2e_copy_checkpoint_dir,
    e2e_describe,
    e2e_fairseq,
    e2e_run,
)

FIRST_UPDATES = 4  # the fresh runs; the resumed runs continue to RESUMED_UPDATES
RESUMED_UPDATES = 8  # both stay inside epoch 1 (11 updates of 2 batches)
WORKER = E2E_REPO / "scripts" / "ddp_cpu_worker.sh"
NO_DROPOUT = ["--dropout", "0", "--attention-dropout", "0", "--activation-dropout", "0"]
WEIGHTS_ONLY_ERRORS = ("Weights only load failed", "UnpicklingError", "Unsupported global")
INNER = re.compile(r"\| train_inner \| .*?loss=([\d.]+), nll_loss=([\d.]+).*?num_updates=(\d+).*?gnorm=([\d.]+)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train_args(data, save_dir, max_update):
    return [
        data.bin, *E2E_MODEL_ARGS, *E2E_TRAIN_ARGS, *NO_DROPOUT,
        "--save-dir", save_dir, "--max-update", max_update,
    ]  # fmt: skip


def two_ranks(data, save_dir, max_update):
    """torchrun --no-python --nproc_per_node 2 scripts/ddp_cpu_worker.sh ARGS"""
    for _attempt in range(3):  # a free port can be taken between picking and binding
        argv = [
            sys.executable, "-m", "torch.distributed.run", "--no-python",
            "--nnodes", "1", "--nproc_per_node", "2",
            "--master-addr", "127.0.0.1", "--master-port", free_port(),
            WORKER, *train_args(data, save_dir, max_update),
        ]  # fmt: skip
        proc = e2e_run(argv, check=False)
        if proc.returncode == 0:
            return proc
        if "address already in use" not in (proc.stdout + proc.stderr).lower():
            break
    pytest.fail(e2e_describe(proc, argv), pytrace=False)


def one_process(data, save_dir, max_update):
    return e2e_fairseq("train", *train_args(data, save_dir, max_update), "--update-freq", "2")


def inner_stats(log: str):
    """(num_updates, loss, nll_loss, gnorm) of every train_inner line."""
    return [(int(u), loss, nll, gnorm) for loss, nll, u, gnorm in INNER.findall(log)]


def load(path):
    import mixer_plugin  # noqa: F401  (the allowlist in mixer_plugin.compat)

    return torch.load(path, map_location="cpu", weights_only=True)


def assert_same(a, b, where="state"):
    """Recursive, bit-exact equality (tensors with torch.equal, dtype included)."""
    if torch.is_tensor(a):
        assert torch.is_tensor(b) and a.dtype == b.dtype and torch.equal(a, b), (
            f"{where} differs: max |diff| = {(a.double() - b.double()).abs().max().item()}"
        )
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{where}: keys differ"
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def assert_same_training_state(dir_a, dir_b, updates):
    a, b = load(dir_a / "checkpoint_last.pt"), load(dir_b / "checkpoint_last.pt")
    assert a["optimizer_history"][-1]["num_updates"] == updates
    assert b["optimizer_history"][-1]["num_updates"] == updates
    assert len(a["model"]) > 0
    assert_same(a["model"], b["model"], "model")
    assert_same(a["last_optimizer_state"], b["last_optimizer_state"], "optimizer")


# ---------------------------------------------------------------- the four runs
@pytest.fixture(scope="module")
def ddp_fresh(e2e_data, tmp_path_factory):
    save_dir = tmp_path_factory.mktemp("ddp_two_ranks")
    return save_dir, two_ranks(e2e_data, save_dir, FIRST_UPDATES)


@pytest.fixture(scope="module")
def ddp_reference_fresh(e2e_data, tmp_path_factory):
    save_dir = tmp_path_factory.mktemp("ddp_one_process")
    return save_dir, one_process(e2e_data, save_dir, FIRST_UPDATES)


@pytest.fixture(scope="module")
def ddp_resumed(e2e_data, ddp_fresh, tmp_path_factory):
    save_dir = e2e_copy_checkpoint_dir(ddp_fresh[0], tmp_path_factory.mktemp("ddp_resume") / "two_ranks")
    return save_dir, two_ranks(e2e_data, save_dir, RESUMED_UPDATES)


@pytest.fixture(scope="module")
def ddp_reference_resumed(e2e_data, ddp_reference_fresh, tmp_path_factory):
    save_dir = e2e_copy_checkpoint_dir(ddp_reference_fresh[0], tmp_path_factory.mktemp("ddp_resume") / "one_process")
    return save_dir, one_process(e2e_data, save_dir, RESUMED_UPDATES)


# ---------------------------------------------------------------- tests
def test_two_ranks_equal_one_process_at_update_freq_2(ddp_fresh, ddp_reference_fresh):
    (ddp_dir, ddp), (ref_dir, ref) = ddp_fresh, ddp_reference_fresh
    assert "distributed init (rank 1): env://" in ddp.stdout + ddp.stderr
    assert "training on 2 devices (GPUs/TPUs)" in ddp.stdout
    stats = inner_stats(ddp.stdout)
    assert [s[0] for s in stats] == list(range(1, FIRST_UPDATES + 1)), ddp.stdout[-3000:]
    assert stats == inner_stats(ref.stdout)
    assert_same_training_state(ddp_dir, ref_dir, FIRST_UPDATES)


def test_two_rank_resume_broadcasts_state_and_stays_bit_exact(ddp_resumed, ddp_reference_resumed):
    (ddp_dir, ddp), (ref_dir, ref) = ddp_resumed, ddp_reference_resumed
    log = ddp.stdout + ddp.stderr
    for err in WEIGHTS_ONLY_ERRORS:
        assert err not in log, log[-4000:]
    loaded = re.search(r"Loaded checkpoint (\S+) \(epoch 1 @ (\d+) updates\)", log)
    assert loaded and loaded.group(1).endswith("checkpoint_last.pt"), log[-3000:]
    assert int(loaded.group(2)) == FIRST_UPDATES
    stats = inner_stats(ddp.stdout)
    assert [s[0] for s in stats] == list(range(FIRST_UPDATES + 1, RESUMED_UPDATES + 1)), log[-3000:]
    # rank 1 trains on what rank 0 broadcast: had it kept its fresh initialisation
    # (or a different optimizer state), the all-reduced losses and gradients, and so
    # rank 0's checkpoint, would differ from the one-process run
    assert stats == inner_stats(ref.stdout)
    assert_same_training_state(ddp_dir, ref_dir, RESUMED_UPDATES)


def pickled_globals(obj_or_path):
    """GLOBALs in a torch.save pickle that torch's own weights_only list lacks."""
    saved = torch.serialization.get_safe_globals()
    torch.serialization.clear_safe_globals()
    try:
        if not isinstance(obj_or_path, (str, bytes)) and not hasattr(obj_or_path, "read"):
            buf = io.BytesIO()
            torch.save(obj_or_path, buf)
            buf.seek(0)
            obj_or_path = buf
        return set(torch.serialization.get_unsafe_globals_in_checkpoint(obj_or_path))
    finally:
        torch.serialization.clear_safe_globals()
        torch.serialization.add_safe_globals(saved)


def test_checkpoint_allowlist_is_exactly_what_the_pickles_need(ddp_fresh):
    """The allowlist is the union of the GLOBALs in (a) a checkpoint file and (b) what
    rank 0 broadcasts on a multi-rank resume, built with fairseq's own code path
    (checkpoint_utils.load_checkpoint_to_cpu, then broadcast_object's tensor split
    and torch.save).  Nothing missing (the resume above would fail) and nothing more."""
    from fairseq import checkpoint_utils
    from fairseq.distributed.utils import _split_tensors_from_obj

    from mixer_plugin.compat import checkpoint_and_broadcast_globals

    path = str(ddp_fresh[0] / "checkpoint_last.pt")
    in_file = pickled_globals(path)
    assert in_file == {"argparse.Namespace"}

    state = checkpoint_utils.load_checkpoint_to_cpu(path)
    tensors = []
    broadcast = _split_tensors_from_obj(state, tensors)
    assert tensors, "the tensors travel outside the pickle"
    in_broadcast = pickled_globals(broadcast)

    allowlisted = {f"{g.__module__}.{g.__qualname__}" for g in checkpoint_and_broadcast_globals()}
    assert len(allowlisted) == len(checkpoint_and_broadcast_globals())
    assert in_file | in_broadcast == allowlisted
