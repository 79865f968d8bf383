"""The experiment runner (mixer-run): experiment files, one-line errors, and a whole tiny
experiment end to end through the stock fairseq tools (prepare -> train -> average ->
generate -> score -> results), then resumed: skipped when finished, continued from
checkpoint_last.pt when killed or given a longer budget, restarted when the model
changes."""

import dataclasses
import json
import lzma
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from conftest import E2E_REPO, e2e_env, rows, work_at

from mixer_plugin.experiments.record import RunRecord

TINY_MODEL = (
    "--encoder-embed-dim 32 --encoder-ffn-embed-dim 64 --encoder-attention-heads 4 "
    "--decoder-embed-dim 32 --decoder-ffn-embed-dim 64 --decoder-attention-heads 4"
)
TRAIN = (
    "--optimizer adam --lr 0.001 --lr-scheduler inverse_sqrt --warmup-updates 4 --max-tokens 2000 "
    "--criterion label_smoothed_cross_entropy --label-smoothing 0.1 --no-epoch-checkpoints "
    "--save-interval-updates 2 --keep-interval-updates 3 --num-workers 0 --log-format simple "
    f"--log-interval 1 --max-update 4 {TINY_MODEL}"
)


def experiment(tmp_path, corpus, **changes):
    spec = {
        "name": "tiny",
        "title": "tiny",
        "data": "debian_en_de",
        "prepare": f"--corpus {corpus} --vocab 400",
        "train": "--share-all-embeddings " + TRAIN,
        "generate": {"subset": "test", "average_last": 2, "flags": "--beam 2 --max-len-a 1.2 --max-len-b 5"},
        "score": {"metrics": ["bleu", "chrf"], "baseline": "attn"},
        "jobs": 2,
        "threads": 1,
        "results": str(tmp_path / "results" / "tiny.md"),
        "models": {
            "attn": {"arch": "mixer_small_attn", "seeds": [1, 2], "paper": "T1 self-attention 27.20"},
            "ngram": {
                "arch": "mixer_small_attn",
                "train": "--encoder-mixers ngram --decoder-mixers ngram",
                "claims": "~ attn on translation",
            },
            "attn_decoded_hard": {
                "decode_of": "attn",
                "overrides": {"decoder_cross_mixers": "hard"},
                "seeds": [1, 2],
                "claims": ["< attn on translation", "> ngram on translation"],
            },
        },
    }
    spec.update(changes)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def mixer_run(path, *args, work):
    env = e2e_env(MIXER_WORK=str(work))
    return subprocess.run(
        [sys.executable, "-m", "mixer_plugin.experiments.runner", str(path), *args],
        cwd=E2E_REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def finished(tmp_path_factory, corpus):
    tmp = tmp_path_factory.mktemp("tiny_experiment")
    path = experiment(tmp, corpus)
    proc = mixer_run(path, work=tmp / "work")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp, path, proc


def test_every_stage_runs_and_reports_progress(finished):
    tmp, path, proc = finished
    out = proc.stdout
    # one line per stage, with elapsed time and an estimate of what is left
    for label, stage in (
        ("data", "prepare"),
        ("attn/seed1", "train"),
        ("attn/seed2", "average"),
        ("ngram/seed1", "generate"),
        ("attn_decoded_hard/seed1", "score"),
    ):
        assert re.search(rf"\] {re.escape(label)} {stage}: done in \d+:\d\d \(\d+/\d+ stages; ETA", out), (label, out)
    # a decode runs right after the training it decodes, not behind every other training
    first_decode = re.search(r"attn_decoded_hard/seed\d score: done", out).start()
    assert first_decode < out.index("ngram/seed1 train: started"), out
    # the plots do not flood the progress with matplotlib's debug lines (fairseq leaves
    # the root logger verbose)
    assert "DEBUG:matplotlib" not in out + proc.stderr
    run = tmp / "work" / "tiny" / "attn" / "seed1"
    assert (run / "averaged_last2.pt").is_file() and (run / "gen-test" / "hyp.txt").is_file()
    score = json.loads((run / "gen-test" / "score.json").read_text())
    assert set(score["by_source"]) == {"a", "b"} and score["by_source"]["a"]["lines"] == 12
    # the decode of another model's checkpoints trains nothing of its own
    decoded = tmp / "work" / "tiny" / "attn_decoded_hard" / "seed1"
    assert not (decoded / "train.log").exists() and (decoded / "gen-test" / "hyp.txt").is_file()
    assert "'decoder_cross_mixers': 'hard'" in (decoded / ".stages" / "generate.json").read_text()


def test_results_table_commands_and_kept_outputs(finished):
    tmp, path, proc = finished
    md = (tmp / "results" / "tiny.md").read_text()
    table = rows(md)  # the table of every model
    assert set(table) >= {"attn", "ngram", "attn_decoded_hard"}
    assert "| 2 |" in table["attn"] and " ± " in table["attn"]  # two seeds: mean +- std
    # the gap; no p with one seed against two (claims.MIN_SEEDS)
    assert "baseline" in table["attn"] and re.search(r"BLEU [-+]\d+\.\d\d \(1 and 2 seeds: no p\)", table["ngram"])
    assert "T1 self-attention 27.20" in table["attn"]
    # each claim judged: vs the baseline (its bootstrap) and vs another row (a bootstrap of its own)
    verdict = (
        r"indication, (ahead|behind|level) \(BLEU [-+]\d+\.\d\d; \d and \d seeds(, seed pairs [-+=−]+)?, "
        r"a verdict needs 3 a side\)"
    )
    assert re.search(rf"≈ attn: {verdict} \|$", table["ngram"]), table["ngram"]
    assert "1 and 2 seeds" in table["ngram"]  # one seed against attn's two: attn's mean
    assert re.search(rf"< attn: {verdict}; > ngram: {verdict} \|$", table["attn_decoded_hard"])
    assert "| a (12) | b (8) |" in md  # per-source BLEU
    # every seed of a several-seed row against the baseline's same seed, its own bootstrap each
    pairs = re.findall(
        r"^\| `attn_decoded_hard` \| (\d) \| [\d.]+ \| [\d.]+ \| [-+][\d.]+ \| (\d\.\d{3}) \|$", md, re.M
    )
    assert [seed for seed, _ in pairs] == ["1", "2"], md
    pair = tmp / "work" / "tiny" / "attn_decoded_hard" / "seed2" / "gen-test" / "bootstrap.json"
    assert json.loads(pair.read_text())["baseline"].endswith("attn/seed2/gen-test/hyp.txt")
    # every stage's stock command, copyable
    assert re.search(r"- train: `python -m fairseq_cli.train \S+ --user-dir mixer_plugin --task translation", md)
    assert re.search(r"\| `ngram` (\|[^|]*){8}\| [\d.]+ \|", table["ngram"]), (
        "decode sent/s from fairseq-generate's log"
    )
    assert "--model-overrides" in md and "mixer_plugin.scoring" in md and "mixer_plugin.data.postprocess" in md
    # each run kept as its record and hypotheses: nothing else, and no path of this machine
    for kept in (tmp / "results" / "tiny" / "runs").glob("*/seed*"):
        assert {p.name for p in kept.iterdir()} == {"run.json", "hyp.txt.xz"}, kept
        hyps = tmp / "work" / "tiny" / kept.parent.name / kept.name / "gen-test" / "hyp.txt"
        assert lzma.decompress((kept / "hyp.txt.xz").read_bytes()) == hyps.read_bytes()  # kept whole
        record = (kept / "run.json").read_text()
        assert str(tmp) not in record and str(E2E_REPO) not in record and sys.executable not in record
    record = json.loads((tmp / "results" / "tiny" / "runs" / "attn" / "seed2" / "run.json").read_text())
    assert record["params"] and record["valid"] and "bleu" in record["scores"] and record["decode_speed"]
    assert record["stages"]["train"]["commands"][0][:3] == ["python", "-m", "fairseq_cli.train"]
    assert "<work>/tiny/attn/seed2" in record["stages"]["train"]["commands"][0]
    decoded = json.loads((tmp / "results" / "tiny" / "runs" / "attn_decoded_hard" / "seed1" / "run.json").read_text())
    assert (
        decoded["valid"]
        == json.loads((tmp / "results" / "tiny" / "runs" / "attn" / "seed1" / "run.json").read_text())["valid"]
    )  # the training it decodes
    assert (tmp / "results" / "tiny" / "curves.png").stat().st_size > 1000


def test_a_stamp_names_the_precision_its_commands_ran_in():
    from mixer_plugin.experiments.commands import precision_of

    train = ["python", "-m", "fairseq_cli.train", "DATA", "--cpu"]
    assert precision_of([train]) == "fp32"
    assert precision_of([[*train, "--bf16"]]) == "bf16"
    assert precision_of([["mixer-score", "hyp"], [*train[:-1], "--fp16"]]) == "fp16"


def test_every_stage_stamp_names_the_machine_that_ran_it(finished):
    """One command and seed trains differently on another CPU (experiments/leaderboard.findings.md,
    "One command, two machines"), so each committed stamp says what it ran on."""
    from mixer_plugin.files import machine

    tmp, _, _ = finished
    stamps = json.loads((tmp / "results" / "tiny" / "runs" / "attn" / "seed2" / "run.json").read_text())["stages"]
    assert {"train", "average", "generate", "score"} <= set(stamps)
    for stamp in stamps.values():
        assert stamp["machine"] == machine() and stamp["precision"] == "fp32"
    assert machine()["cores"] == os.cpu_count() and machine()["torch"] == torch.__version__
    assert machine()["cpu"]


INTEL = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 207
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 2
cpu MHz\t\t: 2299.998

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 8
"""


@pytest.mark.parametrize(
    "cpuinfo, identity",
    [
        (INTEL, {"cpu": "Intel(R) Xeon(R) Processor", "cpu_id": "cpu family 6, model 207, stepping 2"}),
        (
            "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\n",
            {"cpu": "AMD EPYC", "cpu_id": "cpu family 25, model 17, stepping 1"},
        ),
        ("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n", {}),  # aarch64
    ],
    ids=["intel", "amd", "aarch64"],
)
def test_the_stamp_tells_cpus_of_one_generic_name_apart(cpuinfo, identity):
    """A virtual machine's model name can be generic ("Intel(R) Xeon(R) Processor"; "AMD EPYC" named
    machines that trained the campaign at 0.9 and at 2.2 updates/s).  The stamp keeps the name and
    adds the first CPU's family, model and stepping numbers; where the text has neither (aarch64),
    ``machine`` falls back to ``platform``."""
    from mixer_plugin.files import cpu_identity, machine

    assert cpu_identity(cpuinfo) == identity
    if "cpu family" in Path("/proc/cpuinfo").read_text():
        assert machine()["cpu_id"].startswith("cpu family ")


def test_the_stamp_says_whether_the_cpu_does_bfloat16(monkeypatch):
    """bf16 trains only where the CPU does it in hardware (AVX512-BF16 or AMX), fp32 elsewhere:
    the stamp records which, and the runner refuses PRECISION=bf16 on a CPU without it (emulated,
    slower than fp32); building commands for such a machine (a row script) is not refused."""
    from mixer_plugin.experiments import commands
    from mixer_plugin.files import cpu_identity

    amd = "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512f {}\n"
    assert cpu_identity(amd.format("avx512_bf16 avx512_vnni"))["bf16"] == "avx512_bf16"
    assert cpu_identity(amd.format("avx512_vnni"))["bf16"] == "none"
    monkeypatch.setenv("PRECISION", "bf16")
    monkeypatch.setenv("NGPU", "0")
    monkeypatch.setattr(commands, "machine", lambda: cpu_identity(amd.format("avx512_vnni")))
    with pytest.raises(ValueError, match=r"^PRECISION=bf16: this CPU \(AMD EPYC\) has no bfloat16 in hardware"):
        commands.bf16_here()
    assert commands.precision() == ["--bf16"]
    monkeypatch.setattr(commands, "machine", lambda: cpu_identity(amd.format("avx512_bf16")))
    commands.bf16_here()
    monkeypatch.setenv("NGPU", "1")  # a GPU does bf16 itself
    monkeypatch.setattr(commands, "machine", lambda: cpu_identity(amd.format("")))
    commands.bf16_here()


def test_the_runners_commands_sleep_between_parallel_regions(monkeypatch):
    """Beside another busy process, OpenMP threads that spin between parallel regions slow both
    (issue 96: 0.58 against 0.83 updates/s): the runner's commands sleep (OMP_WAIT_POLICY=PASSIVE)
    unless the user set a policy, and the progress line says which."""
    from mixer_plugin.experiments.commands import command_env, threading_said

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert command_env(2)["OMP_WAIT_POLICY"] == "PASSIVE"
    assert threading_said(command_env(2)) == "2 threads, OpenMP PASSIVE"
    assert "OMP_WAIT_POLICY" not in command_env()  # a benchmark on every core, as the library runs
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert threading_said(command_env(2)) == "2 threads, OpenMP ACTIVE"


def test_a_rerender_that_changes_nothing_leaves_the_file_alone(finished, monkeypatch):
    """A resumed campaign re-renders its table at start and after each run: when nothing but
    the clock changed, the file (and so --commit) is left alone. It used to rewrite the
    "rebuilt:" stamp, which --commit then committed as "<a restored run> finished"."""
    import time

    from mixer_plugin.experiments import report, spec_loader

    tmp, path, _ = finished
    work_at(monkeypatch, tmp / "work")
    out = tmp / "results" / "tiny.md"
    before = out.read_text()
    later = time.gmtime(4_000_000_000)  # another minute than the run's
    monkeypatch.setattr(report.time, "gmtime", lambda *a: later)
    assert report.write(spec_loader.load(path)) == out
    assert out.read_text() == before
    # a change of content rewrites it, with the new stamp
    exp = spec_loader.load(path)
    renamed = dict(exp.models, ngram=dataclasses.replace(exp.models["ngram"], paper="another claim"))
    report.write(dataclasses.replace(exp, models=renamed))
    assert "another claim" in out.read_text() and "- rebuilt: 2096-" in out.read_text()
    out.write_text(before)


def test_a_rerun_skips_what_is_done(finished):
    tmp, path, _ = finished
    proc = mixer_run(path, work=tmp / "work")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "0 stages to run" in proc.stdout and "started" not in proc.stdout, proc.stdout


def test_another_machine_resumes_from_the_committed_runs(finished, tmp_path, corpus):
    """A campaign that goes on where ``work/`` is empty (another machine, a fresh clone)
    restores the committed runs instead of training them again, keeps every committed
    row in the table (a re-render used to drop them all), trains again only a run whose
    committed commands differ, and a run that a pending decode needs the checkpoints of."""
    import shutil

    old, _, _ = finished
    shutil.copytree(old / "results", tmp_path / "results")
    for kept in (tmp_path / "results" / "tiny" / "runs").glob("*/seed*/run.json"):  # as version 0 wrote them
        data = json.loads(kept.read_text())
        assert data.pop("version") == 1
        kept.write_text(json.dumps(data, indent=1) + "\n")
    before = rows((tmp_path / "results" / "tiny.md").read_text())
    path = experiment(tmp_path, corpus)  # the same file, results in the copy, a new work folder
    # a decode still to do: the run it decodes trains again (checkpoints are never committed)
    shutil.rmtree(tmp_path / "results" / "tiny" / "runs" / "attn_decoded_hard" / "seed1")
    # the table alone, from nothing but the committed copies (and the data it prepares):
    # every committed run counts, and the rows compare the same first seeds as before
    proc = mixer_run(path, "--results-only", work=tmp_path / "work")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    table = rows((tmp_path / "results" / "tiny.md").read_text())
    assert table["attn"] == before["attn"] and table["ngram"] == before["ngram"], (table, before)
    assert "waiting for runs" in table["attn_decoded_hard"]  # its first seed is gone: no p against another seed
    shutil.rmtree(tmp_path / "work" / "tiny", ignore_errors=True)  # what --results-only restored
    proc = mixer_run(path, work=tmp_path / "work")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    trained = set(re.findall(r"\] (\S+) train: done", proc.stdout))
    assert trained == {"attn/seed1"}, proc.stdout
    assert "3 runs finished before, restored from" in proc.stdout
    assert "attn_decoded_hard/seed1 score: done" in proc.stdout
    after = rows((tmp_path / "results" / "tiny.md").read_text())
    assert after["ngram"] == before["ngram"] and "| 2 |" in after["attn_decoded_hard"]
    # a committed run whose commands are not today's is trained again, not restored, in a
    # clean folder (a training appends to the train.log it finds)
    changed = yaml.safe_load(path.read_text())
    changed["models"]["ngram"]["train"] += " --seed 9"
    path.write_text(yaml.safe_dump(changed))
    proc = mixer_run(path, "--dry-run", work=tmp_path / "work")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.findall(r"# train \(([^)]+)\)\n.*--save-dir (\S+)", proc.stdout) == [
        ("done", str(tmp_path / "work" / "tiny" / "attn" / "seed1")),
        ("restorable", str(tmp_path / "work" / "tiny" / "attn" / "seed2")),
        ("to run", str(tmp_path / "work" / "tiny" / "ngram" / "seed1")),
    ], proc.stdout
    proc = mixer_run(path, "--only", "ngram", work=tmp_path / "work")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    log = (tmp_path / "work" / "tiny" / "ngram" / "seed1" / "train.log").read_text()
    assert len(re.findall(r"^\$ .*fairseq_cli\.train", log, re.M)) == 1 and "--seed 9" in log, log[:3000]


def test_killed_and_longer_trainings_continue_from_checkpoint_last(finished, corpus):
    tmp, path, _ = finished
    run = tmp / "work" / "tiny" / "ngram" / "seed1"
    # a training killed after its checkpoint was written: no stamp, checkpoint_last.pt kept
    (run / ".stages" / "train.json").unlink()
    longer = experiment(
        tmp, corpus, train="--share-all-embeddings " + TRAIN.replace("--max-update 4", "--max-update 6")
    )
    # every stage after the training runs again, however far from it (the dry run said a
    # stage two steps away was done: its own stamp matched the unchanged one next to it)
    proc = mixer_run(longer, "--dry-run", "--only", "ngram", work=tmp / "work")
    states = re.findall(r"^# (\w+) \(([^)]+)\)$", proc.stdout, re.M)
    assert states[0] == ("prepare", "done") and len(states) > 3, proc.stdout
    assert all(state == "to run" for _, state in states[1:]), states
    proc = mixer_run(longer, "--only", "ngram", work=tmp / "work")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    log = (run / "train.log").read_text()
    assert re.search(r"Loaded checkpoint \S+checkpoint_last.pt \(epoch \d+ @ 4 updates\)", log), log[-2000:]
    assert "num_updates: 6 >= max_update: 6" in log
    assert "ngram/seed1 generate: done" in proc.stdout  # the new checkpoints are decoded again


def test_another_model_in_the_same_folder_starts_over(finished, corpus):
    tmp, path, _ = finished
    changed = yaml.safe_load(path.read_text())
    changed["models"]["ngram"]["train"] = "--encoder-mixers ngram:n=3 --decoder-mixers ngram:n=3"
    path2 = tmp / "changed.yaml"
    path2.write_text(yaml.safe_dump(changed))
    proc = mixer_run(path2, "--only", "ngram", work=tmp / "work")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "was trained with other flags: moved to" in proc.stdout
    assert list((tmp / "work" / "tiny" / "ngram").glob("seed1.stale-*"))
    assert "Loaded checkpoint" not in (tmp / "work" / "tiny" / "ngram" / "seed1" / "train.log").read_text()


def test_dry_run_prints_every_command_and_runs_nothing(tmp_path, corpus):
    path = experiment(tmp_path, corpus)
    proc = mixer_run(path, "--dry-run", work=tmp_path / "work")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("# train (to run)") == 3 and "fairseq_cli.generate" in proc.stdout
    assert not (tmp_path / "work" / "tiny").exists()


BAD = {
    "unknown top key": ({"trian": "--lr 1"}, "unknown key 'trian'"),
    "unknown model key": ({"models": {"a": {"arch": "mixer_small_attn", "seed": [1]}}}, "models.a: unknown key 'seed'"),
    "arch and decode_of": ({"models": {"a": {}}}, "models.a: give either arch"),
    "decode of nothing": ({"models": {"a": {"decode_of": "b"}}}, "models.a.decode_of: 'b' is not a trained model"),
    "bad metric": ({"score": {"metrics": ["blue"]}}, "score.metrics: unknown metric 'blue'"),
    "bad baseline": ({"score": {"baseline": "nobody"}}, "score.baseline: 'nobody' is not a model"),
    "bad seeds": ({"seeds": "one"}, "seeds: seeds must be"),
    "bad claim": (
        {"models": {"a": {"arch": "mixer_small_attn", "claims": "better than b"}}},
        "models.a.claims: 'better than b' is not '<relation> <model> on <the paper's task>'",
    ),
    "claim on no task": (
        {"models": {"a": {"arch": "mixer_small_attn", "claims": ["> b on poetry"]}}},
        "models.a.claims: '> b on poetry' is not '<relation> <model> on <the paper's task>'",
    ),
    "claim on nobody": (
        {"models": {"a": {"arch": "mixer_small_attn", "claims": ["> b on translation"]}}},
        "models.a.claims: 'b' is not another model of this file",
    ),
    "bad noise floor": ({"score": {"noise_floor": "big"}}, "score.noise_floor: expected a number of points >= 0"),
    "paper row of nothing": (
        {"models": {"a": {"arch": "mixer_small_attn", "paper_rows": ["mixer_nope:T1"]}}},
        "models.a.paper_rows: 'mixer_nope' is not an architecture",
    ),
    "paper row of no table": (
        {"models": {"a": {"arch": "mixer_small_attn", "paper_rows": ["mixer_wmt_attn:T9"]}}},
        "models.a.paper_rows: mixer_wmt_attn has no row in table 'T9'",
    ),
    "unknown speed": ({"speed": {"gpu": "results/x.json"}}, "speed: unknown key 'gpu'"),
    "row from no file": (
        {"models": {"a": {"from": "nope.yaml"}}},
        "models.a.from: nope.yaml is not an experiment file with models",
    ),
    "bad checkpoint": ({"generate": {"checkpoint": "bset"}}, "generate.checkpoint: expected last or best, not 'bset'"),
    "choice on test": ({"choose": ["attn", "ngram"]}, "choose: 'attn' is scored on the test set; a choice is made on"),
    "choice of nobody": (
        {"choose": ["attn", "nobody"], "generate": {"subset": "valid"}},
        "choose: 'nobody' is not a model of this file",
    ),
    "choice of one": ({"choose": ["attn"]}, "choose: expected two or more different models, in order"),
    "speed not a benchmark": (
        {"speed": {"train": "results/bench/bench_train_cpu.md"}},
        "speed.train: expected the path of a mixer-bench train JSON file",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_experiment_files_are_one_line_errors(case, tmp_path, corpus):
    changes, message = BAD[case]
    path = experiment(tmp_path, corpus, **changes)
    proc = mixer_run(path, work=tmp_path / "work")
    assert proc.returncode == 2
    # one line; before it only the notice fairseq prints on import (fairseq.tasks.text_to_speech)
    err = [line for line in proc.stderr.strip().splitlines() if not line.startswith("INFO:fairseq.tasks")]
    assert len(err) == 1 and err[0].startswith(f"mixer-run: error: {path}") and message in err[0], proc.stderr
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize(
    "args,env,message",
    [
        (["--seeds", "1,x"], {}, "--seeds takes comma-separated integers, not '1,x'"),
        (["--seeds", "7"], {}, "--seeds 7: the file lists seeds [1, 2]"),
        ([], {"NGPU": "two"}, "NGPU must be a number of GPUs, not 'two'"),
        ([], {"PRECISION": "fp8"}, "PRECISION must be one of fp32, fp16, bf16, not 'fp8'"),
        (["--stop-after", "2h30"], {}, "--stop-after takes a duration such as 2h30m, 90m, 45s or 5400, not '2h30'"),
    ],
    ids=["seeds-not-integers", "seeds-not-listed", "ngpu", "precision", "stop-after"],
)
def test_bad_run_options_are_one_line_errors(args, env, message, tmp_path, corpus, monkeypatch):
    """Bad flags and environment: one line naming them, before anything runs (a bad NGPU or
    PRECISION raised a traceback after the data was prepared; --seeds 1,x named no flag;
    a seed the file does not list ran nothing and said nothing)."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    proc = mixer_run(experiment(tmp_path, corpus), *args, work=tmp_path / "work")
    err = [line for line in proc.stderr.strip().splitlines() if not line.startswith("INFO:fairseq.tasks")]
    assert proc.returncode == 2 and err == [f"mixer-run: error: {message}"], proc.stderr
    assert not (tmp_path / "work").exists()


