"""A class's progress on Zero to JupyterHub, where each learner's home is a volume of its own.

    python -m course.tools.cluster_progress [--namespace NS] [--out DIR]

Each running learner's server pod is asked (kubectl exec) for its ~/.course/progress.jsonl,
which is written to DIR/learners/<learner>/.course/progress.jsonl, and the class is gathered
from there as on one machine (course.tools.class_progress_report). Whose a file is comes
from the hub: the pod's `hub.jupyter.org/username` annotation, which KubeSpawner sets and a
learner cannot change; a line in it naming anyone else is ignored and reported.

Only running servers can be read (a stopped server's home is a volume no pod mounts):
gather during class, or start the learners' servers from the hub's admin page first. Needs
kubectl with access to the hub's namespace (the teacher's, not a learner's).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from course import ROOT
from course.exercises.progress import FILE_NAME
from course.tools import class_progress_report

HOME = "/home/jovyan"  # the learners' home in the course's image
CONTAINER = "notebook"  # KubeSpawner's name for the server's container
USER_ANNOTATION = "hub.jupyter.org/username"


def kubectl(*args: str, timeout: int = 60) -> str:
    done = subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or f"kubectl {' '.join(args)} failed")
    return done.stdout


def learner_pods(namespace: str) -> list[tuple[str, str]]:
    """(pod, learner) of every running learner's server."""
    pods = json.loads(
        kubectl(
            "get",
            "pods",
            "--namespace",
            namespace,
            "--selector",
            "component=singleuser-server",
            "--output",
            "json",
        )
    )
    return [
        (pod["metadata"]["name"], pod["metadata"].get("annotations", {}).get(USER_ANNOTATION, ""))
        for pod in pods.get("items", [])
        if pod.get("status", {}).get("phase") == "Running"
    ]


def copy_progress(namespace: str, pod: str, learner: str, learners: Path) -> str:
    """Copy one learner's progress file out of their pod; '' or why it was not copied."""
    if not learner or learner in (".", "..") or "/" in learner:
        return f"{pod}: no usable learner name ({learner!r})"
    try:
        text = kubectl(
            "exec",
            "--namespace",
            namespace,
            pod,
            "--container",
            CONTAINER,
            "--",
            "sh",
            "-c",
            f"cat {HOME}/.course/{FILE_NAME} 2>/dev/null || true",
        )
    except (RuntimeError, subprocess.SubprocessError) as error:
        return f"{pod} ({learner}): {error}"
    if text:
        target = learners / learner / ".course" / FILE_NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course.tools.cluster_progress", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--namespace", default="default", help="the hub's namespace")
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "build" / "classroom",
        help="where progress.md and .png go (default build/classroom)",
    )
    args = parser.parse_args(argv)
    learners = class_progress_report.private_folder(args.out) / "learners"
    shutil.rmtree(learners, ignore_errors=True)  # this gathering only
    learners.mkdir()
    pods = learner_pods(args.namespace)
    problems = [
        p for p in (copy_progress(args.namespace, pod, name, learners) for pod, name in pods) if p
    ]
    print(f"read {len(pods) - len(problems)} of {len(pods)} running learners' servers")
    for problem in problems:
        print(f"not read: {problem}")
    return class_progress_report.progress([str(learners)], args.out, learner_from="folder")


if __name__ == "__main__":
    sys.exit(main())
