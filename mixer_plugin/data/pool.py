"""A function mapped over jobs in worker processes: tokenisation and BPE work line by line and
are slow, so the recipes' ``--workers`` split the lines into chunks and run them in parallel."""

import sys
from typing import Any, Callable, Iterable, Iterator, List, Sequence


def chunks(lines: Sequence[str], size: int = 5000) -> Iterator[Sequence[str]]:
    for i in range(0, len(lines), size):
        yield lines[i : i + size]


def pool_map(fn: Callable[[Any], Any], jobs: Iterable[Any], workers: int) -> List[Any]:
    jobs = list(jobs)
    if workers <= 1 or len(jobs) <= 1:
        return [fn(j) for j in jobs]
    import multiprocessing as mp

    with mp.get_context("spawn" if sys.platform == "darwin" else "fork").Pool(workers) as pool:
        return pool.map(fn, jobs)
