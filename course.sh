#!/usr/bin/env bash
# The course's one entry point. From the repository root:
#
#   ./course.sh lab          set up (once) and open the course in JupyterLab
#   ./course.sh hub          set up (once) and run JupyterHub for a class on this machine
#                            (asks for the teacher's password the first time)
#   ./course.sh hub-password NAME   a new password for NAME on the class hub
#   ./course.sh progress PATH       the class's progress (e.g. /home), as the teacher
#   ./course.sh test [ARGS]  set up (once) and run every test: ruff check and ruff format
#                            --check over kernels/ course/ tests/, pytest tests/ (with the
#                            browser suite tests/browser) + nbval notebooks/; with ARGS
#                            (pytest's) only pytest; test files run on up to 2 cores
#                            (COURSE_TEST_WORKERS=1: one process, e.g. for --pdb)
#   ./course.sh run [NN..]   set up (once) and execute the notebooks headless, with a report
#   ./course.sh slides [NN..] write offline slide decks to build/slides/
#   ./course.sh figures      redraw figures/ (--check: fail if a committed one is stale)
#   ./course.sh doctor       what this machine is and what will run live here
#   ./course.sh setup        only create/refresh .venv from requirements.txt
#
# Setup makes .venv with python3 (>= 3.11; COURSE_BASE_PYTHON names another, and a .venv
# made with a different one is rebuilt) and installs requirements.txt; it is redone
# only when requirements.txt (or that interpreter) changes. On a machine that already has
# the packages (a provisioned GPU box), COURSE_PYTHON=python3 skips the virtual environment.
# The browser suite needs Chromium: `test` installs Debian's chromium with apt-get when
# run as root and none is found; without root set COURSE_CHROMIUM=/path/to/chromium.
# If no Chromium can be had, the browser tests FAIL (they never skip); COURSE_BROWSER=0
# leaves them out on purpose (reported as deselected).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
VENV="${COURSE_VENV:-$ROOT/.venv}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
# Keep CuTe DSL's compiled-kernel cache across sessions and kernel restarts.
export CUTE_DSL_CACHE_DIR="${CUTE_DSL_CACHE_DIR:-$HOME/.cache/live-kernel-course/cute-dsl}"

# CuTe DSL (nvidia-cutlass-dsl) has wheels for Linux on x86_64 and aarch64 and for native
# Windows, none for macOS; course.sh and its .venv (bin/python) are Linux's, so a Windows
# shell that runs this script (Git Bash, MSYS2, Cygwin) is no way either. Stop before pip
# fails deep in its resolver, and say what works. COURSE_PLATFORM=OS-MACHINE (e.g.
# linux-x86_64, darwin-arm64) stands for `uname -s`-`uname -m`: for a Linux-compatible
# system that uname names otherwise, or a test. Written for macOS's bash 3.2 (no ${x,,}).
check_platform() {
  local platform why
  platform="$(printf %s "${COURSE_PLATFORM:-$(uname -s)-$(uname -m)}" | tr '[:upper:]' '[:lower:]')"
  case "$platform" in
    linux-x86_64 | linux-aarch64 | linux-arm64) return 0 ;;
    darwin-*) why="macOS ($platform): CuTe DSL (nvidia-cutlass-dsl) has no build for macOS" ;;
    mingw* | msys* | cygwin*)
      why="a Windows shell ($platform): course.sh and its .venv are made for Linux" ;;
    *) why="$platform: CuTe DSL (nvidia-cutlass-dsl) has builds only for Linux on x86_64 or aarch64" ;;
  esac
  cat >&2 <<EOF
