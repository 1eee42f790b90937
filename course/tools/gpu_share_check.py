"""A class's GPU sharing, checked on the machine's real GPUs.

    python -m course.tools.gpu_share_check [--learners N] [--record]

Starts one process per learner the way the hub's spawner starts a learner's server (the
environment course.tools.gpu_share gives it: CUDA_VISIBLE_DEVICES set to a GPU's UUID),
and has each run a small course kernel (kernels.vector_add) against torch. It then shows,
from inside each process (the device's UUID and name, as torch sees them) and from outside
(`nvidia-smi --query-compute-apps`), where each learner landed; that a returning learner
keeps their GPU; and that one learner's hung kernel and another's crashed process leave the
others' GPUs answering. With several GPUs, learners must land on different ones (as many
as there are GPUs); with one, they share it and say so. `--record` keeps the outcome in
results/gpu_share.json (UUIDs shortened).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from course.tools.gpu_share import GpuShare, visible_gpus

# what a learner's process runs: report its device, run vector_add against torch, then
# either stay up (answering "again" on stdin), hang in a kernel, or crash
LEARNER = r"""
import json, os, sys, torch
from kernels import vector_add
props = torch.cuda.get_device_properties(0)
def run():
    a, b = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    out = torch.empty_like(a)
    vector_add.run(a, b, out)
    torch.cuda.synchronize()
    return bool(torch.equal(out, a + b))
print(json.dumps({"pid": os.getpid(), "uuid": "GPU-" + str(props.uuid), "name": props.name,
                  "visible": os.environ.get("CUDA_VISIBLE_DEVICES", ""), "ok": run()}), flush=True)
mode = sys.argv[1]
if mode == "hang":
    torch.cuda._sleep(1 << 62)   # a kernel that spins for good
    torch.cuda.synchronize()
elif mode == "crash":
    os._exit(3)
for line in sys.stdin:           # "again": run the kernel once more and answer
    print(json.dumps({"ok": run()}), flush=True)
"""


def _start(env: dict, mode: str, root: Path) -> subprocess.Popen:
    full = {
        **os.environ,
        **env,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    return subprocess.Popen(
        [sys.executable, "-c", LEARNER, mode],
        env=full,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _hello(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"a learner's process said nothing: {proc.stderr.read()[-800:]}")
    return json.loads(line)


def _compute_apps() -> dict[int, str]:
    """pid -> GPU UUID of every process nvidia-smi sees on a GPU."""
    out = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    apps = {}
    for line in out.stdout.splitlines():
        pid, _, uuid = line.partition(",")
        if pid.strip().isdigit():
            apps[int(pid)] = uuid.strip()
    return apps


def short(uuid: str) -> str:
    return uuid[:12] + "…" if len(uuid) > 12 else uuid


def check(learners: int = 4, root: Path | None = None) -> dict:
    """Run the whole check; returns what it saw (raises nothing for a failed expectation:
    the caller judges `outcome`)."""
    from course import ROOT

    root = root or ROOT
    gpus = visible_gpus()
    if not gpus:
        raise RuntimeError("no GPU visible to nvidia-smi")
    names = [f"learner{i}" for i in range(learners)]
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "gpus.json"
        share, active, procs, seen = GpuShare(state, gpus), set(), {}, {}
        for name in names:  # each logs in while the earlier ones are still working
            env = share.environment_for(name, active)
            procs[name] = _start(env, "stay", root)
            seen[name] = {
                **_hello(procs[name]),
                "assigned": env["CUDA_VISIBLE_DEVICES"],
                "note": env["COURSE_GPU_SHARE"],
            }
            active.add(name)
        outside = _compute_apps()
        returning = GpuShare(state, gpus).environment_for(names[0], active - {names[0]})
        # one learner hangs a kernel, another crashes; the rest must still answer
        hang_env = share.environment_for("hanger", active)
        crash_env = share.environment_for("crasher", active | {"hanger"})
        hanger = _start(hang_env, "hang", root)
        crasher = _start(crash_env, "crash", root)
        hang_hello, crash_hello = _hello(hanger), _hello(crasher)
        crasher.wait(60)
        time.sleep(2)
        answers = {}
        for name, proc in procs.items():
            proc.stdin.write("again\n")
            proc.stdin.flush()
            answers[name] = json.loads(proc.stdout.readline())["ok"]
        hanger.kill()
        for proc in procs.values():
            proc.stdin.close()
            proc.wait(60)
    by_gpu: dict[str, list[str]] = {}
    for name in names:
        by_gpu.setdefault(seen[name]["uuid"], []).append(name)
    spread = len(gpus) >= 2
    want_distinct = min(len(gpus), learners)
    outcome = {
        "kernels_right": all(s["ok"] for s in seen.values()),
        "inside_matches_assigned": all(s["uuid"] == s["assigned"] for s in seen.values()),
        "outside_matches_inside": all(outside.get(s["pid"]) == s["uuid"] for s in seen.values()),
        "spread": len(by_gpu) == want_distinct if spread else len(by_gpu) == 1,
        "returning_keeps": returning["CUDA_VISIBLE_DEVICES"] == seen[names[0]]["assigned"],
        "others_answer_after_hang_and_crash": all(answers.values()),
        "crash_exit_code": crasher.returncode,
    }
    return {
        "gpus": [{"uuid": short(g.uuid), "name": g.name} for g in gpus],
        "learners": {
            n: {"gpu": short(s["uuid"]), "name": s["name"], "note": s["note"]}
            for n, s in seen.items()
        },
        "hanger_gpu": short(hang_hello["uuid"]),
        "crasher_gpu": short(crash_hello["uuid"]),
        "learners_per_gpu": {short(u): len(v) for u, v in by_gpu.items()},
        "outcome": outcome,
        "passed": all(v is True for k, v in outcome.items() if k != "crash_exit_code"),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course.tools.gpu_share_check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--learners", type=int, default=4)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args(argv)
    got = check(args.learners)
    print(json.dumps(got, indent=1))
    if args.record:
        from course.runtime import results

        print("recorded:", results.record("gpu_share", got).citation())
    return 0 if got["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
