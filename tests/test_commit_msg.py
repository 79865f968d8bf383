"""The commit-msg hook (scripts/commit_msg.py, run by pre-commit): a readable subject, details in a body."""

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "commit_msg.py"
hook = runpy.run_path(str(SCRIPT))

BODY = "\n\nWhat changed and why, and what was measured.\n"


@pytest.mark.parametrize(
    "message",
    [
        "models: a short subject" + BODY,
        "runner: resume a paused training",  # short enough to say it all
        "x" * 72 + BODY,
        "# a comment git strips\nscoring: one module a job" + BODY + "# Please enter the commit message\n",
        "Merge branch 'lab-boundary' into main with a subject git wrote itself, longer than 72 characters",
        "scoring: one module a job" + BODY + "# ------------------------ >8 ------------------------\n" + "y" * 200,
    ],
)
def test_a_readable_message_passes(message):
    assert hook["problems"](message) == []


@pytest.mark.parametrize(
    "message, problem",
    [
        ("x" * 73 + BODY, "the subject has 73 characters"),
        ("models: a subject\nwith no blank line after it\n", "the second line must be blank"),
        ("models: a subject that says everything in one line and no body\n", "with no body"),
        ("# only comments\n\n", "the message is empty"),
    ],
)
def test_a_message_a_maintainer_cannot_read_fails(message, problem):
    found = hook["problems"](message)
    assert len(found) == 1 and problem in found[0], found


def test_the_hook_exits_1_with_one_line_per_problem(tmp_path):
    msg = tmp_path / "COMMIT_EDITMSG"
    msg.write_text("z" * 80 + "\nno blank line\n", encoding="utf-8")
    out = subprocess.run([sys.executable, str(SCRIPT), str(msg)], capture_output=True, text=True)
    assert out.returncode == 1 and len(out.stderr.splitlines()) == 2, out.stderr
    msg.write_text("models: a subject" + BODY, encoding="utf-8")
    assert subprocess.run([sys.executable, str(SCRIPT), str(msg)], capture_output=True).returncode == 0
