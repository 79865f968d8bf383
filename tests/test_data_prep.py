"""data-prep/prepare-<dataset>.sh: one short script per dataset of the papers, each calling the
installed recipe, which binarizes, and linking data-bin/<dataset> to what it binarized."""

import os
import re
import subprocess

from conftest import E2E_REPO, e2e_env, e2e_run

from mixer_plugin.experiments import paper_rows
from mixer_plugin.recipes import recipes

PREP = E2E_REPO / "data-prep"
SCRIPTS = sorted(PREP.glob("prepare-*.sh"))


def recipe_of(script):
    """The recipe a script prepares (wmt17's for the pair en de)."""
    [name] = re.findall(r'^prepare "?([\w${}]+)"? "\$@"$', script.read_text(), re.M)
    return name.replace("${src}_${tgt}", "en_de")


def test_every_script_is_executable_parses_and_names_a_recipe():
    known = recipes()
    assert len(SCRIPTS) >= 10
    for script in SCRIPTS:
        assert os.access(script, os.X_OK), script.name
        check = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert check.returncode == 0, (script.name, check.stderr)
        assert recipe_of(script) in known, script.name
        assert script.name.startswith("prepare-" + recipe_of(script).split("_en_de")[0]), script.name
        assert "set -euo pipefail" in script.read_text(), script.name


def test_every_dataset_of_the_papers_has_a_script():
    have = {recipe_of(s) for s in SCRIPTS}
    for data in [*paper_rows.RECIPES, *paper_rows.CPU_DATA, "debian_sum", "debian_cls"]:
        assert data in have or (data.startswith("wmt17_") and "wmt17_en_de" in have), data


def test_wmt17_needs_its_pair(tmp_path):
    out = subprocess.run(["bash", str(PREP / "prepare-wmt17.sh"), "en"], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.startswith("usage:") and out.stderr.count("\n") == 1


def test_prepare_debian_en_de_end_to_end(corpus, tmp_path):
    """On the tiny corpus (the bundled one takes minutes): the recipe's folder, and data-bin/ linked
    to the data it binarized, with the fairseq-preprocess command at the head of its log."""
    env = e2e_env(PREP=str(tmp_path / "work" / "data" / "debian_en_de"), DATA_BIN=str(tmp_path / "data-bin"))
    env["PYTHONPATH"] = str(E2E_REPO)
    e2e_run(
        ["bash", PREP / "prepare-debian_en_de.sh", "--corpus", corpus, "--vocab", "400", "--workers", "1"],
        cwd=tmp_path,
        env=env,
    )
    link = tmp_path / "data-bin" / "debian_en_de"
    assert link.resolve() == tmp_path / "work" / "data" / "debian_en_de" / "bin"
    assert (link / "dict.en.txt").is_file() and (link / "test.en-de.de.bin").is_file()
    head = (link.parent.parent / "work" / "data" / "debian_en_de" / "preprocess.log").read_text().splitlines()[0]
    assert head.startswith("$ python -m fairseq_cli.preprocess --source-lang en") and "--joined-dictionary" in head
