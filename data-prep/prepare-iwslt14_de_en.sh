#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# IWSLT'14 German-English as fairseq's prepare-iwslt14.sh and Edunov et al. (2018): downloads the TED
# talks (de-en.tgz, WIT3), Moses tokenisation, lowercasing, joint BPE of 10k merges, ~160k pairs.
#   bash data-prep/prepare-iwslt14_de_en.sh [recipe options]   # mixer-prepare iwslt14_de_en --help
# Writes work/data/iwslt14_de_en/ (with options: iwslt14_de_en.<variant>/) and data-bin/ linked (common.sh).
# Its steps for the defaults (mixer-prepare iwslt14_de_en [options] --print-steps prints them for yours;
# common.sh shows and runs them so).  Copy one, edit it, run it: a finished step is skipped,
# one done with other options refused (--force redoes them all).
#   # raw: the text as released, one segment a line in raw/<split>.<lang> (train = train.tags.de-en (cleaned, without every 23rd pair); valid = every 23rd pair of the cleaned train; test = IWSLT14.TED.dev2010+IWSLT14.TEDX.dev2012+IWSLT14.TED.tst2010+IWSLT14.TED.tst2011+IWSLT14.TED.tst2012)
#   python -m mixer_plugin.recipes iwslt14_de_en --workers 8 --root work/data/iwslt14_de_en --step raw
#   # tok: Moses tokenizer (sacremoses); lowercased; train cleaned to 1-175 tokens, length ratio 1.5; valid = one pair in 23 of train
#   python -m mixer_plugin.recipes iwslt14_de_en --workers 8 --root work/data/iwslt14_de_en --step tok
#   # subword: BPE (subword-nmt), 10000 merges, one joint model, learned on train
#   python -m mixer_plugin.recipes iwslt14_de_en --workers 8 --root work/data/iwslt14_de_en --step subword
#   # binarize: fairseq-preprocess into bin/ (the step adds --destdir: bin/ is written whole or not at all), then prep.json
#   python -m mixer_plugin.recipes iwslt14_de_en --workers 8 --root work/data/iwslt14_de_en --step binarize -- fairseq-preprocess --source-lang de --target-lang en --trainpref work/data/iwslt14_de_en/subword/train --validpref work/data/iwslt14_de_en/subword/valid --testpref work/data/iwslt14_de_en/subword/test --joined-dictionary --workers 8
# (end of the steps)
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare iwslt14_de_en "$@"
