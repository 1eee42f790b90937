"""NVIDIA's Ampere CuTe DSL examples, unmodified, on the CPU executor.

`cute/ampere/kernel/elementwise/elementwise_add.py` and
`cute/ampere/kernel/dense_gemm/tensorop_gemm.py` run through their own host code (the
`@cute.jit` host function or `TensorOpGemm` class NVIDIA wrote, `cute.compile` and the
call of what it gives) inside `course.execute.host.interpreting()`, with the torch tensors
made on the CPU the way each example's `run` makes them. Integer-valued inputs make the
results bit-exact against torch; shapes are small and ragged where the example allows it.

Each planted mistake is one textual edit of the example's own source, loaded from a temp
copy; the unmodified example at the same shape is its control (exact, no hazard), and the
executor must name the mistake's kind and the kernel line where it shows.
"""

from __future__ import annotations

import functools

import pytest
import torch

from tests.nvidia_examples import line_of, load, needs_examples, planted

pytestmark = needs_examples()

ELEMENTWISE = "cute/ampere/kernel/elementwise/elementwise_add.py"
GEMM = "cute/ampere/kernel/dense_gemm/tensorop_gemm.py"

# ---------------------------------------------------------------- elementwise_add


def run_elementwise(module, shape, dtype, torch_tensors: bool, **constexprs):
    """What `run_elementwise_add` does, on the CPU: integer-valued a and b, c zeroed, host
    tensors as `from_dlpack(...).mark_layout_dynamic()` or the torch tensors themselves
    (the example's "dynamic layout" flags), compiled once (with `constexprs`, which the
    compiled function keeps) and called. Returns (a, b, c) and the run's launches."""
    import cutlass.cute as cute
    import cutlass.torch as cutlass_torch
    from cutlass.cute.runtime import from_dlpack

    from course.execute import host

    torch_dtype = cutlass_torch.dtype(dtype)
    gen = torch.Generator().manual_seed(sum(shape))
    a = torch.randint(0, 10, shape, generator=gen).to(torch_dtype)
    b = torch.randint(0, 10, shape, generator=gen).to(torch_dtype)
    c = torch.zeros_like(a)

    def host_tensor(t):
        return t if torch_tensors else from_dlpack(t).mark_layout_dynamic()

    with host.interpreting() as session:
        compiled = cute.compile(
            module.elementwise_add,
            host_tensor(a),
            host_tensor(b),
            host_tensor(c),
            options="--generate-line-info",
            **constexprs,
        )
        compiled(host_tensor(a), host_tensor(b), host_tensor(c))
    assert len(session.results) == 1
    return a, b, c, session.results[0].launches


def _cutlass(name: str):
    import cutlass

    return getattr(cutlass, name)


@pytest.mark.parametrize("shape", [(40, 100), (3, 12), (64, 96)])
@pytest.mark.parametrize("dtype", ["Float32", "Int32", "Float16"])
@pytest.mark.parametrize("torch_tensors", [False, True], ids=["from_dlpack", "torch"])
def test_elementwise_add_is_exact(shape, dtype, torch_tensors):
    a, b, c, _ = run_elementwise(load(ELEMENTWISE), shape, _cutlass(dtype), torch_tensors)
    assert torch.equal(c, a + b)


def test_elementwise_add_keeps_its_compiled_constexpr():
    """`copy_bits` is a Constexpr given to cute.compile and not to the call: 64 bits of
    Float32 make a (16, 64) tile, so a (40, 100) tensor takes 3 x 2 CTAs (128 bits: 3)."""
    import cutlass

    a, b, c, launches = run_elementwise(
        load(ELEMENTWISE), (40, 100), cutlass.Float32, False, copy_bits=64
    )
    assert torch.equal(c, a + b)
    assert [launch.grid for launch in launches] == [(6, 1, 1)]


def test_elementwise_add_prints_its_tensor_types(capsys):
    """The example prints `Tensor.type` at trace time: the executor says the element type,
    the memory and the layout it runs with."""
    import cutlass

    run_elementwise(load(ELEMENTWISE), (40, 100), cutlass.Float32, True)
    printed = capsys.readouterr().out
    assert 'mA = !cute.memref<Float32, gmem, "(40,100):(100,1)">' in printed