def test_a_work_folder_linked_to_nothing_is_a_one_line_error(tmp_path, corpus):
    """work/data as a symbolic link to a folder not made yet (as a script that shares one
    prepared corpus between work folders sets it up) used to end in a traceback from the
    first lock's mkdir."""
    path = experiment(tmp_path, corpus)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "data").symlink_to(tmp_path / "nowhere")
    proc = mixer_run(path, work=tmp_path / "work")
    err = [line for line in proc.stderr.splitlines() if not line.startswith("INFO:")]
    assert proc.returncode == 2 and len(err) == 1, proc.stderr[-2000:]
    assert err[0].endswith(f"data is a symbolic link to {tmp_path / 'nowhere'}, which does not exist"), err


def test_flags_given_with_an_equals_sign():
    """--max-update=N is what argparse accepts as well: the budget a training may grow by
    without starting over must be recognised in that form too."""
    from mixer_plugin.experiments.argv import drop_flag, flag_value

    argv = ["train", "--max-update=3750", "--lr", "0.002", "--max-update", "5000", "--max-updates", "9"]
    assert flag_value(argv, "--max-update") == "5000" and flag_value(argv[:2], "--max-update") == "3750"
    assert drop_flag(argv, "--max-update") == ["train", "--lr", "0.002", "--max-updates", "9"]
    assert flag_value(["--lr"], "--lr") is None


