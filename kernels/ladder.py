"""The ladder, written down once: every step module, the notebook that introduces it, and the
GEMMs the course times against cuBLAS (the rungs of notebooks 07-11's chart).

Everything else reads it: tests/test_architecture.py (a step imports only earlier steps),
course.bench (which GEMM `--kernel NAME` prepares), course.lessons.ladder (the table and
the chart, each rung numbered by its notebook) and ARCHITECTURE.md's table of steps
(`python -m course ladder --write`). Plain data: importing it loads no kernel and no CuTe DSL.
"""

from __future__ import annotations

from dataclasses import dataclass


# kernels/ modules that are no step: the host side every step shares, and the device helpers
# a step calls like a library (dsmem)
HOST_MODULES = frozenset(
    {"host", "compile_cache", "artifacts", "gemm_host", "selftest", "ladder", "dsmem", "fp8_scales"}
)


@dataclass(frozen=True)
class Step:
    """A module of kernels/: the step before it plus one idea."""

    module: str  # kernels/<module>.py
    notebook: int  # the notebook that introduces it
    adds: str  # the idea, as ARCHITECTURE.md's table says it
    selftest: bool = True  # `python -m kernels.<module>` checks and times it


STEPS: tuple[Step, ...] = (
    Step("vector_add", 0, "a first kernel: `@cute.kernel`, `@cute.jit`, compile once"),
    Step("naive_gemm", 3, "local_tile, partitions, a TiledMMA of FMAs"),
    Step("copies", 4, "coalescing, 128-bit vectors, TiledCopy, cp.async"),
    Step("smem_banks", 5, "shared-memory reads at chosen addresses"),
    Step(
        "smem_transpose",
        5,
        "a transpose through shared memory, its tile layout (swizzled or not) a parameter",
        selftest=False,
    ),
    Step("mma_atom", 6, "one mma.sync atom, and a TiledMMA of them"),
    Step(
        "sm80_gemm",
        7,
        "tiles over K, cp.async ring, swizzled smem, ldmatrix, epilogue; the "
        "pieces later steps reuse",
    ),
    Step("tma", 8, "tensor maps, TMA loads, stores, multicast"),
    Step(
        "tma_gemm",
        9,
        "TMA loads into an mbarrier ring, written by hand; then the same ring "
        'as `PipelineTmaAsync` (`Config(ring="pipeline")`)',
    ),
    Step(
        "wgmma_gemm",
        10,
        "WGMMA from shared-memory descriptors, on step 09's `PipelineTmaAsync` ring",
    ),
    Step(
        "hopper_gemm",
        11,
        "warp specialization, persistence, clusters, TMA store, ping-pong: "
        "one preset per idea (`PRESETS`)",
    ),
    Step("fp8_gemm", 12, "float8 A and B with tensor, row or block scales; promotion into fp32"),
    Step(
        "fused_gemm",
        13,
        "bias (+ GELU) applied to the accumulator in registers before the epilogue stores it: "
        "epilogue fusion",
    ),
    Step(
        "split_k_gemm",
        13,
        "split-K: the CTAs of a cluster share a tile, each over a part of K, and add their "
        "partial sums through distributed shared memory",
    ),
    Step("tcgen05_gemm", 14, "tcgen05.mma into tensor memory, warp roles"),
    Step("cta_pair_gemm", 15, "CTA pairs: cta_group::2, barrier aliasing"),
    Step("cta_pair_clc_gemm", 15, "Cluster Launch Control and TMEM ping-pong"),
    Step(
        "blockscaled_gemm",
        16,
        "block-scaled MMA: MXFP8 and NVFP4 with scale factors in TMEM",
        selftest=False,
    ),
)


@dataclass(frozen=True)
class Part:
    """A module of device pieces that several later steps share (it holds no kernel): it sits
    in the ladder just before its first user, builds on the steps before it, and every step
    after it may import it."""

    module: str  # kernels/<module>.py
    first_user: str  # the step it comes just before
    adds: str


