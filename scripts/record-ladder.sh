#!/usr/bin/env bash
# Re-measure and record every rung of the GEMM ladder (and its variants) on this GPU,
# each against cuBLAS in the same process. Appends to results/gemm.json; regenerate
# the table with `python -m course.bench table`. About 5 minutes on an H100.
#   scripts/record-ladder.sh [KERNEL ...]    only these kernels (default: all)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${COURSE_PYTHON:-python3}"
want=" ${*:-cublas naive sm80 tma wgmma hopper} "
bench() { echo "=== $*"; timeout -k 5 300 "$PY" -m course.bench gemm --record "$@" || echo "=== FAILED: $*"; }
has() { [[ "$want" == *" $1 "* ]]; }
has cublas && bench --kernel cublas --sizes 2048 4096 8192 --rounds 4
if has naive; then
  bench --kernel naive --sizes 2048 4096 --rounds 2 --reps 3
  bench --kernel naive --sizes 2048 --dtype fp32 --rounds 2 --reps 3
fi
if has sm80; then
  bench --kernel sm80
  bench --kernel sm80 --dtype fp16
  for cfg in "stages=4" "stages=2" "tile_n=128 warps_n=2 stages=4" "tile_k=32 stages=5"; do
    bench --kernel sm80 --sizes 4096 --rounds 4 --config $cfg
  done
fi
has tma && bench --kernel tma
if has wgmma; then
  bench --kernel wgmma
  bench --kernel wgmma --dtype fp16
fi
if has hopper; then
  for preset in specialized persistent cluster tma_store pingpong; do
    bench --kernel hopper --config preset=$preset
  done
  bench --kernel hopper --dtype fp16 --config preset=tma_store
fi
if has tma; then  # notebook 09's stage sweep and notebook 08's TMA multicast measurement
  echo "=== stages"; timeout -k 5 600 "$PY" -m course.bench stages --record || echo "=== FAILED: stages"
  echo "=== tma"; timeout -k 5 300 "$PY" -m course.bench tma --record || echo "=== FAILED: tma"
  # the multicast L2 traffic needs Nsight Compute: python -m course.bench.tma_traffic --record
fi
"$PY" -m course.bench table
