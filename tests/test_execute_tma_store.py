"""Exercise 11.tma_store on the CPU executor: the course's store_chunk and its alternatives run
right, and each known wrong variant is caught by the run itself -- a hazard of the TMA store
(course.execute.tma) or its values -- with the hint words its H100 verdict carries
(course/exercises/solutions/nb11_solutions.py's WRONG), not only by the PTX checks that stop
it before a run in `check`."""

import pytest

from course.exercises.solutions import nb11_solutions

ID = "11.tma_store"


def _run(fn) -> list:
    from course.exercises.executor_checks import EXECUTOR_CHECKS

    return EXECUTOR_CHECKS[ID](fn, True)


@pytest.mark.parametrize("fn", [nb11_solutions.store_chunk, *nb11_solutions.ALTERNATIVES[ID]])
def test_the_right_epilogues_run_right_on_the_executor(fn):
    ran = [f for f in _run(fn) if f.status != "not run"]
    assert ran and all(f.status == "pass" for f in ran), [f.line() for f in ran]


WRONG = nb11_solutions.WRONG[ID]


@pytest.mark.parametrize("fn", list(WRONG), ids=[fn.__name__ for fn in WRONG])
def test_each_wrong_epilogue_is_caught_by_the_run_with_its_hint(fn):
    words, _ = WRONG[fn]
    first = next(f for f in _run(fn) if f.status == "fail")
    assert first.ran and words in first.hint, first.line()


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(
    "fn", [nb11_solutions.store_chunk__no_wait, nb11_solutions.store_chunk__no_second_barrier]
)
def test_a_buffer_reused_too_early_is_named_under_other_interleavings(fn, seed, monkeypatch):
    """Which warp writes the buffer first, and whether the store warp has waited by then,
    depends on the interleaving: the hint names the mistake either way."""
    import functools

    from course.execute import runner

    monkeypatch.setattr(runner, "run", functools.partial(runner.run, seed=seed))
    test_each_wrong_epilogue_is_caught_by_the_run_with_its_hint(fn)
