#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# The Debian EN->DE corpus (~105k pairs), bundled in data/debian-en-de/ (the shared data folder's
# copy where there is one): nothing to download.  Raw text, joint sentencepiece unigram 8k.
#   bash data-prep/prepare-debian_en_de.sh [recipe options]     # mixer-prepare debian_en_de --help
# Writes work/data/debian_en_de/ (with options: debian_en_de.<variant>/) and data-bin/ linked (common.sh).
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare debian_en_de "$@"
