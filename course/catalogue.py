"""The course map: every notebook of the ladder, what it teaches and what it needs.

This is the single list that `python -m course doctor`, notebook 00's course map
and the headless runner read, so they cannot disagree about what runs where. A lesson
may be listed before its notebook is written (`Lesson.written`): the course map and the
teachers' table say so, and the runner and the slides skip it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from course import ROOT
from course.runtime.hardware import Machine, machine
from course.runtime.live import Mode

NOTEBOOK_DIR = ROOT / "notebooks"


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    title: str
    idea: str
    needs: str  # what its live cells need (course.runtime.hardware.NEEDS)
    fallback: tuple[Mode, ...]  # what those cells do on a machine that cannot

    @property
    def path(self) -> Path:
        return NOTEBOOK_DIR / f"{self.number:02d}_{self.slug}.ipynb"

    @property
    def written(self) -> bool:
        return self.path.exists()

    def here(self, m: Machine | None = None) -> str:
        """What this notebook's live cells will do on machine `m` (default: this one)."""
        if not self.written:
            return "not written yet"
        if (m or machine()).can(self.needs):
            return Mode.LIVE.value
        return " + ".join(mode.value for mode in self.fallback)


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        0,
        "orientation",
        "Orientation",
        "the GEMM problem, this machine's roofline, how the course works",
        "gpu",
        (Mode.RECORDED, Mode.EXECUTED, Mode.COMPILE_ONLY),
    ),
    Lesson(
        1,
        "dsl_basics",
        "CuTe DSL basics",
        "a first kernel, static vs dynamic values, printing, control flow, TensorSSA, "
        "register tensors, compiling once, PTX/SASS and spills, the thread hierarchy and "
        "occupancy",
        "gpu",
        (Mode.EXECUTED, Mode.COMPILE_ONLY),
    ),
    Lesson(
        2,
        "layouts",
        "Layouts",
        "shape:stride, hierarchy, coalesce, composition, complement, divide, product",
        "cpu",
        (Mode.LIVE,),
    ),
    Lesson(
        3,
        "tiling",
        "Tiling and partitioning",
        "local_tile, local_partition, TV layouts, the thread trace of a naive GEMM, reading a "
        "timing row",
        "gpu",
        (Mode.EXECUTED, Mode.COMPILE_ONLY),
    ),
    Lesson(
        4,
        "copies",
        "Copies",
        "coalescing, vector width, TiledCopy, bandwidth vs the device's peak, Nsight Compute",
        "gpu",
        (Mode.EXECUTED, Mode.COMPILE_ONLY, Mode.RECORDED),
    ),
    Lesson(
        5,
        "swizzle",
        "Swizzle and bank conflicts",
        "banks, Swizzle<B,M,S>, TMA swizzle modes, predicted vs measured conflicts",
        "gpu",
        (Mode.EXECUTED, Mode.SIMULATED, Mode.COMPILE_ONLY, Mode.RECORDED),
    ),
    Lesson(
        6,
        "mma_atoms",
        "MMA atoms",
        "mma.sync fragments and their owners",
        "sm_80+",
        (Mode.EXECUTED, Mode.COMPILE_ONLY),
    ),
    Lesson(
        7,
        "tiled_gemm",
        "The tiled GEMM",
        "cp.async multistage, ldmatrix, swizzled smem, epilogue",
        "sm_80+",
        (Mode.EXECUTED, Mode.COMPILE_ONLY, Mode.RECORDED),
    ),
    Lesson(
        8,
        "tma",
        "TMA",
        "tensor maps, boxes, multicast in a cluster",
        "sm_90+",
        (Mode.EXECUTED, Mode.COMPILE_ONLY, Mode.SIMULATED, Mode.RECORDED),
    ),
    Lesson(
        9,
        "pipelines",
        "mbarrier pipelines",
        "phases, expect_tx, full/empty rings, deadlocks",
        "sm_90+",
        (Mode.EXECUTED, Mode.SIMULATED, Mode.COMPILE_ONLY, Mode.RECORDED),
    ),
    Lesson(
        10,
        "wgmma",
        "WGMMA",
        "warpgroups, smem descriptors, accumulator ownership",
        "sm_90a",
        (Mode.EXECUTED, Mode.COMPILE_ONLY, Mode.RECORDED),
    ),
    Lesson(
        11,
        "hopper_sol",
        "The Hopper speed-of-light GEMM",
        "warp specialization, persistence, tile order, cluster multicast",
        "sm_90a",
        (Mode.EXECUTED, Mode.COMPILE_ONLY, Mode.RECORDED),
    ),
    Lesson(
        12,
        "fp8",
        "FP8 on Hopper",
        "the e4m3 and e5m2 formats, tensorwise, rowwise and block scales, FP8 WGMMA and "
        "promotion into fp32, an FP8 step of the ladder timed against cuBLAS FP8",
        "sm_90a",
        (Mode.EXECUTED, Mode.RECORDED),
    ),
    Lesson(
        13,
        "last_percent",
        "The last five percent",
        "waves and the tail, launch overhead and CUDA graphs, tile order and L2, bias + GELU "
        "fused into the epilogue of notebook 11's kernel",
        "sm_90a",
        (Mode.EXECUTED, Mode.RECORDED),
    ),
    Lesson(
        14,
        "tcgen05",
        "Blackwell: TMEM and tcgen05",
        "tensor memory, UMMA, instruction descriptors",
        "sm_100a",
        (Mode.EXECUTED, Mode.COMPILE_ONLY, Mode.SIMULATED),
    ),
    Lesson(
        15,
        "cta_pair_clc_gemm",
        "The CTA-pair CLC GEMM",
        "cta_group::2, the pair's barrier handshake, 4 stages, 6 warp roles, TMEM ping-pong, CLC",
        "sm_100a",
        (Mode.EXECUTED, Mode.COMPILE_ONLY, Mode.SIMULATED),
    ),
    Lesson(
        16,
        "blockscaled",
        "Block-scaled MMA on Blackwell: MXFP8 and NVFP4",
        "FP4 (e2m1), UE8M0 and e4m3 scale factors, MXFP8, MXFP4 and NVFP4, the blocked layout "
        "of scale factors, tcgen05.cp into tensor memory, the block-scaled tcgen05.mma",
        "sm_100a",
        (Mode.EXECUTED, Mode.COMPILE_ONLY),
    ),
)


def lesson(number: int) -> Lesson:
    return LESSONS[number]


def written_lessons() -> tuple[Lesson, ...]:
    """The lessons whose notebook is on disk (a listed lesson may not be written yet)."""
    return tuple(l for l in LESSONS if l.written)


def course_map(m: Machine | None = None) -> list[dict]:
    """One row per notebook: number, title, idea, needs, and what happens here."""
    m = m or machine()
    return [
        {
            "#": f"{l.number:02d}",
            "notebook": l.path.name,
            "idea": l.idea,
            "live on": l.needs,
            "here": l.here(m),
        }
        for l in LESSONS
    ]