PARTS: tuple[Part, ...] = (
    Part(
        "sm90_parts",
        "tma_gemm",
        "the Hopper pieces steps 09-13 share: tensor maps, swizzled "
        "stages, k-tile copies, the ring as `PipelineTmaAsync`, WGMMA's tiled MMA; for step 11 "
        "and its variants, the cluster ring, multicast loads, the persistent schedule, the "
        "producer loop, the mainloop, ping-pong turns and the chunked epilogue",
    ),
    Part(
        "sm100_parts",
        "tcgen05_gemm",
        "the Blackwell pieces steps 14-16 share: warp roles, "
        "tile shapes, tiled MMA, TMA atoms, the two k-loops, the TMEM epilogue",
    ),
)


def in_order() -> list[Step | Part]:
    """Steps and parts modules in ladder order (each part just before its first user)."""
    return [x for s in STEPS for x in [p for p in PARTS if p.first_user == s.module] + [s]]


@dataclass(frozen=True)
class Gemm:
    """A GEMM that course.bench can check and time: `kernels.<module>.prepare(problem)`."""

    name: str  # the name `python -m course.bench gemm --kernel NAME` knows it by
    module: str  # its step module
    needs: str  # the GPU it needs (the module's NEEDS; tested equal)
    title: str

    @property
    def notebook(self) -> int:
        return step(self.module).notebook


GEMMS: tuple[Gemm, ...] = (
    Gemm("naive", "naive_gemm", "gpu", "scalar FMAs, 128x128x8 CTA tile, no shared memory"),
    Gemm("sm80", "sm80_gemm", "sm_80+", "cp.async multistage, swizzled smem, ldmatrix, mma.sync"),
    Gemm(
        "tma",
        "tma_gemm",
        "sm_90+",
        "TMA loads, full/empty mbarrier ring, ldmatrix, mma.sync "
        "(--config ring=pipeline: the ring as PipelineTmaAsync)",
    ),
    Gemm("wgmma", "wgmma_gemm", "sm_90a", "TMA + PipelineTmaAsync ring + WGMMA"),
    Gemm(
        "hopper",
        "hopper_gemm",
        "sm_90a",
        "warp-specialized, persistent, clustered, TMA-store epilogue",
    ),
    Gemm(
        "fp8",
        "fp8_gemm",
        "sm_90a",
        "notebook 11's kernel on float8 operands (--dtype e4m3), tensor/row/block scales",
    ),
    Gemm(
        "tcgen05_gemm",
        "tcgen05_gemm",
        "sm_100a",
        "1-CTA tcgen05 GEMM, 128x128 tiles, TMEM accumulator",
    ),
    Gemm(
        "cta_pair_gemm",
        "cta_pair_gemm",
        "sm_100a",
        "CTA pairs (cta_group::2), 256x128 tiles, one tile per cluster",
    ),
    Gemm(
        "cta_pair_clc_gemm",
        "cta_pair_clc_gemm",
        "sm_100a",
        "CTA-pair (cta_group::2) 256x128 tiles, TMEM ping-pong, CLC",
    ),
)


@dataclass(frozen=True)
class Rung:
    """One bar of the ladder chart: a GEMM (and a preset of its PRESETS) timed against cuBLAS."""

    gemm: str  # a Gemm's name
    preset: str  # "" for the module's default Config
    idea: str  # what this rung adds ("+ ..." for a preset that extends the one above)

    @property
    def notebook(self) -> int:
        return gemm(self.gemm).notebook

    @property
    def label(self) -> str:
        """'NN idea': NN is the notebook that introduces the rung."""
        return f"{self.notebook:02d} {self.idea}"


RUNGS: tuple[Rung, ...] = (
    Rung("naive", "", "naive SIMT (FFMA)"),
    Rung("sm80", "", "cp.async + ldmatrix + mma.sync"),
    Rung("tma", "", "TMA + mbarrier ring + mma.sync"),
    Rung("wgmma", "", "TMA + WGMMA"),
    Rung("hopper", "specialized", "+ warp specialization"),
    Rung("hopper", "persistent", "+ persistent, grouped order"),
    Rung("hopper", "cluster", "+ 2-CTA cluster, B multicast"),
    Rung("hopper", "tma_store", "+ TMA-store epilogue"),
    Rung("hopper", "pingpong", "pingpong consumers (variant)"),
)


def step(module: str) -> Step:
    return next(s for s in STEPS if s.module == module)


def gemm(name: str) -> Gemm:
    return next(g for g in GEMMS if g.name == name)
