"""Downloads, verified: taken from ``--downloads`` folders or an earlier download, else fetched
to ``<name>.part``, checked (size, sha256 when known, the archive read to its end) and only
then renamed to its own name."""

import gzip
import hashlib
import os
import tarfile
import urllib.error
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from .workspace import PrepError, Workspace, say


@dataclass
class Download:
    """One file to fetch: its name on disk, where it can come from, how to check it."""

    name: str
    urls: Sequence[str]
    sha256: Optional[str] = None
    note: str = ""  # how to get it by hand when no URL works (licence walls, Drive)


def verify(path: Path, name: Optional[str] = None) -> Optional[str]:
    """None if the file is complete, else why not.  Archives are read to their end,
    which is what catches a truncated download that still has a plausible size."""
    try:
        if path.stat().st_size == 0:
            return "the file is empty"
        name = (name or path.name).lower()  # a download in progress is <name>.part
        if name.endswith((".gz", ".tgz")):
            # the whole gzip stream first: a cut transfer ends before its end-of-stream marker
            # (tarfile alone may stop at the last complete member and call that the end)
            with gzip.open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
        if name.endswith((".tgz", ".tar.gz", ".tar", ".tar.bz2", ".tbz2", ".tar.xz")):
            with tarfile.open(path) as tf:
                members = 0
                for m in tf:
                    members += 1
                    if m.isfile():
                        with tf.extractfile(m) as f:
                            while f.read(1 << 20):
                                pass
            if members == 0:
                return "the archive has no members"
        elif name.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                bad = zf.testzip()
                if bad is not None:
                    return f"member {bad} is corrupt"
        elif name.endswith(".gz"):
            pass  # read to its end above
        else:
            with open(path, "rb") as f:
                head = f.read(512).lstrip().lower()
            if head.startswith((b"<!doctype html", b"<html")) and not name.endswith((".html", ".xml", ".sgm")):
                return "it is an HTML page, not the data (a login or confirmation page?)"
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, gzip.BadGzipFile, zlib.error) as e:
        return f"it is corrupt or truncated ({type(e).__name__}: {e})"
    return None


def sha256sum(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check(path: Path, dl: Download) -> Optional[str]:
    if dl.sha256 and sha256sum(path) != dl.sha256:
        return f"its sha256 is not {dl.sha256}"
    return verify(path, dl.name)


def fetch(dl: Download, ws: Workspace) -> Path:
    """The verified local file for ``dl``: from ``--downloads`` dirs, an earlier
    finished download, or the network (to ``.part``, verified, then renamed)."""
    for d in ws.user_downloads:
        path = Path(d) / dl.name
        if path.is_file():
            why = _check(path, dl)
            if why:
                raise PrepError(f"{path} (given with --downloads) is unusable: {why}; fetch it again")
            say(f"using {path}")
            return path
    path = ws.downloads / dl.name
    if path.is_file():
        why = _check(path, dl)
        if why is None:
            return path
        say(f"{path} is unusable ({why}); fetching it again")
        path.unlink()
    hint = f" {dl.note}" if dl.note else ""
    if ws.offline or not dl.urls:
        where = " or ".join(dl.urls) or "its source"
        raise PrepError(f"missing {dl.name}: download it from {where} and pass its folder with --downloads DIR{hint}")
    ws.downloads.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    errors = []
    for url in dl.urls:
        say(f"downloading {url}")
        try:
            _download(url, part)
            why = _check(part, dl)
            if why is None:
                os.replace(part, path)
                return path
            errors.append(f"{url}: {why}")
        except (urllib.error.URLError, OSError, ValueError) as e:
            errors.append(f"{url}: {getattr(e, 'reason', e)}")
        finally:
            if part.exists():
                part.unlink()  # a partial file is never kept
    raise PrepError(
        f"download of {dl.name} failed ({'; '.join(errors)}); nothing was kept. "
        f"Fetch it by hand and pass its folder with --downloads DIR{hint}"
    )


def _download(url: str, out: Path) -> None:
    req = urllib.request.Request(url, headers={"User-Agent": "mixer-plugin-data-prep"})
    with urllib.request.urlopen(req, timeout=60) as r, open(out, "wb") as f:
        want = r.headers.get("Content-Length")
        got = 0
        for block in iter(lambda: r.read(1 << 20), b""):
            f.write(block)
            got += len(block)
    if want is not None and got != int(want):
        raise ValueError(f"got {got} of {want} bytes")
