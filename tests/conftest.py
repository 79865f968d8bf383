"""Shared fixtures for the end-to-end tests (tests/test_cli.py, tests/test_ddp.py).

Everything here goes through fairseq's stock command-line tools in subprocesses, the
way a user runs the plugin.  The data is a small slice of the bundled EN-DE corpus
(data/debian-en-de/), preprocessed once per session with whitespace tokenisation.
"""

import json
import lzma
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

E2E_REPO = Path(__file__).resolve().parents[1]
BUNDLED = E2E_REPO / "data" / "debian-en-de"


def bundled_lines(split, lang, n=None):
    """The first ``n`` lines of a split of the bundled corpus (all with ``n=None``)."""
    with lzma.open(BUNDLED / f"{split}.{lang}.xz", "rt", encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    lines = lines[:-1] if lines and lines[-1] == "" else lines
    return lines if n is None else lines[:n]


E2E_USER_DIR = str(E2E_REPO / "mixer_plugin")

# small and quick: sentence pairs taken from the start of each split of the sample,
# skipping pairs with a side longer than E2E_MAX_WORDS (keeps batches cheap)
E2E_SIZES = {"train": 2000, "valid": 100, "test": 50}
E2E_MAX_WORDS = 50
E2E_VOCAB = 2000

# A tiny 3+3-layer hybrid that uses every mixer in every role it supports:
# encoder self = ngram with global context, local, attn; decoder self = ngram,
# local, attn; cross = attn.
E2E_MODEL_ARGS = [
    "--user-dir", E2E_USER_DIR,
    "--task", "translation", "--source-lang", "en", "--target-lang", "de",
    "--arch", "mixer_small_hybrid",
    "--encoder-layers", "3", "--decoder-layers", "3",
    "--encoder-mixers", "ngram:global=1,local,attn",
    "--decoder-mixers", "ngram,local,attn",
    "--decoder-cross-mixers", "attn",
    "--encoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128", "--encoder-attention-heads", "4",
    "--decoder-embed-dim", "64", "--decoder-ffn-embed-dim", "128", "--decoder-attention-heads", "4",
    "--share-all-embeddings",
]  # fmt: skip

E2E_TRAIN_ARGS = [
    "--cpu", "--seed", "1", "--num-workers", "0",
    "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "1e-3",
    "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "10",
    "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
    "--max-tokens", "2000",
    "--no-progress-bar", "--log-format", "simple", "--log-interval", "1",
    "--no-epoch-checkpoints",
]  # fmt: skip


def e2e_env(**extra):
    """One OpenMP thread per process (2-core machine, other jobs running), and the
    repo importable for --user-dir and the DDP wrapper."""
    env = dict(os.environ)
    env.update(
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONUNBUFFERED="1",
        PYTHONWARNINGS="ignore",
        FAIRSEQ_PYTHON=sys.executable,
        CUDA_VISIBLE_DEVICES="",
    )
    env.update(extra)
    return env


def python_on_path(folder: Path) -> Path:
    """``folder/python``, a script that starts this very interpreter, environment and all, for
    a child that finds ``python`` on the PATH (the row scripts).  Not a symlink: a virtual
    environment's interpreter, linked from outside the environment's folder, finds no
    ``pyvenv.cfg`` beside it and starts as the base Python, without the environment's packages."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "python"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    script.chmod(0o755)
    return script


def tiny_row_script(folder: Path, corpus: Path, **cluster):
    """The leaderboard's transformer row at a tiny size (4 updates, the last 2 checkpoints averaged)
    as a row script, ``folder/tiny.sh``, written by ``mixer-configs --script`` once its data is
    prepared (as data-prep would, so the script knows the test sources); ``cluster``: the file's
    ``cluster:``.  -> (the script, the environment it runs in, its run folder)."""
    from mixer_plugin.data.workspace import variant
    from mixer_plugin.paths import PYTHON

    raw = yaml.safe_load((E2E_REPO / "experiments" / "leaderboard.yaml").read_text())
    tiny = (
        "--encoder-embed-dim 32 --encoder-ffn-embed-dim 64 --decoder-embed-dim 32 --decoder-ffn-embed-dim 64 "
        "--max-update 4 --save-interval-updates 2 --keep-interval-updates 2 --max-tokens 1000"
    )
    exp = {k: raw[k] for k in ("name", "title", "data", "train", "generate")}
    exp.update(
        name="tiny_rows",
        train=f"{raw['train']} {tiny}",
        generate={**raw["generate"], "average_last": 2, "flags": "--beam 2 --batch-size 32 --max-len-b 10"},
        models={"transformer": {"arch": "mixer_small_attn"}},
        score={"metrics": ["bleu", "chrf"]},
        prepare=f"--corpus {corpus} --vocab 400",  # its folder: work/data/debian_en_de.corpus-<name>.vocab-400
        **({"cluster": cluster} if cluster else {}),
    )
    (folder / "tiny.yaml").write_text(yaml.safe_dump(exp))
    env = e2e_env(MIXER_WORK=str(folder / "work"), NGPU="0", PYTHONPATH=str(E2E_REPO))
    root = folder / "work" / "data" / f"debian_en_de.{variant(['--corpus', str(corpus), '--vocab', '400'])}"
    e2e_run([PYTHON, "-m", "mixer_plugin.recipes", "debian_en_de", "--corpus", corpus, "--root", root,
             "--vocab", "400", "--workers", "1"], env=env)  # fmt: skip
    text = e2e_run([PYTHON, "-m", "mixer_plugin.experiments.paper_rows", "--script", "tiny.yaml"], cwd=folder, env=env)
    (folder / "tiny.sh").write_text(text.stdout)
    env["PATH"] = f"{python_on_path(folder / 'bin').parent}:{env['PATH']}"  # `python` on the PATH: this one
    return folder / "tiny.sh", env, folder / "work" / "tiny_rows" / "transformer" / "seed1"


def e2e_describe(proc, argv):
    def tail(text, n=6000):
        return text if len(text) <= n else "...\n" + text[-n:]

    return (
        f"command: {' '.join(map(str, argv))}\nexit status: {proc.returncode}\n"
        f"---- stdout (tail) ----\n{tail(proc.stdout)}\n---- stderr (tail) ----\n{tail(proc.stderr)}"
    )


def e2e_popen(argv, *, env=None, cwd=None, stdin=None):
    """Start a command in its own process group (so a hung torchrun can be ended
    together with its ranks), capturing stdout and stderr as text."""
    return subprocess.Popen(
        [str(a) for a in argv],
        cwd=cwd or E2E_REPO,
        env=env or e2e_env(),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def e2e_wait(proc, argv, *, timeout=600, input=None):
    """Collect a started command; on timeout end its process group and fail."""
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
        pytest.fail(f"timed out after {timeout}s\n" + e2e_describe(done, argv), pytrace=False)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def e2e_run(argv, *, check=True, timeout=600, input=None, cwd=None, env=None):
    """Run a command, capturing its output; on an unexpected exit status fail the
    test with the command and the tails of stdout and stderr."""
    argv = [str(a) for a in argv]
    proc = e2e_popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL)
    done = e2e_wait(proc, argv, timeout=timeout, input=input)
    if check and done.returncode != 0:
        pytest.fail(e2e_describe(done, argv), pytrace=False)
    return done


def e2e_fairseq(tool, *args, **kwargs):
    """``fairseq-<tool>`` as ``python -m fairseq_cli.<tool>`` with this interpreter."""
    return e2e_run([sys.executable, "-m", f"fairseq_cli.{tool}", *args], **kwargs)


class E2EData:
    def __init__(self, root: Path):
        self.raw = root / "raw"
        self.bin = root / "bin"

    def lines(self, split, lang):
        return (self.raw / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()


def e2e_pairs(split, want):
    """The slice's first ``want`` (en, de) pairs of a split: every 7th pair of the bundled
    corpus, so that the slice mixes its sources (it is ordered by source), without pairs
    with a side longer than E2E_MAX_WORDS."""
    pairs = []
    for en, de in list(zip(bundled_lines(split, "en"), bundled_lines(split, "de")))[::7]:
        en, de = en.strip(), de.strip()
        if en and de and len(en.split()) <= E2E_MAX_WORDS and len(de.split()) <= E2E_MAX_WORDS:
            pairs.append((en, de))
            if len(pairs) == want:
                break
    assert len(pairs) == want, f"{split}: only {len(pairs)} usable pairs in the sample"
    return pairs


def write_pairs(folder: Path, split, pairs):
    for i, lang in enumerate(("en", "de")):
        (folder / f"{split}.{lang}").write_text("".join(p[i] + "\n" for p in pairs), encoding="utf-8")


@pytest.fixture(scope="session")
def e2e_data(tmp_path_factory):
    """The sample slice, raw and fairseq-preprocessed (joined dictionary)."""
    if not (BUNDLED / "train.en.xz").is_file():
        pytest.fail(f"the bundled corpus is missing: {BUNDLED}")
    data = E2EData(tmp_path_factory.mktemp("e2e_data"))
    data.raw.mkdir()
    for split, want in E2E_SIZES.items():
        write_pairs(data.raw, split, e2e_pairs(split, want))
    e2e_fairseq(
        "preprocess",
        "--source-lang", "en", "--target-lang", "de",
        "--trainpref", data.raw / "train", "--validpref", data.raw / "valid",
        "--testpref", data.raw / "test",
        "--destdir", data.bin, "--joined-dictionary", "--nwordssrc", E2E_VOCAB,
        "--workers", "1",
    )  # fmt: skip
    for name in ("dict.en.txt", "dict.de.txt", "train.en-de.en.bin", "test.en-de.de.idx"):
        assert (data.bin / name).is_file(), name
    return data


def corpus_folder(root: Path) -> Path:
    """The slice's start as a Debian-style corpus folder (300 training pairs, 20 validation
    and 20 test pairs), with a source per test line: what the runner's tests prepare."""
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        write_pairs(root, split, e2e_pairs(split, 300 if split == "train" else 20))
    (root / "test.source").write_text("".join(("a" if i < 12 else "b") + "\n" for i in range(20)), encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    return corpus_folder(tmp_path_factory.mktemp("tiny_corpus"))


def e2e_copy_checkpoint_dir(src: Path, dst: Path) -> Path:
    """A private copy of a save dir, so a test can continue training from it."""
    shutil.copytree(src, dst)
    return dst


# ---------------------------------------------------------------- results from fake runs
# Run folders built by hand (hypotheses and scores, no training), so that the results'
# bookkeeping is pinned in seconds (tests/test_report.py: which runs each p-value compares,
# which baseline each row names, when a cached bootstrap is stale; tests/test_experiments.py:
# what a restore may reuse).
WORDS = "der die das haus katze hund baum auto ist gut schnell".split()


# one logged training interval: a run's own words/s (999) for the plots and the tables
TRAIN_LOG_LINE = "2026-11-24 10:00:00 | INFO | train_inner | epoch 001:  50 / 900 loss=4.2, wps=999, num_updates=50\n"


def work_at(monkeypatch, path: Path):
    """Point every module that keeps ``paths.WORK`` (where runs and prepared data go) at ``path``."""
    from mixer_plugin.data import workspace
    from mixer_plugin.experiments import archive, runner, schedule, stages

    for module in (workspace, stages, archive, runner, schedule):
        monkeypatch.setattr(module, "WORK", path)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """write(models, hyp noise per model) -> the loaded experiment, with every (model,
    seed) given a finished-looking run folder in a private work/."""
    import random

    from mixer_plugin import scoring
    from mixer_plugin.experiments import report, spec_loader

    work_at(monkeypatch, tmp_path / "work")
    monkeypatch.setattr(report, "make_plots", lambda *a: [])
    root = tmp_path / "work" / "data" / "debian_en_de"
    (root / "ref").mkdir(parents=True)
    (root / "prep.json").write_text(
        json.dumps({"src": "en", "tgt": "de", "references": {"test": {"detok": "ref/test.de"}}})
    )
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
                # the run's score is its hypotheses', as the score stage gives it: the claims
                # judge the gap the bootstrap recomputes from them
                (gen / "score.json").write_text(
                    json.dumps({"bleu": round(scoring.score(hyp, refs, ["bleu"])["bleu"], 2)})
                )
        path = tmp_path / "tiny.yaml"
        path.write_text(
            yaml.safe_dump(
                {
                    "name": "tiny",
                    "data": "debian_en_de",
                    "results": str(tmp_path / "tiny.md"),
                    "score": {"metrics": list(metrics), "baseline": baseline},
                    "models": {n: {"arch": "mixer_small_attn", **m} for n, m in models.items()},
                }
            )
        )
        return spec_loader.load(path)

    return write


def rows(md):
    """Model -> its line of the main table."""
    return {line.split("|")[1].strip("` "): line for line in md.split("\n\n")[1].splitlines() if line.startswith("| `")}
