"""A model's ``paper_rows`` references resolved to the papers' own figures: read from each
paper's module of ``models/architectures``, never typed in an experiment file."""

from typing import List


def paper_figures(ref: str) -> List[str]:
    """The rows of the papers' tables ``ref`` names, each as the paper gives it (its table,
    label, size and scores): ``ARCH`` (every row of an architecture), ``ARCH:TABLE`` (its
    rows of one table) or ``ARCH@DATASET`` (its paper's row on a dataset the arch does not
    list, ``Paper.extra_rows``, else the rows that decode its checkpoints there,
    ``Paper.decodes``).  A ValueError names what does not exist."""
    from ..models.architectures import ARCHITECTURES, PAPERS

    arch, _, data = ref.partition("@")
    arch, _, table = arch.partition(":")
    if arch not in ARCHITECTURES:
        raise ValueError(f"{arch!r} is not an architecture")
    spec = ARCHITECTURES[arch]
    if data:  # a row beside the paper's table: on another dataset, or decoding another row's checkpoints
        paper = PAPERS.get(spec.paper)
        rows = (
            (
                [paper.extra_rows[(arch, data)]]
                if (arch, data) in paper.extra_rows
                else [row for row, _ in paper.decodes.get((arch, data), {}).values()]
            )
            if paper
            else []
        )
        if not rows:
            raise ValueError(f"{arch} has no paper row on {data!r}")
        return rows
    rows = [r.describe() for r in spec.rows if not table or r.table == table]
    if not rows:
        raise ValueError(f"{arch} has no row" + (f" in table {table!r}" if table else "s in any paper"))
    return rows
