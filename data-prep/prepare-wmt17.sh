#!/usr/bin/env bash
# A WMT'17 news pair (en <-> de, fi, lv, ru, tr, cs, zh): downloads the organisers' preprocessed data
# (Moses-tokenized, truecased) from data.statmt.org, joint BPE 32k; --variant ihead: the raw corpora
# as the interacting-head paper prepared them (use another PREP=, see common.sh).
#   bash data-prep/prepare-wmt17.sh en de [recipe options]     # mixer-prepare wmt17_en_de --help
# Writes work/data/wmt17_<src>_<tgt>/ and data-bin/wmt17_<src>_<tgt> (common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
if [ $# -lt 2 ]; then
  echo "usage: $0 SRC TGT [recipe options]  (a WMT'17 pair: en and one of de fi lv ru tr cs zh)" >&2
  exit 2
fi
src=$1 tgt=$2
shift 2
prepare "wmt17_${src}_${tgt}" "$@"
