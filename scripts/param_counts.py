#!/usr/bin/env python
"""Thin entry point: ``mixer-params`` (mixer_plugin/analysis/params.py)."""

from mixer_plugin.analysis.params import main

if __name__ == "__main__":
    main()
