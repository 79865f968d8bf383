#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# CNN/DailyMail summarization, non-anonymized, as See et al. (2017): downloads the stories
# (cnn_stories.tgz, dailymail_stories.tgz) and the URL lists of the splits; Moses tokenisation,
# lowercasing, joint BPE.
#   bash data-prep/prepare-cnn_dm.sh [recipe options]           # mixer-prepare cnn_dm --help
# Writes work/data/cnn_dm/ (with options: cnn_dm.<variant>/) and data-bin/ linked (common.sh).
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare cnn_dm "$@"
