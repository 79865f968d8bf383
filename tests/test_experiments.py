"""The experiment runner (mixer-run): experiment files, one-line errors, and a whole tiny
experiment end to end through the stock fairseq tools (prepare -> train -> average ->
generate -> score -> results), then resumed: skipped when finished, continued from
checkpoint_last.pt when killed or given a longer budget, restarted when the model
changes."""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from conftest import E2E_REPO, e2e_env

TINY_MODEL = ("--encoder-embed-dim 32 --encoder-ffn-embed-dim 64 --encoder-attention-heads 4 "
              "--decoder-embed-dim 32 --decoder-ffn-embed-dim 64 --decoder-attention-heads 4")
TRAIN = ("--optimizer adam --lr 0.001 --lr-scheduler inverse_sqrt --warmup-updates 4 --max-tokens 2000 "
         "--criterion label_smoothed_cross_entropy --label-smoothing 0.1 --no-epoch-checkpoints "
         "--save-interval-updates 2 --keep-interval-updates 3 --num-workers 0 --log-format simple "
         f"--log-interval 1 --max-update 4 {TINY_MODEL}")


def experiment(tmp_path, corpus, **changes):
    spec = {
        "name": "tiny", "title": "tiny", "data": "debian_en_de",
        "prepare": f"--corpus {corpus} --vocab 400", "train": "--share-all-embeddings " + TRAIN,
        "generate": {"subset": "test", "average_last": 2, "flags": "--beam 2 --max-len-a 1.2 --max-len-b 5"},
        "score": {"metrics": ["bleu", "chrf"], "baseline": "attn"},
        "jobs": 2, "threads": 1, "results": str(tmp_path / "results" / "tiny.md"),
        "models": {
            "attn": {"arch": "mixer_small_attn", "seeds": [1, 2], "paper": "T1 self-attention 27.20"},
            "ngram": {"arch": "mixer_small_attn", "train": "--encoder-mixers ngram --decoder-mixers ngram",
                      "claims": "~ attn"},
            "attn_decoded_hard": {"decode_of": "attn", "overrides": {"decoder_cross_mixers": "hard"},
                                  "seeds": [1, 2], "claims": ["< attn", "> ngram"]},
        },
    }
    spec.update(changes)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def mixer_run(path, *args, work):
    env = e2e_env(MIXER_WORK=str(work))
    return subprocess.run([sys.executable, "-m", "mixer_plugin.experiments.runner", str(path), *args],
                          cwd=E2E_REPO, env=env, capture_output=True, text=True, timeout=900)


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
    for label, stage in (("data", "prepare"), ("attn/seed1", "train"), ("attn/seed2", "average"),
                         ("ngram/seed1", "generate"), ("attn_decoded_hard/seed1", "score")):
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


def rows(md):
    """Model -> its line of the main table."""
    return {line.split("|")[1].strip("` "): line for line in md.split("\n\n")[1].splitlines()
            if line.startswith("| `")}


def test_results_table_commands_and_kept_outputs(finished):
    tmp, path, proc = finished
    md = (tmp / "results" / "tiny.md").read_text()
    table = rows(md)  # the table of every model
    assert set(table) >= {"attn", "ngram", "attn_decoded_hard"}
    assert "| 2 |" in table["attn"] and " ± " in table["attn"]  # two seeds: mean +- std
    assert "baseline" in table["attn"] and re.search(r"BLEU \d\.\d{3}", table["ngram"])  # bootstrap p
    assert "T1 self-attention 27.20" in table["attn"]
    # each claim judged: vs the baseline (its bootstrap) and vs another row (a bootstrap of its own)
    verdict = (r"\*\*(confirmed|refuted|inconclusive)\*\* \(BLEU [-+]\d+\.\d\d"
               r"( over \d and \d seeds, spread \d+\.\d\d)?, p \d\.\d{3}\)")
    assert re.search(rf"≈ attn: {verdict} \|$", table["ngram"]), table["ngram"]
    assert "over 1 and 2 seeds" in table["ngram"]  # one seed against attn's two: attn's mean and spread
    assert re.search(rf"< attn: {verdict}; > ngram: {verdict} \|$", table["attn_decoded_hard"])
    assert "| a (12) | b (8) |" in md  # per-source BLEU
    # every seed of a several-seed row against the baseline's same seed, its own bootstrap each
    pairs = re.findall(r"^\| `attn_decoded_hard` \| (\d) \| [\d.]+ \| [\d.]+ \| [-+][\d.]+ \| (\d\.\d{3}) \|$", md, re.M)
    assert [seed for seed, _ in pairs] == ["1", "2"], md
    pair = tmp / "work" / "tiny" / "attn_decoded_hard" / "seed2" / "gen-test" / "bootstrap.json"
    assert json.loads(pair.read_text())["baseline"].endswith("attn/seed2/gen-test/hyp.txt")
    # every stage's stock command, copyable
    assert re.search(r"- train: `python -m fairseq_cli.train \S+ --user-dir mixer_plugin --task translation", md)
    assert re.search(r"\| `ngram` (\|[^|]*){8}\| [\d.]+ \|", table["ngram"]), "decode sent/s from fairseq-generate's log"
    assert "--model-overrides" in md and "mixer_plugin.scoring" in md and "mixer_plugin.data.postprocess" in md
    # each run kept as its record and hypotheses: nothing else, and no path of this machine
    for kept in (tmp / "results" / "tiny" / "runs").glob("*/seed*"):
        assert {p.name for p in kept.iterdir()} == {"run.json", "hyp.txt"}, kept
        record = (kept / "run.json").read_text()
        assert str(tmp) not in record and str(E2E_REPO) not in record and sys.executable not in record
    record = json.loads((tmp / "results" / "tiny" / "runs" / "attn" / "seed2" / "run.json").read_text())
    assert record["params"] and record["valid"] and "bleu" in record["scores"] and record["decode_speed"]
    assert record["stages"]["train"]["commands"][0][:3] == ["python", "-m", "fairseq_cli.train"]
    assert "<work>/tiny/attn/seed2" in record["stages"]["train"]["commands"][0]
    decoded = json.loads((tmp / "results" / "tiny" / "runs" / "attn_decoded_hard" / "seed1" / "run.json").read_text())
    assert decoded["valid"] == json.loads((tmp / "results" / "tiny" / "runs" / "attn" / "seed1" / "run.json")
                                          .read_text())["valid"]  # the training it decodes
    assert (tmp / "results" / "tiny" / "curves.png").stat().st_size > 1000


