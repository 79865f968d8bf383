"""The bash scripts beside the paper rows (configs/<paper>/<row>.<dataset>.sh, written by
mixer-configs) run the runner's own commands: every script, run with ``python`` and ``torchrun``
replaced by functions that print their argv, gives the argv of the runner's stages, under each
NGPU and PRECISION; and the Debian row's script trains, decodes and scores at a tiny size."""

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import E2E_REPO, e2e_env, e2e_run, python_on_path, tiny_row_script, work_at

from mixer_plugin.data.workspace import data_root
from mixer_plugin.experiments import paper_rows
from mixer_plugin.experiments.schedule import Runner
from mixer_plugin.experiments.shell_script import implied_prep
from mixer_plugin.experiments.spec_loader import load
from mixer_plugin.paths import PLUGIN, PYTHON
from mixer_plugin.recipes import asked, recipes
from mixer_plugin.recipes import command as recipe_command

SCRIPTS = sorted(p.relative_to(paper_rows.CONFIGS).as_posix() for p in paper_rows.CONFIGS.rglob("*.sh"))
# each command prints its argv instead of running: fields end in \x1f, commands in \x1e
STUB = r"""
python() { printf '%s\x1f' python "$@"; printf '\x1e'; }
torchrun() { printf '%s\x1f' torchrun "$@"; printf '\x1e'; }
tee() { cat; }
mkdir() { :; }
source "$1"
"""


