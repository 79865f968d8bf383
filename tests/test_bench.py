"""The layer benchmarks (mixer-bench mixers / heads / multiscale) run end to end in their
smoke mode, in float32 and in the half-precision dtypes a GPU run times (scripts/gpu_checks.sh
passes --dtype bfloat16): every module, input and mask in that dtype, the dtype named in the
table. They assert nothing about speed; these tests only keep them runnable, and keep every
registered mixer in the benchmarks that time all of them."""

import json
from pathlib import Path

import pytest
import torch

from mixer_plugin.bench import (
    heads,
    layer_args,
    layer_measure,
    layer_modules,
    mixers,
    multiscale,
    result_files,
    run_record,
)
from mixer_plugin.mixers import MIXER_REGISTRY, Role

# the mixers benchmark runs every registered mixer in fp32 (no --mixers); in bf16, which is
# slow on a CPU without bf16 instructions, one mixer of each kind: a window, a band, retrieval
SMALL = {mixers: ["--lengths", "32"], heads: ["--lengths", "32"], multiscale: ["--lengths", "64"]}
BF16_MIXERS = ["--mixers", "ngram,local,hard"]


# bf16 through the shared bench_group once: on a CPU without bf16 instructions it is slow
# (heads and multiscale take about 50 s each in bf16 against 2 s in fp32)
@pytest.mark.parametrize(
    "bench,dtype",
    [(mixers, "float32"), (mixers, "bfloat16"), (heads, "float32"), (multiscale, "float32")],
    ids=["mixers", "mixers-bf16", "heads", "multiscale"],
)
def test_layer_benchmark_runs_in_each_dtype(bench, dtype, tmp_path, monkeypatch):
    seen = set()
    step = layer_measure.step

    def recording_step(m, x, g, mask):  # what each timed module actually ran in
        seen.update({x.dtype} | {p.dtype for p in m.parameters()} | ({mask.dtype} if mask is not None else set()))
        return step(m, x, g, mask)

    monkeypatch.setattr(layer_measure, "step", recording_step)
    md, js = tmp_path / "b.md", tmp_path / "b.json"
    chosen = BF16_MIXERS if dtype == "bfloat16" else []
    bench.main(
        [
            "--quick",
            *SMALL[bench],
            *chosen,
            "--device",
            "cpu",
            "--threads",
            "1",
            "--dtype",
            dtype,
            "--md",
            str(md),
            "--json",
            str(js),
        ]
    )
    assert seen == {getattr(torch, dtype)}
    assert f", {dtype}, train mode" in md.read_text()
    payload = json.loads(js.read_text())
    timed = [r for r in payload["rows"] if "median_s" in r]
    assert timed and all(r["median_s"] > 0 for r in timed)
    if bench is mixers and not chosen:  # a new mixer is timed without editing a list
        registered = {
            (name, role.value) for name, entry in MIXER_REGISTRY.items() for role in mixers.ROLES if role in entry.roles
        }
        assert registered <= {(r["mixer"], r["role"]) for r in timed}


def test_a_stale_mixer_label_is_an_error():
    """--mixers names labels of the registry's variants; a renamed one must not leave attn
    timed alone, nor the heads benchmark a column empty."""
    with pytest.raises(SystemExit):
        mixers.main(["--quick", "--mixers", "ngram,no_such_mixer", "--device", "cpu"])
    with pytest.raises(SystemExit):
        heads.main(["--quick", "--mixers", "interacting:no_such_option=1", "--device", "cpu"])


def test_the_layer_benchmark_readings_are_registered():
    """The readings mixer-bench mixers times beside a mixer's defaults build in its roles."""
    labels = dict(layer_modules.variants())
    for name, readings in layer_modules.EXTRA_VARIANTS.items():
        roles = MIXER_REGISTRY[name].roles & set(mixers.ROLES)
        assert all(r in labels and layer_modules.spec_problem(r, roles) is None for r in readings), name


def test_the_heads_comparison_set_is_registered():
    """The heads benchmark's list is the interacting-head paper's comparison set, on purpose;
    each of its specs must still build in both roles from the registry."""
    assert all(layer_modules.spec_problem(spec, heads.ROLES) is None for spec in heads.MIXERS)
    assert "interacting" in heads.MIXERS  # the mixer its goal is about


def test_the_decode_benchmark_times_every_decoder_mixer():
    """mixer-bench decode's models come from the registry: the transformer, then every mixer
    that can be a decoder's self-attention (and its cross-attention where it can be that too)."""
    from mixer_plugin.bench import decode_models

    decoders = {name for name, e in MIXER_REGISTRY.items() if name != "attn" and Role.DECODER_SELF in e.roles}
    assert list(decode_models.MODELS)[0] == "transformer" and decode_models.MODELS["transformer"] == []
    assert decoders <= set(decode_models.MODELS)
    for label, spec in decode_models.SPECS.items():
        if spec is None:
            continue
        entry = MIXER_REGISTRY[spec.split(":")[0]]
        roles = entry.roles & {Role.DECODER_SELF, Role.DECODER_CROSS}
        assert layer_modules.spec_problem(spec, roles) is None
        cross = ["--decoder-cross-mixers", spec] if Role.DECODER_CROSS in roles else []
        assert decode_models.MODELS[label] == ["--decoder-mixers", spec, *cross]
    # none left behind by a rename
    assert set(decode_models.DECODE_SPECS) | set(decode_models.EXTRA_MODELS) <= set(decode_models.MODELS)
    bounded = {m for m, s in decode_models.SPECS.items() if s and decode_models.bounded_state(s)}
    assert {"ngram", "local", "multiscale"} <= bounded
    assert not decode_models.bounded_state(decode_models.SPECS["hard"])  # attention's O(L) cache


