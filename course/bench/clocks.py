"""The GPU's SM clock, board power and clock-event reasons, read from NVML on a side thread.

A paired timing cancels drift that hits every contender alike, but not a slowdown a kernel
brings on itself by drawing more power; so the benchmarks sample the clock while they run
(`sampled_clock`, printed with `describe_clock`), and `course.bench.clock_rounds` gives each
contender's rounds the samples taken during them. Sampling is a bonus: without NVML's Python
binding or the GPU's NVML there is no sampler, never an error.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from dataclasses import dataclass, field

# NVML clock-event reason bits (nvmlClocksEventReason*): what holds the clock below its top
REASONS = {
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x20: "thermal (software)",
    0x40: "thermal (hardware)",
    0x80: "power brake",
}
POWER_CAP, THERMAL = 0x4 | 0x80, 0x20 | 0x40 | 0x8


@dataclass
class Sample:
    t: float  # host perf_counter seconds
    mhz: float  # SM clock
    watts: float
    reasons: int  # NVML clock-event reason bits


@dataclass
class ClockSampler:
    """NVML readings on a side thread, every `period_s`, while the `with` block runs."""

    device: int = 0  # torch's device index
    period_s: float = 0.001
    samples: list[Sample] = field(default_factory=list)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self) -> "ClockSampler":
        import pynvml

        pynvml.nvmlInit()
        self._nvml = pynvml
        self._handle = _nvml_handle(pynvml, self.device)
        self._reasons = (
            getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
            or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._nvml.nvmlShutdown()

    def _run(self):
        nv, h = self._nvml, self._handle
        while not self._stop.is_set():
            self.samples.append(
                Sample(
                    time.perf_counter(),
                    nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                    nv.nvmlDeviceGetPowerUsage(h) / 1000,
                    self._reasons(h),
                )
            )
            time.sleep(self.period_s)

    def between(self, start: float, end: float) -> list[Sample]:
        return [s for s in self.samples if start <= s.t <= end]

    def summary(self) -> dict:
        """The SM clock over every sample (median, lowest, highest MHz) and how often a
        power limit held it down: printed beside a benchmark, since the ratio of two
        kernels can depend on the clock they shared."""
        if not self.samples:
            return {}
        mhz = [s.mhz for s in self.samples]
        return {
            "median_mhz": statistics.median(mhz),
            "min_mhz": min(mhz),
            "max_mhz": max(mhz),
            "power_capped": round(
                sum(bool(s.reasons & POWER_CAP) for s in self.samples) / len(self.samples), 3
            ),
        }


@contextlib.contextmanager
def sampled_clock():
    """A running ClockSampler, or None where NVML's Python binding (nvidia-ml-py) or the
    GPU's NVML is not available: sampling the clock is a bonus, never a requirement."""
    try:
        sampler = ClockSampler().start()
    except Exception:  # no pynvml, no NVML library, no permission
        yield None
        return
    try:
        yield sampler
    finally:
        sampler.stop()


def describe_clock(clock: dict) -> str:
    """'SM clock 1560 MHz (1335-1980), power-capped in 83% of samples', or ''."""
    if not clock:
        return ""
    return (
        f"SM clock {clock['median_mhz']:.0f} MHz ({clock['min_mhz']:.0f}-"
        f"{clock['max_mhz']:.0f}), power-capped in {100 * clock['power_capped']:.0f}% "
        "of samples"
    )


def _nvml_handle(pynvml, device: int):
    """NVML's handle for torch's device `device` (matched by PCI bus id: NVML numbers GPUs
    its own way when CUDA_VISIBLE_DEVICES reorders them)."""
    import torch

    p = torch.cuda.get_device_properties(device)
    bus = getattr(p, "pci_bus_id", None)
    if bus is None:
        return pynvml.nvmlDeviceGetHandleByIndex(device)
    pci = f"{getattr(p, 'pci_domain_id', 0):08X}:{bus:02X}:{getattr(p, 'pci_device_id', 0):02X}.0"
    return pynvml.nvmlDeviceGetHandleByPciBusId(pci)
