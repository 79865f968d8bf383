#!/usr/bin/env bash
# Every check that needs a GPU, for a session that is lent one:
#
#   bash scripts/gpu_checks.sh [PART ...]       PART: tests smoke bench decode hard v3speed (default: the first four)
#
#   tests   the CUDA test cases: torch.autocast fp16 and bf16 forward + backward for every
#           mixer in every role (the battery; they skip on a machine without a GPU)
#   smoke   a short fairseq-train --fp16 and --bf16, then fairseq-generate, for each mixer
#           family (experiments/gpu_smoke.yaml through the runner, PRECISION=fp16|bf16)
#   bench   the layer benchmarks on the GPU: mixers in fp32 and bf16, head counts and
#           multi-scale kernels in fp32, hard retrieval's ops (the paper's Table 2 is a GPU's)
#   decode  fairseq-generate over output length on the GPU, fp32 and bf16, with the
#           hard-retrieval ceiling (mixer-bench decode)
#   hard    hard retrieval's gap at Transformer-Base size with the paper's batch, bf16
#           (experiments/hard_base_gpu.yaml through the runner: two trainings, valid BLEU)
#   v3speed version 3's rows of the depth question, each trained alone for 300 updates in bf16
#           at 2+2 and 6+6 (mixer-bench train): the single-run speed docs/leaderboard.md's
#           GPU-hours for the full-scale study read (``gpu_cost``)
#
# The device tool gives a session 15 minutes of machine time in all (the start, about 30 s,
# included) and one command at most 10 minutes, so a session runs what is still missing,
# in calls back to back while the machine is warm.  Measured on an H200 (2026-11-26, the
# log's seconds): installing the stack 134-147 s, tests 24-33 s, preparing the corpus 46-52 s,
# smoke about 210 s a precision, the four bench tables 98 s + hard-ops 24 s; decode's fp32
# pass did not finish in 200 s.
#
#   run(command="bash scripts/gpu_checks.sh tests smoke", carry=[".whl"], timeout_s=560)
#   run(command="bash scripts/gpu_checks.sh decode", carry=[".whl"], timeout_s=...)
#
# Each call returns its log and one archive of its tables (gpu_tables_<parts>.tgz: the
# tool brings back at most 8 files a call); unpack its bench_* tables into results/bench/
# (where every benchmark's tables live) and the rest into results/, and commit them with the
# device named.  Without $OUT (a GPU machine of your own) the tables go straight to
# results/gpu/.  Every part
# works on a cold machine too (it installs the stack and prepares the data it needs), and the
# whole command keeps inside GPU_CHECKS_BUDGET seconds (default 570): each step runs under
# `timeout` with what is left, and a step with too little left is skipped and said, so the
# tables made so far always come back.
#
# The stack there: the device image's python3 (3.12) has torch with CUDA, numpy, cython,
# sacrebleu, sentencepiece, matplotlib and pyyaml, but no fairseq and no network.  .whl/
# (git-ignored) holds the rest for cp312, fetched beforehand where pip works (the command is
# in docs/benchmarks.md, "The GPU run"): the fairseq-fixed 0.12.3.1 sdist, built there against
# the image's torch into the git-ignored .gpu_site/ (once per machine), and hydra-core,
# omegaconf, antlr4-python3-runtime, bitarray, sacremoses, subword-nmt, mock, rouge-score,
# nltk, jiwer and rapidfuzz.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PARTS=("$@")
[[ ${#PARTS[@]} -gt 0 ]] || PARTS=(tests smoke bench decode)
for part in "${PARTS[@]}"; do
  case $part in tests|smoke|bench|decode|hard|v3speed) ;; *) echo "gpu_checks: unknown part '$part' (tests, smoke, bench, decode, hard, v3speed)"; exit 2;; esac
done
TAG=$(IFS=_; echo "${PARTS[*]}")
WORKDIR=work/gpu  # git-ignored; kept between calls while the machine is warm
if [[ -n ${OUT:-} ]]; then
  OUT_DIR=$WORKDIR/tables_$TAG  # archived into $OUT at exit, whatever happened
  rm -rf "$OUT_DIR"; mkdir -p "$OUT_DIR"
  trap 'tar -czf "$OUT/gpu_tables_$TAG.tgz" -C "$OUT_DIR" .' EXIT
  LOG=$OUT/gpu_checks_$TAG.log
else
  OUT_DIR=results/gpu; mkdir -p "$OUT_DIR"
  LOG=$OUT_DIR/gpu_checks_$TAG.log
fi
exec > >(tee "$LOG") 2>&1
PY=${PYTHON:-python3}
BUDGET=${GPU_CHECKS_BUDGET:-570}
STATUS=0
say() { echo "[gpu_checks $(date -u +%H:%M:%S) +${SECONDS}s] $*"; }

# step SECONDS CMD...: CMD under timeout, given at most SECONDS and what the budget has left
step() {
  local want=$1 left=$((BUDGET - SECONDS - 10)); shift
  if ((left < 30)); then say "skipped, the budget is spent: $*"; STATUS=1; return 1; fi
  timeout $((want < left ? want : left)) "$@"
  local rc=$?
  ((rc == 124)) && say "timed out: $*"
  ((rc == 0)) || STATUS=1
  return $rc
}

# ---- the stack, once per machine
SITE=$PWD/.gpu_site
export PYTHONPATH=$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}
say "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
if ! "$PY" -c "import fairseq, sacremoses, rouge_score, jiwer" 2>/dev/null; then
  [[ -d .whl ]] || { say "fairseq is not installed and there is no .whl/ to install it from (carry .whl)"; exit 2; }
  say "installing .whl/ into .gpu_site/ (fairseq built from its sdist)"
  # no CUDA_HOME: fairseq's optional CUDA extensions (NAT edit distance, n-gram blocking)
  # are not used here and would double the build
  step 300 env -u CUDA_HOME MAX_JOBS=16 "$PY" -m pip install -q --no-index --no-deps --no-build-isolation \
    --no-cache-dir --target "$SITE" .whl/* || { say "installing from .whl/ failed"; exit 2; }
fi
"$PY" - <<'PY' || { say "the stack does not import"; exit 2; }
import torch, fairseq, mixer_plugin
assert torch.cuda.is_available(), "no CUDA"
print("torch", torch.__version__, "fairseq", fairseq.__version__, torch.cuda.get_device_name())
PY
say "stack ready"

DATA=$WORKDIR/data/debian_en_de
data() {  # the bundled Debian EN-DE corpus, prepared as the runner prepares it (smoke's runner does it itself)
  [[ -f $DATA/bin/dict.en.txt ]] || step 240 "$PY" -m mixer_plugin.recipes.debian_en_de --root "$DATA" >/dev/null
}

for part in "${PARTS[@]}"; do
  case $part in
  tests)
    say "tests: CUDA autocast battery"
    step 300 "$PY" -m pytest -q -p no:cacheprovider tests/test_mixers.py -k "autocast and cuda" \
      > "$OUT_DIR/pytest_cuda.log" 2>&1
    tail -n 15 "$OUT_DIR/pytest_cuda.log"
    ;;
  smoke)
    say "smoke: fairseq-train / fairseq-generate in fp16 and bf16, every mixer family"
    # a work folder per precision, over one prepared corpus: in a shared one the bf16 runs
    # would see the fp16 runs' other command and train them again, so a call cut short by
    # its limit could never finish both.  Each takes about 3.5 minutes on an H200 (train
    # ~55 s, generate ~2 min: 100-update models decode to the length limit), so the two
    # may need a second call, which continues where the first stopped.
    mkdir -p $WORKDIR/data
    for precision in fp16 bf16; do
      mkdir -p $WORKDIR/$precision && ln -sfn ../data $WORKDIR/$precision/data
      step 260 env PRECISION=$precision MIXER_WORK=$WORKDIR/$precision "$PY" -m mixer_plugin.experiments.runner \
        experiments/gpu_smoke.yaml --jobs 8 --threads 2
      # the page leaves its folder and the runs stay on the GPU machine: its link to them would lead nowhere
      page=$WORKDIR/$precision/gpu_smoke/results.md
      [ -f "$page" ] && sed 's#; each run.s record (scores.*#; its runs stayed on the GPU machine#' "$page" \
        > "$OUT_DIR/gpu_smoke_$precision.md" || STATUS=1
    done
    ;;
  bench)
    say "bench: layer benchmarks on the GPU"
    for dtype in float32 bfloat16; do
      sfx=$([[ $dtype == float32 ]] && echo "" || echo "_bf16")
      step 150 "$PY" -m mixer_plugin.bench mixers --device cuda --dtype $dtype \
        --md "$OUT_DIR/bench_mixers_cuda$sfx.md" --json "$OUT_DIR/bench_mixers_cuda$sfx.json"
    done
    step 120 "$PY" -m mixer_plugin.bench heads --device cuda \
      --md "$OUT_DIR/bench_heads_cuda.md" --json "$OUT_DIR/bench_heads_cuda.json"
    step 120 "$PY" -m mixer_plugin.bench multiscale --device cuda \
      --md "$OUT_DIR/bench_multiscale_cuda.md" --json "$OUT_DIR/bench_multiscale_cuda.json"
    step 60 "$PY" -m mixer_plugin.bench hard-ops --device cuda \
      --md "$OUT_DIR/bench_hard_ops_cuda.md" --json "$OUT_DIR/bench_hard_ops_cuda.json"
    ;;
  decode)
    say "decode: fairseq-generate over output length on the GPU"
    data
    for precision in fp32 bf16; do
      # 128 sentences a batch (a GPU's decoding is launch-bound at 32); the models' checkpoints
      # are made once (fp32, one update) and reused by the second precision
      step 200 "$PY" -m mixer_plugin.bench decode "$DATA/bin" --device cuda --precision $precision --rounds 2 \
        --sentences 128 --checkpoints $WORKDIR/decode_checkpoints --md "$OUT_DIR/bench_decode_cuda_$precision.md" --json "$OUT_DIR/bench_decode_cuda_$precision.json"
    done
    ;;
  hard)
    say "hard: hard_dec against the transformer at Base size, 25,000-token batches, bf16"
    # its own work folder over the prepared corpus, as smoke's; a call cut short continues in
    # the next while the machine is warm (the runner resumes), and the records come back either way
    mkdir -p $WORKDIR/data $WORKDIR/hard && ln -sfn ../data $WORKDIR/hard/data
    step 540 env PRECISION=bf16 MIXER_WORK=$WORKDIR/hard "$PY" -m mixer_plugin.experiments.runner \
      experiments/hard_base_gpu.yaml --jobs 1 --threads 8
    # the results file, its plots and its runs' records, to unpack into results/ as they are
    cp -r results/hard_base_gpu.md results/hard_base_gpu "$OUT_DIR/" 2>/dev/null || STATUS=1
    ;;
  v3speed)
    say "v3speed: version 3's rows trained alone on the GPU, bf16, at 2+2 and 6+6"
    data
    # the rows of the depth question; the cost block gives any other row the slowest of these
    for file in leaderboard_v3 leaderboard_v3_deep; do
      step 240 env PRECISION=bf16 MIXER_WORK=$WORKDIR "$PY" -m mixer_plugin.bench train experiments/$file.yaml \
        --updates 300 --rounds 1 --only transformer,multinn,enc_sa_dec_multinn,lightconv,dynamicconv \
        --md "$OUT_DIR/bench_train_${file}_cuda.md"
    done
    ;;
  esac
done
say "done (status $STATUS); tables in $OUT_DIR"
exit "$STATUS"
