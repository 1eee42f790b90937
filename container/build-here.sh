#!/usr/bin/env bash
# Build the course's CPU-tier container on this machine and run in it exactly what the two
# container files say, so "the container builds and serves JupyterLab" is a run, not a claim:
#
#   container/build-here.sh              build (or reuse) the image, run the commands, record
#   container/build-here.sh --commands   print the commands read from the files; run nothing
#
# The commands are read from the files, never written here: the image, the environment,
# `postCreateCommand` and `postAttachCommand` from .devcontainer/devcontainer.json, the
# `command` from container/compose.yaml (the two files must agree on image and environment).
# In the container (the checkout mounted at the compose file's working_dir, the venv and
# cache volumes as host folders) it runs postCreateCommand (`./course.sh setup`) on an empty
# venv, then again (it must reuse the venv: both are timed), then each lab command in the
# background on a free port (the `--port` value swapped for it), asks JupyterLab's
# /api/status from the host with the token the server printed, and stops it.
#
# The base: the files' image when a registry serves it (python:3.12-slim-bookworm from
# Docker Hub); otherwise Debian 12 made with debootstrap and Debian's python3 (3.11) with
# python3-venv, as the class image is made (README, "Zero to JupyterHub"). Where the network
# intercepts TLS, pip in the image needs this machine's certificate authority: when the
# image's own CA bundle cannot reach pypi.org and the host's can, the host's extra CAs are
# added as one layer and PIP_CERT names the bundle (recorded as ca_layer).
# Needs root, buildah and podman (and debootstrap without a registry); no Docker daemon
# (buildah --isolation chroot, storage driver vfs: podman run cannot start containers on a
# machine without the open-files limit it sets).
#
# Writes only outside the checkout, under COURSE_CONTAINER_WORK (default
# /var/tmp/course-container: rootfs, image storage, venv and cache folders, logs), and one
# record appended to results/container/container_check.json (COURSE_CONTAINER_RECORD names
# another file). COURSE_CONTAINER_FRESH=0 keeps the venv folder of an earlier run (by default
# it is emptied, so the first setup is a first start). Takes ~15 minutes and ~10 GB the
# first time.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOSTPY="${COURSE_HOST_PYTHON:-$ROOT/.venv/bin/python}"
WORK="${COURSE_CONTAINER_WORK:-/var/tmp/course-container}"
RECORD="${COURSE_CONTAINER_RECORD:-$ROOT/results/container/container_check.json}"

# The files' settings as shell assignments (python, since compose.yaml is YAML).
read_files() {
  "$HOSTPY" - "$ROOT" <<'PY'
import json, shlex, sys
from pathlib import Path
import yaml

root = Path(sys.argv[1])
dev = json.loads((root / ".devcontainer" / "devcontainer.json").read_text())
lab = yaml.safe_load((root / "container" / "compose.yaml").read_text())["services"]["lab"]
env = {k: str(v) for k, v in lab["environment"].items()}
if dev["image"] != lab["image"] or dev["containerEnv"] != env:
    sys.exit("build-here.sh: devcontainer.json and compose.yaml name different images or env")
mounts = {m["target"] for m in dev["mounts"]}
volumes = {v.split(":")[1] for v in lab["volumes"]}
venv = env["COURSE_VENV"]
cache = next(t for t in sorted(mounts & volumes) if t != venv)
if venv not in mounts & volumes:
    sys.exit("build-here.sh: COURSE_VENV is not a volume of both files")
q = shlex.quote
print(f"image={q(lab['image'])}")
print(f"workdir={q(lab['working_dir'])}")
print(f"venv_target={q(venv)}")
print(f"cache_target={q(cache)}")
print("container_env=(" + " ".join(q(f"{k}={v}") for k, v in env.items()) + ")")
print(f"post_create={q(dev['postCreateCommand'])}")
print(f"post_attach={q(dev['postAttachCommand'])}")
print(f"compose_command={q(shlex.join(lab['command']))}")
PY
}
eval "$(read_files)"

if [[ "${1:-}" == --commands ]]; then
  printf 'image: %s\n' "$image"
  printf 'postCreateCommand: %s\n' "$post_create"
  printf 'postAttachCommand: %s\n' "$post_attach"
  printf 'compose command: %s\n' "$compose_command"
  exit 0
fi

