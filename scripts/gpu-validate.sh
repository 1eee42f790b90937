#!/usr/bin/env bash
# One pass over everything the course does on a GPU: doctor, recorded benchmarks,
# the GPU CI test run (pytest + nbval, live paths), and compute-sanitizer over the
# kernels' GPU tests. Logs and refreshed results land in $OUT (default build/gpu).
#
#   scripts/gpu-validate.sh [--no-record] [--sanitize PYTEST_SELECTION] [-- PYTEST_ARGS]
#
# Meant for a provisioned GPU box (COURSE_PYTHON defaults to python3 here). Wheels
# for anything the box lacks can be placed in .whl/ (scripts/gpu-wheels.sh fetches the
# lent H100's) and are installed to /tmp/site.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-build/gpu}"; mkdir -p "$OUT"
export COURSE_PYTHON="${COURSE_PYTHON:-python3}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
record=1; sanitize=""; pytest_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-record) record=0 ;;
    --sanitize) sanitize="$2"; shift ;;
    --) shift; pytest_args=("$@"); break ;;
  esac
  shift
done
if compgen -G ".whl/*.whl" >/dev/null; then
  "$COURSE_PYTHON" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
status=0
# step LOG CMD...: run CMD, append its output to $OUT/LOG and the console, note failures
step() {
  local log="$OUT/$1"; shift
  echo "=== $*" | tee -a "$log"
  "$@" > >(tee -a "$log") 2>&1
  local rc=$?
  [[ $rc == 0 ]] || { echo "=== FAILED (exit $rc): $*" | tee -a "$log"; status=1; }
}
step doctor.txt "$COURSE_PYTHON" -m course doctor
if [[ $record == 1 ]]; then
  step bench.log "$COURSE_PYTHON" -m course.bench ceilings --record
  step bench.log "$COURSE_PYTHON" -m course.bench gemm --kernel cublas --record
  step bench.log "$COURSE_PYTHON" -m course.bench copies --record
  step bench.log "$COURSE_PYTHON" -m course.bench banks --record  # needs ncu with counter access
  cp results/*.json results/README.md "$OUT/" 2>/dev/null
fi
step gpu-ci.log .ci/gpu "${pytest_args[@]}"
if [[ -n "$sanitize" ]]; then
  for tool in memcheck racecheck synccheck; do
    # API errors are the DSL probing the driver (cuGetProcAddress), not kernel bugs
    step "sanitizer-$tool.log" compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 86 \
      "$COURSE_PYTHON" -m pytest -q -p no:cacheprovider -m gpu $sanitize
  done
fi
echo "=== gpu-validate: $([[ $status == 0 ]] && echo ok || echo FAILURES)"
exit $status
