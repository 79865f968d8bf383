#!/usr/bin/env bash
# The Debian package-section classification corpus (41 classes) of the shared data folder, or
# --corpus DIR: nothing to download.  Sentencepiece 8k on the input; data-bin/debian_cls holds
# input0/ and label/, the layout of fairseq's --task sentence_prediction.
#   bash data-prep/prepare-debian_cls.sh [recipe options]       # mixer-prepare debian_cls --help
# Writes work/data/debian_cls/ and data-bin/debian_cls (common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
prepare debian_cls "$@"
