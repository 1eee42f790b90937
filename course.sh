#!/usr/bin/env bash
# The course's one entry point. From the repository root:
#
#   ./course.sh lab          set up (once) and open the course in JupyterLab
#   ./course.sh test [ARGS]  set up (once) and run every test: pytest tests/ + nbval notebooks/
#   ./course.sh run [NN..]   set up (once) and execute the notebooks headless, with a report
#   ./course.sh doctor       what this machine is and what will run live here
#   ./course.sh setup        only create/refresh .venv from requirements.txt
#
# Setup makes .venv with python3 (>= 3.11) and installs requirements.txt; it is redone
# only when requirements.txt changes. On a machine that already has the packages (a
# provisioned GPU box), COURSE_PYTHON=python3 skips the virtual environment.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
VENV="${COURSE_VENV:-$ROOT/.venv}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
# Keep CuTe DSL's compiled-kernel cache across sessions and kernel restarts.
export CUTE_DSL_CACHE_DIR="${CUTE_DSL_CACHE_DIR:-$HOME/.cache/live-kernel-course/cute-dsl}"

setup() {
  if [[ -n "${COURSE_PYTHON:-}" ]]; then PY="$COURSE_PYTHON"; return; fi
  local base="${COURSE_BASE_PYTHON:-python3}"
  "$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    { echo "course.sh: $base is $("$base" --version 2>&1); Python >= 3.11 is needed" >&2; exit 2; }
  local want; want="$(sha256sum requirements.txt | cut -d' ' -f1)"
  if [[ ! -x "$VENV/bin/python" || "$(cat "$VENV/.requirements.sha" 2>/dev/null)" != "$want" ]]; then
    echo "course.sh: setting up $VENV (a few minutes the first time) ..." >&2
    "$base" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -r requirements.txt
    echo "$want" > "$VENV/.requirements.sha"
  fi
  PY="$VENV/bin/python"
  # make `import course, kernels` work in any kernel started from this venv
  "$PY" -c 'import site, sys; open(site.getsitepackages()[0] + "/live-kernel-course.pth", "w").write(sys.argv[1] + "\n")' "$ROOT"
}

cmd="${1:-help}"; shift || true
case "$cmd" in
  setup) setup ;;
  lab) setup; exec "$PY" -m jupyter lab --notebook-dir="$ROOT/notebooks" "$@" ;;
  doctor) setup; exec "$PY" -m course doctor ;;
  run) setup; exec "$PY" -m course run "$@" ;;
  test)
    setup
    set +e
    "$PY" -m pytest tests notebooks --nbval-lax --nbval-cell-timeout=1200 --timeout=1800 \
      -p no:cacheprovider "$@"
    rc=$?
    set -e
    if [[ $rc -eq 5 ]]; then
      echo "course.sh: pytest collected no tests: that is a failure, not a pass" >&2
      exit 1
    fi
    exit $rc ;;
  *) sed -n '2,13p' "$0"; [[ "$cmd" == help ]] || exit 2 ;;
esac
