import math

import pytest
import torch

from course.bench import compare, poison_, relative_error, tolerance
from course.bench.correctness import INT_POISON, assert_close
from course.bench.gemm_bench import GemmProblem, check_gemm


def test_relative_error_is_frobenius():
    ref = torch.tensor([3.0, 4.0])
    assert relative_error(ref + torch.tensor([0.0, 0.5]), ref) == pytest.approx(0.1)
    assert relative_error(torch.tensor([float("nan"), 4.0]), ref) == math.inf
    with pytest.raises(ValueError, match="shape"):
        relative_error(torch.zeros(3), ref)


def test_poison_marks_unwritten_elements():
    out = poison_(torch.empty(4, 4))
    ref = torch.randn(4, 4, dtype=torch.float64)
    out[:3] = ref[:3].float()  # "forget" the last row
    verdict = compare(out, ref)
    assert not verdict.ok and verdict.unwritten == 4 and "never written" in str(verdict)
    ints = poison_(torch.empty(5, dtype=torch.int32))
    assert (ints == INT_POISON).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_a_correctly_rounded_result_passes_and_a_wrong_one_fails(dtype):
    ref = torch.randn(256, 256, dtype=torch.float64)
    assert compare(ref.to(dtype), ref).ok  # rounding alone is within tolerance
    wrong = ref.clone()
    wrong[:, :8] = 0  # one dropped column block: 3% of the columns
    assert not compare(wrong.to(dtype), ref).ok
    assert tolerance(dtype) < 1e-2


def test_assert_close_raises_with_the_verdict():
    with pytest.raises(AssertionError, match="FAIL"):
        assert_close(torch.ones(3), torch.zeros(3) + 2)


def cpu_gemm(a, b, c):
    c.copy_((a.float() @ b.float().t()).to(c.dtype))


def gemm_missing_last_k_block(a, b, c):
    k = a.shape[1] - 16
    c.copy_((a[:, :k].float() @ b[:, :k].float().t()).to(c.dtype))


def gemm_missing_last_row(a, b, c):
    c[:-1] = (a[:-1].float() @ b.float().t()).to(c.dtype)


@pytest.mark.parametrize("majors", [("k", "k"), ("m", "k"), ("k", "n"), ("m", "n")])
def test_check_gemm_catches_real_bugs(majors):
    p = GemmProblem(96, 80, 200, torch.bfloat16, a_major=majors[0], b_major=majors[1])
    assert check_gemm(cpu_gemm, p, device="cpu").ok
    assert not check_gemm(gemm_missing_last_k_block, p, device="cpu").ok
    assert check_gemm(gemm_missing_last_row, p, device="cpu").unwritten == 80


def test_gemm_problem_layouts():
    p = GemmProblem(64, 32, 16, torch.float16, a_major="m", b_major="n")
    a, b = p.operands("cpu")
    assert a.shape == (64, 16) and a.stride() == (1, 64)
    assert b.shape == (32, 16) and b.stride() == (1, 32)
    assert p.flops == 2 * 64 * 32 * 16 and str(p) == "64x32x16 float16"
    k = GemmProblem(8, 8, 8)
    a, b = k.operands("cpu")
    assert a.stride() == (8, 1) and b.stride() == (8, 1)
    assert torch.isnan(k.output("cpu")).all()
    with pytest.raises(ValueError):
        GemmProblem(0, 1, 1)


def test_fresh_inputs_every_check():
    p = GemmProblem(8, 8, 8, torch.float32)
    seen = []
    check_gemm(lambda a, b, c: (seen.append(a.clone()), cpu_gemm(a, b, c)), p, device="cpu")
    check_gemm(lambda a, b, c: (seen.append(a.clone()), cpu_gemm(a, b, c)), p, device="cpu")
    assert not torch.equal(seen[0], seen[1])


def test_one_table_of_tolerances():
    """The course's checks, a step's own self-test and the Blackwell emulator (which may not
    import kernels, so keeps the values by name) use the same tolerances."""
    from course.bench import correctness
    from course.emulate import blackwell_gemm
    from kernels import selftest

    assert correctness.TOLERANCE is selftest.TOLERANCE
    assert blackwell_gemm.TOLERANCE == {
        str(d).replace("torch.", ""): t
        for d, t in selftest.TOLERANCE.items()
        if str(d).replace("torch.", "") in blackwell_gemm.TOLERANCE
    }
    assert set(blackwell_gemm.TOLERANCE) == {"bfloat16", "float16", "float32"}
