#!/usr/bin/env bash
# The Debian headline-generation corpus (a package's description -> its synopsis, 57k pairs) of the
# shared data folder, or --corpus DIR: nothing to download.  Raw text, joint sentencepiece 8k.
#   bash data-prep/prepare-debian_sum.sh [recipe options]       # mixer-prepare debian_sum --help
# Writes work/data/debian_sum/ and data-bin/debian_sum (common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
prepare debian_sum "$@"
