"""One holder at a time for each folder the runner writes: a run, a prepared dataset, a
results file.

Two ``mixer-run`` of one experiment, started by mistake in two terminals, used to train
the same run into the same save dir at once (every validation line twice in its log,
checkpoints from whichever wrote last).  Now a runner takes the folder's lock before a
stage starts and keeps it until the run's last stage has ended; a second runner finds it
held, says who holds it, and goes on with the runs nobody holds.

The lock is the operating system's own: ``fcntl.flock`` on ``<folder>.lock`` beside the
folder (not inside it: a run folder is renamed aside when its flags change, and replaced
whole when a committed run is restored, and a lock must outlive both).  The kernel
releases it when the last process holding it ends, however it ends, so a dead holder's
lock is simply free: nothing is ever broken by hand, and a lock taken on another host
(over NFS, where Linux implements flock with POSIX locks) is held or free as that host's
kernel says.  The stages' processes inherit the open lock (``Lock.fd``), so a run stays
held until its training has really gone, even if the runner itself was killed first.

The file records its holder (pid, host, start, command) for the one-line messages.  A
holder that ended cleanly empties it; a record found in a free lock is a holder that
died (or, from another host, one that lost its lock), and taking it over says so.
"""

import fcntl
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional


@dataclass(frozen=True)
class Holder:
    pid: int
    host: str
    since: str  # UTC, minutes

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host} since {self.since}"

    def alive(self) -> Optional[bool]:
        """Whether the holding process still runs (None: on another host, unknowable here)."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        try:  # a zombie (killed, not yet reaped by its parent) is gone too
            return Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return True


class Held(Exception):
    """The lock is held by another process; ``holder`` is its record (None: it has not
    written one yet)."""

    def __init__(self, path: Path, holder: Optional[Holder]):
        super().__init__(f"{path} is held by {holder or 'another process'}")
        self.path, self.holder = path, holder

    def who(self) -> str:
        """``pid 123 on host since 2026-11-25 21:30 UTC``, and, where that process is gone,
        that its stages still run (they hold the lock they inherited)."""
        if self.holder is None:
            return "another process (it has not written its record yet)"
        gone = self.holder.alive() is False
        return f"{self.holder}" + (" (that runner is gone; a process it started still runs)" if gone else "")


_held: Dict[int, "Lock"] = {}  # fd -> lock, for release_all


def lock_path(folder: Path) -> Path:
    """``work/<exp>/<model>/seed1`` -> ``work/<exp>/<model>/seed1.lock``."""
    return folder.with_name(folder.name + ".lock")


class Lock:
    """``Lock(folder).acquire()`` -> the folder is ours until ``release()`` (or the end of
    every process holding ``fd``); ``Held`` if another process has it."""

    def __init__(self, folder: Path):
        self.path = lock_path(Path(folder))
        self.fd: Optional[int] = None
        self.took_over: Optional[Holder] = None  # the dead holder whose record we found

    def acquire(self, wait: bool = False, patience: float = 0.0) -> "Lock":
        """``wait``: block until the holder lets go; else try for ``patience`` seconds
        (enough to outlast another runner's glance at a run it restores) and raise Held."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + patience
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.1)
        except BlockingIOError:
            holder = read_holder(fd)
            os.close(fd)
            raise Held(self.path, holder) from None
        except BaseException:
            os.close(fd)
            raise
        self.took_over = read_holder(fd)  # left by a holder that did not release: it died
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "command": " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv)),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        self.fd = fd
        _held[fd] = self
        return self

    def release(self) -> None:
        """Empty the record (a clean end, not a death), then unlock.  Processes that
        inherited ``fd`` lose the lock too: release only once they have ended."""
        if self.fd is None:
            return
        _held.pop(self.fd, None)
        try:
            os.ftruncate(self.fd, 0)
        finally:
            os.close(self.fd)  # closing the last descriptor of the open file unlocks it
            self.fd = None

    def __enter__(self) -> "Lock":
        return self if self.fd is not None else self.acquire()

    def __exit__(self, *exc):
        self.release()


def release_all() -> None:
    """Every lock this process holds (the runner's signal handler, once its stages are
    stopped)."""
    for lock in list(_held.values()):
        lock.release()


def read_holder(fd: int) -> Optional[Holder]:
    """The record in a lock file, None when it is empty (free, or a holder between its
    lock and its write) or unreadable."""
    try:
        rec = json.loads(os.pread(fd, 4096, 0).decode() or "null")
        return Holder(int(rec["pid"]), str(rec["host"]), str(rec["since"])) if rec else None
    except (ValueError, KeyError, TypeError, OSError):
        return None
