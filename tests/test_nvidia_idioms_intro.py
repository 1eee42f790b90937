"""The first kernel exercises (01-06) written the way NVIDIA's CuTe DSL examples write the
same code (Ampere elementwise_add, tensorop_gemm, Hopper dense_gemm_persistent) are right.

tests/test_kernel_exercises.py runs every registered alternative through its checker; the
tests here pin the two CPU checks that NVIDIA's spelling found tuned to the course's:

* 04.vector_copy's coalescing model took a lane's access width from the copy atom, so
  elementwise_add's one-element atom over 4 contiguous floats (which the compiler turns
  into one ld.global.v4 per lane, as the PTX shows) was modelled as 4-byte accesses
  16 bytes apart: "uncoalesced", for a copy that is coalesced;
* 06.mma_tile's "accumulator is stored" rule looked for each mma result register in a
  st.global, so tensorop_gemm's epilogue through shared memory was "never stored".

Both rules now read what the hardware does, and stay wrong for the mistakes they exist for.
"""

import pytest

from course.exercises import kernel_check, kernel_exercises
from course.exercises.solutions import nb04_solutions as s04
from course.exercises.solutions import nb06_solutions as s06


def _finding(exercise: str, fn, name: str):
    """The finding `name` of the checks every machine runs (no executor, no GPU)."""
    ex = kernel_exercises.lookup(exercise)
    report = kernel_check.run_checks(ex, fn, gpu=False, executor=False)
    return next(f for f in report.findings if f.check == name)


@pytest.mark.parametrize(
    "fn", [s04.make_vector_copy_layout_tv, s04.make_vector_copy_ordered_layouts]
)
def test_a_one_element_atom_merged_into_128_bit_loads_is_coalesced(fn):
    """The lane's width is the PTX's ld.global.v4 (16 B), not the atom's 4 B."""
    found = _finding("04.vector_copy", fn, "one warp's request is coalesced")
    assert found.status == kernel_check.PASS, found
    assert "32 lanes x 16 B" in found.detail and "100.0% useful" in found.detail, found


def test_a_one_element_atom_over_a_chunk_per_thread_is_still_uncoalesced():
    found = _finding(
        "04.vector_copy",
        s04.make_vector_copy__element_atom_owns_a_chunk,
        "one warp's request is coalesced",
    )
    assert found.status == kernel_check.FAIL and "uncoalesced" in found.hint, found


def test_an_accumulator_staged_through_shared_memory_reaches_c():
    """tensorop_gemm's epilogue: st.shared, a barrier, ld.shared, st.global."""
    found = _finding(
        "06.mma_tile", s06.mma_tile_kernel_smem_epilogue, "the accumulator is stored to C"
    )
    assert found.status == kernel_check.PASS, found
    assert "through shared memory" in found.detail, found


def test_an_accumulator_left_in_shared_memory_is_never_stored():
    found = _finding(
        "06.mma_tile",
        s06.mma_tile_kernel_smem_epilogue__never_copied_out,
        "the accumulator is stored to C",
    )
    assert found.status == kernel_check.FAIL and "store the accumulator" in found.hint, found
