"""Notebook 05's measuring kernel: compiled here (load widths checked), run on a GPU, and
counted by Nsight Compute where it can read the GPU's counters."""

import pytest
import torch

from course.bench import ncu
from course.models import smem_access as sa
from course.bench import bank_conflicts as bench_banks
from kernels import smem_banks
from kernels.host import KernelInputError

from .helpers import pretend_gpu


@pytest.mark.compile
@pytest.mark.parametrize(
    "vec,ptx,sass",
    [
        (1, r"ld\.shared\.b32", r"LDS "),
        (2, r"ld\.shared\.v2\.b32", r"LDS\.64"),
        (4, r"ld\.shared\.v4\.b32", r"LDS\.128"),
    ],
)
def test_loads_have_the_asked_width(vec, ptx, sass):
    art = smem_banks.artifacts("sm_90a", n_req=2, vec=vec)
    loads = art.ptx_lines(r"ld\.shared")
    assert loads and all(__import__("re").search(ptx, l) for l in loads), loads
    assert art.sass_lines(sass)
    assert not art.ptx_lines(r"ld\.local|st\.local")  # no spills
    # no shared load escapes the timing loop: every one is predicated by its lane's offset
    assert all("@P" in l for l in art.sass_lines(r"\bLDS"))


def test_reference_sums():
    off = torch.full((2, 32), -1, dtype=torch.int32)
    off[0, 0], off[1, 0], off[0, 1] = 3, 5, 0
    data = torch.arange(smem_banks.SMEM_WORDS, dtype=torch.float32)
    want = smem_banks.reference(off, data, vec=2, iters=3)
    assert want[0] == 3 * ((6 + 7) + (10 + 11)) and want[1] == 3 * (0 + 1) and want[2] == 0


def test_validation_messages(monkeypatch):
    pretend_gpu(monkeypatch)
    off = torch.zeros(1, 32, dtype=torch.int32)
    data = torch.zeros(smem_banks.SMEM_WORDS)
    with pytest.raises(KernelInputError, match="move it to the GPU"):
        smem_banks.run(off, data)
    with pytest.raises(KernelInputError, match="dtype int64"):
        smem_banks.run(off.long(), data)


def test_signature_refuses_bad_shapes():
    with pytest.raises(KernelInputError, match="vec"):
        smem_banks.artifacts("sm_90a", n_req=1, vec=3)
    with pytest.raises(KernelInputError, match="requests"):
        smem_banks.artifacts("sm_90a", n_req=0, vec=1)


@pytest.mark.gpu
@pytest.mark.parametrize("name", [c.name for c in sa.cases()])
def test_every_case_reads_what_the_model_says(name):
    c = sa.case(name)
    out = bench_banks.run_case(c, iters=3, blocks=4, threads=128)
    torch.cuda.synchronize()
    assert bench_banks.check_case(c, out, 3)


@pytest.mark.gpu
def test_gpu_validation():
    data = torch.zeros(smem_banks.SMEM_WORDS, device="cuda")
    with pytest.raises(KernelInputError, match=r"\(requests, 32\)"):
        smem_banks.run(torch.zeros(1, 16, dtype=torch.int32, device="cuda"), data)
    bad = torch.full((1, 32), smem_banks.SMEM_WORDS // 4, dtype=torch.int32, device="cuda")
    with pytest.raises(KernelInputError, match="must lie in"):
        smem_banks.run(bad, data, vec=4)
    with pytest.raises(KernelInputError, match="exactly"):
        smem_banks.run(bad // 8, data[:100].clone())


@pytest.mark.gpu
def test_time_follows_the_wavefronts():
    t = bench_banks.time_cases(
        ["transpose_rows", "transpose_rows_padded", "vec128_rows", "vec128_rows_swizzled"], reps=10
    )
    # predicted 32x and 8x more wavefronts; allow for fixed costs
    assert t["transpose_rows"]["ns_per_request"] > 8 * t["transpose_rows_padded"]["ns_per_request"]
    assert t["vec128_rows"]["ns_per_request"] > 3 * t["vec128_rows_swizzled"]["ns_per_request"]


@pytest.mark.gpu
@pytest.mark.skipif(ncu.find_ncu() is None, reason="Nsight Compute (ncu) is not installed")
def test_ncu_agrees_with_the_model():
    """The notebook's claim: for every case, ncu's shared-load counters equal the prediction."""
    got = bench_banks.measure_counters()
    pred = bench_banks.predict()
    bad = {n: (pred[n], got[n]) for n in pred if not bench_banks.compare(pred[n], got[n])["agree"]}
    assert not bad, bad
