"""A class's learners on the machine's real GPUs (course.tools.gpu_share_check): each
learner's process, started with the environment the hub's spawner gives it, sees the GPU it
was assigned (from inside, through torch, and from outside, through nvidia-smi), runs a
course kernel right, keeps its GPU when it returns, and keeps answering while another
learner's kernel hangs and a third learner's process crashes. With several GPUs the learners
are spread across them; that part needs a machine with at least two."""

import pytest

from course.tools.gpu_share import visible_gpus

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def seen():
    from course.tools.gpu_share_check import check

    if not visible_gpus():
        pytest.skip("no GPU visible to nvidia-smi")
    return check(learners=4)


def test_each_learner_runs_on_the_gpu_it_was_given(seen):
    out = seen["outcome"]
    assert out["kernels_right"], seen
    assert out["inside_matches_assigned"], seen
    assert out["outside_matches_inside"], seen


def test_a_returning_learner_keeps_their_gpu(seen):
    assert seen["outcome"]["returning_keeps"], seen


def test_a_hung_kernel_and_a_crash_leave_the_others_answering(seen):
    assert seen["outcome"]["crash_exit_code"] == 3, seen
    assert seen["outcome"]["others_answer_after_hang_and_crash"], seen


def test_learners_are_spread_across_the_gpus(seen):
    if len(seen["gpus"]) < 2:
        pytest.skip(
            f"needs a machine with several GPUs; this one has {len(seen['gpus'])} "
            f"(the learners shared it: {seen['learners_per_gpu']})"
        )
    assert seen["outcome"]["spread"], seen
    assert max(seen["learners_per_gpu"].values()) - min(seen["learners_per_gpu"].values()) <= 1
