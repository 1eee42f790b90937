"""course.cute.trace.on_cpu (the one CPU bridge to CuTe DSL) and the ownership extractor
course.cute.partition_ownership, on cases whose answers are known without CuTe."""

import pytest

from course.cute.partition_ownership import elements, owner_pairs, tiled_mma_pairs, tv_partitions
from course.cute.trace import on_cpu
from course.models import layout as pl
from course.models.ownership import Ownership


def _target():
    from cutlass.cutlass_dsl import CuTeDSL

    return str(CuTeDSL._get_dsl().get_arch_enum())


def test_arch_names_the_target_of_the_trace_and_is_put_back():
    before = _target()
    for arch in ("sm_80", "sm_90a", "sm_100a"):
        assert arch in on_cpu(_target, arch=arch)
    assert on_cpu(_target) == before == _target()


def test_arch_is_put_back_when_the_job_fails():
    before = _target()

    def job():
        raise RuntimeError("a job that fails mid-trace")

    with pytest.raises(Exception, match="fails mid-trace"):
        on_cpu(job, arch="sm_80" if "sm_80" not in before else "sm_90a")
    assert _target() == before


def test_an_architecture_specific_op_traces_only_for_its_arch():
    """wgmma exists on sm_90a only: traced for sm_100a it refuses, for sm_90a it works."""
    import cutlass
    import cutlass.cute as cute

    def wgmma():
        op = cute.nvgpu.warpgroup.MmaF16BF16Op(
            cutlass.BFloat16,
            cutlass.Float32,
            (64, 64, 16),
            cute.nvgpu.warpgroup.OperandSource.SMEM,
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
        )
        return str(cute.make_tiled_mma(op).tv_layout_C_tiled)

    # 128 threads (a warpgroup), 2 x 2 x 8 fp32 values each of the 64 x 64 accumulator
    assert on_cpu(wgmma, arch="sm_90a").startswith("((4,8,4),((2,2,8),")
    with pytest.raises(Exception, match="arch"):
        on_cpu(wgmma, arch="sm_100a")


def test_pointers_build_tensors_the_way_host_code_does():
    import cutlass
    import cutlass.cute as cute

    def job(a, b):
        return (str(cute.make_tensor(a, cute.make_layout((4, 8), stride=(8, 1)))), str(b.dtype))

    a_text, b_type = on_cpu(job, arch="sm_80", pointers=(cutlass.Float32, cutlass.BFloat16))
    assert "(4,8):(8,1)" in a_text and "f32" in a_text and "BFloat16" in b_type
    with pytest.raises(ValueError, match="at most 3 pointers"):
        on_cpu(job, pointers=(cutlass.Float32,) * 4)


def test_mma_sync_c_fragment_is_the_ptx_isa_table():
    """PTX ISA, mma.sync m16n8k16 with .f32 accumulators: lane t holds c0..c3 at rows
    t//4 (c0, c1) and t//4 + 8 (c2, c3), columns 2*(t%4) + (i % 2)."""
    import cutlass
    import cutlass.cute as cute

    def tiled():
        return cute.make_tiled_mma(
            cute.nvgpu.warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
        )

    pairs = tiled_mma_pairs(tiled, "C", (16, 8), 32, arch="sm_80")
    assert pairs == [
        ((t, i), (t // 4 + 8 * (i // 2), 2 * (t % 4) + i % 2)) for t in range(32) for i in range(4)
    ]
    with pytest.raises(ValueError, match="operand"):
        tiled_mma_pairs(tiled, "D", (16, 8), 32)


def test_a_tv_layout_partitions_a_tile_as_the_pure_python_model_says():
    """tv_partitions of a coordinate tensor == Ownership.from_tv_layout (course.models)."""
    import cutlass.cute as cute

    tv = "((4,8),4):((4,16),1)"  # notebook 04's copy, written with nested thread modes

    def views():
        lay = pl.parse_layout(tv)
        return tv_partitions(
            cute.make_identity_tensor((16, 8)), cute.make_layout(lay.shape, stride=lay.stride)
        )

    got = Ownership.from_pairs((16, 8), owner_pairs(views))
    want = Ownership.from_tv_layout(tv, (16, 8))
    assert (got.thread == want.thread).all() and (got.value == want.value).all()
    assert (got.count == 1).all()


def test_counting_tensors_give_numbers_and_owners_continue_their_values():
    """Pairs come sorted by owner, then value, whatever order the views came in."""
    import cutlass.cute as cute

    def views():
        yield 0, cute.make_tensor(0, cute.make_layout((2, 2), stride=(1, 65536)))
        yield 1, cute.make_tensor(3, cute.make_layout(2, stride=2))
        yield 0, cute.make_tensor(131072 + 7, cute.make_layout(1))

    assert owner_pairs(views) == [
        ((0, 0), 0),
        ((0, 1), 1),
        ((0, 2), 65536),
        ((0, 3), 65537),
        ((0, 4), 131079),
        ((1, 0), 3),
        ((1, 1), 5),
    ]
    lanes = owner_pairs(views, cell=lambda address: divmod(address, 65536))
    assert lanes[2] == ((0, 2), (1, 0)) and lanes[4] == ((0, 4), (2, 7))


def test_elements_refuses_a_tensor_in_memory():
    import cutlass
    import cutlass.cute as cute

    def job(p):
        try:
            elements(cute.make_tensor(p, cute.make_layout(4)))
        except ValueError as exc:
            return str(exc)

    assert "not a static coordinate or counting tensor" in on_cpu(job, pointers=(cutlass.Float32,))


def test_the_models_do_not_import_the_bridge():
    """course.models is pure Python: CuTe DSL is reached only through course.cute."""
    import ast
    from pathlib import Path

    models = Path(__file__).resolve().parents[1] / "course" / "models"
    offenders = []
    for path in sorted(models.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [
                f"{path.name}: {n}" for n in names if n.startswith(("course.cute", "cutlass"))
            ]
    assert not offenders, offenders
