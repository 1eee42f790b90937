"""Pieces every tiled GEMM of the ladder shares, so each kernel file shows only its new idea.

  * `grouped_tile`: the order CTAs visit C's tiles (groups of tile rows, column by
    column), so CTAs that run at the same time share A and B panels in L2;
  * `swizzled_rows`: a row-major shared-memory atom with the swizzle that makes
    16-byte row chunks conflict-free;
  * `store_tile`: the epilogue's last step, shared memory -> global memory with
    16-byte coalesced stores, predicated at the edges of C;
  * `operand_tensors`: A (M,K), B (N,K) and C (M,N) tensors built from raw pointers;
  * `validate_tn` and `launch_tn`: the Python side every K-major ("TN") GEMM shares --
    check the torch operands, allocate C, handle empty problems, launch.
"""
from __future__ import annotations

import math
from typing import Callable

import cutlass
import cutlass.cute as cute
import torch

from .common import KernelInputError, check_tensor, current_stream, gmem_pointer

TN_DTYPES = (torch.float16, torch.bfloat16)


@cute.jit
def grouped_tile(tile: cutlass.Int32, tiles_m: cutlass.Int32, tiles_n: cutlass.Int32,
                 group: cutlass.Constexpr):
    """Linear tile id -> (tile_m, tile_n): `group` tile rows walked column by column.
    (course.models.tile_order.grouped_tile is the same function in plain Python.)"""
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


def validate_tn(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None) -> None:
    """A (M,K) and B (N,K) K-major, C (M,N) row-major; K and N multiples of 8."""
    check_tensor(a, "a", dtypes=TN_DTYPES, ndim=2)
    check_tensor(b, "b", dtypes=(a.dtype,), ndim=2)
    (m, k), (n, kb) = a.shape, b.shape
    if k != kb:
        raise KernelInputError(f"a is {m}x{k} and b is {n}x{kb}: both must have K columns "
                               "(C = A . B^T with B given as N x K)")
    if k % 8 or n % 8:
        raise KernelInputError(f"K={k} and N={n} must be multiples of 8: rows of A, B and C "
                               "are copied in 16-byte pieces")
    for t, name in ((a, "a"), (b, "b")):
        if t.stride(0) != k:
            raise KernelInputError(f"{name} must be K-major and densely packed "
                                   f"(strides {tuple(t.stride())}); pass .contiguous()")
    if a.device != b.device:
        raise KernelInputError("a and b are on different devices")
    if c is not None:
        check_tensor(c, "c", dtypes=(a.dtype,), ndim=2)
        if c.shape != (m, n) or c.stride(0) != n or c.device != a.device:
            raise KernelInputError(f"c must be a contiguous {m}x{n} tensor on {a.device}")


def launch_tn(compiled_for: Callable, a: torch.Tensor, b: torch.Tensor,
              c: torch.Tensor | None, extra: Callable[[], tuple] = tuple) -> torch.Tensor:
    """Validate, allocate C if needed, and launch `compiled_for(dtype)` on (a, b, c).

    The compiled host wrapper takes (a_ptr, b_ptr, c_ptr, m, n, k, *extra(), stream);
    `extra` is called only after validation (it may ask the GPU for its properties).
    """
    validate_tn(a, b, c)
    if c is None:
        c = torch.empty(a.shape[0], b.shape[0], dtype=a.dtype, device=a.device)
    if c.numel() == 0:
        return c
    if a.shape[1] == 0:
        return c.zero_()
    kernel = compiled_for(a.dtype)
    kernel(*(gmem_pointer(t, a.dtype) for t in (a, b, c)), cutlass.Int32(a.shape[0]),
           cutlass.Int32(b.shape[0]), cutlass.Int32(a.shape[1]), *extra(), current_stream())
    return c
