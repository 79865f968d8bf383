#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# A WMT'17 news pair (en <-> de, fi, lv, ru, tr, cs, zh): downloads the organisers' preprocessed data
# (Moses-tokenized, truecased) from data.statmt.org, joint BPE 32k; --variant ihead: the raw corpora
# as the interacting-head paper prepared them (into wmt17_<src>_<tgt>.ihead, see common.sh).
#   bash data-prep/prepare-wmt17.sh en de [recipe options]     # mixer-prepare wmt17_en_de --help
# Writes work/data/wmt17_<src>_<tgt>/ (with options: wmt17_<src>_<tgt>.<variant>/) and data-bin/ linked (common.sh).
# Its steps for the defaults (mixer-prepare wmt17_en_de [options] --print-steps prints them for yours;
# common.sh shows and runs them so).  Copy one, edit it, run it: a finished step is skipped,
# one done with other options refused (--force redoes them all).
#   # raw: the text as released, one segment a line in raw/<split>.<lang> (train = corpus.tc; valid = newstest2016; test = newstest2017)
#   python -m mixer_plugin.recipes wmt17_en_de --workers 8 --root work/data/wmt17_en_de --step raw
#   # tok: the release's own tokenization, kept
#   python -m mixer_plugin.recipes wmt17_en_de --workers 8 --root work/data/wmt17_en_de --step tok
#   # subword: BPE (subword-nmt), 32000 merges, one joint model, learned on train
#   python -m mixer_plugin.recipes wmt17_en_de --workers 8 --root work/data/wmt17_en_de --step subword
#   # binarize: fairseq-preprocess into bin/ (the step adds --destdir: bin/ is written whole or not at all), then prep.json
#   python -m mixer_plugin.recipes wmt17_en_de --workers 8 --root work/data/wmt17_en_de --step binarize -- fairseq-preprocess --source-lang en --target-lang de --trainpref work/data/wmt17_en_de/subword/train --validpref work/data/wmt17_en_de/subword/valid --testpref work/data/wmt17_en_de/subword/test --joined-dictionary --workers 8
# (end of the steps)
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
