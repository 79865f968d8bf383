#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# IWSLT'14 German-English as fairseq's prepare-iwslt14.sh and Edunov et al. (2018): downloads the TED
# talks (de-en.tgz, WIT3), Moses tokenisation, lowercasing, joint BPE of 10k merges, ~160k pairs.
#   bash data-prep/prepare-iwslt14_de_en.sh [recipe options]   # mixer-prepare iwslt14_de_en --help
# Writes work/data/iwslt14_de_en/ (with options: iwslt14_de_en.<variant>/) and data-bin/ linked (common.sh).
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare iwslt14_de_en "$@"
