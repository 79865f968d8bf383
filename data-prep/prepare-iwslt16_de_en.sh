#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# IWSLT'16 German-English as the interacting-head paper prepared it: downloads the TED talks
# (WIT3 2016-01), Moses tokenisation and truecasing, one shared sentencepiece BPE vocabulary of 40k.
#   bash data-prep/prepare-iwslt16_de_en.sh [recipe options]   # mixer-prepare iwslt16_de_en --help
# Writes work/data/iwslt16_de_en/ (with options: iwslt16_de_en.<variant>/) and data-bin/ linked (common.sh).
# Its steps for the defaults (mixer-prepare iwslt16_de_en [options] --print-steps prints them for yours;
# common.sh shows and runs them so).  Copy one, edit it, run it: a finished step is skipped,
# one done with other options refused (--force redoes them all).
#   # raw: the text as released, one segment a line in raw/<split>.<lang> (train = train.tags.de-en; valid = IWSLT16.TED.dev2010+IWSLT16.TEDX.dev2012; test = IWSLT16.TED.tst2010+IWSLT16.TED.tst2011+IWSLT16.TED.tst2012+IWSLT16.TED.tst2013+IWSLT16.TED.tst2014)
#   python -m mixer_plugin.recipes iwslt16_de_en --workers 8 --root work/data/iwslt16_de_en --step raw
#   # tok: Moses tokenizer (sacremoses), punctuation normalised, -a; truecased (a model learned on train); train cleaned to 1-80 tokens, length ratio 9.0
#   python -m mixer_plugin.recipes iwslt16_de_en --workers 8 --root work/data/iwslt16_de_en --step tok
#   # subword: sentencepiece bpe, 40000 pieces, one joint model, learned on train
#   python -m mixer_plugin.recipes iwslt16_de_en --workers 8 --root work/data/iwslt16_de_en --step subword
#   # binarize: fairseq-preprocess into bin/ (the step adds --destdir: bin/ is written whole or not at all), then prep.json
#   python -m mixer_plugin.recipes iwslt16_de_en --workers 8 --root work/data/iwslt16_de_en --step binarize -- fairseq-preprocess --source-lang de --target-lang en --trainpref work/data/iwslt16_de_en/subword/train --validpref work/data/iwslt16_de_en/subword/valid --testpref work/data/iwslt16_de_en/subword/test --joined-dictionary --workers 8
# (end of the steps)
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare iwslt16_de_en "$@"