def printed(script: Path, **env) -> list:
    base = {k: v for k, v in e2e_env().items() if k not in ("NGPU", "PRECISION", "DATA", "MIXER_WORK")}
    out = subprocess.run(
        ["bash", "-c", STUB, "stub", str(script)],
        env={**base, "USER_DIR": str(PLUGIN), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return [c.split("\x1f")[:-1] for c in out.stdout.split("\x1e")[:-1]]


def as_run(argv) -> list:
    """The runner's argv as the script writes it: its interpreter is ``python`` on the PATH."""
    return ["python" if i == 0 and a == PYTHON else str(a) for i, a in enumerate(argv)]


def test_every_row_has_a_script():
    assert len(SCRIPTS) == len(list(paper_rows.CONFIGS.rglob("*.yaml"))) > 100


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_script_runs_the_runners_commands(name, tmp_path, monkeypatch):
    script = paper_rows.CONFIGS / name
    exp = load(script.with_suffix(".yaml"))
    work_at(monkeypatch, tmp_path)
    runner = Runner(exp, 1, 1, dry_run=True)
    for (data, _), stage in runner.prepared.items():  # as prepared: the languages the name gives
        root = stage.outputs[0].parent
        root.mkdir(parents=True)
        (root / "prep.json").write_text(json.dumps(implied_prep(data)))
    # prepared: the folder's options checked first (mixer-prepare --check), then the runner's stages
    checks = [
        as_run([PYTHON, "-m", "mixer_plugin.recipes", "--check", m.data, "--root", data_root(m.data, m.prepare)])
        + asked(m.data, m.prepare)
        for m in {m.data: m for m in exp.models.values()}.values()
    ]
    for ngpu, precision in (("0", "fp32"), ("1", "bf16"), ("4", "fp16"), ("16", "fp32")):
        monkeypatch.setenv("NGPU", ngpu)
        monkeypatch.setenv("PRECISION", precision)
        want = checks + [as_run(c) for _, chain in runner.chains() for s in chain for c in s.commands]
        got = printed(script, NGPU=ngpu, PRECISION=precision, MIXER_WORK=str(tmp_path))
        assert got == want, (ngpu, precision)
    # not prepared yet: the recipe first, into the folder the runner prepares
    [(data, prepare)] = {(m.data, tuple(m.prepare)) for m in exp.models.values()}
    fresh = tmp_path / "fresh"
    got = printed(script, NGPU="0", MIXER_WORK=str(tmp_path), DATA=str(fresh))
    assert got[0] == as_run(recipe_command(data, [*prepare, "--root", fresh]))


def test_every_script_reads_the_folder_its_data_prep_command_writes(tmp_path, monkeypatch):
    """The default DATA of every row script is the folder the data-prep command it names
    prepares: data-prep/prepare-<dataset>.sh with the row's options passes them to its recipe,
    which prepares data_root(recipe, options) (spelled out: wmt17_en_de.ihead)."""
    work_at(monkeypatch, tmp_path)
    scripts = {s.name: s for s in (E2E_REPO / "data-prep").glob("prepare-*.sh")}
    for name in SCRIPTS:
        text = (paper_rows.CONFIGS / name).read_text()
        [default] = re.findall(r"^DATA=\$\{DATA:-\$WORK/(\S+)\}$", text, re.M)
        [command] = re.findall(
            r"^# the data, any folder of the same layout \(prep.json, ref/, bin/\): (.+)$", text, re.M
        )
        prep, *args = shlex.split(command)
        family = scripts[Path(prep).name]  # the data-prep script exists
        [recipe] = re.findall(r'^prepare "?([\w${}]+)"? "\$@"$', family.read_text(), re.M)
        if "${src}_${tgt}" in recipe:  # prepare-wmt17.sh SRC TGT [options]
            recipe, args = recipe.replace("${src}_${tgt}", f"{args[0]}_{args[1]}"), args[2:]
        assert recipe in recipes(), name
        assert data_root(recipe, args) == tmp_path / default, name


def test_a_folder_prepared_with_other_options_stops_the_script(tmp_path):
    """DATA prepared with another vocabulary: the script stops before training, one line naming
    both, where it went straight to fairseq-train."""
    script = paper_rows.CONFIGS / "multinn" / "mixer_iwslt_multinn.iwslt14_de_en.sh"
    data = tmp_path / "mine"
    data.mkdir()
    command = "python mixer_plugin/recipes/iwslt14_de_en.py --root x --vocab 8000"
    (data / "prep.json").write_text(json.dumps({"recipe": "iwslt14_de_en", "command": command}))
    bin_dir = python_on_path(tmp_path / "bin").parent
    env = {**e2e_env(), "NGPU": "0", "DATA": str(data), "MIXER_WORK": str(tmp_path / "work")}
    env.update(USER_DIR=str(PLUGIN), PATH=f"{bin_dir}:{env['PATH']}", PYTHONPATH=str(E2E_REPO))
    out = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    err = [line for line in out.stderr.splitlines() if "tensorboardX" not in line]
    assert out.returncode == 2 and len(err) == 1, out.stderr
    assert "was prepared with '--vocab 8000', and this asks for its defaults" in err[0], err
    assert not (tmp_path / "work").exists()


def test_bad_settings_are_one_line(tmp_path):
    script = paper_rows.CONFIGS / SCRIPTS[0]
    for env, msg in (({"NGPU": "two"}, "NGPU must be a number"), ({"PRECISION": "fp64"}, "PRECISION must be one of")):
        out = subprocess.run(
            ["bash", str(script)], env={**e2e_env(), **env}, capture_output=True, text=True, cwd=tmp_path
        )
        assert out.returncode == 2 and msg in out.stderr and out.stderr.count("\n") == 1, out.stderr
        assert not (tmp_path / "work").exists()


def test_the_debian_rows_script_end_to_end(corpus, tmp_path):
    """The leaderboard's transformer row (Debian EN-DE) as a script, at a tiny size: prepared from
    the tiny corpus, then the script trains 4 updates, averages the last 2 checkpoints, decodes
    and scores, from a folder of its own."""
    script, env, run = tiny_row_script(tmp_path, corpus)
    e2e_run(["bash", script.name], cwd=tmp_path, env=env, timeout=900)
    assert (run / "averaged_last2.pt").is_file()
    score = json.loads((run / "gen-test" / "score.json").read_text())
    assert {"bleu", "chrf"} <= set(score), score
    assert (run / "gen-test" / "score.log").is_file() and "--sources" in script.read_text()  # per-source scores