ELEMENTWISE_MISTAKES = {
    # the store without its predicate: the last tile's threads write past the tensor
    "store_unpredicated": (
        "cute.copy(copy_atom_store, frgC, thrC, pred=frgPred)",
        "cute.copy(copy_atom_store, frgC, thrC)",
    ),
    # a load without its predicate: threads read past the tensor
    "load_unpredicated": (
        "cute.copy(copy_atom_load, thrA, frgA, pred=frgPred)",
        "cute.copy(copy_atom_load, thrA, frgA)",
    ),
}


@pytest.mark.parametrize("mistake", sorted(ELEMENTWISE_MISTAKES))
def test_elementwise_add_mistake_is_named(mistake, tmp_path):
    import cutlass

    from course.execute import hazards

    ragged = (40, 100)  # the tile is (16, 128): the last row of tiles hangs over the edge
    a, b, c, _ = run_elementwise(load(ELEMENTWISE), ragged, cutlass.Float32, False)
    assert torch.equal(c, a + b)  # the control: NVIDIA's code, same shape

    old, new = ELEMENTWISE_MISTAKES[mistake]
    module, _, line = planted(ELEMENTWISE, old, new, tmp_path)
    with pytest.raises(hazards.Hazard) as caught:
        run_elementwise(module, ragged, cutlass.Float32, False)
    assert caught.value.kind == hazards.OUT_OF_BOUNDS
    assert caught.value.site.lineno == line  # the copy without its predicate
    assert caught.value.site.filename == str(module.__file__)


def test_elementwise_add_unpredicated_store_fits_a_whole_tile(tmp_path):
    """The same planted store on a shape of whole tiles is no mistake: nothing hangs over
    the edge, and the executor says nothing (the hazard above is the overhang's)."""
    import cutlass

    old, new = ELEMENTWISE_MISTAKES["store_unpredicated"]
    module, _, _ = planted(ELEMENTWISE, old, new, tmp_path)
    a, b, c, _ = run_elementwise(module, (48, 128), cutlass.Float32, False)
    assert torch.equal(c, a + b)


# ---------------------------------------------------------------- tensorop_gemm


@functools.lru_cache(maxsize=None)
def _torch_dtype(name: str):
    import cutlass.torch as cutlass_torch

    return cutlass_torch.dtype(_cutlass(name))


def gemm_operands(mnkl, a_major, b_major, c_major, ab_dtype):
    """`prepare_tensors` on the CPU: (l, m, k) A, (l, k, n) B and (l, m, n) C with the
    example's majors (a permuted view where the major is not the last mode), integers in
    [-2, 2], in the example's storage types (float8 as bytes, with its float32 source)."""
    m, n, k, l = mnkl
    a = torch.empty((l, m, k)) if a_major == "k" else torch.empty((l, k, m)).permute(0, 2, 1)
    b = torch.empty((l, k, n)) if b_major == "n" else torch.empty((l, n, k)).permute(0, 2, 1)
    c = torch.empty((l, m, n)) if c_major == "n" else torch.empty((l, n, m)).permute(0, 2, 1)
    gen = torch.Generator().manual_seed(m * n + k)
    for t in (a, b, c):
        t.random_(-2, 3, generator=gen)
    c = c.to(torch.float16)
    if ab_dtype.startswith("Float8"):
        return a.to(torch.uint8), b.to(torch.uint8), c, a, b
    return a.to(_torch_dtype(ab_dtype)), b.to(_torch_dtype(ab_dtype)), c, None, None


def _float8_on_the_cpu(f32, cute_tensor, dtype, **_):
    """cutlass.torch.convert_cute_tensor for a CPU tensor: the example fills its float8
    operands from float32 by a copy kernel on the GPU (moving the source there first);
    here torch converts them into the same bytes."""
    from course.execute.host import torch_of

    torch_of(cute_tensor).copy_(f32.to(_torch_dtype(dtype.__name__)).view(torch.uint8))
    return cute_tensor


def run_gemm(module, mnkl, majors="kkn", ab_dtype="Float16", acc_dtype="Float32"):
    """What the example's `run` does, on the CPU: its own `mark_dynamic_layout` and
    `compile_bmm` (TensorOpGemm with atom layout (2, 2, 1), `cute.compile(bmm, ...)`) and
    the call with a stream. Returns A and B (float32 sources for float8) and C after it."""
    import cutlass
    import cutlass.torch
    from cutlass.cute.runtime import make_fake_stream

    from course.execute import host

    a_major, b_major, c_major = majors
    a, b, c, a_f32, b_f32 = gemm_operands(mnkl, a_major, b_major, c_major, ab_dtype)
    leading = (2 if a_major == "k" else 1, 1 if b_major == "k" else 2, 2 if c_major == "n" else 1)
    ab, cd, acc = _cutlass(ab_dtype), cutlass.Float16, _cutlass(acc_dtype)
    module.compile_bmm.cache_clear()  # the example caches one compilation per process
    with host.interpreting() as session, pytest.MonkeyPatch.context() as patch:
        patch.setattr(cutlass.torch, "convert_cute_tensor", _float8_on_the_cpu)
        a_, b_, c_ = module.mark_dynamic_layout(a, b, c, *leading, ab, cd, a_f32, b_f32)
        compiled = module.compile_bmm(mnkl, a_, b_, c_, ab, cd, acc, (2, 2, 1))
        compiled(a_, b_, c_, make_fake_stream())
    assert len(session.results) == 1
    return (a, b, c) if a_f32 is None else (a_f32, b_f32, c)


