#!/usr/bin/env bash
# README command 1, after scripts/install.sh: train, decode and score the CPU-size multiNN
# model on the bundled Debian EN-DE corpus (data/debian-en-de), on CPU, then print a few
# translations.  Everything it writes goes under work/ (MIXER_WORK moves it); the
# results table is work/quickstart/results.md.  It is `mixer-run experiments/quickstart.yaml`:
# rerun it to continue where it stopped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec python -m mixer_plugin.experiments.runner experiments/quickstart.yaml "$@"
