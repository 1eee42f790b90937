"""Notebook 04's kernel exercise: the TiledCopy of a vectorized, coalesced copy."""

import cutlass
import cutlass.cute as cute


def make_vector_copy(threads):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    return cute.make_tiled_copy_tv(atom, cute.make_layout(threads), cute.make_layout(4))


def make_vector_copy__scalar_atom(threads):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=32)
    return cute.make_tiled_copy_tv(atom, cute.make_layout(threads), cute.make_layout(4))


def make_vector_copy__thread_owns_a_chunk(threads):
    # 16 contiguous floats per thread: each thread's 4 vectors are its own, so lane l+1's
    # first vector is 64 bytes after lane l's
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    return cute.make_tiled_copy_tv(atom, cute.make_layout(threads), cute.make_layout(16))


def make_vector_copy_tv_layout(threads):
    """The same TiledCopy from an explicit (thread, value) -> element layout."""
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    tv = cute.make_layout((threads, 4), stride=(4, 1))  # thread t's value v is element 4t + v
    return cute.make_tiled_copy(atom, tv, (threads * 4,))


def make_vector_copy_tuple_shapes(threads):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    return cute.make_tiled_copy_tv(
        atom, cute.make_layout((threads,), stride=(1,)), cute.make_layout((4,), stride=(1,))
    )


def make_vector_copy_layout_tv(threads):
    """NVIDIA's elementwise_add spelling: (tiler, TV layout) from make_layout_tv, then the
    TiledCopy around them, with a copy atom of one element: the compiler merges each
    thread's 4 contiguous floats into one 128-bit access."""
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
    tiler, tv = cute.make_layout_tv(cute.make_layout(threads), cute.make_layout(4))
    return cute.make_tiled_copy(atom, tv, tiler)


def make_vector_copy_ordered_layouts(threads):
    """elementwise_add's other spelling: make_tiled_copy_tv over ordered layouts, the
    atom's width left to the element type."""
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
    return cute.make_tiled_copy_tv(
        atom,
        cute.make_ordered_layout((threads,), order=(0,)),
        cute.make_ordered_layout((4,), order=(0,)),
    )


def make_vector_copy__element_atom_owns_a_chunk(threads):
    # NVIDIA's one-element atom, but 16 contiguous floats per thread: the compiler's
    # 128-bit loads of lane l+1 start 64 bytes after lane l's
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
    return cute.make_tiled_copy_tv(atom, cute.make_layout(threads), cute.make_layout(16))


REFERENCE = {"04.vector_copy": make_vector_copy}
WRONG = {
    "04.vector_copy": {
        make_vector_copy__scalar_atom: ("vector width", "cpu"),
        make_vector_copy__thread_owns_a_chunk: ("uncoalesced", "cpu"),
        make_vector_copy__element_atom_owns_a_chunk: ("uncoalesced", "cpu"),
    }
}
ALTERNATIVES = {
    "04.vector_copy": [
        make_vector_copy_tv_layout,
        make_vector_copy_tuple_shapes,
        make_vector_copy_layout_tv,
        make_vector_copy_ordered_layouts,
    ]
}
