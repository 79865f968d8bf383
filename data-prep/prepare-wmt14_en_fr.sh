#!/usr/bin/env bash
#SBATCH --cpus-per-task=8
#SBATCH --output=%x-%j.out
# WMT'14 English-French (~36M pairs): downloads Europarl v7, Common Crawl, UN, News Commentary v9
# and the 10^9 corpus from statmt.org; Moses tokenisation, joint BPE 32k.  Plan for ~20 GB of RAM.
#   bash data-prep/prepare-wmt14_en_fr.sh [recipe options]     # mixer-prepare wmt14_en_fr --help
# Writes work/data/wmt14_en_fr/ (with options: wmt14_en_fr.<variant>/) and data-bin/ linked (common.sh).
set -euo pipefail
# common.sh beside this script; under sbatch, which runs a copy, the one in the folder it was submitted from
. "$(dirname "$0")/common.sh" 2>/dev/null || . "${SLURM_SUBMIT_DIR:-.}/data-prep/common.sh"
prepare wmt14_en_fr "$@"