[[ "$(id -u)" -eq 0 ]] || { echo "build-here.sh: needs root (buildah with chroot isolation)" >&2; exit 2; }
for tool in buildah podman; do
  command -v "$tool" >/dev/null || { echo "build-here.sh: needs $tool (apt-get install $tool)" >&2; exit 2; }
done

mkdir -p "$WORK/logs" "$WORK/venv" "$WORK/cache"
LOGS="$WORK/logs"
STORE=(--root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
bah() { buildah "${STORE[@]}" "$@"; }
IMAGE_HERE=localhost/live-kernel-course-cpu:here
CTR=live-kernel-course-cpu-check

# --- the image ------------------------------------------------------------------------------
registry_serves() { [[ "$(curl -s -o /dev/null -m 10 -w '%{http_code}' https://registry-1.docker.io/v2/ || true)" != 000 ]]; }

ca_layer=false
build_image() {
  local from
  if registry_serves; then
    base="docker.io/library/$image"
    from="$base"
  else
    command -v debootstrap >/dev/null || { echo "build-here.sh: needs debootstrap" >&2; exit 2; }
    base="debootstrap --variant=minbase bookworm (Debian 12), Debian's python3 and python3-venv"
    from=localhost/debian-bookworm:12
    if ! bah inspect --type image "$from" >/dev/null 2>&1; then
      rm -rf "$WORK/rootfs"
      echo "build-here.sh: debootstrap (log: $LOGS/debootstrap.log) ..." >&2
      debootstrap --variant=minbase bookworm "$WORK/rootfs" http://deb.debian.org/debian \
        >"$LOGS/debootstrap.log" 2>&1
      tar -C "$WORK/rootfs" -c . | podman "${STORE[@]}" import - "$from" >/dev/null
      rm -rf "$WORK/rootfs"
    fi
  fi
  bah rm "$CTR" >/dev/null 2>&1 || true
  bah from --name "$CTR" "$from" >/dev/null
  if [[ "$from" == localhost/debian-bookworm:12 ]]; then
    echo "build-here.sh: apt-get install python3 python3-venv ca-certificates ..." >&2
    bah run --isolation chroot "$CTR" -- sh -c 'apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        python3 python3-venv ca-certificates && rm -rf /var/lib/apt/lists/*' >"$LOGS/apt.log" 2>&1
  fi
  local probe='import urllib.request; urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=30)'
  if ! bah run --isolation chroot "$CTR" -- python3 -c "$probe" >/dev/null 2>&1 &&
     python3 -c "$probe" >/dev/null 2>&1; then
    # the host reaches PyPI and the image does not: TLS is intercepted here. Add the host's
    # certificates the image lacks, as Debian adds local ones.
    echo "build-here.sh: this network intercepts TLS; adding the host's extra CAs to the image" >&2
    local mnt; mnt="$(bah mount "$CTR")"
    python3 - /etc/ssl/certs/ca-certificates.crt "$mnt/etc/ssl/certs/ca-certificates.crt" \
      "$mnt/usr/local/share/ca-certificates" <<'PY'
import re, sys
from pathlib import Path
pem = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.S)
have = set(pem.findall(Path(sys.argv[2]).read_text()))
extra = [c for c in pem.findall(Path(sys.argv[1]).read_text()) if c not in have]
for i, cert in enumerate(extra):
    Path(sys.argv[3], f"host-{i}.crt").write_text(cert + "\n")
PY
    bah umount "$CTR" >/dev/null
    bah run --isolation chroot "$CTR" -- update-ca-certificates >>"$LOGS/apt.log" 2>&1
    bah config --env PIP_CERT=/etc/ssl/certs/ca-certificates.crt "$CTR"
    ca_layer=true
  fi
  bah config --workingdir "$workdir" "$CTR"
}
build_image
python_version="$(bah run --isolation chroot "$CTR" -- python3 --version)"
echo "build-here.sh: base: $base; $python_version; CA layer: $ca_layer" >&2

# --- the commands -----------------------------------------------------------------------------
[[ "${COURSE_CONTAINER_FRESH:-1}" == 0 ]] || find "$WORK/venv" -mindepth 1 -delete
# buildah itself, not the bah function: setsid (run_lab) executes a program
RUN=(buildah "${STORE[@]}" run --isolation chroot --workingdir "$workdir"
     -v "$ROOT:$workdir" -v "$WORK/venv:$venv_target" -v "$WORK/cache:$cache_target")
for kv in "${container_env[@]}"; do RUN+=(-e "$kv"); done