def test_every_committed_experiment_file_loads():
    """Every file parses, names registered archs, and its data recipe exists."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    import mixer_plugin  # noqa: F401  (registers the archs)
    from mixer_plugin.experiments.spec_loader import load
    from mixer_plugin.recipes import recipes

    known = recipes()
    files = sorted((E2E_REPO / "experiments").glob("*.yaml")) + sorted((E2E_REPO / "configs").rglob("*.yaml"))
    assert len(files) > 100
    for path in files:
        exp = load(path)
        for m in exp.models.values():
            assert m.arch is None or m.arch in ARCH_MODEL_REGISTRY, (path, m.arch)
            assert m.data in known, (path, m.data)


def test_a_row_from_another_file_keeps_this_files_protocol(tmp_path):
    """``from:``: the row (arch, flags, claims, paper) is the other file's; the seeds, the
    decoding and the file's own training flags are this file's, and a key set here wins."""
    from mixer_plugin.experiments.spec import ExperimentError
    from mixer_plugin.experiments.spec_loader import load

    rows = {
        "name": "rows",
        "data": "debian_en_de",
        "train": "--max-update 10",
        "models": {
            "t": {"arch": "mixer_small_attn", "seeds": [1, 2]},
            "n": {
                "arch": "mixer_small_attn",
                "train": "--encoder-mixers ngram",
                "claims": "~ t on translation",
                "paper": "n ≈ t",
            },
        },
    }
    (tmp_path / "rows.yaml").write_text(yaml.safe_dump(rows), encoding="utf-8")
    other = {
        "name": "long",
        "data": "debian_en_de",
        "train": "--max-update 99",
        "seeds": [3],
        "generate": {"subset": "valid"},
        "models": {"t": {"from": "rows.yaml"}, "n": {"from": "rows.yaml", "paper": "mine"}},
    }
    (tmp_path / "long.yaml").write_text(yaml.safe_dump(other), encoding="utf-8")
    exp = load(tmp_path / "long.yaml")
    t, n = exp.models["t"], exp.models["n"]
    assert (t.arch, t.seeds, t.generate.subset, exp.train) == ("mixer_small_attn", [3], "valid", ["--max-update", "99"])
    assert n.train == ["--encoder-mixers", "ngram"] and [c.other for c in n.claims] == ["t"] and n.paper == "mine"
    other["models"]["ghost"] = {"from": "rows.yaml"}
    (tmp_path / "long.yaml").write_text(yaml.safe_dump(other), encoding="utf-8")
    with pytest.raises(ExperimentError, match=r"models\.ghost\.from: rows\.yaml has no model 'ghost'$"):
        load(tmp_path / "long.yaml")


def test_commands_get_the_allocator_settings_unless_the_user_set_them(monkeypatch):
    """glibc's defaults cost CPU training page faults (results/bench/bench_allocator_cpu.md): every
    command the runner starts gets the fixed mmap threshold and no trimming, and a value
    the user exported wins."""
    from mixer_plugin.experiments.commands import command_env

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    env = command_env(2, EXTRA="x")
    assert env["MALLOC_TRIM_THRESHOLD_"] == str(4 << 30) and env["MALLOC_TOP_PAD_"] == str(256 << 20)
    assert env["MALLOC_MMAP_THRESHOLD_"] == "65536"
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "2" and env["EXTRA"] == "x"
    assert "OMP_NUM_THREADS" not in command_env()  # None: the library's default, every core


def test_commit_makes_one_commit_per_change_and_none_for_a_rerender(tmp_path, monkeypatch, capfd):
    """--commit commits the results file and its run folder when a run changed them, and a
    resumed campaign's re-render of an unchanged table makes no commit (it used to run
    `git commit` anyway, which printed git's status into the campaign log at every start)."""

    from mixer_plugin.experiments import publish

    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@t")
    git("config", "user.name", "t")
    (tmp_path / "README").write_text("x\n")
    git("add", "README")
    git("commit", "-q", "-m", "start")
    md = tmp_path / "results" / "tiny.md"
    md.parent.mkdir()
    table = {"text": "| a |\n"}

    def write(exp):
        md.write_text(table["text"])
        (md.with_suffix("") / "runs").mkdir(parents=True, exist_ok=True)
        (md.with_suffix("") / "runs" / "score.json").write_text(json.dumps(table))
        return md

    monkeypatch.setattr(publish.report, "write", write)
    quiet = lambda line: None  # noqa: E731
    publish.publish(None, "a finished", quiet)
    capfd.readouterr()
    publish.publish(None, "re-rendered", quiet)
    assert capfd.readouterr().out == ""  # nothing to commit, nothing said
    table["text"] = "| b |\n"
    publish.publish(None, "b finished", quiet)
    assert git("log", "--format=%s").split("\n")[:3] == ["b finished", "a finished", "start"]
    assert git("status", "--porcelain") == ""