def gemm_reference(a, b):
    return torch.bmm(a.float(), b.float()).to(torch.float16)


GEMM_CASES = [
    # (M, N, K, L), majors of A, B, C, A/B type, accumulator
    ((64, 96, 72, 1), "kkn", "Float16", "Float32"),
    ((64, 96, 72, 1), "mnn", "Float16", "Float32"),
    ((70, 136, 40, 1), "kkn", "Float16", "Float32"),  # ragged M and K, two CTAs
    ((72, 130, 40, 2), "mkm", "Float16", "Float16"),  # ragged N, a batch of 2, C m-major
    ((64, 96, 72, 1), "knn", "BFloat16", "Float32"),
    ((64, 264, 40, 1), "kkn", "Float16", "Float32"),  # 3 tiles of N: raster 4, a CTA idle
    ((64, 96, 128, 1), "kkn", "Float8E4M3FN", "Float32"),  # ldmatrix of bytes
    ((80, 96, 96, 1), "mkn", "Float8E5M2", "Float32"),  # m-major A: 8-bit universal copies
]


@pytest.mark.parametrize(
    "mnkl,majors,ab_dtype,acc_dtype",
    GEMM_CASES,
    ids=[f"{'x'.join(map(str, c[0]))}-{c[1]}-{c[2]}-{c[3]}" for c in GEMM_CASES],
)
def test_tensorop_gemm_is_exact(mnkl, majors, ab_dtype, acc_dtype):
    a, b, c = run_gemm(load(GEMM), mnkl, majors, ab_dtype, acc_dtype)
    assert torch.equal(c, gemm_reference(a, b))


S12, S24 = " " * 12, " " * 24
GEMM_MISTAKES = {
    # the mainloop reads the next stage before its cp.async group is waited for
    "mainloop_without_wait": (
        S24 + "cute.arch.cp_async_wait_group(num_smem_stages - 2)\n",
        S24 + "pass\n",
        "IN_FLIGHT",
        "cute.copy(",  # the first read after the missing wait
    ),
    # the epilogue reads sC back before the other threads' writes are ordered before it
    "epilogue_without_barrier": (
        "using the new layouts\n" + S12 + "cute.arch.sync_threads()\n",
        "using the new layouts\n" + S12 + "pass\n",
        "RACE",
        "cute.autovec_copy(tCsC_epilogue, tCrC_epilogue)",
    ),
    # sC (over the A/B stages) is written while other warps may still read their last stage
    "epilogue_overwrites_stages": (
        S12 + "cute.arch.cp_async_wait_group(0)\n" + S12 + "cute.arch.sync_threads()\n",
        S12 + "cute.arch.cp_async_wait_group(0)\n" + S12 + "pass\n",
        "STAGE_OVERWRITE",
        "cute.autovec_copy(tCrD, tCsC)",
    ),
}


@pytest.mark.parametrize("mistake", sorted(GEMM_MISTAKES))
def test_tensorop_gemm_mistake_is_named(mistake, tmp_path):
    from course.execute import hazards

    mnkl = (64, 96, 72, 1)
    a, b, c = run_gemm(load(GEMM), mnkl)
    assert torch.equal(c, gemm_reference(a, b))  # the control: NVIDIA's code, same shape

    old, new, kind, needle = GEMM_MISTAKES[mistake]
    module, text, line = planted(GEMM, old, new, tmp_path)
    with pytest.raises(hazards.Hazard) as caught:
        run_gemm(module, mnkl)
    assert caught.value.kind == getattr(hazards, kind)
    assert caught.value.site.filename == str(module.__file__)
    # where the mistake shows: the first line past the planted one that touches the data
    assert caught.value.site.lineno == line_of(text, needle, after=line)
