#!/usr/bin/env bash
# Every check that needs a GPU, in one command (about 15-20 minutes on one H100/H200),
# for a session that is lent one:
#
#   bash scripts/gpu_checks.sh [OUT_DIR]          # OUT_DIR [$OUT, else results/gpu]
#
#   1. the CUDA test cases: torch.autocast fp16 and bf16 forward + backward for every
#      mixer in every role (the battery), which skip on a machine without a GPU;
#   2. a short fairseq-train --fp16 and --bf16, then fairseq-generate, for each mixer
#      family (experiments/gpu_smoke.yaml through the runner, PRECISION=fp16|bf16);
#   3. the layer benchmarks on the GPU (bf16 and fp32) -> bench_*_cuda*.md.
#
# The stack there: the device image's python3 has torch with CUDA but no fairseq and no
# network.  Build wheels for its Python beforehand and put them in .whl/ (git-ignored;
# pass it in the device tool's `carry`): fairseq-fixed and this plugin's pure-Python
# dependencies (sacrebleu, sacremoses, subword-nmt, rouge-score, jiwer, sentencepiece,
# omegaconf, hydra-core, bitarray, pyyaml, matplotlib).  Everything it prints goes to
# OUT_DIR/gpu_checks.log as well; commit OUT_DIR's tables with the device named.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT_DIR=${1:-${OUT:-results/gpu}}
mkdir -p "$OUT_DIR"
exec > >(tee "$OUT_DIR/gpu_checks.log") 2>&1
PY=${PYTHON:-python3}
say() { echo "[gpu_checks $(date -u +%H:%M:%S)] $*"; }

say "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
if ! "$PY" -c "import fairseq" 2>/dev/null; then
  [[ -d .whl ]] || { say "fairseq is not installed and there is no .whl/ to install it from"; exit 2; }
  "$PY" -m pip install -q --no-index --find-links .whl fairseq-fixed sacrebleu sacremoses subword-nmt rouge-score \
    jiwer pyyaml matplotlib || { say "installing from .whl/ failed"; exit 2; }
fi
"$PY" -m pip install -q --no-deps --no-build-isolation -e . || { say "installing the plugin failed"; exit 2; }
"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA'; print('torch', torch.__version__, torch.cuda.get_device_name())"

say "1. CUDA autocast battery"
"$PY" -m pytest -q -p no:cacheprovider tests/test_mixers.py -k "autocast and cuda" 2>&1 | tail -n 15
STATUS=${PIPESTATUS[0]}

say "2. fairseq-train / fairseq-generate in fp16 and bf16, every mixer family"
for precision in fp16 bf16; do
  PRECISION=$precision MIXER_WORK=/tmp/gpu_smoke_$precision "$PY" -m mixer_plugin.experiments.runner \
    experiments/gpu_smoke.yaml --jobs 1 || STATUS=1
  cp /tmp/gpu_smoke_$precision/gpu_smoke/results.md "$OUT_DIR/gpu_smoke_$precision.md" 2>/dev/null
done

say "3. layer benchmarks on the GPU"
"$PY" -m mixer_plugin.bench mixers --device cuda --md "$OUT_DIR/bench_mixers_cuda.md" --json "$OUT_DIR/bench_mixers_cuda.json"
"$PY" -m mixer_plugin.bench heads --device cuda --md "$OUT_DIR/bench_heads_cuda.md" --json "$OUT_DIR/bench_heads_cuda.json"
"$PY" -m mixer_plugin.bench multiscale --device cuda --md "$OUT_DIR/bench_multiscale_cuda.md" \
  --json "$OUT_DIR/bench_multiscale_cuda.json"
say "done (status $STATUS); tables in $OUT_DIR"
exit "$STATUS"
