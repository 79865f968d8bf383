#!/usr/bin/env bash
# One rank of CPU data-parallel fairseq-train, launched by torchrun:
#
#   torchrun --no-python --nproc_per_node 2 --master-port PORT \
#       scripts/ddp_cpu_worker.sh DATA --user-dir mixer_plugin --cpu ... 
#
# torchrun sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; this wrapper passes
# them to fairseq explicitly (env:// init, gloo, no spawn), so fairseq never asks
# for a CUDA device count.  One OpenMP thread per rank: the ranks share the cores.
# FAIRSEQ_PYTHON picks the interpreter (default: python3 on PATH).
set -euo pipefail
: "${RANK:?run me under torchrun}"
: "${WORLD_SIZE:?run me under torchrun}"
export OMP_NUM_THREADS=1
exec "${FAIRSEQ_PYTHON:-python3}" -m fairseq_cli.train "$@" --cpu \
    --distributed-rank "$RANK" \
    --distributed-world-size "$WORLD_SIZE" \
    --distributed-backend gloo \
    --ddp-backend legacy_ddp \
    --device-id 0 \
    --distributed-no-spawn \
    --distributed-init-method env://