def test_a_campaigns_commit_carries_the_readme_blocks_it_changed(tmp_path, monkeypatch):
    """--commit rewrites the README's blocks generated from the records it commits and puts
    the page in the same commit: CI checks that the README is not stale, and a campaign's
    commit left it stale at every finished run.  A page with the author's edits not committed
    is left alone (the commit would take them), and the log says so."""

    from mixer_plugin.experiments import publish, readme

    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True).stdout

    page = tmp_path / "README.md"
    page.write_text("top\n<!-- generated: t -->\n| a |\n<!-- end generated -->\n")
    git("init", "-q")
    git("config", "user.email", "t@t")
    git("config", "user.name", "t")
    git("add", "README.md")
    git("commit", "-q", "-m", "start")
    md = tmp_path / "results" / "tiny.md"
    (md.with_suffix("") / "runs").mkdir(parents=True)
    table = {"text": "| a |\n"}

    def write(exp):
        md.write_text(table["text"])
        (md.with_suffix("") / "runs" / "score.json").write_text(json.dumps(table))
        return md

    monkeypatch.setattr(publish.report, "write", write)
    monkeypatch.setattr(readme, "PAGES", (page,))
    monkeypatch.setattr(readme, "BLOCKS", {"t": lambda: table["text"]})
    said = []
    table["text"] = "| b |\n"
    publish.publish(None, "leaderboard_converged: hard_cross_samples4_prenorm/seed3 finished", said.append)
    message = git("log", "-1", "--format=%B")
    assert message.split("\n")[0] == "leaderboard_converged: hard_cross_samples4_prenorm/seed3 finished"
    # a subject and a body, as the commit-msg hook of .pre-commit-config.yaml asks of every commit
    hook = runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "commit_msg.py"))
    assert "results/tiny.md regenerated" in " ".join(message.split()) and hook["problems"](message) == [], message
    assert "README.md" in git("show", "--stat", "--format=", "HEAD") and git("status", "--porcelain") == ""
    assert page.read_text() == "top\n<!-- generated: t -->\n| b |\n<!-- end generated -->\n"
    page.write_text(page.read_text().replace("top", "top, edited"))
    table["text"] = "| c |\n"
    publish.publish(None, "c finished", said.append)
    assert "README.md" not in git("show", "--stat", "--format=", "HEAD") and md.read_text() == "| c |\n"
    assert "| b |" in page.read_text() and "top, edited" in page.read_text()
    assert any("README.md has edits not committed" in line for line in said), said