def test_every_stage_stamp_names_the_machine_that_ran_it(finished):
    """One command and seed trains differently on another CPU (docs/leaderboard_findings.md, "One
    command, two machines"), so each committed stamp says what it ran on."""
    from mixer_plugin.experiments.stages import machine

    tmp, _, _ = finished
    stamps = json.loads((tmp / "results" / "tiny" / "runs" / "attn" / "seed2" / "run.json").read_text())["stages"]
    assert {"train", "average", "generate", "score"} <= set(stamps)
    for stamp in stamps.values():
        assert stamp["machine"] == machine()
    assert machine()["cores"] == os.cpu_count() and machine()["torch"] == torch.__version__
    assert machine()["cpu"]


def test_a_rerender_that_changes_nothing_leaves_the_file_alone(finished, monkeypatch):
    """A resumed campaign re-renders its table at start and after each run: when nothing but
    the clock changed, the file (and so --commit) is left alone. It used to rewrite the
    "rebuilt:" stamp, which --commit then committed as "<a restored run> finished"."""
    import time

    from mixer_plugin.experiments import report, spec, stages

    tmp, path, _ = finished
    monkeypatch.setattr(stages, "WORK", tmp / "work")
    out = tmp / "results" / "tiny.md"
    before = out.read_text()
    later = time.gmtime(4_000_000_000)  # another minute than the run's
    monkeypatch.setattr(report.time, "gmtime", lambda *a: later)
    assert report.write(spec.load(path)) == out
    assert out.read_text() == before
    # a change of content rewrites it, with the new stamp
    exp = spec.load(path)
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
        ("to run", str(tmp_path / "work" / "tiny" / "ngram" / "seed1"))], proc.stdout
    proc = mixer_run(path, "--only", "ngram", work=tmp_path / "work")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    log = (tmp_path / "work" / "tiny" / "ngram" / "seed1" / "train.log").read_text()
    assert len(re.findall(r"^\$ .*fairseq_cli\.train", log, re.M)) == 1 and "--seed 9" in log, log[:3000]


def test_killed_and_longer_trainings_continue_from_checkpoint_last(finished, corpus):
    tmp, path, _ = finished
    run = tmp / "work" / "tiny" / "ngram" / "seed1"
    # a training killed after its checkpoint was written: no stamp, checkpoint_last.pt kept
    (run / ".stages" / "train.json").unlink()
    longer = experiment(tmp, corpus, train="--share-all-embeddings " + TRAIN.replace("--max-update 4", "--max-update 6"))
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
    "bad claim": ({"models": {"a": {"arch": "mixer_small_attn", "claims": "better than b"}}},
                  "models.a.claims: 'better than b' is not '<relation> <model>'"),
    "claim on nobody": ({"models": {"a": {"arch": "mixer_small_attn", "claims": ["> b"]}}},
                        "models.a.claims: 'b' is not another model of this file"),
    "bad noise floor": ({"score": {"noise_floor": "big"}}, "score.noise_floor: expected a number of points >= 0"),
    "paper row of nothing": ({"models": {"a": {"arch": "mixer_small_attn", "paper_rows": ["mixer_nope:T1"]}}},
                             "models.a.paper_rows: 'mixer_nope' is not an architecture"),
    "paper row of no table": ({"models": {"a": {"arch": "mixer_small_attn", "paper_rows": ["mixer_wmt_attn:T9"]}}},
                              "models.a.paper_rows: mixer_wmt_attn has no row in table 'T9'"),
    "unknown speed": ({"speed": {"gpu": "results/x.json"}}, "speed: unknown key 'gpu'"),
    "speed not a benchmark": ({"speed": {"train": "results/bench/bench_train_cpu.md"}},
                              "speed.train: expected the path of a mixer-bench train JSON file"),
}


def test_a_paper_row_is_named_and_its_figures_come_from_the_paper_module():
    """An experiment file names the paper rows a model is compared with; their figures are
    read from the paper's module, where they are typed once."""
    from mixer_plugin.experiments import report, spec
    from mixer_plugin.models.architectures import ARCHITECTURES

    exp = spec.load(E2E_REPO / "experiments" / "leaderboard.yaml")
    cell = report.paper_cell(exp.models["multinn"])
    assert cell.startswith("multiNN ≈ transformer (T1 multi-head NN, 8 layers (62M, WMT16 en-de BLEU 27.15);")
    assert ARCHITECTURES["mixer_wmt_multinn"].rows[0].scores == (("WMT16 en-de BLEU", 27.15),)
    assert report.paper_cell(exp.models["hard_dec_decoded_soft"]).startswith(
        "trained hard, decoded soft: ≈ (T4 train Hard / decode Soft (BLEU 27.80);")  # Paper.decodes
    assert "37.71/19.02/35.17" in report.paper_cell(
        spec.load(E2E_REPO / "experiments" / "leaderboard_sum.yaml").models["multinn"])  # Paper.extra_rows


