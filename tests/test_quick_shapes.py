"""The kernel exercises' quick shapes (the CPU executor's run, a GPU's sanitizer run) show what
their full shapes show: a ring that wraps, and full and partial tiles in M and N.

A stage released before the MMAs that read it are done is overwritten only when the ring comes
round and TMA (or cp.async) refills it: with no more k-tiles than stages no stage is ever
refilled and such a kernel computes the right numbers. A mistake at a tile's edge (a missing
predicate, a row or column index off by the tile) shows only where a partial tile sits beside
a full one. So each exercise with a ring must have a quick shape with more k-tiles than stages,
and each must have, along M and along N, a full tile and a partial one.

Everything is read off the exercise's own configuration and kernel object (tile shape, stage
count as the kernel resolves it), never written down here, so a new Config keeps the test
honest.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import pytest


class Ring(NamedTuple):
    """What one CTA's (or, for CTA pairs, one scheduled pair's) tile and ring look like."""

    tile_m: int
    tile_n: int
    tile_k: int | None  # None: the kernel has no ring over K
    stages: int | None


def _types(gemm, dtype, out_dtype=None):
    return gemm.operands.types(dtype, out_dtype or gemm.operands.out_dtype(dtype))


def _kernel(module, fn, dtype, config, arch, out_dtype=None):
    """The exercise's own kernel object, built the way its GemmHost builds it."""
    gemm = module.gemm_with(fn)
    return gemm.kernel(_types(gemm, dtype, out_dtype), config, arch, "k", "k")


def _reference(exercise_id: str):
    from course.exercises import solutions

    (case,) = [c for c in solutions.cases([exercise_id]) if c.kind == "reference"]
    return case.fn


def _sm80(module, exercise_id):
    import torch

    cfg = module.exercise_config()
    k = _kernel(module, _reference(exercise_id), torch.bfloat16, cfg, "sm_80")
    m, n, tk = k.tile
    return Ring(m, n, tk, cfg.stages)


def _tma_box(module, exercise_id):
    """08's kernel copies one box per CTA, waited for on one barrier at phase 0: there is no
    ring over K to wrap, only box edges in rows (M) and columns (N)."""
    from kernels import tma

    cfg = tma.Config()
    return Ring(cfg.box_rows, cfg.box_cols, None, None)


def _sm90_ring(module, exercise_id):
    """09 and 10: a TMA ring of cfg.stages k-tiles, each one 128-byte swizzle row of bf16."""
    from kernels.gemm_host import tile_k

    cfg = module.exercise_config()
    return Ring(cfg.tile_m, cfg.tile_n, tile_k(16), cfg.stages)


def _hopper(module, exercise_id, dtype_name="bfloat16"):
    """11-13: the persistent Hopper GEMM; its stage count is what fits beside the epilogue
    (kernel.stages). On the executor and on an H100 every cluster takes one tile of these
    shapes, so the ring wraps within a tile or not at all."""
    import torch

    dtype = getattr(torch, dtype_name)
    k = _kernel(module, _reference(exercise_id), dtype, module.exercise_config(), "sm_90a")
    tile_m, tile_n = k.tile
    return Ring(tile_m, tile_n, k.tile_k, k.stages)


def _fp8(module, exercise_id):
    return _hopper(module, exercise_id, "float8_e4m3fn")


def _blackwell(module, exercise_id, config=None, dtype_name="bfloat16", out_dtype=None):
    """14-16: tcgen05 kernels; M is counted in MMA tiles (a CTA pair's 256 rows in 15: the CLC
    scheduler hands out whole pair tiles)."""
    import torch

    from kernels import tcgen05_gemm

    cfg = config or tcgen05_gemm.Config()
    dtype = getattr(torch, dtype_name)
    k = _kernel(module, _reference(exercise_id), dtype, cfg, "sm_100a", out_dtype)
    return Ring(k.tile.mma_m, k.tile.n, k.tile.k, k.stages)


def _clc(module, exercise_id):
    from kernels import cta_pair_clc_gemm

    return _blackwell(module, exercise_id, cta_pair_clc_gemm.Config())


def _blockscaled(module, exercise_id):
    import torch

    return _blackwell(module, exercise_id, module.exercise_config(), "float8_e4m3fn", torch.float32)


EXERCISES = {
    "07.mainloop": ("nb07", _sm80),
    "08.arm_and_load": ("nb08_tma_kernel", _tma_box),
    "09.ring": ("nb09_ring_kernel", _sm90_ring),
    "10.wgmma_mainloop": ("nb10_mainloop_kernel", _sm90_ring),
    "11.tma_store": ("nb11_tma_store_kernel", _hopper),
    "12.promotion": ("nb12_promotion_kernel", _fp8),
    "12.overlap": ("nb12_overlap_kernel", _fp8),
    "13.residual_epilogue": ("nb13_residual_kernel", _hopper),
    "14.epilogue_role": ("nb14_epilogue_kernel", _blackwell),
    "15.read_next_tile": ("nb15_clc_kernel", _clc),
    "16.sf_copy_and_mma": ("nb16_sf_kernel", _blockscaled),
}


