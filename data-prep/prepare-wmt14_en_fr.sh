#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# WMT'14 English-French (~36M pairs): downloads Europarl v7, Common Crawl, UN, News Commentary v9
# and the 10^9 corpus from statmt.org; Moses tokenisation, joint BPE 32k.  Plan for ~20 GB of RAM.
#   bash data-prep/prepare-wmt14_en_fr.sh [recipe options]     # mixer-prepare wmt14_en_fr --help
# Writes work/data/wmt14_en_fr/ (with options: wmt14_en_fr.<variant>/) and data-bin/ linked (common.sh).
# Its steps for the defaults (mixer-prepare wmt14_en_fr [options] --print-steps prints them for yours;
# common.sh shows and runs them so).  Copy one, edit it, run it: a finished step is skipped,
# one done with other options refused (--force redoes them all).
#   # raw: the text as released, one segment a line in raw/<split>.<lang> (train = europarl-v7.fr-en + commoncrawl.fr-en + undoc.2000.fr-en + news-commentary-v9.fr-en + giga-fren.release2.fixed; valid = newstest2012+newstest2013; test = newstest2014)
#   python -m mixer_plugin.recipes wmt14_en_fr --workers 8 --root work/data/wmt14_en_fr --step raw
#   # tok: Moses tokenizer (sacremoses), punctuation normalised, -a; train cleaned to 1-250 tokens, length ratio 1.5
#   python -m mixer_plugin.recipes wmt14_en_fr --workers 8 --root work/data/wmt14_en_fr --step tok
#   # subword: BPE (subword-nmt), 32000 merges, one joint model, learned on train
#   python -m mixer_plugin.recipes wmt14_en_fr --workers 8 --root work/data/wmt14_en_fr --step subword
#   # binarize: fairseq-preprocess into bin/ (the step adds --destdir: bin/ is written whole or not at all), then prep.json
#   python -m mixer_plugin.recipes wmt14_en_fr --workers 8 --root work/data/wmt14_en_fr --step binarize -- fairseq-preprocess --source-lang en --target-lang fr --trainpref work/data/wmt14_en_fr/subword/train --validpref work/data/wmt14_en_fr/subword/valid --testpref work/data/wmt14_en_fr/subword/test --joined-dictionary --workers 8
# (end of the steps)
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare wmt14_en_fr "$@"
