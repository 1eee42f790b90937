#!/usr/bin/env bash
# Re-measure and record every rung of the GEMM ladder (and its variants) on this GPU,
# each against cuBLAS in the same process. Appends to results/gemm.json; regenerate
# the table with `python -m course.bench table`. About 10 minutes on an H100.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${COURSE_PYTHON:-python3}"
bench() { echo "=== $*"; timeout -k 5 300 "$PY" -m course.bench gemm --record "$@" || echo "=== FAILED: $*"; }
bench --kernel cublas --sizes 2048 4096 8192 --rounds 4
bench --kernel naive --sizes 2048 4096 --rounds 2 --reps 3
bench --kernel sm80
for cfg in "stages=4" "stages=2" "tile_n=128 warps_n=2 stages=4" "tile_k=32 stages=5"; do
  bench --kernel sm80 --sizes 4096 --rounds 4 --config $cfg
done
bench --kernel tma
bench --kernel wgmma
for preset in specialized persistent cluster tma_store pingpong; do
  bench --kernel hopper --config preset=$preset
done
bench --kernel hopper --dtype fp16 --config preset=tma_store
bench --kernel sm80 --dtype fp16
bench --kernel wgmma --dtype fp16
# notebook 08's stage sweep and notebook 07's TMA multicast measurement (results/stage_sweep.json,
# results/tma.json); the multicast L2 traffic needs Nsight Compute:
#   python -m course.bench.tma_traffic --record      (results/tma_traffic.json)
echo "=== stages"; timeout -k 5 600 "$PY" -m course.bench stages --record || echo "=== FAILED: stages"
echo "=== tma"; timeout -k 5 300 "$PY" -m course.bench tma --record || echo "=== FAILED: tma"
