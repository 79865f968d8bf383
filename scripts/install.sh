#!/usr/bin/env bash
# Install the stack in the current Python environment, in the order that works
# (DEVELOPERS.md): torch 2.13.0 first, so nothing later resolves another torch;
# then fairseq-fixed built from source against it; then this plugin.
# Idempotent: steps already satisfied are skipped by pip.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="python -m pip install --disable-pip-version-check -q"

echo "[install] torch==2.13.0"
$PIP torch==2.13.0
echo "[install] build tools for fairseq"
$PIP numpy cython setuptools wheel
if python -c "import fairseq" 2>/dev/null; then
  echo "[install] fairseq already installed: $(python -c 'import fairseq; print(fairseq.__version__)')"
else
  echo "[install] fairseq-fixed==0.12.3.1 (built from source, ~3 min)"
  $PIP --no-build-isolation fairseq-fixed==0.12.3.1
fi
echo "[install] mixer-plugin (+ sacrebleu, sentencepiece, pytest)"
$PIP -e ".[test]"
python - <<'PY'
import torch, fairseq, numpy, mixer_plugin
print(f"[install] ok: torch {torch.__version__}, fairseq {fairseq.__version__}, "
      f"numpy {numpy.__version__}, mixer_plugin {mixer_plugin.__version__}")
PY
