"""NVIDIA's Hopper idioms in the checkers' own models: a correct loop written the way
NVIDIA's dense_gemm writes it is checked, not skipped, and the same idiom misused is caught."""

from course.exercises import nb10_mainloop_kernel as nb10
from course.exercises.kernel_check import PASS, FAIL
from course.exercises.learner_code import edited
from course.exercises.solutions import nb10_solutions


class _Compiled:
    def __init__(self, fn):
        self.fn = fn


def test_the_wgmma_loop_model_checks_nvidias_try_wait_peek():
    """dense_gemm peeks the next stage with consumer_try_wait and hands the token to
    consumer_wait: the CPU model runs it (it said "does not know ring.consumer_try_wait")."""
    finding = nb10.protocol_holds(_Compiled(nb10_solutions.mainloop_peeked_try_wait))
    assert finding.status == PASS, finding


# a token that claims every stage has landed: consumer_wait never waits
_always_ready = edited(
    nb10_solutions.mainloop_peeked_try_wait,
    "mainloop_peeked_try_wait__token_always_true",
    ("        ring.consumer_wait(read, peek)\n", "        ring.consumer_wait(read, True)\n"),
)


def test_a_token_that_skips_the_wait_is_caught():
    finding = nb10.protocol_holds(_Compiled(_always_ready))
    assert finding.status == FAIL, finding
