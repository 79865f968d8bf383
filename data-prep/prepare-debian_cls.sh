#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# The Debian package-section classification corpus (41 classes) of the shared data folder, or
# --corpus DIR: nothing to download.  Sentencepiece 8k on the input; data-bin/debian_cls holds
# input0/ and label/, the layout of fairseq's --task sentence_prediction.
#   bash data-prep/prepare-debian_cls.sh [recipe options]       # mixer-prepare debian_cls --help
# Writes work/data/debian_cls/ (with options: debian_cls.<variant>/) and data-bin/ linked (common.sh).
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare debian_cls "$@"
