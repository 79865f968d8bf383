"""``python -m mixer_plugin.scoring``: the ``mixer-score`` command, as a run's score stage writes it."""

from .cli import main

main()
