"""How a campaign ends before its runs do.  A stop (SIGINT, SIGTERM, SIGHUP) ends every running
stage's process group and exits at once; a pause (SIGUSR1, ``--stop-after``) lets no stage start,
ends each training after its next checkpoint and lets the rest finish.  The state is this
module's: the handlers set it in the main thread and the jobs' threads read it
(``schedule.Runner``)."""

import os
import signal
from types import FrameType
from typing import Optional

from . import guard
from .locks import release_all

STOPPING = False  # a SIGINT, SIGTERM or SIGHUP of the runner is stopping it (``stop``)


PAUSING: Optional[str] = None  # what asked the runner to pause (``pause``): SIGUSR1, --stop-after


PAUSED = 75  # the exit status of a paused runner (sysexits.h EX_TEMPFAIL): not done, rerun to continue


def stop(signum: int, frame: Optional[FrameType]) -> None:
    """SIGINT (Ctrl-C), SIGTERM, SIGHUP (a closed terminal): end every running stage's
    process group, free the locks, and exit at once (the other jobs' threads would
    otherwise start their next stages).  What finished is kept; what was cut short has
    no stamp and runs again, and a training continues from its last checkpoint.

    A handler runs in the main thread between two of its instructions, wherever that
    thread is (inside a lock, a print, this handler for an earlier signal), so it takes
    no lock and prints with os.write; a second signal while it runs changes nothing."""
    global STOPPING
    if STOPPING:
        return
    STOPPING = True
    name = signal.Signals(signum).name
    os.write(2, f"mixer-run: {name}: stopping the running stages\n".encode())
    left = guard.stop_all()
    release_all()
    os.write(
        2,
        (
            f"mixer-run: stopped by {name}"
            + (f"; processes {left} did not end" if left else "")
            + " (rerun the same command to continue)\n"
        ).encode(),
    )
    os._exit(128 + signum)


def pause(signum: int, frame: Optional[FrameType]) -> None:
    """SIGUSR1: pause (``request_pause``).  Like ``stop``, a handler takes no lock."""
    request_pause(signal.Signals(signum).name)


def request_pause(why: str) -> None:
    """Pause the campaign where nothing is lost: no stage starts from now on, each training
    ends right after its next checkpoint (``running.TrainingWatch``), every other stage (minutes
    long) finishes, then the runner exits with status PAUSED.  Said once, with os.write (it
    runs in a signal handler or a timer thread)."""
    global PAUSING
    if PAUSING is not None or STOPPING:
        return
    PAUSING = why
    os.write(
        2,
        f"mixer-run: {why}: pausing: no stage starts; each training ends after its next checkpoint, "
        f"the other stages finish\n".encode(),
    )
