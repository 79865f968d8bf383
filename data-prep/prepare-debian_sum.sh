#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# The Debian headline-generation corpus (a package's description -> its synopsis, 57k pairs) of the
# shared data folder, or --corpus DIR: nothing to download.  Raw text, joint sentencepiece 8k.
#   bash data-prep/prepare-debian_sum.sh [recipe options]       # mixer-prepare debian_sum --help
# Writes work/data/debian_sum/ (with options: debian_sum.<variant>/) and data-bin/ linked (common.sh).
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare debian_sum "$@"
