"""scripts/make_results.py on synthetic runs, scripts/attention_distance.py on a tiny
trained checkpoint, and scripts/average_checkpoints.py."""

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

from conftest import E2E_MODEL_ARGS, E2E_TRAIN_ARGS, e2e_fairseq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import attention_distance  # noqa: E402
import make_results  # noqa: E402

LOG = """2026-01-01 00:00:00 | INFO | fairseq_cli.train | num. shared model params: {params:,} (num. trained: {params:,})
2026-01-01 00:00:10 | INFO | train_inner | epoch 001:     50 / 100 loss=9.5, nll_loss=9.1, ppl=500, wps=800, ups={ups}, wpb=1700, bsz=60, num_updates=50, lr=0.0002, gnorm=1.2, train_wall=100, wall=110
2026-01-01 00:00:20 | INFO | train_inner | epoch 001:    100 / 100 loss=8.5, nll_loss=8.0, ppl=260, wps=800, ups={ups}, wpb=1700, bsz=60, num_updates=100, lr=0.0004, gnorm=1.0, train_wall=200, wall=220
2026-01-01 00:00:30 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 8.9 | nll_loss 8.4 | ppl 338 | wps 1600 | wpb 1200 | bsz 59 | num_updates 100
"""


def fake_run(root, name, params, ups, hyps, seeds=1):
    for k in range(1, seeds + 1):
        d = root / name / f"seed{k}"
        (d / "gen-test").mkdir(parents=True)
        (d / "train.log").write_text(LOG.format(params=params, ups=ups))
        (d / "command.txt").write_text(f"fairseq-train DATA --arch x --seed {k}\n")
        (d / "train.seconds").write_text("125\n")
        (d / "gen-test" / "hyp.txt").write_text("".join(h + "\n" for h in hyps))
        (d / "gen-test" / "command.txt").write_text("fairseq-generate DATA --beam 4\n")


