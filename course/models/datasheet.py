"""Published ceilings of the GPUs the course records on, drawn beside the measured ones.

The course's roofs are measured (cuBLAS's bf16 rate, torch's device-to-device copy); a
datasheet number says how far those measurements sit below what the vendor publishes.
A GPU missing from `DATASHEETS` simply gets its measured ceilings alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Datasheet:
    """A GPU's published compute and memory ceilings, with where they are published."""

    tflops: float  # dense bf16/fp16 tensor-core rate, TFLOP/s (no sparsity)
    gbps: float  # DRAM bandwidth, GB/s (10^9 bytes per second)
    source: str  # the publication the two numbers come from

    @property
    def ridge(self) -> float:
        """FLOP per DRAM byte where the datasheet's two roofs meet."""
        return self.tflops * 1e3 / self.gbps


# Keyed by the name the GPU reports (torch.cuda.get_device_properties(0).name), as the
# provenance of every record in results/*.json spells it.
DATASHEETS: dict[str, Datasheet] = {
    "NVIDIA H100 80GB HBM3": Datasheet(
        tflops=989.4,
        gbps=3350.0,
        source="NVIDIA H100 datasheet (H100 SXM5): 989.4 TFLOP/s dense bf16/fp16 tensor core "
        "(1,979 with sparsity), 3.35 TB/s HBM3",
    ),
}


def datasheet(gpu_name: str | None) -> Datasheet | None:
    """The published ceilings of `gpu_name`, or None for a GPU the table does not list."""
    return DATASHEETS.get((gpu_name or "").strip())
