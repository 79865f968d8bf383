#!/usr/bin/env bash
# WMT'16 English-German as Ott et al. (2018) used it (4.5M pairs, joint BPE 32k).  The default is
# Google's preprocessed wmt16_en_de.tar.gz, which Google Drive will not hand to a script: save it in
# a browser and pass its folder, --downloads DIR.  --variant raw rebuilds it from statmt.org instead.
#   bash data-prep/prepare-wmt16_en_de.sh --downloads ~/Downloads   # mixer-prepare wmt16_en_de --help
# Writes work/data/wmt16_en_de/ and data-bin/wmt16_en_de (common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
prepare wmt16_en_de "$@"
