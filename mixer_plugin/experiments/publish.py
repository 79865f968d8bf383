"""What a runner publishes as its runs finish: the results file rebuilt from the run folders
(``report.write``) and, with ``--commit``, one git commit of it, of each run's kept record and
hypotheses, and of the pages whose generated blocks they change (``refresh_pages``), with a
message a maintainer can read (a subject and a body)."""

import subprocess
import textwrap
from pathlib import Path
from typing import Callable, List, Optional

from ..files import sweep_leftovers
from ..paths import shown
from . import readme, report
from .spec import Experiment


def publish(exp: Experiment, commit: Optional[str], say: Callable[[str], None]) -> None:
    """The results file rewritten; with ``commit`` (its subject), committed with what it changed."""
    path = report.write(exp)
    if path is not None:
        say(f"results: {shown(path)}")
    repo = git_repo(path) if commit and path is not None else None
    if repo is not None:
        results_dir = path.with_suffix("")
        sweep_leftovers(results_dir, recursive=True)  # a killed runner's half-built copies: never committed
        pages = refresh_pages(repo, say)
        paths = [str(path), str(results_dir)] + pages
        git(repo, "add", *paths)
        # a re-render that changed nothing (a resumed campaign's skipped runs) is no commit
        if git(repo, "diff", "--cached", "--quiet", "--", *paths).returncode != 0:
            body = (
                f"Written by mixer-run --commit: {shown(path)} regenerated from the run folders, "
                f"each finished run's record and hypotheses under {shown(results_dir)}/"
                + (f", and the generated blocks of {', '.join(shown(Path(p)) for p in pages)}." if pages else ".")
            )
            done = git(repo, "commit", "-q", "-m", commit, "-m", textwrap.fill(body, 72), "--", *paths)
            if done.returncode != 0:
                say(f"results: git commit failed: {(done.stderr or done.stdout).strip()[:300]}")


def refresh_pages(repo: Path, say: Callable[[str], None]) -> List[str]:
    """The pages of ``repo`` with blocks generated from the committed run records (the
    README's tables: ``readme.PAGES``) that the results just written changed, rewritten to go
    into the same commit, so that a campaign's commit leaves no page stale.  A page with edits
    not committed yet is left to its author (the commit would take them with it), and said so."""
    pages = [p for p in readme.PAGES if p.is_file() and p.resolve().is_relative_to(repo.resolve())]
    try:
        stale = readme.stale_pages(pages)
    except (Exception, SystemExit) as e:  # the pages are a by-product: the campaign goes on without them
        say(f"results: the pages' generated blocks were not rewritten ({e}): python -m mixer_plugin.experiments.readme")
        return []
    out = []
    for page, text in stale.items():
        if git(repo, "diff", "--quiet", "HEAD", "--", str(page)).returncode != 0:
            say(
                f"results: {shown(page)} has edits not committed, so its generated blocks stay stale "
                "(commit them, then: python -m mixer_plugin.experiments.readme)"
            )
            continue
        readme.write_page(page, text)
        out.append(str(page))
    return out


def git_repo(path: Path) -> Optional[Path]:
    """The git work tree that can commit ``path`` (a results file), or None: outside any
    repository, or ignored there (the default ``work/<name>/results.md``)."""
    folder = next(p for p in path.parents if p.is_dir())  # (before the first write, results/ may not exist)
    top = git(folder, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        return None
    repo = Path(top.stdout.strip())
    return None if git(repo, "check-ignore", "-q", str(path)).returncode == 0 else repo


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """git in ``repo``, in a session of its own: a Ctrl-C or a killed runner lets a commit
    finish rather than leave ``.git/index.lock`` behind (which stops every later commit)."""
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, start_new_session=True)
    except FileNotFoundError:  # no git on this machine: nothing to commit with
        return subprocess.CompletedProcess(["git", *args], 127, "", "git: command not found")
