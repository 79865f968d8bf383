#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# The Debian package-section classification corpus (41 classes) of the shared data folder, or
# --corpus DIR: nothing to download.  Sentencepiece 8k on the input; data-bin/debian_cls holds
# input0/ and label/, the layout of fairseq's --task sentence_prediction.
#   bash data-prep/prepare-debian_cls.sh [recipe options]       # mixer-prepare debian_cls --help
# Writes work/data/debian_cls/ (with options: debian_cls.<variant>/) and data-bin/ linked (common.sh).
# Its steps for the defaults (mixer-prepare debian_cls [options] --print-steps prints them for yours;
# common.sh shows and runs them so).  Copy one, edit it, run it: a finished step is skipped,
# one done with other options refused (--force redoes them all).
#   # raw: the text as released, one segment a line in raw/<split>.<lang> (train = train; valid = valid; test = test)
#   python -m mixer_plugin.recipes debian_cls --workers 8 --root work/data/debian_cls --step raw
#   # tok: no tokenizer (the subword model reads raw text)
#   python -m mixer_plugin.recipes debian_cls --workers 8 --root work/data/debian_cls --step tok
#   # subword: sentencepiece unigram, 8000 pieces, one joint model, learned on train
#   python -m mixer_plugin.recipes debian_cls --workers 8 --root work/data/debian_cls --step subword
#   # binarize: fairseq-preprocess --only-source twice, input0/ (the text) and label/, into bin/, then prep.json
#   python -m mixer_plugin.recipes debian_cls --workers 8 --root work/data/debian_cls --step binarize
# (end of the steps)
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare debian_cls "$@"
