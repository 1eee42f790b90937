"""Which GPU a learner's server gets, when a class shares one machine.

A JupyterHub on a machine with several GPUs (or MIG slices) spreads its learners across
them; with one GPU, everyone shares it. A learner keeps the GPU they had at their last
login while it still exists (their compiled kernels and any habits stay valid), and a new
learner gets the GPU with the fewest learners working on it now (ties: the first). The
answer goes into the learner's environment as CUDA_VISIBLE_DEVICES (a UUID, so the
numbering cannot shift under them); the course's own tier detection then tells the
learner what runs live, as on any machine.

    gpus = visible_gpus()                      # from nvidia-smi -L: GPUs and MIG slices
    share = GpuShare(state_file, gpus)
    env = share.environment_for("alice", active={"bob", "carol"})
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# `nvidia-smi -L`: "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)" and, under a GPU split
# into MIG slices, "  MIG 1g.10gb     Device  0: (UUID: MIG-...)"
_LINE = re.compile(
    r"^\s*(?P<kind>GPU \d+|MIG [^:]+?Device\s+\d+):\s*(?P<name>.*?)\s*"
    r"\(UUID: (?P<uuid>[^)]+)\)"
)


@dataclass(frozen=True)
class Gpu:
    uuid: str  # what CUDA_VISIBLE_DEVICES takes
    name: str  # for people: "GPU 0: NVIDIA H100 80GB HBM3" or "MIG 1g.10gb Device 0 of GPU 0"


def parse_nvidia_smi_list(text: str) -> list[Gpu]:
    """The devices a learner can be given: every MIG slice where a GPU is split, else the
    GPU itself."""
    gpus: list[Gpu] = []
    current: Gpu | None = None
    slices: list[Gpu] = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        if m["kind"].startswith("GPU"):
            if current is not None:
                gpus.extend(slices or [current])
            current, slices = Gpu(m["uuid"], f"{m['kind']}: {m['name']}"), []
        else:
            kind = " ".join(m["kind"].split())
            slices.append(
                Gpu(m["uuid"], f"{kind} of {current.name.split(':')[0]}" if current else kind)
            )
    if current is not None:
        gpus.extend(slices or [current])
    return gpus


def visible_gpus() -> list[Gpu]:
    """This machine's GPUs and MIG slices, or [] where there is no NVIDIA driver."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_nvidia_smi_list(out.stdout) if out.returncode == 0 else []


class GpuShare:
    """Learner -> GPU, kept in a small JSON file (the hub's state folder) across restarts."""

    def __init__(self, state_file: Path, gpus: list[Gpu]):
        self.state_file = Path(state_file)
        self.gpus = list(gpus)
        self.assigned: dict[str, str] = self._load()

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.state_file.read_text())
            return {str(k): str(v) for k, v in data.items()}
        except (OSError, ValueError, AttributeError):
            return {}  # first start, or a damaged file: assignments are only a preference

    def _save(self) -> None:
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_name(self.state_file.name + ".tmp")
        tmp.write_text(json.dumps(self.assigned, indent=1, sort_keys=True))
        os.replace(tmp, self.state_file)

    def gpu_for(self, learner: str, active: set[str] = frozenset()) -> Gpu | None:
        """`learner`'s GPU: the one they had, while it exists; else the one with the fewest
        of the `active` learners on it. None on a machine without GPUs."""
        if not self.gpus:
            return None
        by_uuid = {g.uuid: g for g in self.gpus}
        kept = by_uuid.get(self.assigned.get(learner, ""))
        if kept is None:
            load = Counter(
                self.assigned[name] for name in active if name != learner and name in self.assigned
            )
            kept = min(self.gpus, key=lambda g: load[g.uuid])  # min keeps the first of a tie
            self.assigned[learner] = kept.uuid
            self._save()
        return kept

    def sharing(self, gpu: Gpu, active: set[str]) -> int:
        """How many of the `active` learners work on `gpu`."""
        return sum(self.assigned.get(name) == gpu.uuid for name in active)

    def environment_for(self, learner: str, active: set[str] = frozenset()) -> dict[str, str]:
        """The environment a learner's server starts with: CUDA_VISIBLE_DEVICES (empty, so
        no GPU, on a machine without one) and a line for the learner saying what they share."""
        gpu = self.gpu_for(learner, active)
        if gpu is None:
            return {"CUDA_VISIBLE_DEVICES": "", "COURSE_GPU_SHARE": "no GPU on this machine"}
        others = self.sharing(gpu, active - {learner})
        note = (
            f"{gpu.name}, shared with {others} other learner{'s' * (others != 1)}"
            if others
            else f"{gpu.name}, yours alone for now"
        )
        return {"CUDA_VISIBLE_DEVICES": gpu.uuid, "COURSE_GPU_SHARE": note}


NVIDIA_MAJOR = 195  # /dev/nvidia0, /dev/nvidia1, ...: character devices 195:<minor>
PROC_GPUS = Path("/proc/driver/nvidia/gpus")


def device_minors(proc_gpus: Path = PROC_GPUS) -> dict[str, int]:
    """GPU UUID -> the minor number of its /dev/nvidiaN, from the driver's own files
    (/proc/driver/nvidia/gpus/<bus id>/information: "GPU UUID:", "Device Minor:")."""
    minors = {}
    for info in sorted(proc_gpus.glob("*/information")):
        fields = dict(line.split(":", 1) for line in info.read_text().splitlines() if ":" in line)
        uuid, minor = fields.get("GPU UUID", "").strip(), fields.get("Device Minor", "").strip()
        if uuid and minor.isdigit():
            minors[uuid] = int(minor)
    return minors


def devices_to_deny(given: Gpu | None, minors: dict[str, int]) -> tuple[str, ...]:
    """Device rules ("c 195:N rwm") for every GPU but the one a learner was given, so their
    processes cannot open the others whatever CUDA_VISIBLE_DEVICES says. None for a MIG
    slice (slices of one GPU share its device node; their access files are not covered:
    there the assignment stays advisory) nor where no GPU was given."""
    if given is None or given.uuid not in minors:
        return ()
    return tuple(
        f"c {NVIDIA_MAJOR}:{minor} rwm"
        for uuid, minor in sorted(minors.items(), key=lambda item: item[1])
        if uuid != given.uuid
    )
