"""matplotlib for the plots of results files, benchmarks and analyses: the file-only
``Agg`` backend (no display on a server or in CI), and its logger kept at WARNING,
because fairseq's logging setup leaves the root logger verbose enough to print
matplotlib's font search line by line."""

import logging
import types


def pyplot() -> types.ModuleType:
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
