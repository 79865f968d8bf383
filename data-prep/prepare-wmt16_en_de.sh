#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# WMT'16 English-German as Ott et al. (2018) used it (4.5M pairs, joint BPE 32k).  The default is
# Google's preprocessed wmt16_en_de.tar.gz, which Google Drive will not hand to a script: save it in
# a browser and pass its folder, --downloads DIR.  --variant raw rebuilds it from statmt.org instead.
#   bash data-prep/prepare-wmt16_en_de.sh --downloads ~/Downloads   # mixer-prepare wmt16_en_de --help
# Writes work/data/wmt16_en_de/ (with options: wmt16_en_de.<variant>/) and data-bin/ linked (common.sh).
# Its steps for the defaults (mixer-prepare wmt16_en_de [options] --print-steps prints them for yours;
# common.sh shows and runs them so).  Copy one, edit it, run it: a finished step is skipped,
# one done with other options refused (--force redoes them all).
#   # raw: the text as released, one segment a line in raw/<split>.<lang> (train = train.tok.clean.bpe.32000; valid = newstest2013; test = newstest2014)
#   python -m mixer_plugin.recipes wmt16_en_de --workers 8 --root work/data/wmt16_en_de --step raw
#   # tok: the release's own tokenization, kept
#   python -m mixer_plugin.recipes wmt16_en_de --workers 8 --root work/data/wmt16_en_de --step tok
#   # subword: the release's own BPE, kept
#   python -m mixer_plugin.recipes wmt16_en_de --workers 8 --root work/data/wmt16_en_de --step subword
#   # binarize: fairseq-preprocess into bin/ (the step adds --destdir: bin/ is written whole or not at all), then prep.json
#   python -m mixer_plugin.recipes wmt16_en_de --workers 8 --root work/data/wmt16_en_de --step binarize -- fairseq-preprocess --source-lang en --target-lang de --trainpref work/data/wmt16_en_de/subword/train --validpref work/data/wmt16_en_de/subword/valid --testpref work/data/wmt16_en_de/subword/test --joined-dictionary --nwordssrc 32768 --nwordstgt 32768 --workers 8
# (end of the steps)
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare wmt16_en_de "$@"