def test_make_results_tables_and_plots(tmp_path):
    refs = [f"das ist der satz nummer {i} über thema {i % 5}" for i in range(30)]
    prep = tmp_path / "data" / "prep.json"
    (tmp_path / "data" / "ref").mkdir(parents=True)
    (tmp_path / "data" / "ref" / "test.de").write_text("".join(r + "\n" for r in refs))
    prep.write_text(json.dumps({"command": "python data-prep/debian_en_de.py", "references": {
        "test": {"detok": "ref/test.de", "tok": "ref/test.tok.de"}}}))
    configs = tmp_path / "configs"
    configs.mkdir()
    for n in ("cpu_transformer", "cpu_multinn"):
        shutil.copy(REPO / "configs" / "comparison" / f"{n}.yaml", configs / f"{n}.yaml")
    runs = tmp_path / "runs"
    fake_run(runs, "cpu_transformer", 5_736_448, 0.50, [" ".join(r.split()[:5]) for r in refs])
    fake_run(runs, "cpu_multinn", 5_500_000, 0.25, refs, seeds=2)
    out = tmp_path / "results" / "cmp.md"
    make_results.main([str(runs), "--configs", str(configs), "--out", str(out), "--prep", str(prep),
                       "--baseline", "cpu_transformer", "--title", "T"])
    md = out.read_text()
    rows = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| `cpu_")}
    assert set(rows) == {"`cpu_transformer`", "`cpu_multinn`"}
    assert "| 5,736,448 | 100 | 1 | 8.900 / 338.0 |" in rows["`cpu_transformer`"] and "baseline" in rows["`cpu_transformer`"]
    assert "| 100.00 ± 0.00 |" in rows["`cpu_multinn`"]  # two seeds, identical hypotheses
    assert "0.50x" in rows["`cpu_multinn`"] and "1.00x" in rows["`cpu_transformer`"]  # ups 0.25 vs 0.50
    assert "BLEU 0.0" in rows["`cpu_multinn`"]  # a p-value from the paired bootstrap
    assert "- train: `fairseq-train DATA --arch x --seed 1`" in md
    assert "paper T1 multi-head NN: WMT 27.15" in rows["`cpu_multinn`"]  # the paper row it stands for
    for png in ("debian_en_de_scores.png", "debian_en_de_speed.png", "debian_en_de_curves.png"):
        assert (tmp_path / "results" / "cmp" / png).stat().st_size > 1000


@pytest.fixture(scope="module")
def tiny_checkpoint(e2e_data, tmp_path_factory):
    """The e2e hybrid (encoder: ngram, local, attn) after 2 updates, 2 saved checkpoints."""
    save = tmp_path_factory.mktemp("attn_dist")
    e2e_fairseq("train", e2e_data.bin, *E2E_MODEL_ARGS, *E2E_TRAIN_ARGS, "--save-dir", save, "--max-update", "2",
                "--save-interval-updates", "1", "--keep-interval-updates", "3")
    return save


def test_attention_distance_per_layer(e2e_data, tiny_checkpoint, tmp_path):
    out = tmp_path / "ad.png"
    attention_distance.main([str(tiny_checkpoint / "checkpoint_last.pt"), str(e2e_data.bin), "--max-sentences", "20",
                             "--max-distance", "6", "--out", str(out)])
    res = json.loads(out.with_suffix(".json").read_text())
    assert out.stat().st_size > 1000 and res["relative_positions"][0] == "<-6"
    ngram, local, attn = res["layers"]
    assert ngram["share"] is None and "no attention weights" in ngram["module"]
    assert local["module"] == "LocalAttention" and attn["module"] == "MultiheadAttention"
    for layer in (local, attn):
        assert sum(layer["share"]) == pytest.approx(1.0, abs=1e-6)  # each query's weights sum to 1
    # local attention (n=5) never looks further than 4 positions
    beyond = [s for r, s in zip(res["relative_positions"], local["share"]) if r.lstrip("<>-").isdigit() and
              (r.startswith(("<", ">")) or abs(int(r)) > 4)]
    assert max(beyond) == 0.0
    dec = tmp_path / "dec.png"
    attention_distance.main([str(tiny_checkpoint / "checkpoint_last.pt"), str(e2e_data.bin), "--side", "decoder",
                             "--max-sentences", "10", "--out", str(dec)])
    d = json.loads(dec.with_suffix(".json").read_text())
    after = [s for r, s in zip(d["relative_positions"], d["layers"][2]["share"]) if r.startswith(">") or
             (r.lstrip("-").isdigit() and int(r) > 0)]
    assert max(after) == 0.0  # causal: no weight on later positions


def test_local_weights_reproduce_the_mixer():
    from mixer_cases import Case, make_mixer
    from mixer_plugin.mixers import Role

    for role in (Role.ENCODER_SELF, Role.DECODER_SELF):
        mixer = make_mixer(Case("local:n=3", role))
        T, B = 9, 2
        x = torch.randn(T, B, mixer.embed_dim, dtype=torch.float64)
        pad = torch.zeros(B, T, dtype=torch.bool)
        pad[1, -2:] = True
        out, _ = mixer(x, x, x, key_padding_mask=pad)
        w = attention_distance.local_weights(mixer, x, pad).to(x.dtype)  # (B, H, T, T)
        v = mixer.v_proj(x).view(T, B, mixer.num_heads, mixer.head_dim).permute(1, 2, 0, 3)
        mixed = torch.einsum("bhts,bhsd->tbhd", w, v).reshape(T, B, -1)
        ok = ~pad.t()  # compare real query positions
        torch.testing.assert_close(mixer.out_proj(mixed)[ok], out[ok])


def test_average_checkpoints(tiny_checkpoint, tmp_path):
    import average_checkpoints
    import mixer_plugin  # noqa: F401

    avg = tmp_path / "avg.pt"
    average_checkpoints.main([str(tiny_checkpoint), "--last", "2", "--output", str(avg)])
    a = torch.load(tiny_checkpoint / "checkpoint_1_1.pt", weights_only=True)["model"]
    b = torch.load(tiny_checkpoint / "checkpoint_1_2.pt", weights_only=True)["model"]
    m = torch.load(avg, weights_only=True)
    for k, v in m["model"].items():
        torch.testing.assert_close(v, ((a[k].double() + b[k].double()) / 2).to(v.dtype))
    assert m["optimizer_history"][-1]["num_updates"] == 2  # the rest from the newest
    with pytest.raises(SystemExit, match="has 2 numbered checkpoints, --last 3 needs 3"):
        average_checkpoints.main([str(tiny_checkpoint), "--last", "3", "--output", str(avg)])


def test_generate_and_score_scripts(e2e_data, tiny_checkpoint, tmp_path):
    """scripts/generate.sh -> data-prep/postprocess.py -> scripts/score.sh on the tiny model."""
    import os
    import subprocess

    prep = tmp_path / "prep.json"
    (tmp_path / "ref").mkdir()
    shutil.copy(e2e_data.raw / "test.de", tmp_path / "ref" / "test.de")
    prep.write_text(json.dumps({"tgt": "de", "subword": "none", "tokenize": "none", "subword_model": {},
                                "segments": {"test": 50}, "command": "e2e",
                                "references": {"test": {"detok": "ref/test.de", "tok": "ref/test.de"}}}))
    env = dict(os.environ, OMP_NUM_THREADS="1", DATA=str(e2e_data.bin), SAVE_DIR=str(tiny_checkpoint), PREP=str(prep),
               OUT=str(tmp_path / "gen"), AVG="2")
    cfg = "configs/comparison/cpu_transformer.yaml"
    gen = subprocess.run(["bash", "scripts/generate.sh", cfg, "--max-len-b", "5", "--beam", "2"], cwd=REPO, env=env,
                         capture_output=True, text=True)
    assert gen.returncode == 0, gen.stderr[-3000:]
    assert (tiny_checkpoint / "averaged_last2.pt").is_file()  # AVG=2: the last two averaged
    assert "--path " + str(tiny_checkpoint / "averaged_last2.pt") in (tmp_path / "gen" / "command.txt").read_text()
    assert len((tmp_path / "gen" / "hyp.txt").read_text().splitlines()) == 50
    env["OUT"] = str(tmp_path / "score.json")
    sc = subprocess.run(["bash", "scripts/score.sh", cfg, str(tmp_path / "gen")], cwd=REPO, env=env,
                        capture_output=True, text=True)
    assert sc.returncode == 0, sc.stderr[-3000:]
    s = json.loads((tmp_path / "score.json").read_text())
    assert s["metrics"] == ["bleu", "chrf", "ter"] and s["lines"] == 50 and "ter_signature" in s