def ring_of(exercise_id: str):
    name, read = EXERCISES[exercise_id]
    module = importlib.import_module(f"course.exercises.{name}")
    return module, read(module, exercise_id)


def tiles(extent: int, tile: int) -> tuple[int, bool]:
    """(full tiles, is there a partial one) of `extent` cut into tiles of `tile`."""
    return extent // tile, extent % tile > 0


def k_tiles(k: int, tile_k: int) -> int:
    return -(-k // tile_k)


def wraps(shapes, ring: Ring) -> list:
    """The shapes with more k-tiles than stages: some stage is refilled."""
    return [s for s in shapes if k_tiles(s[-1], ring.tile_k) > ring.stages]


def has_full_and_partial(extents, tile: int) -> bool:
    """Some extent has a full tile beside a partial one."""
    return any(tiles(e, tile)[0] >= 1 and tiles(e, tile)[1] for e in extents)


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_a_quick_shape_wraps_the_ring(exercise_id):
    module, ring = ring_of(exercise_id)
    if ring.stages is None:
        # 08.arm_and_load: one box, one barrier at phase 0 (kernels.tma.TmaLoad); nothing wraps
        assert ring.tile_k is None
        return
    counts = [k_tiles(s[-1], ring.tile_k) for s in module.QUICK_SHAPES]
    assert wraps(module.QUICK_SHAPES, ring), (
        f"{exercise_id}: k-tiles per quick shape {counts} never exceed the {ring.stages} stages: "
        "no stage is ever refilled, so a stage released too early is judged right"
    )


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_the_full_shapes_wrap_the_ring_too(exercise_id):
    """The GPU's full run must show what the quick run shows, or a verdict differs by machine."""
    module, ring = ring_of(exercise_id)
    if ring.stages is None:
        return
    assert wraps(module.SHAPES, ring), f"{exercise_id}: no full shape wraps {ring}"


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_quick_shapes_have_full_and_partial_tiles_in_m_and_n(exercise_id):
    module, ring = ring_of(exercise_id)
    ms = [s[0] for s in module.QUICK_SHAPES]
    ns = [s[1] for s in module.QUICK_SHAPES]
    assert has_full_and_partial(ms, ring.tile_m), f"{exercise_id}: M {ms} vs {ring.tile_m}"
    assert has_full_and_partial(ns, ring.tile_n), f"{exercise_id}: N {ns} vs {ring.tile_n}"


def test_the_helpers_count_as_the_kernels_do():
    """The counting itself: 520 = 8 full k-tiles of 64 and a partial one (9 in all)."""
    assert tiles(520, 64) == (8, True) and k_tiles(520, 64) == 9
    assert tiles(128, 128) == (1, False) and not has_full_and_partial([128, 65], 128)
    assert has_full_and_partial([129], 128)
    ring = Ring(128, 256, 64, 4)
    assert wraps([(1, 1, 320)], ring) and not wraps([(1, 1, 256)], ring)


# ---------------------------------------------------------------- what only a wrapping ring shows

RELEASED_TOO_EARLY = [  # (exercise, wrong variant): a stage handed back before it was read
    ("09.ring", "ring__early_release"),
    ("16.sf_copy_and_mma", "mma_k_loop__released_before_the_mmas_are_done"),
]


def _variant(exercise_id: str, name: str):
    from course.exercises import solutions

    (case,) = [c for c in solutions.cases([exercise_id]) if c.name == name]
    return case.fn


def _executor_run(exercise_id: str, fn) -> list:
    from course.exercises import executor_checks

    return executor_checks.EXECUTOR_CHECKS[exercise_id](fn, True)


@pytest.mark.parametrize("exercise_id,name", RELEASED_TOO_EARLY)
def test_a_stage_released_too_early_is_caught_by_the_executor_only_once_the_ring_wraps(
    exercise_id, name, monkeypatch
):
    """The executor's run of the quick shapes finds the refill under a reader; the same run of
    only the quick shapes that do not wrap finds nothing (what the quick shapes used to be)."""
    module, ring = ring_of(exercise_id)
    fn = _variant(exercise_id, name)
    failed = [f for f in _executor_run(exercise_id, fn) if f.status == "fail"]
    assert failed and "overwrite" in failed[0].check, failed
    short = tuple(s for s in module.QUICK_SHAPES if s not in wraps(module.QUICK_SHAPES, ring))
    short = short or ((module.QUICK_SHAPES[0][0], module.QUICK_SHAPES[0][1], ring.tile_k),)
    monkeypatch.setattr(module, "QUICK_SHAPES", short)
    assert all(f.status == "pass" for f in _executor_run(exercise_id, fn))


def test_notebook_16s_early_release_is_told_the_mma_still_reads_the_stage():
    from course.execute import hazards
    from course.exercises import executor_checks

    fn = _variant("16.sf_copy_and_mma", "mma_k_loop__released_before_the_mmas_are_done")
    (failed,) = [f for f in _executor_run("16.sf_copy_and_mma", fn) if f.status == "fail"]
    assert failed.hint == executor_checks.BLACKWELL_HINTS[(hazards.UNIT_MMA, hazards.NOT_RETIRED)]