def test_a_one_seed_row_is_judged_against_the_other_rows_mean_and_spread():
    """The leaderboard's case: most rows have one seed, the transformer three. Against its
    first seed alone (26.34, the best of 25.82 and 25.67) a row at 25.72 looked significantly
    worse (p 0.006); against the mean (25.94) and the seed spread (0.35) the gap is noise."""
    from types import SimpleNamespace

    from mixer_plugin.experiments.collect import ModelResult
    from mixer_plugin.experiments.report import claim_cells
    from mixer_plugin.experiments.spec import Claim, Score

    def row(name, bleus, claims=()):
        model = SimpleNamespace(name=name, claims=list(claims), score=Score(metrics=["bleu", "chrf"]))
        return ModelResult(model, runs=[None] * len(bleus), logs=[], scores=[{"bleu": b} for b in bleus], decode=[])

    claim = Claim(">", "transformer")
    mixer = row("mixer", [25.72], [claim])
    mixer.extra["claims"] = {claim: {"bleu": {"p_value": 0.006}}}
    cell = claim_cells(mixer, {"transformer": row("transformer", [26.34, 25.82, 25.67])})
    assert cell == "> transformer: **inconclusive** (BLEU -0.22 over 1 and 3 seeds, spread 0.35, p 0.006)"
    # far beyond the spread, the same p is a verdict
    mixer.scores = [{"bleu": 24.9}]
    assert "**refuted** (BLEU -1.04" in claim_cells(mixer, {"transformer": row("transformer", [26.34, 25.82, 25.67])})


