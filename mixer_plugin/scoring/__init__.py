"""The one scorer of every experiment (``mixer-score``).

    metrics.py       BLEU, chrF, TER, tokenized BLEU, ROUGE, WER over lists of lines; the paired
                     bootstrap of one system against a baseline
    significance.py  the gap between two rows' seed means and its p, from one paired bootstrap
    cli.py           the command line: files in, scores printed and written as JSON

As a library: ``from mixer_plugin import scoring``, then ``scoring.score(hyps, refs, metrics)``.
"""

from .cli import cli, main  # noqa: F401
from .metrics import (  # noqa: F401
    KNOWN,
    LOWER_IS_BETTER,
    SACRE,
    Options,
    ScoreError,
    bootstrap,
    by_source,
    check_metrics,
    read_lines,
    sacre_metric,
    score,
)
from .significance import pooled_bootstrap  # noqa: F401
