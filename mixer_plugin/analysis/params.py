"""Parameter counts of every named architecture, beside the paper's column.

    mixer-params [--markdown results/param_counts.md]

Vocabulary and embedding sharing follow the papers: joint vocabulary with all
embeddings shared (``--share-all-embeddings``), of each base's size (10k types for
IWSLT, 32k for WMT, ...; ``models/architectures/bases.py``).
"""

import argparse
from typing import List, NamedTuple, Optional

from ..build import build, num_params
from ..models.architectures import ARCHITECTURES, BASES


class Count(NamedTuple):
    arch: str
    paper: str
    rows: str
    reading: str
    vocab: int
    ours: float  # millions
    theirs: Optional[float]  # the paper's, millions

    @property
    def diff(self) -> Optional[float]:
        return None if not self.theirs else 100 * (self.ours - self.theirs) / self.theirs


def count(arch: str) -> Count:
    spec = ARCHITECTURES[arch]
    vocab = BASES[spec.base].vocab
    ours = num_params(build(arch, vocab, ["--share-all-embeddings"])) / 1e6
    return Count(arch, spec.paper, spec.describe(), spec.reading, vocab, ours, spec.paper_params)


def markdown(counts: List[Count]) -> str:
    lines = [
        "| --arch | paper | row | reading | vocab | ours (M) | paper (M) | diff |",
        "|---|---|---|---|---|---:|---:|---:|",
    ]
    for c in counts:
        diff = f"{c.diff:+.1f}%" if c.diff is not None else ""
        lines.append(
            f"| `{c.arch}` | {c.paper} | {c.rows} | {c.reading} | {c.vocab // 1000}k | {c.ours:.1f} | "
            f"{c.theirs or ''} | {diff} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", help="also write the table here")
    ap.add_argument("--paper", help="only this paper's architectures (multinn, hard_retrieval, ...)")
    args = ap.parse_args(argv)
    counts = []
    for arch, spec in ARCHITECTURES.items():
        if args.paper and spec.paper != args.paper:
            continue
        counts.append(count(arch))
        print(markdown(counts[-1:]).splitlines()[-1], flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(
                "# Parameter counts of the named architectures\n\n"
                "Command: `mixer-params --markdown results/param_counts.md`.  Vocabularies are the papers' joint "
                "ones, all embeddings shared.  `reading`: where the paper is ambiguous, the reading the "
                "arch uses (docs/multinn.md for multiNN).\n\n" + markdown(counts)
            )


if __name__ == "__main__":
    main()
