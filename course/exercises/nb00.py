"""Notebook 00's exercises: counting the GEMM."""
from __future__ import annotations

from course.exercises.check import Wrong, exercise, number
from course.models.gemm_model import Gemm

G = Gemm(4096, 4096, 4096)


@exercise("00.tiles", "How many 128x128 tiles cover a 4096x4096 C?",
          "tiles across times tiles down; each is 4096 / 128.",
          "(4096/128) * (4096/128) = 32 * 32 = 1024 CTAs.")
def _tiles(answer):
    return number(answer, G.tiles(128, 128))


@exercise("00.ksteps", "With 64-wide K chunks, how many K-loop iterations does one 4096^3 tile "
          "run, and how many k16 MMA instructions per iteration?",
          "4096 / 64 iterations; an MMA instruction consumes 16 of the 64 K-elements.",
          "(64, 4): 4096 / 64 = 64 iterations, 64 / 16 = 4 MMAs each.")
def _ksteps(answer):
    try:
        iters, mmas = answer
    except (TypeError, ValueError):
        raise Wrong("answer with a pair: (iterations, mmas_per_iteration)")
    ok_iters, _ = number(iters, G.k_steps(64))
    ok_mmas, _ = number(mmas, 64 // 16)
    if ok_iters and ok_mmas:
        return True, "64 iterations of 4 MMAs each."
    return False, ("the iteration count is off. " if not ok_iters else "") + \
        ("the MMAs per iteration are off." if not ok_mmas else "")


@exercise("00.intensity", "What is the ideal arithmetic intensity (FLOP per byte) of a 4096^3 "
          "bf16 GEMM that reads A and B once and writes C once in bf16?",
          "2*M*N*K FLOP over (M*K + N*K + M*N) * 2 bytes.",
          "2*4096^3 / (3 * 4096^2 * 2) = 4096/3 ~ 1365 FLOP/B.")
def _intensity(answer):
    return number(answer, G.intensity(), rel=0.02, unit="FLOP/B")


@exercise("00.bound", "On a GPU whose ridge point is 246 FLOP/B, is a 4096^3 bf16 GEMM with "
          "128x128 tiles and no L2 reuse memory-bound or compute-bound? Answer 'memory' or "
          "'compute'.",
          "use course.models.gemm_model.Gemm(4096, 4096, 4096).intensity(128, 128) and compare.",
          "memory: 128x128 tiles with no reuse give ~63 FLOP/B, far below 246. L2 reuse "
          "between concurrently running CTAs is what rescues it (notebook 11).")
def _bound(answer):
    if not isinstance(answer, str) or answer.strip().lower() not in ("memory", "compute"):
        raise Wrong("answer 'memory' or 'compute'")
    truth = "memory" if G.intensity(128, 128) < 246 else "compute"
    return answer.strip().lower() == truth, ""
