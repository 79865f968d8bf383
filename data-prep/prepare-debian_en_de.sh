#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# The Debian EN->DE corpus (~105k pairs), bundled in data/debian-en-de/ (the shared data folder's
# copy where there is one): nothing to download.  Raw text, joint sentencepiece unigram 8k.
#   bash data-prep/prepare-debian_en_de.sh [recipe options]     # mixer-prepare debian_en_de --help
# Writes work/data/debian_en_de/ (with options: debian_en_de.<variant>/) and data-bin/ linked (common.sh).
# Its steps for the defaults (mixer-prepare debian_en_de [options] --print-steps prints them for yours;
# common.sh shows and runs them so).  Copy one, edit it, run it: a finished step is skipped,
# one done with other options refused (--force redoes them all).
#   # raw: the text as released, one segment a line in raw/<split>.<lang> (train = train; valid = valid; test = test)
#   python -m mixer_plugin.recipes debian_en_de --workers 8 --root work/data/debian_en_de --step raw
#   # tok: no tokenizer (the subword model reads raw text)
#   python -m mixer_plugin.recipes debian_en_de --workers 8 --root work/data/debian_en_de --step tok
#   # subword: sentencepiece unigram, 8000 pieces, one joint model, learned on train
#   python -m mixer_plugin.recipes debian_en_de --workers 8 --root work/data/debian_en_de --step subword
#   # binarize: fairseq-preprocess into bin/ (the step adds --destdir: bin/ is written whole or not at all), then prep.json
#   python -m mixer_plugin.recipes debian_en_de --workers 8 --root work/data/debian_en_de --step binarize -- fairseq-preprocess --source-lang en --target-lang de --trainpref work/data/debian_en_de/subword/train --validpref work/data/debian_en_de/subword/valid --testpref work/data/debian_en_de/subword/test --joined-dictionary --workers 8
# (end of the steps)
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare debian_en_de "$@"
