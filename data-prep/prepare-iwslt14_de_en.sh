#!/usr/bin/env bash
# IWSLT'14 German-English as fairseq's prepare-iwslt14.sh and Edunov et al. (2018): downloads the TED
# talks (de-en.tgz, WIT3), Moses tokenisation, lowercasing, joint BPE of 10k merges, ~160k pairs.
#   bash data-prep/prepare-iwslt14_de_en.sh [recipe options]   # mixer-prepare iwslt14_de_en --help
# Writes work/data/iwslt14_de_en/ and data-bin/iwslt14_de_en (common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
prepare iwslt14_de_en "$@"