course.sh: the course cannot be set up on $why. What works:
a Linux container on this machine (Docker or Podman; CPU tier: compile-only, CPU executor,
recorded results), from the repository root \`docker compose -f container/compose.yaml up\`,
then open the http://127.0.0.1:8888/lab?token=... URL it prints; a remote Linux machine such
as a rented GPU, there \`./course.sh lab --no-browser --port 8888\` and here
\`ssh -N -L 8888:127.0.0.1:8888 you@gpu-machine\`, then open the URL it printed; the dev
container in .devcontainer/ (VS Code: "Dev Containers: Reopen in Container", or a GitHub
Codespace); on Windows, WSL2: \`wsl --install -d Debian\` in PowerShell, then \`./course.sh lab\`
in a clone of the repository inside WSL. README.md, section "Your machine", says more.
EOF
  exit 2
}

setup() {
  check_platform
  if [[ -n "${COURSE_PYTHON:-}" ]]; then PY="$COURSE_PYTHON"; return; fi
  local base="${COURSE_BASE_PYTHON:-python3}"
  "$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    { echo "course.sh: $base is $("$base" --version 2>&1); Python >= 3.11 is needed" >&2; exit 2; }
  local want; want="$(sha256sum requirements.txt | cut -d' ' -f1)"
  local fresh=()
  if [[ -n "${COURSE_BASE_PYTHON:-}" && -x "$VENV/bin/python" ]]; then
    # a .venv made with another interpreter is rebuilt with the one asked for (a class hub
    # needs a Python every learner's account can run, not one under /root)
    local made asked
    made="$("$VENV/bin/python" -c 'import os, sys; print(os.path.realpath(sys._base_executable))')"
    asked="$("$base" -c 'import os, sys; print(os.path.realpath(sys.executable))')"
    if [[ "$made" != "$asked" ]]; then
      echo "course.sh: $VENV was made with $made; COURSE_BASE_PYTHON names $asked: rebuilding it" >&2
      fresh=(--clear)
    fi
  fi
  if [[ ${#fresh[@]} -gt 0 || ! -x "$VENV/bin/python" || "$(cat "$VENV/.requirements.sha" 2>/dev/null)" != "$want" ]]; then
    echo "course.sh: setting up $VENV (a few minutes the first time) ..." >&2
    "$base" -m venv ${fresh[@]+"${fresh[@]}"} "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -r requirements.txt
    echo "$want" > "$VENV/.requirements.sha"
  fi
  PY="$VENV/bin/python"
  # make `import course, kernels` work in any kernel started from this venv (written only
  # when it says something else: a venv built by root is read-only for a learner's account)
  "$PY" -c 'import pathlib, site, sys
pth = pathlib.Path(site.getsitepackages()[0]) / "live-kernel-course.pth"
if not pth.exists() or pth.read_text() != sys.argv[1] + "\n":
    pth.write_text(sys.argv[1] + "\n")' "$ROOT"
}

# Make a Chromium available to tests/browser (Playwright drives it; the Python client
# comes from requirements.txt). Never fatal here: if this fails, the browser tests
# fail with the reason in COURSE_CHROMIUM_PROBLEM, while the rest of the suite runs.
ensure_chromium() {
  [[ "${COURSE_BROWSER:-1}" == 0 ]] && return 0
  [[ -n "${COURSE_CHROMIUM:-}" ]] && return 0
  local name
  for name in chromium chromium-browser google-chrome google-chrome-stable; do
    command -v "$name" >/dev/null && return 0
  done
  local log="${TMPDIR:-/tmp}/course-apt-chromium.log"
  if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "course.sh: installing Debian's chromium for the browser tests (apt-get; log: $log) ..." >&2
    if apt-get update -q >"$log" 2>&1 &&
       DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium \
         >>"$log" 2>&1 && command -v chromium >/dev/null; then
      return 0
    fi
    export COURSE_CHROMIUM_PROBLEM="apt-get install chromium failed: $(tail -n 3 "$log" | tr '\n' ' ')"
  elif command -v apt-get >/dev/null; then
    export COURSE_CHROMIUM_PROBLEM="not root, so course.sh cannot apt-get install chromium"
  else
    export COURSE_CHROMIUM_PROBLEM="no apt-get on this machine to install chromium with"
  fi
  echo "course.sh: $COURSE_CHROMIUM_PROBLEM. The browser tests will FAIL: install chromium," \
       "or set COURSE_CHROMIUM=/path/to/chromium (or COURSE_BROWSER=0 to leave them out)." >&2
}

# JupyterHub's proxy (configurable-http-proxy, Node.js) for `hub` and tests/test_hub.py:
# the one on PATH, else installed with npm into build/hub. Never fatal here: without it the
# hub test fails with the reason.
PROXY_VERSION=5.3.0
ensure_proxy() {
  command -v configurable-http-proxy >/dev/null && return 0
  local bin="$ROOT/build/hub/node_modules/.bin"
  if [[ ! -x "$bin/configurable-http-proxy" ]]; then
    if command -v npm >/dev/null; then
      echo "course.sh: installing configurable-http-proxy $PROXY_VERSION with npm into build/hub ..." >&2
      mkdir -p "$ROOT/build/hub"
      npm install --silent --no-audit --no-fund --prefix "$ROOT/build/hub" \
        "configurable-http-proxy@$PROXY_VERSION" >&2 ||
        echo "course.sh: npm could not install configurable-http-proxy" >&2
    else
      echo "course.sh: no npm (Node.js) to install configurable-http-proxy, JupyterHub's proxy" >&2
    fi
  fi
  [[ -x "$bin/configurable-http-proxy" ]] && export PATH="$bin:$PATH"
  return 0
}

cmd="${1:-help}"; shift || true
case "$cmd" in
  setup) setup ;;
  lab)
    setup
    # root is the normal user in containers and on rented GPU machines; JupyterLab refuses
    # to start as root unless told it is meant
    root_ok=(); [[ "$(id -u)" -eq 0 ]] && root_ok=(--allow-root)
    exec "$PY" -m jupyter lab --notebook-dir="$ROOT/notebooks" ${root_ok[@]+"${root_ok[@]}"} "$@" ;;
  hub)
    # a class on this machine: JupyterHub with hub/jupyterhub_config.py (settings there).
    # The teacher's password first (asked here), then the port opens.
    setup
    ensure_proxy
    "$PY" -m course.tools.hub_admin
    cd "$("$PY" -c 'from course.tools.hub_admin import state_folder; print(state_folder())')"
    exec "$PY" -m jupyterhub -f "$ROOT/hub/jupyterhub_config.py" "$@" ;;
  hub-password)
    # a new password for a learner or the teacher: ./course.sh hub-password NAME
    setup; exec "$PY" -m course.tools.hub_admin --reset "$@" ;;
  progress) setup; exec "$PY" -m course progress "$@" ;;
  doctor) setup; exec "$PY" -m course doctor ;;
  run) setup; exec "$PY" -m course run "$@" ;;
  slides) setup; exec "$PY" -m course slides "$@" ;;
  figures) setup; exec "$PY" -m course.tools.figures "$@" ;;
  test)
    setup
    ensure_chromium
    ensure_proxy
    set +e
    lint=0
    if [[ $# -eq 0 ]]; then  # the whole suite: lint and formatting too (a targeted run skips them)
      "$PY" -m ruff check kernels course tests || lint=1
      "$PY" -m ruff format --check kernels course tests || lint=1
    fi
    # test files spread over pytest-xdist workers, one file per worker at a time (a
    # notebook's cells run in order on one kernel): COURSE_TEST_WORKERS, by default one per
    # core up to 2 on a CPU run (CI's 2 cores: 31 -> ~20 min) and 1 with COURSE_REQUIRE_GPU
    # (one GPU, shared by nothing)
    cores="$(nproc 2>/dev/null || echo 1)"
    workers="${COURSE_TEST_WORKERS:-$([[ "${COURSE_REQUIRE_GPU:-0}" == 1 ]] && echo 1 || echo $((cores < 2 ? cores : 2)))}"
    spread=()
    [[ "$workers" -gt 1 ]] && spread=(-n "$workers" --dist loadfile)
    # the whole suite, or only the test files / folders named among ARGS (README)
    where=(tests notebooks)
    for arg in "$@"; do
      [[ "$arg" != -* && -e "${arg%%::*}" ]] && { where=(); break; }
    done
    "$PY" -m pytest ${where[@]+"${where[@]}"} --nbval-lax --nbval-cell-timeout=1200 \
      --timeout=1800 --durations=30 -p no:cacheprovider "${spread[@]}" "$@"
    rc=$?
    set -e
    if [[ $rc -eq 5 ]]; then
      echo "course.sh: pytest collected no tests: that is a failure, not a pass" >&2
      exit 1
    fi
    if [[ $lint -ne 0 ]]; then
      echo "course.sh: ruff check / ruff format --check failed (above): run 'ruff check --fix'" \
           "and 'ruff format' on kernels/ course/ tests/" >&2
      [[ $rc -eq 0 ]] && rc=1
    fi
    exit $rc ;;
  *) sed -n '2,26p' "$0"; [[ "$cmd" == help ]] || exit 2 ;;
esac
