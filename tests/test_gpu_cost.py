"""Version 3's cost on a GPU (``experiments.gpu_cost``) and the FLOP count it reads
(``mixer-bench flops``): the count is a whole update, forward and backward, of the model
fairseq-train builds; the block prices every planned run at its cap, from the count until a
GPU has timed the rows, then from the timed speeds."""

import json
import shutil

import pytest

from mixer_plugin.experiments import gpu_cost
from mixer_plugin.paths import CHECKOUT


def test_an_updates_count_is_the_forward_and_backward_of_every_product(e2e_data):
    """Against the count by hand of a stock 1+1 transformer, whose products are its linear
    layers (each a multiply-add a weight a position, three times over with the backward's
    two), over the padded batch: the encoder's on the source positions, the decoder's and the
    output projection on the target's, cross-attention's keys and values on the source's.
    Attention's scores add a little; a count that missed the backward would be a third."""
    from mixer_plugin.bench.train_flops import count

    d, ffn = 64, 256
    vocab = 4 + len((e2e_data.bin / "dict.en.txt").read_text().splitlines())  # with fairseq's four specials
    argv = [
        str(e2e_data.bin), "--user-dir", str(CHECKOUT / "mixer_plugin"), "--task", "translation",
        "--arch", "transformer", "--encoder-layers", "1", "--decoder-layers", "1",
        "--encoder-embed-dim", str(d), "--decoder-embed-dim", str(d), "--encoder-ffn-embed-dim", str(ffn),
        "--decoder-ffn-embed-dim", str(ffn), "--encoder-attention-heads", "2", "--decoder-attention-heads", "2",
        "--share-all-embeddings", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
        "--max-tokens", "1024", "--cpu", "--seed", "1",
    ]  # fmt: skip
    got = count(argv, batches=2)
    assert got.batches == 2 and got.layers == "1+1"
    by_hand = 6 * (
        got.source_positions * (4 * d * d + 2 * d * ffn + 2 * d * d)  # encoder layer; cross-attention's k, v
        + got.target_positions * (4 * d * d + 2 * d * d + 2 * d * ffn + vocab * d)  # self, cross q/out, FFN, output
    )
    assert 0.98 < got.gflops * 1e9 / by_hand < 1.1, (got, by_hand / 1e9)


def files(tmp_path, flops=None, speed=None):
    shutil.copytree(CHECKOUT / "experiments", tmp_path / "experiments")  # with the files they take rows from
    for pattern, per_file in ((gpu_cost.FLOPS, flops), (gpu_cost.SPEED, speed)):
        for name, rows in (per_file or {}).items():
            path = tmp_path / pattern.format(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"meta": {"device": "GPU (Test H100)"}, "rows": rows}))
    return tmp_path


def test_without_a_gpu_timing_the_block_gives_the_flop_counts_floor_and_no_gpu_hours(tmp_path):
    runs = gpu_cost.planned(files(tmp_path))
    assert ("leaderboard_v3", "transformer", 3, 50_000) in runs and (
        "leaderboard_v3_deep",
        "dynamicconv",
        1,
        50_000,
    ) in runs
    assert gpu_cost.lines(tmp_path).startswith("Waiting for the FLOP count")
    # every row 100 GFLOP an update at 2+2, 300 at 6+6, but the transformer (timed apart)
    flops = {
        name: [{"model": row, "layers": layers, "gflops": g} for row in ("transformer", "multinn")]
        for name, layers, g in (("leaderboard_v3", "2+2", 100.0), ("leaderboard_v3_deep", "6+6", 300.0))
    }
    text = gpu_cost.lines(files(tmp_path / "b", flops=flops))
    total = sum(seeds * cap * (100e9 if f == "leaderboard_v3" else 300e9) for f, _, seeds, cap in runs)
    n = sum(seeds for _, _, seeds, _ in runs)
    assert "no GPU-hours" in text and "gpu_checks.sh v3speed" in text
    assert f"an update of the transformer is 100 GFLOP at 2+2 and 300 at 6+6; the {n} runs" in text
    assert (
        f"{total / 1e15:,.0f} PFLOP in all" in text and f"in {total / gpu_cost.H100_BF16_PEAK / 60:.0f} minutes" in text
    )


def test_with_a_gpu_timing_each_run_is_its_cap_at_its_rows_speed(tmp_path):
    flops = {
        name: [{"model": "transformer", "layers": layers, "gflops": g}]
        for name, layers, g in (("leaderboard_v3", "2+2", 100.0), ("leaderboard_v3_deep", "6+6", 300.0))
    }
    speed = {
        "leaderboard_v3": [{"model": "transformer", "ups": 20.0}, {"model": "dynamicconv", "ups": 10.0}],
        "leaderboard_v3_deep": [{"model": "transformer", "ups": 8.0}, {"model": "multinn", "ups": 5.0}],
    }
    root = files(tmp_path, flops=flops, speed=speed)
    hours = 0.0
    for f, row, seeds, cap in gpu_cost.planned(root):
        ups = {r["model"]: r["ups"] for r in speed[f]}.get(row, min(r["ups"] for r in speed[f]))
        hours += seeds * cap / ups / 3600
    text = gpu_cost.lines(root)
    assert text.startswith("**On a GPU** (GPU (Test H100), one training alone")
    assert f"{hours:.0f} GPU-hours" in text
    assert "`local`" in text  # timed in neither file: a stand-in, named
    # shares of the peak: only rows with both a count and a speed (the two transformers)
    shares = sorted([100e9 * 20 / gpu_cost.H100_BF16_PEAK, 300e9 * 8 / gpu_cost.H100_BF16_PEAK])
    assert f"kept {shares[0]:.1%}-{shares[1]:.1%} of that peak busy" in text


@pytest.mark.parametrize(
    "args,message",
    [(["--batches", "0"], "--batches: at least 1, not 0"), (["--only", "nope"], "--only: nope not in")],
)
def test_bad_flops_options_are_one_line_errors(args, message, capsys):
    from mixer_plugin.bench import train_flops

    with pytest.raises(SystemExit) as e:
        train_flops.main(["experiments/leaderboard_v3.yaml", *args])
    assert e.value.code == 2 and message in capsys.readouterr().err
