#!/usr/bin/env bash
# CNN/DailyMail summarization, non-anonymized, as See et al. (2017): downloads the stories
# (cnn_stories.tgz, dailymail_stories.tgz) and the URL lists of the splits; Moses tokenisation,
# lowercasing, joint BPE.
#   bash data-prep/prepare-cnn_dm.sh [recipe options]           # mixer-prepare cnn_dm --help
# Writes work/data/cnn_dm/ and data-bin/cnn_dm (common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
prepare cnn_dm "$@"
