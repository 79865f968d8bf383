"""data-prep/prepare-<dataset>.sh: one short script per dataset of the papers, each showing and
running the installed recipe's steps (the last one fairseq-preprocess with its flags), and linking
data-bin/<dataset> to what it binarized.

Each script's comment block shows its steps for the defaults; ``python tests/test_data_prep.py``
writes them again from the recipes (the test below fails until it does)."""

import os
import re
import subprocess
from pathlib import Path

from conftest import E2E_REPO, e2e_env, e2e_run

from mixer_plugin.experiments import paper_rows
from mixer_plugin.recipes import printed_steps, recipes

PREP = E2E_REPO / "data-prep"
SCRIPTS = sorted(PREP.glob("prepare-*.sh"))


def recipe_of(script):
    """The recipe a script prepares (wmt17's for the pair en de)."""
    [name] = re.findall(r'^prepare "?([\w${}]+)"? "\$@"$', script.read_text(), re.M)
    return name.replace("${src}_${tgt}", "en_de")


BEGIN, END = "# Its steps for the defaults", "# (end of the steps)"


def steps_block(script):
    """The comment block of a script's steps: ``--print-steps`` for its recipe's defaults, with
    the --workers of its #SBATCH line."""
    name = recipe_of(script)
    return (
        f"{BEGIN} (mixer-prepare {name} [options] --print-steps prints them for yours;\n"
        "# common.sh shows and runs them so).  Copy one, edit it, run it: a finished step is skipped,\n"
        "# one done with other options refused (--force redoes them all).\n"
        + "".join(f"#   {line}\n" for line in printed_steps(name, ["--workers", "8"]).splitlines())
        + END
        + "\n"
    )


def written_block(script):
    text = script.read_text()
    return text[text.index(BEGIN) : text.index(END) + len(END) + 1] if BEGIN in text else ""


def test_every_script_shows_the_steps_its_recipe_runs():
    """Each step one command a user can copy and edit, the tokenizer, the subword model and
    fairseq-preprocess with its flags among them, as the recipe prints them today."""
    for script in SCRIPTS:
        block = written_block(script)
        assert block == steps_block(script), f"{script.name}: run python tests/test_data_prep.py"
        assert "#   # tok: " in block and "#   # subword: " in block, script.name
        if recipe_of(script) != "debian_cls":  # two commands of its own, named in words
            assert "--step binarize -- fairseq-preprocess --source-lang" in block, script.name


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


def test_prepare_debian_en_de_end_to_end(corpus, tmp_path, monkeypatch):
    """On the tiny corpus (the bundled one takes minutes): the folder its options name, the one
    mixer-run and the row scripts read for them (``data_root``), and data-bin/ linked to the data
    it binarized, with the fairseq-preprocess command at the head of its log."""
    from mixer_plugin.data import workspace

    env = e2e_env(MIXER_WORK=str(tmp_path / "work"), DATA_BIN=str(tmp_path / "data-bin"))
    env["PYTHONPATH"] = str(E2E_REPO)
    options = ["--corpus", str(corpus), "--vocab", "400", "--workers", "1"]
    out = e2e_run(["bash", PREP / "prepare-debian_en_de.sh", *options], cwd=tmp_path, env=env)
    monkeypatch.setattr(workspace, "WORK", tmp_path / "work")
    folder = workspace.data_root("debian_en_de", options)
    assert folder.name == f"debian_en_de.corpus-{Path(corpus).name}.vocab-400"  # spelled out, no --workers
    link = tmp_path / "data-bin" / folder.name
    assert link.resolve() == folder / "bin"
    assert (link / "dict.en.txt").is_file() and (link / "test.en-de.de.bin").is_file()
    head = (folder / "preprocess.log").read_text().splitlines()[0]
    assert head.startswith("$ python -m fairseq_cli.preprocess --source-lang en") and "--joined-dictionary" in head
    shown = [line for line in out.stdout.splitlines() if line.startswith("+ ")]  # each step, as it ran
    assert [line.split("--step ")[1].split()[0] for line in shown] == ["raw", "tok", "subword", "binarize"]
    assert "-- fairseq-preprocess --source-lang en --target-lang de" in shown[-1]


def test_a_script_runs_under_sbatch_from_a_copy(tmp_path):
    """sbatch runs a copy of the script from its spool folder, where common.sh is not beside it:
    the script finds the one in the folder it was submitted from (SLURM_SUBMIT_DIR)."""
    spool = tmp_path / "spool"
    spool.mkdir()
    copy = spool / "slurm_script"
    copy.write_text((PREP / "prepare-wmt17.sh").read_text())
    env = {**os.environ, "SLURM_SUBMIT_DIR": str(E2E_REPO)}
    out = subprocess.run(["bash", str(copy), "en"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.startswith("usage:"), out.stderr  # common.sh sourced, then its check
    out = subprocess.run(["bash", str(copy), "en"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode != 0 and "common.sh" in out.stderr  # nowhere to find it: said


if __name__ == "__main__":
    for script in SCRIPTS:
        text = script.read_text()
        old = written_block(script) or "set -euo pipefail\n"
        new = steps_block(script) + ("" if written_block(script) else old)
        script.write_text(text.replace(old, new, 1))
