#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# Headline generation on Annotated Gigaword as Rush et al. (2015) released it (~3.8M pairs, the
# 1,951-pair test set): downloads summary.tar.gz (harvardnlp/sent-summary), joint BPE 32k.
#   bash data-prep/prepare-gigaword.sh [recipe options]         # mixer-prepare gigaword --help
# Writes work/data/gigaword/ (with options: gigaword.<variant>/) and data-bin/ linked (common.sh).
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare gigaword "$@"
