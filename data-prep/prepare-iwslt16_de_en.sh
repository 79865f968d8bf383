#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# IWSLT'16 German-English as the interacting-head paper prepared it: downloads the TED talks
# (WIT3 2016-01), Moses tokenisation and truecasing, one shared sentencepiece BPE vocabulary of 40k.
#   bash data-prep/prepare-iwslt16_de_en.sh [recipe options]   # mixer-prepare iwslt16_de_en --help
# Writes work/data/iwslt16_de_en/ (with options: iwslt16_de_en.<variant>/) and data-bin/ linked (common.sh).
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare iwslt16_de_en "$@"
