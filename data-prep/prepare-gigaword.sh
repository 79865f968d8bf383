#!/usr/bin/env bash
# Headline generation on Annotated Gigaword as Rush et al. (2015) released it (~3.8M pairs, the
# 1,951-pair test set): downloads summary.tar.gz (harvardnlp/sent-summary), joint BPE 32k.
#   bash data-prep/prepare-gigaword.sh [recipe options]         # mixer-prepare gigaword --help
# Writes work/data/gigaword/ and data-bin/gigaword (common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
prepare gigaword "$@"
