"""Where, when and how a benchmark ran, recorded beside every table: the command line as a user
types it, the date, host, commit, versions, device, threads and load (``run_meta``), and the CPU
named as the training stages' stamps name it (``cpu_name``, ``cpu_label``)."""

import datetime
import os
import platform
import shlex
import subprocess
import sys

import torch

from ..files import machine
from ..paths import CHECKOUT


def git_describe() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=str(CHECKOUT), capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "mixer_plugin"], cwd=str(CHECKOUT), capture_output=True, text=True
        ).stdout.strip()
        return head + (" (mixer_plugin/ has uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


def command_line() -> str:
    """How this benchmark was started, as a user types it."""
    return (
        shlex.join(["mixer-bench", *sys.argv[1:]])
        if sys.argv[0].endswith("mixer-bench")
        else shlex.join(["python", "-m", "mixer_plugin.bench", *sys.argv[1:]])
    )


def cpu_name() -> str:
    """The CPU as every training stage's stamp records it (``files.machine``): the model name,
    then the family, model and stepping numbers where known, so a benchmark and a training run
    can be matched to one kind of CPU; ``platform.machine()`` would say only "x86_64"."""
    return ", ".join(str(machine()[key]) for key in ("cpu", "cpu_id") if machine().get(key))


def cpu_label() -> str:
    """How a benchmark names the CPU it ran on: its cores and ``cpu_name``."""
    return f"CPU ({os.cpu_count()} cores, {cpu_name()})"


def run_meta(device: torch.device) -> dict:
    """Where and when a benchmark ran: the command line, date, host, commit, versions,
    device, threads and the load average at the start (every benchmark records it)."""
    import fairseq

    return {
        "command": command_line(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host": platform.node(),
        "git": git_describe(),
        "torch": torch.__version__,
        "fairseq": fairseq.__version__,
        "python": platform.python_version(),
        "device": device.type,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name(),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "cpu_count": os.cpu_count(),
        "load_start": " ".join(f"{v:.2f}" for v in os.getloadavg()),
    }
