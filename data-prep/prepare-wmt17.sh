#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# A WMT'17 news pair (en <-> de, fi, lv, ru, tr, cs, zh): downloads the organisers' preprocessed data
# (Moses-tokenized, truecased) from data.statmt.org, joint BPE 32k; --variant ihead: the raw corpora
# as the interacting-head paper prepared them (into wmt17_<src>_<tgt>.ihead, see common.sh).
#   bash data-prep/prepare-wmt17.sh en de [recipe options]     # mixer-prepare wmt17_en_de --help
# Writes work/data/wmt17_<src>_<tgt>/ (with options: wmt17_<src>_<tgt>.<variant>/) and data-bin/ linked (common.sh).
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
if [ $# -lt 2 ]; then
  echo "usage: $0 SRC TGT [recipe options]  (a WMT'17 pair: en and one of de fi lv ru tr cs zh)" >&2
  exit 2
fi
src=$1 tgt=$2
shift 2
prepare "wmt17_${src}_${tgt}" "$@"
