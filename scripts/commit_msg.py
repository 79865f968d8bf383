"""The commit-msg hook (``.pre-commit-config.yaml``): a subject a maintainer can read in
``git log --oneline``, and the details in a body.

    python scripts/commit_msg.py .git/COMMIT_EDITMSG     # exit 1 with one line per problem

The rules: a subject of at most 72 characters, no longer than a line of ``git log``'s width
leaves; a blank line between the subject and the body; a body (what changed and why, what was
measured) unless the subject alone says all of it, in which case the subject must be short
(at most 50 characters).  Lines git strips (``#`` comments, the diff below ``--verbose``'s
scissors line) are not part of the message.  Merges, reverts and ``fixup!``/``squash!``
commits are git's own wording and pass.
"""

import sys
from typing import List

SUBJECT_MAX = 72
BODYLESS_MAX = 50
SCISSORS = "# ------------------------ >8 ------------------------"


def message_lines(text: str) -> List[str]:
    """The message as git will store it: without comment lines and the scissors' tail."""
    text = text.split(SCISSORS, 1)[0]
    lines = [line.rstrip() for line in text.splitlines() if not line.startswith("#")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def problems(text: str) -> List[str]:
    lines = message_lines(text)
    if not lines:
        return ["the message is empty"]
    subject = lines[0]
    if subject.startswith(("Merge ", "Revert ", "fixup! ", "squash! ", "amend! ")):
        return []
    found = []
    if len(subject) > SUBJECT_MAX:
        found.append(f"the subject has {len(subject)} characters; at most {SUBJECT_MAX}, the details go in the body")
    if len(lines) > 1 and lines[1]:
        found.append("the second line must be blank: it separates the subject from the body")
    body = [line for line in lines[1:] if line]
    if not body and len(subject) > BODYLESS_MAX:
        found.append(
            f"a subject of {len(subject)} characters with no body: say what changed and why in a body "
            f"(or shorten the subject to {BODYLESS_MAX})"
        )
    return found


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        print("usage: python scripts/commit_msg.py MESSAGE_FILE", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        found = problems(f.read())
    for problem in found:
        print(f"commit-msg: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
