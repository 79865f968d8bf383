"""Readers for the WMT releases (statmt.org archives), shared by the WMT recipes.

Training corpora are pairs of plain-text members ``<prefix>.<lang>`` (``europarl-v7.de-en.de``);
dev and test sets are ``.sgm`` files (``newstest2014-deen-src.de.sgm``) or, in some
releases, plain text (``dev/newstest2013.de``).  Both are found by name inside the
downloaded archives, wherever the release put them.
"""

from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from .archives import archive_names, member_lines, read_member
from .fetch import Download
from .text import sgm_segments, write_lines
from .workspace import PrepError, Workspace

STATMT = "http://www.statmt.org"
DATA_STATMT = "http://data.statmt.org"

# file name -> where to get it (several recipes share these)
WMT_FILES = {
    "training-parallel-europarl-v7.tgz": [f"{STATMT}/wmt13/training-parallel-europarl-v7.tgz"],
    "training-parallel-commoncrawl.tgz": [f"{STATMT}/wmt13/training-parallel-commoncrawl.tgz"],
    "training-parallel-un.tgz": [f"{STATMT}/wmt13/training-parallel-un.tgz"],
    "training-parallel-nc-v9.tgz": [f"{STATMT}/wmt14/training-parallel-nc-v9.tgz"],
    "training-parallel-nc-v11.tgz": [f"{DATA_STATMT}/wmt16/translation-task/training-parallel-nc-v11.tgz"],
    "training-parallel-nc-v12.tgz": [f"{DATA_STATMT}/wmt17/translation-task/training-parallel-nc-v12.tgz"],
    "training-giga-fren.tar": [f"{STATMT}/wmt10/training-giga-fren.tar"],
    "rapid2016.tgz": [f"{DATA_STATMT}/wmt17/translation-task/rapid2016.tgz"],
    "dev-wmt14.tgz": [f"{STATMT}/wmt14/dev.tgz"],
    "dev-wmt17.tgz": [f"{DATA_STATMT}/wmt17/translation-task/dev.tgz"],
    "test-full.tgz": [f"{STATMT}/wmt14/test-full.tgz"],
    "test-wmt17.tgz": [f"{DATA_STATMT}/wmt17/translation-task/test.tgz"],
}

RENAMED = "(statmt.org serves dev.tgz / test.tgz; save them under this name)"


def download(name: str) -> Download:
    return Download(name, WMT_FILES[name], note=RENAMED if name.startswith(("dev-", "test-wmt")) else "")


def corpus_pair(archive: Path, prefix: str, src: str, tgt: str) -> Tuple[List[str], List[str]]:
    """The aligned members ``<prefix>.<src>`` / ``<prefix>.<tgt>`` of an archive
    (a member may be gzipped: giga-fren)."""
    names = archive_names(archive)
    out = []
    for lang in (src, tgt):
        hits = [n for n in names if n.rsplit("/", 1)[-1] in (f"{prefix}.{lang}", f"{prefix}.{lang}.gz")]
        if len(hits) != 1:
            raise PrepError(f"{archive}: expected one member {prefix}.{lang}, found {hits or 'none'}")
        out.append(member_lines(archive, hits[0]))
    if len(out[0]) != len(out[1]):
        raise PrepError(f"{archive}: {prefix}.{src} and .{tgt} have {len(out[0])} and {len(out[1])} lines")
    return out[0], out[1]


def _sgm(archive: Path, member: str) -> List[str]:
    return sgm_segments(read_member(archive, member).decode("utf-8"))


def test_set(archives: Sequence[Path], name: str, src: str, tgt: str) -> Tuple[List[str], List[str]]:
    """A WMT dev/test set for src->tgt: ``<name>-<src><tgt>-{src,ref}.<lang>.sgm`` (the
    set translated in this direction), else the other direction's pair of files
    (newstest2012-2014 are one set for both directions), else plain ``<name>.<lang>``."""
    candidates = [
        (f"{name}-{code}-{a}.{src}.sgm", f"{name}-{code}-{b}.{tgt}.sgm")
        for code in (f"{src}{tgt}", f"{tgt}{src}")
        for a, b in (("src", "ref"), ("ref", "src"))
    ] + [
        (f"{name}-src.{src}.sgm", f"{name}-ref.{tgt}.sgm"),
        (f"{name}-src.{src}.sgm", f"{name}-src.{tgt}.sgm"),
        (f"{name}.{src}", f"{name}.{tgt}"),
    ]
    seen = []
    for archive in archives:
        names = archive_names(archive)
        base = {n.rsplit("/", 1)[-1]: n for n in names}
        seen += [n for n in base if n.startswith(name)]
        for a, b in candidates:
            if a in base and b in base:
                if a.endswith(".sgm"):
                    s, t = _sgm(archive, base[a]), _sgm(archive, base[b])
                else:
                    s, t = member_lines(archive, base[a]), member_lines(archive, base[b])
                if len(s) != len(t) or not s:
                    raise PrepError(f"{archive}: {a} and {b} have {len(s)} and {len(t)} segments")
                return s, t
    raise PrepError(
        f"no {name} for {src}-{tgt} in {', '.join(str(a) for a in archives)} "
        f"(files named {name}*: {sorted(seen)[:8] or 'none'})"
    )


def write_wmt_raw(
    ws: Workspace,
    out: Path,
    corpora: Sequence[Tuple[str, str]],
    src: str,
    tgt: str,
    dev_archives: Sequence[str],
    valid: Sequence[str],
    test_archives: Sequence[str],
    tests: Dict[str, str],
) -> dict:
    """train = the ``(archive, prefix)`` corpora concatenated; valid = the ``valid`` sets
    concatenated; ``tests`` = {split: set name}; the sets are looked up in the archives."""
    from .fetch import fetch

    s, t, sizes = [], [], {}
    for archive, prefix in corpora:
        a, b = corpus_pair(fetch(download(archive), ws), prefix, src, tgt)
        sizes[prefix] = len(a)
        s, t = s + a, t + b
    write_lines(out / f"train.{src}", s)
    write_lines(out / f"train.{tgt}", t)
    dev = [fetch(download(a), ws) for a in dev_archives]
    test = [fetch(download(a), ws) for a in test_archives]
    info = {
        "corpora": sizes,
        "valid_sets": write_sets(out, "valid", {v: test_set(dev, v, src, tgt) for v in valid}, src, tgt),
    }
    for split, name in tests.items():
        info[split] = write_sets(out, split, {name: test_set(test, name, src, tgt)}, src, tgt)
    return info


def write_sets(
    out: Path, split: str, sets: Dict[str, Tuple[List[str], List[str]]], src: str, tgt: str
) -> Dict[str, int]:
    """Concatenate named sets (in order) into ``out/<split>.<lang>``; returns their sizes."""
    s, t = [], []
    sizes = {}
    for name, (a, b) in sets.items():
        s += a
        t += b
        sizes[name] = len(a)
    write_lines(out / f"{split}.{src}", s)
    write_lines(out / f"{split}.{tgt}", t)
    return sizes
