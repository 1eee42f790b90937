"""Notebooks 00, 04, 05 and 06: exercises whose answer is not already on the page above them
(another shape, thread or tile than the one printed), right answers pass, and the answer the
page does print for its own example gets a hint saying so."""

import pytest

from course.exercises.check import check, solution


@pytest.mark.parametrize(
    "id,answer",
    [
        ("00.tiles", 1536),
        ("00.ksteps", (128, 512)),
        ("00.intensity", 819.2),
        ("00.bound", 1024),
        ("04.useful", 50),
        ("04.owner", 18),
        ("04.owner", "T18"),
        ("05.bank", 19),
        ("05.transpose", 2),
        ("05.transpose", "2"),  # typed as text
        ("05.transpose", 2.0),  # computed as a float
        ("05.padding", 65),
        ("06.a_values", 4),
    ],
)
def test_right_answers(id, answer):
    v = check(id, answer, quiet=True)
    assert v.ok, v


@pytest.mark.parametrize(
    "id,page_answer,says",
    [
        ("00.tiles", 1024, "too low"),  # the 4096^2 / 128x128 count section 1 prints
        ("00.ksteps", (128, 4), "16x8 block's K steps"),  # the wrong model: 4 MMAs per K step
        ("00.intensity", 1365, "too high"),  # the 4096^3 ideal the tiling table prints
        ("00.bound", 512, "just under 246"),
        ("04.useful", 12.5, "too low"),  # section 2's strided warp
        ("04.owner", 10, "column-major thread layout"),  # section 5's printed owner of (9, 2)
        ("05.bank", 7, "without the swizzle"),
        ("05.transpose", 32, "unpadded tile's count"),  # section 2's transpose prints 32
        ("05.transpose", 1, "32 different banks"),  # section 2's padding by one prints 1
        ("05.padding", 33, "columns would overlap"),  # section 4's 32x32 answer
        ("06.a_values", 8, "m16n8k16's count"),  # section 1 prints 8 for m16n8k16
    ],
)
def test_the_answer_printed_for_the_pages_own_example_is_not_this_ones(id, page_answer, says):
    v = check(id, page_answer, quiet=True)
    assert v.ok is False and says in v.message, v


def test_every_changed_exercise_has_a_worked_solution():
    for id in (
        "00.tiles",
        "00.ksteps",
        "00.intensity",
        "00.bound",
        "04.useful",
        "04.owner",
        "05.bank",
        "05.transpose",
        "05.padding",
        "06.a_values",
    ):
        assert check(id, ..., quiet=True).ok is None
        assert solution(id) and "no worked solution" not in solution(id)


def test_00_ksteps_counts_mma_sync_instructions_of_the_real_shape():
    from course.exercises.nb00 import MMA_SYNC, mma_sync_per_step

    assert MMA_SYNC == (16, 8, 16)  # mma.sync.m16n8k16: 16 rows, 8 columns, 16 of K
    assert mma_sync_per_step(128, 128, 64) == 8 * 16 * 4
    assert mma_sync_per_step(64, 128, 16, atom=(64, 128, 16)) == 1  # one WGMMA 64x128x16
