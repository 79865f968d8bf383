"""WIT3 TED archives (IWSLT'14, IWSLT'16): the tagged training text and the xml sets."""

import re
from pathlib import Path
from typing import Dict, Iterable, List

from .archives import find_member, member_lines, read_member
from .fetch import Download, fetch
from .text import sgm_segments, write_lines
from .workspace import PrepError, Workspace

_DROP = ("<url>", "<talkid>", "<keywords>")
_TAGS = re.compile(r"</?(title|description)>")


def ted_train_lines(lines: Iterable[str]) -> List[str]:
    """prepare-iwslt14.sh: grep -v <url>/<talkid>/<keywords>; strip <title>, <description>."""
    return [_TAGS.sub("", line).strip() for line in lines if not any(t in line for t in _DROP)]


def write_ted(
    ws: Workspace,
    out: Path,
    archive: Download,
    src: str,
    tgt: str,
    test_sets: Dict[str, List[str]],
    apostrophe: bool = False,
) -> dict:
    """Training text and the named xml sets (``{split: [set, ...]}``, concatenated) of a WIT3
    archive; ``apostrophe``: the xml sets' ’ as ' (prepare-iwslt14.sh's sed on them)."""
    tgz = fetch(archive, ws)
    pair = "de-en"
    text = {
        lang: ted_train_lines(member_lines(tgz, find_member(tgz, f"train.tags.{pair}.{lang}"))) for lang in (src, tgt)
    }
    if len(text[src]) != len(text[tgt]):
        raise PrepError(f"{tgz}: train.tags.{pair} sides have {len(text[src])} and {len(text[tgt])} lines")
    for lang in (src, tgt):
        write_lines(out / f"train.{lang}", text[lang])
    sizes = {}
    for split, sets in test_sets.items():
        for lang in (src, tgt):
            lines = []
            for name in sets:
                segs = sgm_segments(read_member(tgz, find_member(tgz, f"{name}.{pair}.{lang}.xml")).decode("utf-8"))
                if apostrophe:
                    segs = [s.replace("\u2019", "'") for s in segs]
                sizes[f"{name}.{lang}"] = len(segs)
                lines += segs
            write_lines(out / f"{split}.{lang}", lines)
    return {"sets": {k: v for k, v in sizes.items() if k.endswith(f".{src}")}}
