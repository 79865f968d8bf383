#!/usr/bin/env bash
# WMT'14 English-French (~36M pairs): downloads Europarl v7, Common Crawl, UN, News Commentary v9
# and the 10^9 corpus from statmt.org; Moses tokenisation, joint BPE 32k.  Plan for ~20 GB of RAM.
#   bash data-prep/prepare-wmt14_en_fr.sh [recipe options]     # mixer-prepare wmt14_en_fr --help
# Writes work/data/wmt14_en_fr/ and data-bin/wmt14_en_fr (common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
prepare wmt14_en_fr "$@"
