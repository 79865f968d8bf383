"""mixer-attention-distance on a tiny trained checkpoint, and mixer-average."""

import json

import pytest
import torch
from conftest import E2E_MODEL_ARGS, E2E_TRAIN_ARGS, e2e_fairseq

from mixer_plugin.analysis import attention_distance
from mixer_plugin.experiments import checkpoints


@pytest.fixture(scope="module")
def tiny_checkpoint(e2e_data, tmp_path_factory):
    """The e2e hybrid (encoder: ngram, local, attn) after 2 updates, 2 saved checkpoints."""
    save = tmp_path_factory.mktemp("attn_dist")
    e2e_fairseq(
        "train",
        e2e_data.bin,
        *E2E_MODEL_ARGS,
        *E2E_TRAIN_ARGS,
        "--save-dir",
        save,
        "--max-update",
        "2",
        "--save-interval-updates",
        "1",
        "--keep-interval-updates",
        "3",
    )
    return save


def test_attention_distance_per_layer(e2e_data, tiny_checkpoint, tmp_path):
    out = tmp_path / "ad.png"
    attention_distance.main(
        [
            str(tiny_checkpoint / "checkpoint_last.pt"),
            str(e2e_data.bin),
            "--max-sentences",
            "20",
            "--max-distance",
            "6",
            "--out",
            str(out),
        ]
    )
    res = json.loads(out.with_suffix(".json").read_text())
    assert out.stat().st_size > 1000 and res["relative_positions"][0] == "<-6"
    ngram, local, attn = res["layers"]
    assert ngram["share"] is None and "no attention weights" in ngram["module"]
    assert local["module"] == "LocalAttention" and attn["module"] == "MultiheadAttention"
    for layer in (local, attn):
        assert sum(layer["share"]) == pytest.approx(1.0, abs=1e-6)  # each query's weights sum to 1
    # local attention (n=5) never looks further than 4 positions
    beyond = [
        s
        for r, s in zip(res["relative_positions"], local["share"])
        if r.lstrip("<>-").isdigit() and (r.startswith(("<", ">")) or abs(int(r)) > 4)
    ]
    assert max(beyond) == 0.0
    dec = tmp_path / "dec.png"
    attention_distance.main(
        [
            str(tiny_checkpoint / "checkpoint_last.pt"),
            str(e2e_data.bin),
            "--side",
            "decoder",
            "--max-sentences",
            "10",
            "--out",
            str(dec),
        ]
    )
    d = json.loads(dec.with_suffix(".json").read_text())
    after = [
        s
        for r, s in zip(d["relative_positions"], d["layers"][2]["share"])
        if r.startswith(">") or (r.lstrip("-").isdigit() and int(r) > 0)
    ]
    assert max(after) == 0.0  # causal: no weight on later positions


def test_average_checkpoints(tiny_checkpoint, tmp_path):
    avg = tmp_path / "avg.pt"
    checkpoints.main([str(tiny_checkpoint), "--last", "2", "--output", str(avg)])
    a = torch.load(tiny_checkpoint / "checkpoint_1_1.pt", weights_only=True)["model"]
    b = torch.load(tiny_checkpoint / "checkpoint_1_2.pt", weights_only=True)["model"]
    m = torch.load(avg, weights_only=True)
    for k, v in m["model"].items():
        torch.testing.assert_close(v, ((a[k].double() + b[k].double()) / 2).to(v.dtype))
    assert m["optimizer_history"][-1]["num_updates"] == 2  # the rest from the newest
    with pytest.raises(SystemExit, match="has 2 numbered checkpoints, --last 3 needs 3"):
        checkpoints.main([str(tiny_checkpoint), "--last", "3", "--output", str(avg)])