steps_json=()
step() {  # step NAME COMMAND RC SECONDS [ANSWERED ANONYMOUS_HTTP]: one entry of the record
  steps_json+=("$("$HOSTPY" -c 'import json, sys; n, c, rc, s, *lab = sys.argv[1:]
print(json.dumps({"name": n, "command": c, "rc": int(rc), "seconds": round(float(s), 1),
                  **({"jupyterlab_answered": lab[0] == "yes",
                      "without_token_http": int(lab[1])} if lab else {})}))' "$@")")
}

run_setup() {  # run_setup NAME
  local t0 rc=0; t0="$(date +%s.%N)"
  "${RUN[@]}" "$CTR" -- sh -c "$post_create" >"$LOGS/$1.log" 2>&1 || rc=$?
  step "$1" "$post_create" "$rc" "$(echo "$(date +%s.%N) - $t0" | bc)"
  printf 'build-here.sh: %s: rc %s in %.1f s\n' "$1" "$rc" "$(echo "$(date +%s.%N) - $t0" | bc)" >&2
  [[ $rc -eq 0 ]] || { tail -n 20 "$LOGS/$1.log" >&2; return 1; }
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

run_lab() {  # run_lab NAME COMMAND: start it, ask /api/status with the token, stop it
  local name="$1" port cmd log="$LOGS/$1.log" t0 rc=0 answered=no token="" pid
  port="$(free_port)"
  cmd="$(sed -E "s/--port[ =][0-9]+/--port $port/" <<<"$2")"
  [[ "$cmd" == *"--port $port"* ]] || { echo "build-here.sh: no --port in: $2" >&2; return 1; }
  t0="$(date +%s.%N)"
  setsid "${RUN[@]}" "$CTR" -- sh -c "exec $cmd" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 180); do
    token="$(grep -oE "127\.0\.0\.1:$port/lab\?token=[0-9a-f]+" "$log" | head -n 1 | sed 's/.*token=//' || true)"
    if [[ -n "$token" ]] &&
       curl -sf -m 5 -H "Authorization: token $token" "http://127.0.0.1:$port/api/status" \
         >"$LOGS/$name.status.json"; then
      answered=yes; break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  local seconds; seconds="$(echo "$(date +%s.%N) - $t0" | bc)"
  # the token guards it: without one the API must refuse
  local anon; anon="$(curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$port/api/status" || true)"
  [[ "$answered" == yes && "$anon" == 200 ]] && answered=no
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" || rc=$?
  # a server stopped by our TERM is no failure of the command; one that never answered is
  [[ "$answered" == yes ]] && rc=0
  [[ "$answered" == yes ]] || rc=${rc/#0/1}
  step "$name" "$2" "$rc" "$seconds" "$answered" "${anon:-0}"
  printf 'build-here.sh: %s on port %s: JupyterLab answered: %s (%.1f s; without the token: HTTP %s)\n' \
    "$name" "$port" "$answered" "$seconds" "$anon" >&2
  [[ "$answered" == yes ]] || { tail -n 20 "$log" >&2; return 1; }
}

ok=0
run_setup postCreateCommand && run_setup postCreateCommand_again &&
  run_lab postAttachCommand "$post_attach" && run_lab compose_command "$compose_command" || ok=$?

# --- the record -------------------------------------------------------------------------------
mkdir -p "$(dirname "$RECORD")"
"$HOSTPY" - "$RECORD" "$image" "$base" "$python_version" "$ca_layer" "$workdir" \
  "$post_create" "$post_attach" "$compose_command" "${steps_json[@]}" <<'PY'
import datetime, json, os, platform, sys
from pathlib import Path
record, image, base, python, ca, workdir, create, attach, compose, *steps = sys.argv[1:]
path = Path(record)
records = json.loads(path.read_text()) if path.exists() else []
records.append({
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "command": "container/build-here.sh",
    "machine": {"machine": platform.machine(), "cores": os.cpu_count(),
                "kernel": platform.release()},
    "image_in_files": image,
    "base_used": base,
    "python_in_image": python,
    "ca_layer": ca == "true",
    "checkout_at": workdir,
    "commands": {"postCreateCommand": create, "postAttachCommand": attach,
                 "compose_command": compose},
    "steps": [json.loads(s) for s in steps],
})
path.write_text(json.dumps(records, indent=2) + "\n")
PY
echo "build-here.sh: recorded in $RECORD" >&2
exit "$ok"
