"""Every process a stage starts dies with the runner that started it.

``kill -9`` of ``mixer-run`` (what the out-of-memory killer or a dropped SSH session does)
used to leave its ``fairseq-train`` running, re-parented to init; started again, the
runner resumed the run from ``checkpoint_last.pt`` while the orphan went on saving into
the same folder: two trainings in one run.

So the runner starts each command through this guard (``start``): a small stdlib-only
process that leads a process group of its own (away from the terminal's Ctrl-C, which
the runner handles) and runs the command in it.  The guard ends the whole group, the
command and everything the command started (torchrun's ranks, data workers), when

* its parent dies: Linux sends it a parent-death signal (``PR_SET_PDEATHSIG``), and on
  any system it sees its parent change within a second (it polls);
* it is told to: ``stop_all`` (the runner's SIGINT/SIGTERM/SIGHUP handler) sends it
  SIGTERM.

It ends the group with SIGTERM, then SIGKILL after ``GRACE`` seconds.  The guard runs as a
script (``python guard.py PARENT_PID [--hold FD]... -- COMMAND...``), importing nothing of
the plugin, so it starts in milliseconds and is not itself an import of torch.
"""

import os
import signal
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

GRACE = 5.0  # seconds between SIGTERM and SIGKILL of a stage's process group
POLL = 1.0  # seconds between the guard's checks that its parent still lives
PR_SET_PDEATHSIG = 1


# ----------------------------------------------------------------- runner side
# guard pid -> guard, for stop_all.  No lock guards it: stop_all runs in a signal handler,
# which may interrupt this very thread inside a lock it would then wait for forever; one
# dict operation is atomic under the GIL.
_live: Dict[int, subprocess.Popen] = {}


def start(argv: Sequence[str], *, hold: Sequence[int] = (), **popen) -> subprocess.Popen:
    """Start ``argv`` under a guard (same stdout/stderr/env/cwd keywords as Popen).
    ``hold``: open descriptors (the run's locks) that the command inherits, so that what
    they lock stays locked while any process of the stage lives."""
    # -I: the guard needs no site-packages, and its folder (this package's) stays off sys.path
    guard = [sys.executable, "-I", os.path.abspath(__file__), str(os.getpid())]
    for fd in hold:
        guard += ["--hold", str(fd)]
    proc = subprocess.Popen([*guard, "--", *map(str, argv)], start_new_session=True, pass_fds=tuple(hold), **popen)
    _live[proc.pid] = proc
    return proc


def exit_status(code: int) -> int:
    """Popen's return code as a shell says it: 128 + N for a process killed by signal N."""
    return 128 - code if code < 0 else code


def wait(proc: subprocess.Popen) -> int:
    try:
        return exit_status(proc.wait())
    finally:
        _live.pop(proc.pid, None)


def run(
    argv: Sequence[str],
    *,
    hold: Sequence[int] = (),
    until: Optional[Callable[[], bool]] = None,
    every: float = 30.0,
    **popen,
) -> int:
    """``start`` and wait: the command's exit status (128 + N for a command killed by
    signal N, as a shell says it).  ``until``: asked every ``every`` seconds while the
    command runs; once it says True the guard ends the command's group, as ``stop_all``
    does, and ``run`` returns 0, since the caller's own rule ended it."""
    proc = start(argv, hold=hold, **popen)
    if until is None:
        return wait(proc)
    while True:
        try:
            return wait_for(proc, every)
        except subprocess.TimeoutExpired:
            pass
        if until():
            proc.terminate()  # SIGTERM to the guard: it ends the group (end_group)
            wait(proc)
            return 0


def wait_for(proc: subprocess.Popen, seconds: float) -> int:
    """``wait`` for at most ``seconds`` (subprocess.TimeoutExpired after them)."""
    code = proc.wait(seconds)
    _live.pop(proc.pid, None)
    return exit_status(code)


def stop_all(timeout: float = GRACE + 5.0) -> List[int]:
    """SIGTERM every live guard (each ends its group, SIGKILL after GRACE) and wait up to
    ``timeout`` seconds for them to end; the pids of those still running after that.

    It runs in the runner's signal handler, maybe in the very thread that waits for a
    guard (and holds that Popen's lock while it does): so it signals and peeks with
    ``os.waitid(..., WNOWAIT)``, which leaves the exit status for that thread to collect."""
    pids = list(_live)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    left = [pid for pid in pids if not ended(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [pid for pid in left if not ended(pid)]
    return left


def ended(pid: int) -> bool:
    """Whether a child of this process has exited, without collecting its status."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # collected already
        return True


# ------------------------------------------------------------------ guard side
def set_parent_death_signal(sig: int) -> bool:
    """Linux: have the kernel send ``sig`` to this process when its parent thread ends."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def end_group(child: subprocess.Popen) -> None:
    """SIGTERM to the group (the command and its own children), SIGKILL after GRACE; the
    guard leads the group and goes with the SIGKILL."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's SIGTERM is not for the guard
    try:
        os.killpg(0, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        child.wait(GRACE)
    except subprocess.TimeoutExpired:
        pass
    os.killpg(0, signal.SIGKILL)


def guard(parent: int, hold: List[int], argv: List[str]) -> int:
    # a flag, not a threading.Event: a second signal arriving while the handler of the
    # first holds the Event's lock deadlocked the guard (seen: three signals at once, the
    # training it was to end left running)
    stop = [False]

    def told(*_):
        stop[0] = True

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, told)
    set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != parent:  # the runner died before the line above: nobody to serve
        return 128 + signal.SIGTERM
    child = subprocess.Popen(argv, pass_fds=hold)
    while True:
        try:
            return exit_status(child.wait(POLL))
        except subprocess.TimeoutExpired:
            pass
        if stop[0] or os.getppid() != parent:
            end_group(child)


def main(args: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if args is None else args)
    split = args.index("--")
    parent, opts, argv = int(args[0]), args[1:split], args[split + 1 :]
    hold = [int(v) for flag, v in zip(opts[::2], opts[1::2]) if flag == "--hold"]
    return guard(parent, hold, argv)


if __name__ == "__main__":
    sys.exit(main())
