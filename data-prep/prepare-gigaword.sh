#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# Headline generation on Annotated Gigaword as Rush et al. (2015) released it (~3.8M pairs, the
# 1,951-pair test set): downloads summary.tar.gz (harvardnlp/sent-summary), joint BPE 32k.
#   bash data-prep/prepare-gigaword.sh [recipe options]         # mixer-prepare gigaword --help
# Writes work/data/gigaword/ (with options: gigaword.<variant>/) and data-bin/ linked (common.sh).
# Its steps for the defaults (mixer-prepare gigaword [options] --print-steps prints them for yours;
# common.sh shows and runs them so).  Copy one, edit it, run it: a finished step is skipped,
# one done with other options refused (--force redoes them all).
#   # raw: the text as released, one segment a line in raw/<split>.<lang> (train = train; valid = valid; test = Giga test (1951))
#   python -m mixer_plugin.recipes gigaword --workers 8 --root work/data/gigaword --step raw
#   # tok: the release's own tokenization, kept
#   python -m mixer_plugin.recipes gigaword --workers 8 --root work/data/gigaword --step tok
#   # subword: BPE (subword-nmt), 32000 merges, one joint model, learned on train
#   python -m mixer_plugin.recipes gigaword --workers 8 --root work/data/gigaword --step subword
#   # binarize: fairseq-preprocess into bin/ (the step adds --destdir: bin/ is written whole or not at all), then prep.json
#   python -m mixer_plugin.recipes gigaword --workers 8 --root work/data/gigaword --step binarize -- fairseq-preprocess --source-lang src --target-lang tgt --trainpref work/data/gigaword/subword/train --validpref work/data/gigaword/subword/valid --testpref work/data/gigaword/subword/test --joined-dictionary --workers 8
# (end of the steps)
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare gigaword "$@"