def test_default_outputs_name_the_dtype(monkeypatch):
    import argparse

    ap = argparse.ArgumentParser()
    layer_args.add_group_args(ap, mixers.NAME, "64")
    ap.add_argument("--quick", action="store_true")
    for dtype, stem in (("float32", "bench_mixers_cpu"), ("bfloat16", "bench_mixers_cpu_bf16")):
        args = ap.parse_args(["--device", "cpu", "--dtype", dtype, "--threads", str(torch.get_num_threads())])
        layer_args.setup_group_args(ap, args, mixers.NAME)
        assert args.md.endswith(f"results/bench/{stem}.md") and args.json.endswith(f"results/bench/{stem}.json")


def test_decode_benchmark_end_to_end(e2e_data, tmp_path):
    """mixer-bench decode on the e2e slice: the models' checkpoints kept for a second run (the
    GPU run decodes them in two precisions), and ms per step from fairseq's sentences/s (its
    printed seconds are rounded to 0.1 s, which made every short run's step time a multiple)."""
    from mixer_plugin.bench import decode

    md, keep = tmp_path / "d.md", tmp_path / "checkpoints"
    argv = [
        str(e2e_data.bin),
        "--lengths",
        "3,6",
        "--beams",
        "2",
        "--sentences",
        "4",
        "--rounds",
        "1",
        "--mixers",
        "transformer,ngram",
        "--checkpoints",
        str(keep),
        "--md",
        str(md),
    ]
    decode.main(argv)
    payload = json.loads(md.with_suffix(".json").read_text())
    assert {(r["model"], r["L"]) for r in payload["rows"]} == {(m, L) for m in ("transformer", "ngram") for L in (3, 6)}
    for r in payload["rows"]:
        assert r["ms_per_step"] == pytest.approx(1000 * 4 / r["sent_per_s"] / (r["L"] + 1))
    assert payload["meta"]["precision"] == "fp32" and md.with_suffix(".png").stat().st_size > 1000
    made = {m: (keep / m / "checkpoint_last.pt").stat().st_mtime_ns for m in ("transformer", "ngram")}
    decode.main(argv)  # a second run decodes the same checkpoints
    assert made == {m: (keep / m / "checkpoint_last.pt").stat().st_mtime_ns for m in made}


def test_decode_benchmark_half_precision_needs_a_gpu(e2e_data):
    from mixer_plugin.bench import decode

    with pytest.raises(SystemExit, match="--precision bf16 needs --device cuda"):
        decode.main([str(e2e_data.bin), "--precision", "bf16"])


def test_hard_ops_time_equal_computations(tmp_path):
    """mixer-bench hard-ops times the hard mixer's ops against standard attention's and
    against the alternatives it was chosen over; each pair must compute the same thing on
    the benchmark's own inputs (row numbers into the time-major cache included), or the
    table compares unequal work."""
    from mixer_plugin.bench import hard_ops

    for n, h, t, s in ((8, 2, 1, 5), (3, 4, 6, 6)):
        env = hard_ops.operands(n, h, t, s, 4, torch.float32, "cpu")
        run = {stmt: eval(stmt, env) for stmt in [*hard_ops.HARD.values(), *hard_ops.NOT_USED.values()]}
        assert torch.equal(run[hard_ops.HARD["normalise"]], run[hard_ops.NOT_USED["normalise"]])
        retrieved = run[hard_ops.HARD["attend"]].view(n, h, t, 4)  # rows come out (N, H, T)-major
        assert torch.equal(retrieved, run[hard_ops.NOT_USED["attend"]])
        # and the retrieval is hard attention: softmax . V with a one-hot at the argmax
        one_hot = torch.nn.functional.one_hot(env["scores"].argmax(-1), s).float()
        torch.testing.assert_close(retrieved, one_hot @ env["v"])
    md = tmp_path / "h.md"
    hard_ops.main(["--device", "cpu", "--batch", "2", "--min-run-time", "0.01", "--md", str(md)])
    assert "| attend | `v_rows.index_select(0, rows)` |" in md.read_text()


