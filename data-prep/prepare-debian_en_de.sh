#!/usr/bin/env bash
# The Debian EN->DE corpus (~105k pairs), bundled in data/debian-en-de/ (the shared data folder's
# copy where there is one): nothing to download.  Raw text, joint sentencepiece unigram 8k.
#   bash data-prep/prepare-debian_en_de.sh [recipe options]     # mixer-prepare debian_en_de --help
# Writes work/data/debian_en_de/ and data-bin/debian_en_de (common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
prepare debian_en_de "$@"