def commit_record(kept: Path, chain, **stamp):
    """A committed run's record as the archive writes it, holding ``chain``'s commands as they
    read on any machine (``argv.portable``)."""
    from mixer_plugin.experiments import argv, stages

    kept.mkdir(parents=True, exist_ok=True)
    checkout, work = str(argv.PLUGIN.parent), str(stages.WORK)  # (the fixtures' work/)
    stages = {s.name: {"commands": [argv.portable(a, checkout, work) for a in s.commands], **stamp} for s in chain}
    RunRecord("tiny", kept.parent.name, 1, 1, 4, [], [], {"bleu": 1.0}, None, stages).save(kept / "run.json")


def test_a_decode_is_restored_only_with_the_training_it_decoded(fake, tmp_path):
    """A committed decode records its own commands, which do not show the training it
    decoded: once that training's flags change, the decode must run again, not come back
    from the commit beside the retrained model."""
    import shutil

    from mixer_plugin.experiments import archive, schedule, spec_loader

    exp = fake({"A": {}}, {"A": 0.3})
    shutil.rmtree(tmp_path / "work" / "tiny")  # a fresh machine: nothing of this experiment in work/
    raw = yaml.safe_load(exp.path.read_text())
    raw["models"]["A_hard"] = {"decode_of": "A", "overrides": {"decoder_cross_mixers": "hard"}}
    exp.path.write_text(yaml.safe_dump(raw))
    exp = spec_loader.load(exp.path)
    for label, chain in schedule.Runner(exp, 1, 1).chains():  # both committed with today's commands
        commit_record(archive.kept_runs(exp) / label, chain)
    dry = schedule.Runner(exp, 1, 1, dry_run=True)
    assert dry.restore(dry.chains()) == {"A/seed1", "A_hard/seed1"}
    raw["models"]["A"]["train"] = "--dropout 0.3"
    exp.path.write_text(yaml.safe_dump(raw))
    dry = schedule.Runner(spec_loader.load(exp.path), 1, 1, dry_run=True)
    assert dry.restore(dry.chains()) == set()


