#!/usr/bin/env bash
# Wheels (Python 3.12, x86-64) of the course's requirements that the lent GPU machine
# lacks beyond the shared parcels (.gpu/p1, .gpu/p2 from ../shared/gpu/prepare.sh):
# today anywidget and its psygnal, and greenlet (the CPU executor's threads). They land in .whl/ (git-ignored); carry ".whl" with
# the call and scripts/gpu-validate.sh installs them into /tmp/site.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.whl/' >> .git/info/exclude; }
pin() { grep -E "^$1==" requirements.txt || echo "$1"; }
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux_2_24_x86_64 -d .whl "$(pin anywidget)" \
  "$(pin psygnal)" "$(pin greenlet)"
ls .whl
