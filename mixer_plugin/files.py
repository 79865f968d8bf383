"""What every part of the lab shares: writing a file so that nothing half-written is ever taken
for finished (``atomic_path``, and ``sweep_leftovers`` for what a killed process left), and the
stamp of the machine a stage or a benchmark ran on (``machine``).

The lab's modules (data, recipes, experiments, bench, analysis, scoring) import it; the plugin
(mixers, models, compat: what ``--user-dir`` loads) does not.
"""

import contextlib
import functools
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Iterator


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary sibling path; rename it onto ``path`` only on success.  A folder
    already at ``path`` (left by a run killed after this rename but before its step's
    marker) is replaced whole: os.replace cannot rename onto a folder that is not empty."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        yield tmp
        if tmp.is_dir() and path.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()


LEFTOVER = re.compile(r"^\..+\.tmp(\d+)$")  # atomic_path's sibling: .<name>.tmp<pid>


def sweep_leftovers(folder: Path, recursive: bool = False) -> None:
    """Remove what atomic_path left in ``folder`` (and its subfolders with ``recursive``)
    for processes that are gone (a run killed mid-step); a live process's sibling is its
    work in progress."""
    for p in folder.iterdir() if folder.is_dir() else ():
        m = LEFTOVER.match(p.name)
        if m is None:
            if recursive and p.is_dir() and not p.is_symlink():
                sweep_leftovers(p, recursive=True)
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # alive (another run on this root), or not ours to signal
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)


# ----------------------------------------------------------------------- machine
def cpu_identity(cpuinfo: str) -> Dict[str, str]:
    """The first CPU of a ``/proc/cpuinfo`` text: its model name, and its family, model and stepping
    numbers where the text has them.  A virtual machine's model name can be generic ("Intel(R)
    Xeon(R) Processor", "AMD EPYC"), the same for CPUs of several generations and speeds; the
    numbers tell those apart (Intel family 6 model 143 is Sapphire Rapids, 207 Emerald Rapids)."""
    fields: Dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():  # a blank line ends the first CPU's block
            break
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    identity = {"cpu": fields["model name"]} if fields.get("model name") else {}
    numbers = [f"{key} {fields[key]}" for key in ("cpu family", "model", "stepping") if key in fields]
    if numbers:
        identity["cpu_id"] = ", ".join(numbers)  # "cpu family 6, model 207, stepping 2"
    if "flags" in fields:
        # bfloat16 arithmetic in hardware (AVX512-BF16 or AMX): without it a CPU emulates bf16,
        # slower than fp32, and a table trained in bf16 on it would be slower for nothing
        have = [flag for flag in BF16_FLAGS if flag in fields["flags"].split()]
        identity["bf16"] = " ".join(have) if have else "none"
    return identity


BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo's names


@functools.lru_cache(maxsize=None)
def machine() -> Dict[str, object]:
    """What a stage ran on, for its stamp: the CPU (``cpu_identity``), the cores, torch's version
    and the GPUs.  Another CPU or library adds floats in another order, so one command with one seed
    trains differently there (experiments/leaderboard.findings.md, "One command, two machines"): the stamp
    tells which committed runs can be expected to match bit for bit, and which ran on one kind of CPU
    when their hours are compared."""
    try:
        identity = cpu_identity(Path("/proc/cpuinfo").read_text())
    except OSError:
        identity = {}
    identity.setdefault("cpu", platform.processor() or platform.machine())
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = None
    record: Dict[str, object] = {**identity, "cores": os.cpu_count(), "torch": torch_version}
    if shutil.which("nvidia-smi"):
        query = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, check=False
        )
        gpus = [line.strip() for line in query.stdout.splitlines() if line.strip()]
        if query.returncode == 0 and gpus:
            record["gpus"] = gpus
    return record
