"""docs/extending.md, followed word for word: the toy mixer and its naive reference of
section 1 are taken from the page, put in a copy of the test tree, and the registry
battery runs on them; the same mixer with a wrong scale fails it."""

import re
import shutil
import subprocess
import sys

from conftest import E2E_REPO, e2e_env

DOC = E2E_REPO / "docs" / "extending.md"
LOADER = '''
import importlib.util, sys
_spec = importlib.util.spec_from_file_location("mixer_plugin.mixers.temperature", {path!r})
_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _module
_spec.loader.exec_module(_module)  # registers the mixer, as an import from mixer_plugin/mixers/ would
'''


def code_block(first_line: str) -> str:
    """The python block of the page that starts with ``first_line``."""
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"docs/extending.md has no python block starting with {first_line!r}")


def battery(tmp_path, mixer_code: str):
    tests = tmp_path / "tests"
    shutil.copytree(E2E_REPO / "tests", tests, ignore=shutil.ignore_patterns("__pycache__"))
    (tests / "mixer_refs" / "temperature.py").write_text(code_block("# tests/mixer_refs/temperature.py"))
    (tmp_path / "temperature.py").write_text(mixer_code)
    with open(tests / "conftest.py", "a", encoding="utf-8") as f:
        f.write(LOADER.format(path=str(tmp_path / "temperature.py")))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(tests / "test_mixers.py"),
            "-k",
            "temperature",
            "-x",
        ],
        cwd=E2E_REPO,
        env=e2e_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_toy_mixer_of_the_docs_passes_the_battery(tmp_path):
    proc = battery(tmp_path, code_block("# mixer_plugin/mixers/temperature.py"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", proc.stdout).group(1))
    assert passed >= 80, proc.stdout[-500:]  # every role, the default and the t=0.5 reading


def test_the_battery_catches_a_wrong_scale(tmp_path):
    wrong = code_block("# mixer_plugin/mixers/temperature.py").replace(
        "scale=self.scaling / self.t", "scale=self.scaling"
    )
    proc = battery(tmp_path, wrong)
    assert proc.returncode == 1 and "test_vectorised_equals_naive" in proc.stdout, proc.stdout[-2000:]
