#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# WMT'16 English-German as Ott et al. (2018) used it (4.5M pairs, joint BPE 32k).  The default is
# Google's preprocessed wmt16_en_de.tar.gz, which Google Drive will not hand to a script: save it in
# a browser and pass its folder, --downloads DIR.  --variant raw rebuilds it from statmt.org instead.
#   bash data-prep/prepare-wmt16_en_de.sh --downloads ~/Downloads   # mixer-prepare wmt16_en_de --help
# Writes work/data/wmt16_en_de/ (with options: wmt16_en_de.<variant>/) and data-bin/ linked (common.sh).
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare wmt16_en_de "$@"