def test_the_jobs_write_the_results_one_at_a_time(monkeypatch, tmp_path):
    """Two jobs finishing together re-rendered the results file, ran the same bootstraps
    and called git at once (git's index.lock refused one; a temp file vanished under the
    other)."""
    import threading
    import time
    from types import SimpleNamespace

    from mixer_plugin.experiments import publish, schedule

    inside, most = [0], [0]

    def write(exp):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        inside[0] -= 1

    monkeypatch.setattr(publish.report, "write", write)
    monkeypatch.setattr(schedule, "WORK", tmp_path)  # where the results' lock lies
    exp = SimpleNamespace(name="x", models={}, path=Path("x.yaml"))
    r = schedule.Runner(exp, 2, 1)
    threads = [threading.Thread(target=r.write_results) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1


def test_commands_name_the_interpreter_one_way(tmp_path, monkeypatch):
    """Started as `python3 -m ...` after `mixer-run` (whose interpreter is `python`), every
    recorded command differed in its first word, so every finished stage read as changed
    and its run was moved aside and trained again."""
    from mixer_plugin import paths
    from mixer_plugin.experiments import commands

    (tmp_path / "python").symlink_to(sys.executable)
    (tmp_path / "python3").symlink_to(sys.executable)
    for name in ("python", "python3"):
        monkeypatch.setattr(sys, "executable", str(tmp_path / name))
        assert paths.interpreter() == str(tmp_path / "python")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    assert commands.fairseq("train")[0] == paths.PYTHON  # what the stamps record


def test_a_restore_cut_short_leaves_no_run_folder(fake, tmp_path, monkeypatch):
    """A restore copies a committed run into work/ file by file.  Cut short (a kill, a
    full disk), it left a folder without its restored.json marker, which the next start
    took for a run this machine trained: the training ran again there beside the half-copied
    files.  The folder appears whole or not at all."""
    from mixer_plugin.experiments import archive, schedule, spec_loader

    exp = fake({"A": {}}, {"A": 0.3})
    run = tmp_path / "work" / "tiny" / "A" / "seed1"
    shutil.rmtree(tmp_path / "work" / "tiny")  # a fresh machine: nothing of this experiment in work/
    [(label, chain)] = schedule.Runner(exp, 1, 1).chains()
    kept = archive.kept_runs(exp) / label
    commit_record(kept, chain)
    (kept / archive.KEPT_HYPS).write_bytes(lzma.compress(b"committed hyp.txt\n"))

    def full_disk(data):  # the record is copied, then the disk fills while the hypotheses are written
        raise OSError(28, "No space left on device")

    model = spec_loader.load(exp.path).models["A"]
    with monkeypatch.context() as m:
        m.setattr(archive.lzma, "decompress", full_disk)
        with pytest.raises(OSError):
            archive.restore_run(exp, model, 1, chain)
    assert not run.exists(), sorted(p.name for p in run.rglob("*"))
    assert archive.restore_run(exp, model, 1, chain)  # the next start restores it whole
    assert json.loads((run / "run.json").read_text()) == json.loads((kept / "run.json").read_text())
    assert (run / "gen-test" / "hyp.txt").read_text() == "committed hyp.txt\n"
    assert (run / ".stages" / "restored.json").is_file()
    assert not [p for p in run.parent.iterdir() if p.name != "seed1"]  # no temporary folder left behind


def test_a_restored_run_follows_a_newer_committed_copy(fake, tmp_path):
    """A machine keeps work/ between sessions.  When a run it restored is trained again
    elsewhere (a decode_of row needs its checkpoints) and the new copy is committed, the
    old restored folder stood: the results showed the old run, and writing them copied it
    back over the newer commit.  A restored folder follows its committed copy."""
    from mixer_plugin.experiments import archive, schedule, spec_loader

    exp = fake({"A": {}}, {"A": 0.3})
    run = tmp_path / "work" / "tiny" / "A" / "seed1"
    shutil.rmtree(tmp_path / "work" / "tiny")
    [(label, chain)] = schedule.Runner(exp, 1, 1).chains()
    kept = archive.kept_runs(exp) / label

    def commit(version):
        commit_record(kept, chain, finished=version)
        (kept / archive.KEPT_HYPS).write_bytes(lzma.compress(f"{version}\n".encode()))

    model = spec_loader.load(exp.path).models["A"]
    commit("monday")
    assert archive.restore_run(exp, model, 1, chain)
    assert archive.restore_run(exp, model, 1, chain)  # restored before: nothing to do
    commit("tuesday")  # trained again on another machine, committed, pulled here
    assert (
        archive.restore_run(exp, model, 1, chain, copy=False)
        and (run / "gen-test" / "hyp.txt").read_text() == "monday\n"
    )  # a dry run changes nothing
    assert archive.restore_run(exp, model, 1, chain)
    assert (run / "gen-test" / "hyp.txt").read_text() == "tuesday\n"
    assert json.loads((run / ".stages" / "restored.json").read_text())["train"]["finished"] == "tuesday"


def test_a_run_trained_on_a_gpu_is_restored_on_a_cpu(fake, tmp_path, monkeypatch):
    """A committed run is the same run wherever it ran.  A GPU's commands have no --cpu and
    decode in its precision (--bf16), so a CPU machine read a run committed from a GPU as
    another run: its results left the GPU's rows out, and re-rendering a committed GPU table
    there emptied it.  Restored, the run's commands show as they ran, not as a CPU would run
    them."""
    from mixer_plugin.experiments import archive, report, schedule, spec_loader

    exp = fake({"A": {}}, {"A": 0.3})
    run = tmp_path / "work" / "tiny" / "A" / "seed1"
    shutil.rmtree(tmp_path / "work" / "tiny")  # this machine never ran it
    monkeypatch.setenv("PRECISION", "bf16")
    monkeypatch.setenv("NGPU", "1")
    [(label, on_gpu)] = schedule.Runner(exp, 1, 1).chains()
    commit_record(archive.kept_runs(exp) / label, on_gpu)
    monkeypatch.setenv("NGPU", "0")
    [(_, on_cpu)] = schedule.Runner(exp, 1, 1).chains()
    assert [s.commands for s in on_cpu] != [s.commands for s in on_gpu]  # --cpu, and fp32 decoding
    model = spec_loader.load(exp.path).models["A"]
    assert archive.restore_run(exp, model, 1, on_cpu)
    record = RunRecord.load(run / "run.json")
    shown = report.commands(exp, [report.ModelResult(model, [run], [record])])
    train = next(line for line in shown if line.startswith("- train: "))
    assert "--bf16" in train and "--cpu" not in train, train
    # what computes the run still counts: another dropout is another run
    monkeypatch.setitem(exp.models, "A", dataclasses.replace(model, train=["--dropout", "0.3"]))
    [(_, other)] = schedule.Runner(exp, 1, 1).chains()
    shutil.rmtree(run)
    assert not archive.restore_run(exp, exp.models["A"], 1, other)


@pytest.mark.parametrize(
    "jobs,threads,runs,cores,want",
    [
        (None, None, 1, 2, (1, 2)),  # one run: every core to it (it ran on one of two)
        (None, None, 3, 2, (2, 1)),  # more runs than cores: one a core
        (None, None, 2, 16, (2, 8)),
        (2, None, 5, 16, (2, 8)),  # what the file or the command line says is kept; the rest fills the machine
        (None, 4, 5, 16, (4, 4)),
        (None, 4, 5, 2, (1, 4)),
        (3, 1, 1, 16, (3, 1)),
    ],
)
def test_runs_and_threads_fill_the_machine_where_nothing_says(jobs, threads, runs, cores, want):
    from mixer_plugin.experiments.schedule import fit_cores

    assert fit_cores(jobs, threads, runs, cores) == want


# fairseq's own stopping rule, as the converged leaderboard trains (docs/leaderboard.md): valid
# BLEU every 2 updates (a checkpoint at each), stop after 2 without a gain, keep every checkpoint
UNTIL_VALID_STOPS = (
    "--eval-bleu --eval-bleu-args '{\"beam\": 1, \"max_len_a\": 1.2, \"max_len_b\": 5}' "
    "--eval-bleu-remove-bpe sentencepiece --best-checkpoint-metric bleu --maximize-best-checkpoint-metric "
    "--patience 2 --validate-interval 1000 --save-interval 1000 --keep-interval-updates 30"
)


def test_a_training_until_validation_stops_is_averaged_up_to_its_peak(tmp_path, corpus):
    """checkpoint: best with average_last: the checkpoints ending at fairseq's
    checkpoint_best.pt are averaged, and the table names that update as each run's peak,
    with the valid BLEU there; the curves plot the valid BLEU beside the loss."""
    train = "--share-all-embeddings " + TRAIN.replace("--max-update 4", "--max-update 30") + " " + UNTIL_VALID_STOPS
    path = experiment(
        tmp_path,
        corpus,
        train=train,
        generate={"subset": "test", "average_last": 2, "checkpoint": "best", "flags": "--beam 2 --max-len-b 5"},
        score={"metrics": ["bleu"]},
        models={"attn": {"arch": "mixer_small_attn"}},
    )
    proc = mixer_run(path, work=tmp_path / "work")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = tmp_path / "work" / "tiny" / "attn" / "seed1"
    best = torch.load(run / "checkpoint_best.pt", weights_only=False)["optimizer_history"][-1]["num_updates"]
    averaged = (run / ".stages" / "average.log").read_text()
    assert f"(checkpoint_1_{best - 2}.pt, checkpoint_1_{best}.pt) -> " in averaged, averaged
    assert (run / "averaged_last2_upto_best.pt").is_file()
    # the peak the table names is fairseq's: the last validation with the best valid BLEU
    valid = re.findall(r"bleu ([\d.]+) .*\| num_updates (\d+)", (run / "train.log").read_text())
    top = max(float(b) for b, _ in valid)
    assert best == max(int(u) for b, u in valid if float(b) == top)
    md = (tmp_path / "results" / "tiny.md").read_text()
    head = next(line for line in md.splitlines() if line.startswith("| model"))
    cells = dict(zip(head.split(" | "), rows(md)["attn"].split(" | ")))
    assert cells["peak update"] == f"{best:,}" and cells["valid BLEU at peak"] == f"{top:.2f}", cells
    assert (tmp_path / "results" / "tiny" / "curves.png").is_file()


def test_averaging_up_to_the_best_takes_the_checkpoints_that_end_there(tmp_path):
    """mixer-average --upto-best: the last N at or before checkpoint_best.pt's update, not the
    last N of the folder; a one-line error where the best's own checkpoint is gone."""
    from mixer_plugin.experiments import checkpoints

    def save(name, updates):
        state = {"model": {"w": torch.full((2,), float(updates))}, "optimizer_history": [{"num_updates": updates}]}
        torch.save(state, tmp_path / name)

    for u in (2, 4, 6, 8):
        save(f"checkpoint_1_{u}.pt", u)
    save("checkpoint_best.pt", 4)
    checkpoints.main([str(tmp_path), "--last", "2", "--upto-best", "--output", str(tmp_path / "avg.pt")])
    assert torch.load(tmp_path / "avg.pt", weights_only=True)["model"]["w"].tolist() == [3.0, 3.0]  # (2 + 4) / 2
    (tmp_path / "checkpoint_1_4.pt").unlink()
    with pytest.raises(SystemExit, match=r"has no checkpoint_\*_4\.pt, the best validation's update"):
        checkpoints.main([str(tmp_path), "--last", "2", "--upto-best", "--output", str(tmp_path / "avg.pt")])
