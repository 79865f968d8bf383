"""Text files of one segment a line: written atomically, read as UTF-8 (plain or gzip),
split on ``\\n`` only; and the segments of the ``.sgm``/``.xml`` sets."""

import gzip
import html
import io
import re
import zlib
from pathlib import Path
from typing import Iterable, List, TextIO

from ..files import atomic_path
from .workspace import PrepError


def write_lines(path: Path, lines: Iterable[str]) -> int:
    n = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")
            n += 1
    return n


def open_text(path: Path) -> TextIO:
    path = Path(path)
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="strict", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def read_lines(path: Path) -> List[str]:
    """Lines without their newline; splits on \\n only (not on U+2028 and friends).  A \\r
    inside a line becomes a space: fairseq-preprocess reads with universal newlines, where
    a lone \\r ends a line, so one left in a sentence would shift every later line of
    that side against the other."""
    try:
        with open_text(path) as f:
            return [line.rstrip("\n").rstrip("\r").replace("\r", " ") for line in f]
    except FileNotFoundError:
        raise PrepError(f"missing file {path}") from None
    except (UnicodeDecodeError, EOFError, OSError, zlib.error) as e:
        raise PrepError(f"cannot read {path}: {e}") from None


def count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


_SEG = re.compile(r"<seg[^>]*>(.*?)</seg>", re.IGNORECASE)


def sgm_segments(text: str) -> List[str]:
    """The ``<seg id=..>text</seg>`` contents of a WMT .sgm or IWSLT .xml file, unescaped."""
    return [html.unescape(m.group(1)).strip() for m in _SEG.finditer(text)]
