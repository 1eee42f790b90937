"""What machine is this, and which rung of the course can it run live?

Detected once per process, so every notebook tells the truth about the reader's
own machine. The course sorts machines into four tiers:

    cpu     no usable CUDA GPU: compile-only, simulators, recorded results
    sm_80   Ampere-class and newer consumer parts: mma.sync, cp.async, ldmatrix
    sm_90   Hopper (compute capability 9.0): TMA, mbarrier, clusters, WGMMA
    sm_100  datacenter Blackwell (10.x): TMEM, tcgen05, CTA pairs, CLC

A live cell states what it *needs* (a key of NEEDS); the machine either
satisfies it or the cell takes its labelled fallback (see course.runtime.live).

Environment:
    COURSE_TIER=cpu|sm_80|...  pretend to be a lower tier (to see or test a
                               fallback path on a GPU machine). Never higher.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass

from kernels.host import arch_for

TIERS = ("cpu", "sm_80", "sm_90", "sm_100")

# What a live cell can need -> the tiers that provide it (the needs of kernels.host.NEEDS,
# plus 'cpu'; tests/test_hardware.py checks the two agree on every compute capability).
# The architecture a compile-only fallback targets for each need is kernels.host's
# COMPILE_TARGET.
NEEDS: dict[str, frozenset[str]] = {
    "cpu": frozenset(TIERS),  # plain Python: runs anywhere
    "gpu": frozenset({"sm_80", "sm_90", "sm_100"}),  # any GPU CuTe DSL runs on
    "sm_80+": frozenset({"sm_80", "sm_90", "sm_100"}),  # mma.sync, cp.async, ldmatrix
    "sm_90+": frozenset({"sm_90", "sm_100"}),  # TMA, mbarrier tx-count, clusters
    "sm_90a": frozenset({"sm_90"}),  # wgmma, setmaxnreg: Hopper only
    "sm_100a": frozenset({"sm_100"}),  # tcgen05, TMEM, CLC: Blackwell only
}


def tiers_for(needs: str) -> str:
    """'sm_90 or sm_100': the tiers that satisfy `needs`, in ladder order."""
    return " or ".join(t for t in TIERS if t in NEEDS[needs])


def tier_for(compute_capability: tuple[int, int]) -> str:
    """Map a compute capability to the course tier it can run live."""
    major, minor = compute_capability
    if major == 10:
        return "sm_100"
    if (major, minor) == (9, 0):
        return "sm_90"
    if major >= 8:
        return "sm_80"
    return "cpu"


@dataclass(frozen=True)
class Machine:
    """One machine, as the course sees it. Built by `machine()`."""

    tier: str
    reason: str  # one line: why this tier
    gpu_name: str | None = None
    compute_capability: tuple[int, int] | None = None
    sm_count: int | None = None
    memory_gib: float | None = None
    l2_mib: float | None = None
    driver: str | None = None
    cuda_runtime: str | None = None
    torch_version: str | None = None
    cutlass_dsl_version: str | None = None
    python_version: str = platform.python_version()
    forced: bool = False  # tier lowered by COURSE_TIER

    @property
    def has_gpu(self) -> bool:
        return self.tier != "cpu"

    @property
    def arch(self) -> str | None:
        """The CuTe DSL target for this GPU (e.g. 'sm_90a'), None on cpu."""
        if self.compute_capability is None or not self.has_gpu:
            return None
        return arch_for(self.compute_capability)

    def can(self, needs: str) -> bool:
        """True when a cell that needs `needs` can run live here."""
        if needs not in NEEDS:
            raise ValueError(f"unknown need {needs!r}; expected one of {sorted(NEEDS)}")
        return self.tier in NEEDS[needs]

    def describe(self) -> str:
        """One line naming the machine, for banners and reports."""
        if self.gpu_name is None:
            return f"CPU-only (tier cpu: {self.reason})"
        cc = ".".join(map(str, self.compute_capability or ()))
        tail = f"tier {self.tier}" + (" (forced by COURSE_TIER)" if self.forced else "")
        return f"{self.gpu_name} (compute capability {cc}, {tail})"

    def as_dict(self) -> dict:
        return {
            "tier": self.tier,
            "reason": self.reason,
            "gpu": self.gpu_name,
            "compute_capability": ".".join(map(str, self.compute_capability))
            if self.compute_capability
            else None,
            "sm_count": self.sm_count,
            "memory_gib": self.memory_gib,
            "l2_mib": self.l2_mib,
            "driver": self.driver,
            "cuda_runtime": self.cuda_runtime,
            "torch": self.torch_version,
            "cutlass_dsl": self.cutlass_dsl_version,
            "python": self.python_version,
        }


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _driver_version() -> str | None:
    """The NVIDIA driver release (e.g. '580.159.04'), from nvidia-smi if present."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        return out.stdout.strip().splitlines()[0] or None
    except (subprocess.SubprocessError, OSError, IndexError):
        return None


def _cutlass_dsl_version() -> str | None:
    """From the package metadata, or from the module when installed without it."""
    version = _package_version("nvidia-cutlass-dsl")
    if version is None:
        try:
            import cutlass

            version = getattr(cutlass, "__version__", None)
        except ImportError:
            pass
    return version


def _detect() -> Machine:
    common = dict(cutlass_dsl_version=_cutlass_dsl_version())
    try:
        import torch
    except ImportError:
        return Machine(tier="cpu", reason="torch is not installed", **common)
    common["torch_version"] = torch.__version__
    common["cuda_runtime"] = torch.version.cuda
    if not torch.cuda.is_available():
        return Machine(tier="cpu", reason="no CUDA GPU visible to torch", **common)
    props = torch.cuda.get_device_properties(0)
    cc = (props.major, props.minor)
    tier = tier_for(cc)
    reason = (
        f"compute capability {cc[0]}.{cc[1]}"
        if tier != "cpu"
        else f"compute capability {cc[0]}.{cc[1]} is older than CuTe DSL supports (8.0)"
    )
    return Machine(
        tier=tier,
        reason=reason,
        gpu_name=props.name,
        compute_capability=cc,
        sm_count=props.multi_processor_count,
        memory_gib=round(props.total_memory / 2**30, 1),
        l2_mib=round(getattr(props, "L2_cache_size", 0) / 2**20, 1) or None,
        driver=_driver_version(),
        **common,
    )


def _apply_forced_tier(found: Machine) -> Machine:
    wanted = os.environ.get("COURSE_TIER", "").strip()
    if not wanted or wanted == found.tier:
        return found
    if wanted not in TIERS:
        raise ValueError(f"COURSE_TIER={wanted!r} is not a tier; expected one of {TIERS}")
    if TIERS.index(wanted) > TIERS.index(found.tier):
        raise ValueError(
            f"COURSE_TIER={wanted} asks for more than this machine has ({found.describe()})"
        )
    fields = {
        **found.__dict__,
        "tier": wanted,
        "forced": True,
        "reason": f"forced to {wanted} by COURSE_TIER (really {found.tier})",
    }
    return Machine(**fields)


@functools.cache
def machine() -> Machine:
    """This machine, detected once per process."""
    return _apply_forced_tier(_detect())
