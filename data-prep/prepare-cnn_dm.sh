#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# CNN/DailyMail summarization, non-anonymized, as See et al. (2017): downloads the stories
# (cnn_stories.tgz, dailymail_stories.tgz) and the URL lists of the splits; Moses tokenisation,
# lowercasing, joint BPE.
#   bash data-prep/prepare-cnn_dm.sh [recipe options]           # mixer-prepare cnn_dm --help
# Writes work/data/cnn_dm/ (with options: cnn_dm.<variant>/) and data-bin/ linked (common.sh).
# Its steps for the defaults (mixer-prepare cnn_dm [options] --print-steps prints them for yours;
# common.sh shows and runs them so).  Copy one, edit it, run it: a finished step is skipped,
# one done with other options refused (--force redoes them all).
#   # raw: the text as released, one segment a line in raw/<split>.<lang> (train = all_train; valid = all_val; test = all_test)
#   python -m mixer_plugin.recipes cnn_dm --workers 8 --root work/data/cnn_dm --step raw
#   # tok: the release's own tokenization, kept; lowercased
#   python -m mixer_plugin.recipes cnn_dm --workers 8 --root work/data/cnn_dm --step tok
#   # subword: BPE (subword-nmt), 32000 merges, one joint model, learned on train
#   python -m mixer_plugin.recipes cnn_dm --workers 8 --root work/data/cnn_dm --step subword
#   # binarize: fairseq-preprocess into bin/ (the step adds --destdir: bin/ is written whole or not at all), then prep.json
#   python -m mixer_plugin.recipes cnn_dm --workers 8 --root work/data/cnn_dm --step binarize -- fairseq-preprocess --source-lang src --target-lang tgt --trainpref work/data/cnn_dm/subword/train --validpref work/data/cnn_dm/subword/valid --testpref work/data/cnn_dm/subword/test --joined-dictionary --workers 8
# (end of the steps)
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare cnn_dm "$@"