def test_benchmarks_name_the_cpu_model_the_training_stamps_name(tmp_path):
    """A benchmark's table names its CPU as every training stage's stamp does (the model name,
    not "x86_64"), so a speed and a training run can be told to come from one machine."""
    from mixer_plugin.bench import hard_ops
    from mixer_plugin.files import machine

    cpu = run_record.cpu_name()
    assert cpu.startswith(machine()["cpu"]) and machine().get("cpu_id", "") in cpu
    assert run_record.run_meta(torch.device("cpu"))["device_name"] == cpu
    js = tmp_path / "h.json"
    hard_ops.main(
        ["--device", "cpu", "--batch", "2", "--min-run-time", "0.01", "--md", str(tmp_path / "h.md"), "--json", str(js)]
    )
    assert json.loads(js.read_text())["meta"]["device"].endswith(f", {cpu})")


@pytest.mark.parametrize("bench", [mixers, heads, multiscale], ids=["mixers", "heads", "multiscale"])
def test_committed_layer_table_is_what_its_json_renders_to(bench, tmp_path):
    """`mixer-bench ... --from-json` re-renders a finished run without timing anything: each
    committed table must come back byte for byte from its committed JSON (so no figure in it
    was edited by hand, and a change of presentation cannot change a measurement); the layer
    benchmark draws its speed-up-over-L plot beside it."""
    stem = f"{bench.NAME}_cpu"
    committed = result_files.RESULTS / stem
    md = tmp_path / f"{stem}.md"
    bench.main(["--from-json", str(committed.with_suffix(".json")), "--md", str(md)])
    assert md.read_text() == committed.with_suffix(".md").read_text()
    assert "GFLOP/s, ceiling" in md.read_text()  # every layer benchmark accounts for its FLOPs
    if bench is mixers:
        assert md.with_suffix(".png").stat().st_size > 10_000
    with pytest.raises(SystemExit):
        bench.main(["--from-json", str(tmp_path / "missing.json")])


def test_decode_benchmark_times_the_rows_of_an_experiment(e2e_data, tmp_path, monkeypatch):
    """--experiment: every row of the file with its own architecture and flags, the file's
    baseline first; a decode_of row decodes its source's checkpoint (none of its own) with
    its --model-overrides, and its speed-up is against the baseline of the same run."""
    import yaml

    from mixer_plugin.bench import decode, decode_timing

    path = tmp_path / "rows.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "rows",
                "data": "debian_en_de",
                "train": "--share-all-embeddings --lr 0.001",
                "score": {"baseline": "base"},
                "models": {
                    "windowed": {"arch": "mixer_small_attn", "train": "--decoder-mixers ngram:n=3 --decoder-layers 1"},
                    "base": {"arch": "mixer_small_attn"},
                    "base_hard": {"decode_of": "base", "overrides": {"decoder_cross_mixers": "hard"}},
                },
            },
            sort_keys=False,
        )
    )
    seen = []
    generate = decode_timing.generate

    def recording(data, checkpoint, *a, extra=(), **kw):
        seen.append((Path(checkpoint).parent.name, list(extra)))
        return generate(data, checkpoint, *a, extra=extra, **kw)

    monkeypatch.setattr(decode, "generate", recording)
    md, keep = tmp_path / "d.md", tmp_path / "checkpoints"
    decode.main(
        [
            str(e2e_data.bin),
            "--experiment",
            str(path),
            "--lengths",
            "3",
            "--beams",
            "2",
            "--sentences",
            "4",
            "--rounds",
            "1",
            "--checkpoints",
            str(keep),
            "--md",
            str(md),
        ]
    )
    payload = json.loads(md.with_suffix(".json").read_text())
    assert [r["model"] for r in payload["rows"]] == ["base", "windowed", "base_hard"]
    assert payload["rows"][0]["speedup"] == 1.0 and payload["meta"]["baseline"] == "base"
    assert sorted(p.name for p in keep.iterdir()) == ["base", "windowed"]
    hard = {tuple(extra) for ckpt, extra in seen if ckpt == "base" and extra}
    assert hard == {("--model-overrides", "{'decoder_cross_mixers': 'hard'}")}
    import torch

    state = torch.load(keep / "windowed" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["cfg"]["model"].decoder_mixers == "ngram:n=3" and state["cfg"]["model"].decoder_layers == 1
    assert "speed-up against the `base` of the same (L, beam)" in md.read_text()


def test_decode_benchmark_takes_mixers_or_an_experiment(e2e_data, tmp_path):
    from mixer_plugin.bench import decode

    with pytest.raises(SystemExit, match="--mixers and --experiment exclude each other"):
        decode.main([str(e2e_data.bin), "--experiment", "experiments/leaderboard.yaml", "--mixers", "transformer"])
    with pytest.raises(SystemExit, match="--experiment: .*nothing.yaml: no such experiment file"):
        decode.main([str(e2e_data.bin), "--experiment", str(tmp_path / "nothing.yaml")])


def test_a_failed_write_leaves_the_old_tables(tmp_path):
    """A benchmark that dies while writing its outputs (here: a payload JSON cannot hold)
    keeps the tables of its last run instead of leaving a truncated file."""
    md, js = tmp_path / "bench.md", tmp_path / "bench.json"
    result_files.write_outputs(md, js, "| old |", {"rows": [1]})
    with pytest.raises(TypeError):
        result_files.write_outputs(md, js, "| new |", {"rows": [object()]})
    assert json.loads(js.read_text()) == {"rows": [1]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json", "bench.md"]
