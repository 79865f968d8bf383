"""Members of a downloaded zip or tar archive, found by the end of their path (releases
differ in the folders they put them in) and read without unpacking the archive."""

import gzip
import tarfile
import zipfile
from pathlib import Path
from typing import List

from .workspace import PrepError


def archive_names(archive: Path) -> List[str]:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            return zf.namelist()
    with tarfile.open(archive) as tf:
        return tf.getnames()


def find_member(archive: Path, *suffixes: str) -> str:
    """The one member whose path ends with one of ``suffixes`` (first suffix wins)."""
    names = archive_names(archive)
    for suffix in suffixes:
        hits = [n for n in names if n == suffix or n.endswith("/" + suffix)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise PrepError(f"{archive}: several members end with {suffix}: {hits[:4]}")
    shown = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
    raise PrepError(f"{archive} has no member {' or '.join(suffixes)} (it has: {shown})")


def read_member(archive: Path, member: str) -> bytes:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            return zf.read(member)
    with tarfile.open(archive) as tf:
        f = tf.extractfile(member)
        if f is None:
            raise PrepError(f"{archive}: {member} is not a file")
        return f.read()


def member_lines(archive: Path, member: str) -> List[str]:
    data = read_member(archive, member)
    if member.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8").split("\n")[:-1] if data.endswith(b"\n") else data.decode("utf-8").split("\n")
