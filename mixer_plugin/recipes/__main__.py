"""``python -m mixer_plugin.recipes RECIPE ...``: the ``mixer-prepare`` command."""

from . import main

main()
