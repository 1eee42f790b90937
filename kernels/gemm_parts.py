"""Pieces every tiled GEMM of the ladder shares, so each kernel file shows only its new idea.

  * `grouped_tile`: the order CTAs visit C's tiles (groups of tile rows, column by
    column), so CTAs that run at the same time share A and B panels in L2;
  * `swizzled_rows`: a row-major shared-memory atom with the swizzle that makes
    16-byte row chunks conflict-free;
  * `store_tile`: the epilogue's last step, shared memory -> global memory with
    16-byte coalesced stores, predicated at the edges of C;
  * `operand_tensors`: A (M,K), B (N,K) and C (M,N) tensors built from raw pointers.
"""
from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute


@cute.jit
def grouped_tile(tile: cutlass.Int32, tiles_m: cutlass.Int32, tiles_n: cutlass.Int32,
                 group: cutlass.Constexpr):
    """Linear tile id -> (tile_m, tile_n): `group` tile rows walked column by column.
    (course.tile_order.grouped_tile is the same function in plain Python.)"""
    per_group = group * tiles_n
    first_m = (tile // per_group) * group
    rows = cutlass.min(tiles_m - first_m, group)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


def swizzled_rows(width: int, copy_elems: int):
    """8 rows x `width` elements, swizzled so the 16-byte chunks of consecutive rows
    fall in different banks (Swizzle<B,3,3> on 16-bit elements)."""
    bits = min(3, int(math.log2(width // copy_elems)))
    atom = cute.make_layout((8, width), stride=(width, 1))
    return cute.make_composed_layout(cute.make_swizzle(bits, 3, 3), 0, atom)


def operand_tensors(a_ptr, b_ptr, c_ptr, m, n, k):
    """A (M,K) and B (N,K) K-major, C (M,N) row-major; K and N are multiples of 8."""
    k = cute.assume(k, divby=8)
    n = cute.assume(n, divby=8)
    mA = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k, 1)))
    mB = cute.make_tensor(b_ptr, cute.make_layout((n, k), stride=(k, 1)))
    mC = cute.make_tensor(c_ptr, cute.make_layout((m, n), stride=(n, 1)))
    return mA, mB, mC


def row_copy(dtype, threads: int, width: int, atom_op=None):
    """A tiled copy moving rows of a `width`-wide tile in 16-byte pieces."""
    elems = 128 // dtype.width
    op = atom_op if atom_op is not None else cute.nvgpu.CopyUniversalOp()
    atom = cute.make_copy_atom(op, dtype, num_bits_per_copy=128)
    chunks = width // elems
    thr = cute.make_layout((threads // chunks, chunks), stride=(chunks, 1))
    return cute.make_tiled_copy_tv(atom, thr, cute.make_layout((1, elems)))


@cute.jit
def store_tile(copy_c: cute.TiledCopy, sC: cute.Tensor, gC: cute.Tensor, cC: cute.Tensor,
               shape_mn, tidx: cutlass.Int32):
    """Shared -> global for one C tile; cC holds each element's (m, n) coordinate."""
    thr = copy_c.get_slice(tidx)
    tCsC, tCgC, tCcC = thr.partition_S(sC), thr.partition_D(gC), thr.partition_S(cC)
    regs = cute.make_fragment_like(tCsC)
    cute.autovec_copy(tCsC, regs)
    for r in cutlass.range(cute.size(tCgC, mode=[1]), unroll_full=True):
        for c in cutlass.range(cute.size(tCgC, mode=[2]), unroll_full=True):
            if cute.elem_less(tCcC[0, r, c], shape_mn):
                cute.copy(copy_c, regs[None, r, c], tCgC[None, r, c])


def partition_pairs(make_tiled_mma, shape, threads: int, operand: str,
                    arch: str | None = None) -> list:
    """[((thread, value), coord), ...]: where each thread's values of operand A, B or C
    sit in a tile of `shape`, read from CuTe's own partition of a coordinate tensor.
    `make_tiled_mma()` builds the TiledMMA inside the trace; `arch` names the target when
    the MMA exists only there (wgmma: sm_90a). Runs on a CPU (no launch)."""
    if operand not in ("A", "B", "C"):
        raise ValueError("operand must be 'A', 'B' or 'C'")
    out: list = []
    if arch is None:
        _collect_pairs(make_tiled_mma, tuple(shape), threads, operand, out)
    else:  # tracing happens during compilation; nothing is launched
        cute.compile(_collect_pairs, make_tiled_mma, tuple(shape), threads, operand, out,
                     options=f"--gpu-arch {arch}")
    return out


@cute.jit
def _collect_pairs(make_tiled_mma: cutlass.Constexpr, shape: cutlass.Constexpr,
                   threads: cutlass.Constexpr, operand: cutlass.Constexpr,
                   out: cutlass.Constexpr):
    tiled = make_tiled_mma()
    coords = cute.make_identity_tensor(shape)
    for t in cutlass.range_constexpr(threads):
        thr = tiled.get_slice(t)
        part = {"A": thr.partition_A, "B": thr.partition_B, "C": thr.partition_C}[operand](coords)
        for v in cutlass.range_constexpr(cute.size(part)):
            out.append(((t, v), tuple(part[v])))
