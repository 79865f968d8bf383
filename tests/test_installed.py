"""The plugin installed as a user installs it (``pip install .``, not editable) and used from a
folder of the user's own: the ``--user-dir`` path from ``python -m mixer_plugin``, a corpus
prepared with ``mixer-prepare corpus --config``, and ``mixer-run`` on the experiment file it
wrote, with ``work/`` under that folder, the prepared data reused and every core used."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import E2E_REPO, e2e_env

TINY = (
    "--encoder-embed-dim 32 --encoder-ffn-embed-dim 64 --encoder-attention-heads 4 --decoder-embed-dim 32 "
    "--decoder-ffn-embed-dim 64 --decoder-attention-heads 4 --optimizer adam --lr 0.001 --max-tokens 2000 "
    "--criterion label_smoothed_cross_entropy --max-update 4 --no-epoch-checkpoints --num-workers 0 "
    "--log-format simple --log-interval 1"
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The package built and installed into a folder of its own, as a wheel (no editable
    hook, no checkout beside it), and a user's project folder elsewhere."""
    site = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(E2E_REPO),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    project = tmp_path_factory.mktemp("my_project")
    return site, project


def run(installed, *argv, **kw):
    site, project = installed
    # PYTHONPATH first on sys.path: the installed copy, not the checkout's editable one
    return subprocess.run(
        [sys.executable, *map(str, argv)],
        cwd=project,
        env=e2e_env(PYTHONPATH=str(site)),
        capture_output=True,
        text=True,
        timeout=900,
        **kw,
    )


def test_the_user_dir_path_from_anywhere(installed):
    site, _ = installed
    proc = run(installed, "-m", "mixer_plugin")
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == site / "mixer_plugin"
    assert (site / "mixer_plugin" / "recipes" / "corpus.py").is_file()  # the recipes ship with the package
    assert run(installed, "-m", "mixer_plugin", "--version").stdout.strip() == yaml.safe_load(
        run(installed, "-c", "import mixer_plugin; print(repr(mixer_plugin.__version__))").stdout
    )


def test_prepare_then_run_in_a_folder_of_ones_own(installed, corpus):
    site, project = installed
    prep = run(
        installed,
        "-m",
        "mixer_plugin.recipes",
        "corpus",
        "--corpus",
        corpus,
        "--src",
        "en",
        "--tgt",
        "de",
        "--vocab",
        "400",
        "--workers",
        "1",
        "--config",
        "fr_en.yaml",
    )
    assert prep.returncode == 0, prep.stdout[-2000:] + prep.stderr[-2000:]
    [data] = (project / "work" / "data").iterdir()  # where mixer-run will look for the file's data
    text = (project / "fr_en.yaml").read_text()
    assert f"its data is work/data/{data.name}" in text and "no jobs/threads" in text
    spec = yaml.safe_load(text)
    assert "jobs" not in spec and "threads" not in spec
    spec["train"] = TINY
    spec["models"] = {"ngram": {"arch": "mixer_small_attn", "train": "--encoder-mixers ngram --decoder-mixers ngram"}}
    spec["generate"] = {"subset": "test", "flags": "--beam 2 --max-len-a 1.2 --max-len-b 5"}
    spec["score"] = {"metrics": ["bleu"]}
    (project / "fr_en.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")

    proc = run(installed, "-m", "mixer_plugin.experiments.runner", "fr_en.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    cores = int(
        run(installed, "-c", "from mixer_plugin.experiments.schedule import machine_cores as c; print(c())").stdout
    )
    assert f"1 runs at a time x {cores} threads = {cores} cores (fitted to this machine)" in out, out
    assert f"writing under {project}" in out, out
    # the data mixer-prepare made is the data the run used: no second folder, every step skipped
    assert [p.name for p in (project / "work" / "data").iterdir() if p.suffix != ".lock"] == [data.name]
    log = (data / "prepare.log").read_text()
    steps = re.findall(r"^\[mixer-prepare [\d:]+\] (\w+): (.+)$", log, re.M)
    assert steps and all(said == "done before, skipped" for _, said in steps[:-1]), log
    # the stock fairseq tools ran the installed plugin as their --user-dir
    run_dir = project / "work" / spec["name"] / "ngram" / "seed1"
    train_log = (run_dir / "train.log").read_text()
    assert f"--user-dir {site / 'mixer_plugin'}" in train_log.splitlines()[0], train_log[:500]
    assert (run_dir / "gen-test" / "hyp.txt").read_text().strip()
    assert (project / "work" / spec["name"] / "results.md").is_file()
    assert not (E2E_REPO / "work" / spec["name"]).exists()
