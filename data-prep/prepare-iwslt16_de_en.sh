#!/usr/bin/env bash
# IWSLT'16 German-English as the interacting-head paper prepared it: downloads the TED talks
# (WIT3 2016-01), Moses tokenisation and truecasing, one shared sentencepiece BPE vocabulary of 40k.
#   bash data-prep/prepare-iwslt16_de_en.sh [recipe options]   # mixer-prepare iwslt16_de_en --help
# Writes work/data/iwslt16_de_en/ and data-bin/iwslt16_de_en (common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
prepare iwslt16_de_en "$@"