def test_train_speed_is_the_median_over_every_seed(tmp_path):
    """The table's words/s comes from fairseq's train_inner lines: an interval holding a
    validation or a resume reads low, and one seed may have shared a busy machine, so the
    column is the median over every seed's intervals, not the mean of the first seed's."""
    from mixer_plugin.experiments.collect import ModelResult, parse_train_log

    seeds = {1: [120, 900, 950, 1000, 980], 2: [210, 1750, 1760, 1800, 1790], 3: [200, 1770, 1780, 1740, 1810]}
    logs = []
    for seed, figures in seeds.items():
        lines = [f"2026-11-23 10:{i:02d}:00 | INFO | train_inner | epoch 001:     {50 * i} / 900 loss=4.2, "
                 f"wps={w}, ups=0.9, wpb=1850, num_updates={50 * (i + 1)}, train_wall=55" for i, w in enumerate(figures)]
        (tmp_path / f"seed{seed}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
        logs.append(parse_train_log(tmp_path / f"seed{seed}.log"))
    result = ModelResult(model=None, runs=[tmp_path] * 3, logs=logs, scores=[], decode=[])
    assert result.wps() == 1740  # the median of all fifteen intervals (seed 1 alone averages 790)
    assert ModelResult(model=None, runs=[], logs=[], scores=[], decode=[]).wps() is None


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


@pytest.mark.parametrize("args,env,message", [
    (["--seeds", "1,x"], {}, "--seeds takes comma-separated integers, not '1,x'"),
    (["--seeds", "7"], {}, "--seeds 7: the file lists seeds [1, 2]"),
    ([], {"NGPU": "two"}, "NGPU must be a number of GPUs, not 'two'"),
    ([], {"PRECISION": "fp8"}, "PRECISION must be one of fp32, fp16, bf16, not 'fp8'"),
], ids=["seeds-not-integers", "seeds-not-listed", "ngpu", "precision"])
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


def test_flags_given_with_an_equals_sign():
    """--max-update=N is what argparse accepts as well: the budget a training may grow by
    without starting over must be recognised in that form too."""
    from mixer_plugin.experiments.stages import drop_flag, flag_value

    argv = ["train", "--max-update=3750", "--lr", "0.002", "--max-update", "5000", "--max-updates", "9"]
    assert flag_value(argv, "--max-update") == "5000" and flag_value(argv[:2], "--max-update") == "3750"
    assert drop_flag(argv, "--max-update") == ["train", "--lr", "0.002", "--max-updates", "9"]
    assert flag_value(["--lr"], "--lr") is None


def test_every_committed_experiment_file_loads():
    """Every file parses, names registered archs, and its data recipe exists."""
    import mixer_plugin  # noqa: F401  (registers the archs)
    from fairseq.models import ARCH_MODEL_REGISTRY
    from mixer_plugin.data.recipes import recipes
    from mixer_plugin.experiments.spec import load

    known = recipes()
    files = sorted((E2E_REPO / "experiments").glob("*.yaml")) + sorted((E2E_REPO / "configs").rglob("*.yaml"))
    assert len(files) > 100
    for path in files:
        exp = load(path)
        for m in exp.models.values():
            assert m.arch is None or m.arch in ARCH_MODEL_REGISTRY, (path, m.arch)
            assert m.data in known, (path, m.data)


def test_commands_get_the_allocator_settings_unless_the_user_set_them(monkeypatch):
    """glibc's defaults cost CPU training page faults (results/bench/bench_allocator_cpu.md): every
    command the runner starts gets the fixed mmap threshold and no trimming, and a value
    the user exported wins."""
    from mixer_plugin.experiments.stages import command_env

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
    from types import SimpleNamespace

    from mixer_plugin.experiments import runner

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

    monkeypatch.setattr(runner.report, "write", write)
    fake = SimpleNamespace(exp=None, progress=SimpleNamespace(say=lambda line: None))
    runner.Runner._write_results(fake, commit="a finished")
    capfd.readouterr()
    runner.Runner._write_results(fake, commit="re-rendered")
    assert capfd.readouterr().out == ""  # nothing to commit, nothing said
    table["text"] = "| b |\n"
    runner.Runner._write_results(fake, commit="b finished")
    assert git("log", "--format=%s").split("\n")[:3] == ["b finished", "a finished", "start"]
    assert git("status", "--porcelain") == ""


# ---------------------------------------------------------------- results from fake runs
# The tests below build run folders by hand (hypotheses and scores, no training), so they
# pin the results' bookkeeping in seconds: which runs each p-value compares, which
# baseline each row names, when a cached bootstrap is stale, what a restore may reuse.
WORDS = "der die das haus katze hund baum auto ist gut schnell".split()


# one logged training interval: a run's own words/s (999) for the plots and the tables
TRAIN_LOG_LINE = "2026-11-24 10:00:00 | INFO | train_inner | epoch 001:  50 / 900 loss=4.2, wps=999, num_updates=50\n"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """write(models, hyp noise per model) -> the loaded experiment, with every (model,
    seed) given a finished-looking run folder in a private work/."""
    import random

    from mixer_plugin.experiments import report, spec, stages

    monkeypatch.setattr(stages, "WORK", tmp_path / "work")
    monkeypatch.setattr(report, "make_plots", lambda *a: [])
    root = tmp_path / "work" / "data" / "debian_en_de"
    (root / "ref").mkdir(parents=True)
    (root / "prep.json").write_text(json.dumps({"src": "en", "tgt": "de",
                                                "references": {"test": {"detok": "ref/test.de"}}}))
    rnd = random.Random(0)
    refs = [" ".join(rnd.choice(WORDS) for _ in range(8)) for _ in range(60)]
    (root / "ref" / "test.de").write_text("\n".join(refs) + "\n")

    def write(models, noise, baseline="A", metrics=("bleu",)):
        for name, m in models.items():
            for seed in m.get("seeds", [1]):
                gen = tmp_path / "work" / "tiny" / name / f"seed{seed}" / "gen-test"
                gen.mkdir(parents=True, exist_ok=True)
                r = random.Random(f"{name}{seed}")
                hyp = [" ".join(w if r.random() > noise[name] else "xx" for w in line.split()) for line in refs]
                (gen / "hyp.txt").write_text("\n".join(hyp) + "\n")
                (gen / "score.json").write_text(json.dumps({"bleu": 100 * (1 - noise[name]) + seed}))
        path = tmp_path / "tiny.yaml"
        path.write_text(yaml.safe_dump({"name": "tiny", "data": "debian_en_de", "results": str(tmp_path / "tiny.md"),
                                        "score": {"metrics": list(metrics), "baseline": baseline},
                                        "models": {n: {"arch": "mixer_small_attn", **m} for n, m in models.items()}}))
        return spec.load(path)

    return write


def test_a_results_file_forgets_the_runs_that_are_gone(fake, tmp_path):
    """A recipe found wrong: its run folders are moved aside (and their committed copies
    removed) before the rows train again.  The results file must not go on showing the void
    figures until the first new run finishes."""
    import shutil

    from mixer_plugin.experiments import report

    exp = fake({"A": {}, "B": {}}, {"A": 0.1, "B": 0.3})
    report.write(exp)
    assert "| 91.00 |" in (tmp_path / "tiny.md").read_text()
    shutil.rmtree(tmp_path / "work" / "tiny")
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    assert "| `A` |" in md and "91.00" not in md and "71.00" not in md


def test_a_summarizer_that_ignores_its_source_shows_in_the_table(fake, tmp_path):
    """The first summarization leaderboard scored ROUGE-L 12.65 with 38 distinct synopses
    for 1,930 descriptions, which the table did not show: it took reading the hypotheses
    to see that the model ignored its source.  A summarization table counts each row's
    distinct outputs; translation tables, where the count says nothing, keep their columns."""
    from mixer_plugin.experiments import report

    exp = fake({"A": {}, "B": {}}, {"A": 0.1, "B": 1.0}, metrics=("rouge",))
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    table = rows(md)
    assert "| distinct outputs |" in md
    assert "| 1 of 60 |" in table["B"] and "| 60 of 60 |" in table["A"], table
    exp = fake({"A": {}, "B": {}}, {"A": 0.1, "B": 1.0})
    report.write(exp)
    assert "distinct" not in (tmp_path / "tiny.md").read_text()


def test_the_score_plot_shows_the_metric_the_claims_are_judged_on(request, tmp_path, monkeypatch):
    """The summarization leaderboard judged every claim on ROUGE-L while its score-against-
    speed plot drew ROUGE-1, the first metric of the file: the plot ranked local attention,
    multiNN and the transformer on a figure the verdicts never read (multiNN's R-1 lead was
    not significant, its R-L lead was).  A file that scores neither ROUGE nor BLEU (the
    classification experiment: accuracy) keeps its plot, on its own metric."""
    from matplotlib.figure import Figure

    from mixer_plugin.experiments import collect, report

    make_plots = report.make_plots  # the fixture below leaves plots out
    exp = request.getfixturevalue("fake")({"A": {}, "B": {}}, {"A": 0.1, "B": 0.3}, metrics=("rouge",))
    for name, (r1, rl) in {"A": (40.0, 36.0), "B": (42.0, 35.0)}.items():
        run = tmp_path / "work" / "tiny" / name / "seed1"
        (run / "gen-test" / "score.json").write_text(json.dumps({"rouge1": r1, "rouge2": 18.0, "rougeL": rl}))
        (run / "train.log").write_text(TRAIN_LOG_LINE)
    drawn = {}
    monkeypatch.setattr(Figure, "savefig", lambda fig, path, **kw: drawn.update(
        {Path(path).name: [(ax.get_ylabel(), [line.get_ydata()[0] for line in ax.lines]) for ax in fig.axes]}))
    make_plots(exp, collect.collect(exp), tmp_path)
    assert drawn["score_vs_speed.png"] == [("R-L", [36.0, 35.0])], drawn
    exp = request.getfixturevalue("fake")({"A": {}, "B": {}}, {"A": 0.1, "B": 0.3}, metrics=("accuracy",))
    for name, accuracy in {"A": 80.0, "B": 75.0}.items():
        (tmp_path / "work" / "tiny" / name / "seed1" / "gen-test" / "score.json").write_text(
            json.dumps({"accuracy": accuracy}))
    drawn.clear()
    make_plots(exp, collect.collect(exp), tmp_path)
    assert drawn["score_vs_speed.png"] == [("accuracy", [80.0, 75.0])], drawn


def kept_baseline(run: Path, name="bootstrap.json") -> str:
    """<model>/seed<N> of the baseline run a cached bootstrap compared against."""
    return "/".join(Path(json.loads((run / "gen-test" / name).read_text())["baseline"]).parts[-4:-2])


def test_rows_name_their_own_baselines_and_seeds_pair_by_seed(fake, tmp_path):
    """A row with a baseline of its own (interacting_heads' 16-head rows against 16-head
    MHA) is not printed under the file's baseline; its seed-by-seed rows show its own
    baseline's scores; and a row whose first seed is not the baseline's pairs each seed
    with the same seed (both printed the first seeds' test as a same-seed one)."""
    from mixer_plugin.experiments import report

    exp = fake({"A": {"seeds": [1, 2, 3]}, "B": {"seeds": [2, 3]},
                "C": {"seeds": [1, 2], "score": {"baseline": "C"}}, "D": {"seeds": [1, 2], "score": {"baseline": "C"}}},
               {"A": 0.1, "B": 0.3, "C": 0.6, "D": 0.5})
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    table = rows(md)
    assert "| p vs the row's baseline |" in md
    assert "| baseline |" in table["A"] and "| baseline |" in table["C"]
    assert re.search(r"\| BLEU \d\.\d{3} vs `C` \|", table["D"]) and re.search(r"\| BLEU \d\.\d{3} vs `A` \|", table["B"])
    # the claims' test compares first seeds (B's 2 with A's 1); seed by seed, each run meets
    # the baseline's run of the same seed, and the table prints that baseline's scores
    work = tmp_path / "work" / "tiny"
    assert kept_baseline(work / "B" / "seed2") == "A/seed1"
    assert kept_baseline(work / "B" / "seed2", "bootstrap-same-seed.json") == "A/seed2"
    assert kept_baseline(work / "B" / "seed3") == "A/seed3"
    assert "Seed by seed against `C`" in md
    assert re.search(r"^\| `D` \| 2 \| 52\.00 \| 42\.00 \| \+10\.00 \| \d\.\d{3} \|$", md, re.M), md
    assert re.search(r"^\| `B` \| 2 \| 72\.00 \| 92\.00 \| -20\.00 \| \d\.\d{3} \|$", md, re.M), md


def test_the_baselines_later_seeds_meet_its_first_to_show_what_a_seed_alone_does(fake, tmp_path):
    """The summarization transformer's seed 2 beat its seed 1 by 1.13 ROUGE-L with bootstrap
    p 0.002: the same recipe, another seed, "significant".  The results said nothing of
    it, so a reader took a one-seed row's p < 0.05 for a difference in recipes.  Each later
    seed of a baseline is tested against its first seed, the test the claims' p is."""
    from mixer_plugin.experiments import report

    exp = fake({"A": {"seeds": [1, 2, 3]}, "B": {}}, {"A": 0.1, "B": 0.3})
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    assert "`A` against its own first seed" in md, md
    # the fake scores A's seeds 1-3 at 91, 92, 93: each later seed against seed 1
    assert re.search(r"^\| 2 \| 92\.00 \| 91\.00 \| \+1\.00 \| \d\.\d{3} \|$", md, re.M), md
    assert re.search(r"^\| 3 \| 93\.00 \| 91\.00 \| \+2\.00 \| \d\.\d{3} \|$", md, re.M), md
    assert kept_baseline(tmp_path / "work" / "tiny" / "A" / "seed3", "bootstrap-vs-first-seed.json") == "A/seed1"
    exp = fake({"A": {}, "B": {"seeds": [1, 2]}}, {"A": 0.1, "B": 0.3})  # one baseline seed: nothing to show
    report.write(exp)
    assert "against its own first seed" not in (tmp_path / "tiny.md").read_text()


def test_per_source_scores_are_the_first_seeds(fake, tmp_path):
    """The per-source table is labelled "first seed": while a row's first seed is missing
    (being trained again), its second stood in under that label."""
    from mixer_plugin.experiments import report

    exp = fake({"A": {"seeds": [1, 2]}, "B": {}}, {"A": 0.1, "B": 0.3})
    for name, seed in (("A", 1), ("A", 2), ("B", 1)):
        score = tmp_path / "work" / "tiny" / name / f"seed{seed}" / "gen-test" / "score.json"
        score.write_text(json.dumps({**json.loads(score.read_text()), "by_source": {"x": {"lines": 60, "bleu": seed}}}))
    exp_rows = lambda: {line.split("|")[1].strip("` "): line  # noqa: E731
                        for line in (tmp_path / "tiny.md").read_text().split("Test BLEU per source")[1]
                        .split("\n\n")[1].splitlines() if line.startswith("| `")}
    report.write(exp)
    assert exp_rows()["A"] == "| `A` | 1.00 |"
    shutil.rmtree(tmp_path / "work" / "tiny" / "A" / "seed1")  # seed 1 trains again
    report.write(exp)
    assert exp_rows()["A"] == "| `A` | – |" and exp_rows()["B"] == "| `B` | 1.00 |"


def test_a_cached_bootstrap_is_the_test_asked_for(fake, tmp_path):
    """The bootstrap cache held while its file was newer than both hypotheses: a changed
    baseline kept the old row's p-value under the new baseline's name."""
    models = {"A": {}, "B": {}, "C": {}}
    noise = {"A": 0.3, "B": 0.3, "C": 0.6}
    from mixer_plugin.experiments import report, spec

    exp = fake(models, noise, baseline="A")
    report.write(exp)
    run = tmp_path / "work" / "tiny" / "B" / "seed1"
    assert kept_baseline(run) == "A/seed1"
    raw = yaml.safe_load(exp.path.read_text())  # the same runs, another baseline
    raw["score"]["baseline"] = "C"
    exp.path.write_text(yaml.safe_dump(raw))
    report.write(spec.load(exp.path))
    assert kept_baseline(run) == "C/seed1"


def commit_record(kept: Path, chain, **stamp):
    """A committed run's record as the archive writes it, holding ``chain``'s commands as they
    read on any machine (``stages.portable``)."""
    from mixer_plugin.experiments import stages

    kept.mkdir(parents=True, exist_ok=True)
    checkout, work = str(stages.PLUGIN.parent), str(stages.WORK)  # (the fixtures' work/)
    record = {s.name: {"commands": [stages.portable(argv, checkout, work) for argv in s.commands], **stamp}
              for s in chain}
    (kept / "run.json").write_text(json.dumps({"stages": record, "scores": {"bleu": 1.0}}, indent=1) + "\n")


def test_a_decode_is_restored_only_with_the_training_it_decoded(fake, tmp_path):
    """A committed decode records its own commands, which do not show the training it
    decoded: once that training's flags change, the decode must run again, not come back
    from the commit beside the retrained model."""
    from mixer_plugin.experiments import archive, runner, spec

    import shutil

    exp = fake({"A": {}}, {"A": 0.3})
    shutil.rmtree(tmp_path / "work" / "tiny")  # a fresh machine: nothing of this experiment in work/
    raw = yaml.safe_load(exp.path.read_text())
    raw["models"]["A_hard"] = {"decode_of": "A", "overrides": {"decoder_cross_mixers": "hard"}}
    exp.path.write_text(yaml.safe_dump(raw))
    exp = spec.load(exp.path)
    for label, chain in runner.Runner(exp, 1, 1).chains():  # both committed with today's commands
        commit_record(archive.kept_runs(exp) / label, chain)
    dry = runner.Runner(exp, 1, 1, dry_run=True)
    assert dry.restore(dry.chains()) == {"A/seed1", "A_hard/seed1"}
    raw["models"]["A"]["train"] = "--dropout 0.3"
    exp.path.write_text(yaml.safe_dump(raw))
    dry = runner.Runner(spec.load(exp.path), 1, 1, dry_run=True)
    assert dry.restore(dry.chains()) == set()


def test_the_jobs_write_the_results_one_at_a_time(monkeypatch, tmp_path):
    """Two jobs finishing together re-rendered the results file, ran the same bootstraps
    and called git at once (git's index.lock refused one; a temp file vanished under the
    other)."""
    import threading
    import time
    from types import SimpleNamespace

    from mixer_plugin.experiments import runner

    inside, most = [0], [0]

    def write(exp):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        inside[0] -= 1

    monkeypatch.setattr(runner.report, "write", write)
    monkeypatch.setattr(runner, "WORK", tmp_path)  # where the results' lock lies
    exp = SimpleNamespace(name="x", models={}, path=Path("x.yaml"))
    r = runner.Runner(exp, 2, 1)
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
    from mixer_plugin.experiments import stages

    (tmp_path / "python").symlink_to(sys.executable)
    (tmp_path / "python3").symlink_to(sys.executable)
    for name in ("python", "python3"):
        monkeypatch.setattr(sys, "executable", str(tmp_path / name))
        assert paths.interpreter() == str(tmp_path / "python")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    assert stages.fairseq("train")[0] == paths.PYTHON  # what the stamps record


def test_a_restore_cut_short_leaves_no_run_folder(fake, tmp_path, monkeypatch):
    """A restore copies a committed run into work/ file by file.  Cut short (a kill, a
    full disk), it left a folder without its restored.json marker, which the next start
    took for a run this machine trained: the training ran again there beside the half-copied
    files.  The folder appears whole or not at all."""
    from mixer_plugin.experiments import archive, runner, spec

    exp = fake({"A": {}}, {"A": 0.3})
    run = tmp_path / "work" / "tiny" / "A" / "seed1"
    shutil.rmtree(tmp_path / "work" / "tiny")  # a fresh machine: nothing of this experiment in work/
    [(label, chain)] = runner.Runner(exp, 1, 1).chains()
    kept = archive.kept_runs(exp) / label
    commit_record(kept, chain)
    (kept / "hyp.txt").write_text("committed hyp.txt\n")

    copies = []

    def copy_then_fail(src, dst):
        copies.append(src)
        if len(copies) == 2:
            raise OSError(28, "No space left on device")
        return real_copy(src, dst)

    real_copy = shutil.copyfile
    monkeypatch.setattr(runner.shutil, "copyfile", copy_then_fail)
    model = spec.load(exp.path).models["A"]
    with pytest.raises(OSError):
        runner.restore_run(exp, model, 1, chain)
    assert not run.exists(), sorted(p.name for p in run.rglob("*"))
    monkeypatch.setattr(runner.shutil, "copyfile", real_copy)
    assert runner.restore_run(exp, model, 1, chain)  # the next start restores it whole
    assert json.loads((run / "run.json").read_text()) == json.loads((kept / "run.json").read_text())
    assert (run / "gen-test" / "hyp.txt").read_text() == "committed hyp.txt\n"
    assert (run / ".stages" / "restored.json").is_file()
    assert not [p for p in run.parent.iterdir() if p.name != "seed1"]  # no temporary folder left behind


def test_speed_columns_come_from_the_benchmarks_the_file_names(tmp_path, request):
    """The leaderboard's runs span sessions on different machines, two runs sharing each, so
    their own words/s compare nothing (one session's machine trained 1.6 times faster than
    the last's).  With ``speed:`` the columns are the idle-machine benchmarks of every row,
    each with its speed-up against that run's baseline; the runs' own timings stay out."""
    from mixer_plugin.experiments import collect, report, spec

    make_plots = report.make_plots  # the fixture below leaves plots out
    exp = request.getfixturevalue("fake")({"A": {}, "B": {}, "C": {}}, {"A": 0.1, "B": 0.3, "C": 0.5})
    (tmp_path / "work" / "tiny" / "A" / "seed1" / "train.log").write_text(TRAIN_LOG_LINE)
    raw = yaml.safe_load(exp.path.read_text())
    raw["generate"] = {"flags": "--beam 4"}
    raw["speed"] = {"train": str(tmp_path / "train.json"), "decode": str(tmp_path / "decode.json")}
    exp.path.write_text(yaml.safe_dump(raw))
    exp = spec.load(exp.path)
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    assert "| train words/s (x) | decode sent/s (x) |" in md and "999" not in md
    assert all(line.count("| – | – |") for line in rows(md).values())
    assert "- train speed: not benchmarked yet (`mixer-bench train" in md
    meta = {"command": "mixer-bench ...", "date": "2026-11-24 12:00 UTC", "rounds": 2, "sentences": 32}
    (tmp_path / "train.json").write_text(json.dumps({"meta": meta, "rows": [
        {"model": "A", "wps": 3000.0, "speedup": 1.0}, {"model": "B", "wps": 3750.0, "speedup": 1.25}]}))
    (tmp_path / "decode.json").write_text(json.dumps({"meta": {**meta, "baseline": "A"}, "rows": [
        {"model": m, "L": L, "beam": b, "sent_per_s": v, "speedup": v / base}
        for m, k in (("A", 1.0), ("B", 0.5)) for L, b, base in ((100, 4, 10.0), (25, 1, 80.0), (25, 4, 40.0))
        for v in [base * k]]}))
    report.write(exp)
    md = (tmp_path / "tiny.md").read_text()
    table = rows(md)
    # decoding: the shortest L at the experiment's beam (4), not beam 1's figures
    assert "| 3,000 (1.00x) | 40.0 (1.00x) |" in table["A"] and "| 3,750 (1.25x) | 20.0 (0.50x) |" in table["B"]
    assert "| – | – |" in table["C"]  # a row the benchmarks have not timed
    assert "every hypothesis pinned to L = 25 tokens, beam 4" in md and "not benchmarked" not in md
    collected = collect.collect(exp)
    collect.run_bootstraps(exp, collected)
    (tmp_path / "curves.png").write_bytes(b"a plot of runs that are gone")
    assert [p.name for p in make_plots(exp, collected, tmp_path)] == ["score_vs_speed.png"]  # no curves: no logs
    assert not (tmp_path / "curves.png").exists()


def test_the_learning_curves_draw_every_seed(request, tmp_path, monkeypatch):
    """The curves drew each row's first seed only.  The summarization leaderboard's multiNN
    spread 1.93 R-L over its seeds because its validation loss drops in a step that came
    750 updates later for seed 1 than for seeds 2 and 3, and the plot hid it: every seed's
    curve is drawn, in its row's colour, the first one marked and named."""
    from matplotlib.figure import Figure

    from mixer_plugin.experiments import collect, report

    make_plots = report.make_plots  # the fixture below leaves plots out
    exp = request.getfixturevalue("fake")({"A": {"seeds": [1, 2, 3]}, "B": {}}, {"A": 0.1, "B": 0.3})
    for name, seeds in (("A", (1, 2, 3)), ("B", (1,))):
        for seed in seeds:
            (tmp_path / "work" / "tiny" / name / f"seed{seed}" / "train.log").write_text("".join(
                f"x | INFO | valid | epoch 001 | valid on 'valid' subset | loss {9 - u / 100 - seed:.2f} | "
                f"num_updates {u}\n" for u in (100, 200)))
    drawn = {}
    monkeypatch.setattr(Figure, "savefig", lambda fig, path, **kw: drawn.update(
        {Path(path).name: [(line.get_label(), line.get_color(), list(line.get_ydata())) for line in fig.axes[0].lines]}))
    make_plots(exp, collect.collect(exp), tmp_path)
    a, b = (report.row_styles(["A", "B"])[m][0] for m in "AB")
    assert [(label, color) for label, color, _ in drawn["curves.png"]] == [
        ("A", a), ("_seed2", a), ("_seed3", a), ("B", b)], drawn["curves.png"]
    assert [y for *_, y in drawn["curves.png"]][:3] == [[7.0, 6.0], [6.0, 5.0], [5.0, 4.0]]


def test_every_row_keeps_its_own_style_in_the_plots():
    """The leaderboard's 17 rows outnumber matplotlib's ten default colours: its curves drew
    multiNN and talking heads in the same green.  Each row gets its own colour and marker
    (and line style), the same in both plots."""
    from mixer_plugin.experiments.report import row_styles

    names = [f"row{i}" for i in range(30)]
    style = row_styles(names)
    assert len({(c, m) for c, m, _ in style.values()}) == 30
    assert len({s for _, _, s in style.values()}) == 3
    assert row_styles(names[:17])["row12"] == style["row12"]  # a row's style does not move as rows are added


def test_a_restored_run_follows_a_newer_committed_copy(fake, tmp_path):
    """A machine keeps work/ between sessions.  When a run it restored is trained again
    elsewhere (a decode_of row needs its checkpoints) and the new copy is committed, the
    old restored folder stood: the results showed the old run, and writing them copied it
    back over the newer commit.  A restored folder follows its committed copy."""
    from mixer_plugin.experiments import archive, runner, spec

    exp = fake({"A": {}}, {"A": 0.3})
    run = tmp_path / "work" / "tiny" / "A" / "seed1"
    shutil.rmtree(tmp_path / "work" / "tiny")
    [(label, chain)] = runner.Runner(exp, 1, 1).chains()
    kept = archive.kept_runs(exp) / label

    def commit(version):
        commit_record(kept, chain, finished=version)
        (kept / "hyp.txt").write_text(f"{version}\n")

    model = spec.load(exp.path).models["A"]
    commit("monday")
    assert runner.restore_run(exp, model, 1, chain)
    assert runner.restore_run(exp, model, 1, chain)  # restored before: nothing to do
    commit("tuesday")  # trained again on another machine, committed, pulled here
    assert runner.restore_run(exp, model, 1, chain, copy=False) and (run / "gen-test" / "hyp.txt").read_text() == \
        "monday\n"  # a dry run changes nothing
    assert runner.restore_run(exp, model, 1, chain)
    assert (run / "gen-test" / "hyp.txt").read_text() == "tuesday\n"
    assert json.loads((run / ".stages" / "restored.json").read_text())["train"]["finished"] == "tuesday"


def test_a_gap_a_rerun_of_the_same_command_produced_is_not_evidence():
    """The transformer's first seed, trained again with the same command and seed on another
    machine (for a decode of its checkpoints), moved from 26.34 to 25.93 BLEU, and the paired
    bootstrap called that p 0.042: it sees the test set's sampling noise, not the training's.
    Its three seeds then spread 0.13, so a one-seed row 0.35 behind with p 0.01 read as a
    significant loss.  ``score.noise_floor`` (the rerun's gap) is the least gap that counts."""
    from types import SimpleNamespace

    from mixer_plugin.experiments.collect import ModelResult
    from mixer_plugin.experiments.report import claim_cells
    from mixer_plugin.experiments.spec import Claim, Score

    def row(name, bleus, claims=(), floor=0.0):
        model = SimpleNamespace(name=name, claims=list(claims), score=Score(metrics=["bleu"], noise_floor=floor))
        return ModelResult(model, runs=[None] * len(bleus), logs=[], scores=[{"bleu": b} for b in bleus], decode=[])

    claim = Claim("<", "transformer")
    transformer = {"transformer": row("transformer", [25.93, 25.82, 25.67])}
    for floor, expected in ((0.0, "**confirmed** (BLEU -0.36 over 1 and 3 seeds, spread 0.13, p 0.010)"),
                            (0.41, "**inconclusive** (BLEU -0.36 over 1 and 3 seeds, spread 0.13, rerun floor 0.41, "
                                   "p 0.010)")):
        mixer = row("mixer", [25.45], [claim], floor)
        mixer.extra["claims"] = {claim: {"bleu": {"p_value": 0.01}}}
        assert claim_cells(mixer, transformer) == f"< transformer: {expected}"
    # a row of one seed against a row of one seed: the floor alone
    mixer = row("mixer", [25.45], [claim], 0.41)
    mixer.extra["claims"] = {claim: {"bleu": {"p_value": 0.01}}}
    assert "**confirmed** (BLEU -0.55, rerun floor 0.41, p 0.010)" in claim_cells(
        mixer, {"transformer": row("transformer", [26.0])})
