"""Notebook 12's kernel exercise `12.promotion`: the promotion step of the FP8 main loop.

The learner writes the `after_k_tile` method of `kernels.fp8_gemm.Fp8Gemm` for block scales
(DeepSeek-V3's recipe, preset "block"): after k-tile kt's wgmmas were issued into the
temporary accumulator `tmp`, wait until they retired, add `tmp * a_scale[m, kt] *
b_scale[n // 128, kt]` into the main accumulator `acc` element by element (each element's
own row m and column n of C), and clear `tmp` for the next k-tile. The kernel's own
`promote` is not reachable from the exercise: it is the answer.

No GPU is needed to check it: the kernel compiles for sm_90a here, its PTX must wait for
every wgmma group before the promotion reads `tmp`, and the CPU executor runs it on a small
ragged problem whose operands are integers and whose scales are distinct powers of two, so
every correct promotion gives the product exactly and every known mistake a value that names
it. On an H100 it runs against torch on larger ragged shapes as well.
"""

# no `from __future__ import annotations`: the exercise's kernel class is traced by CuTe DSL
import re

from course.exercises.kernel_check import expect, kernel_exercise, subclass_with, variant_name

ID = "12.promotion"
PRESET = "block"  # kernels.fp8_gemm.PRESETS: block scales, 128 x 128 tiles
# (M, N, K): ragged in M and N (a partial tile), K of 3 k-tiles, the last one 64 wide; K a
# multiple of 16 (TMA needs 16-byte rows: 16 float8 values)
QUICK_SHAPES = ((129, 136, 784),)  # a full and a partial tile in M and N; 7 k-tiles
SHAPES = ((65, 264, 320), (129, 264, 384), (1000, 1016, 528), (256, 384, 1024))
BLOCK = 128  # kernels.fp8_scales.SCALE_BLOCK: 1 x 128 blocks of A, 128 x 128 blocks of B

WAIT_ALL = r"^wgmma\.wait_group\.sync\.aligned\s+0;"


def exercise_config():
    from kernels.fp8_gemm import PRESETS

    return PRESETS[PRESET]


def _promote_is_the_exercise(*args):
    raise NotImplementedError(
        "self.promote is the answer of this exercise: write the promotion in after_k_tile"
    )


def gemm_with(after_k_tile):
    """The course's Fp8Gemm with the learner's `after_k_tile`, as a GemmHost; its `promote`
    (the answer) is replaced by an error, `coordinates` stays reachable as self.coordinates."""
    from kernels import fp8_gemm

    cls = subclass_with(
        fp8_gemm.Fp8Gemm, "after_k_tile", after_k_tile, promote=_promote_is_the_exercise
    )
    return fp8_host(variant_name(ID, after_k_tile), cls)


def fp8_host(name: str, cls):
    """fp8_gemm's GemmHost (its operands, scales, grid) compiling `cls`, a subclass of
    Fp8Gemm carrying a learner's method, under its own name (so its own compile cache)."""
    import dataclasses

    from kernels import fp8_gemm

    return dataclasses.replace(
        fp8_gemm.GEMM,
        name=name,
        kernel=lambda types, config, arch, a_major, b_major: cls(types, config, arch),
    )


def _build(fn, arch):
    import torch

    return gemm_with(fn).build(
        arch, torch.float8_e4m3fn, torch.bfloat16, exercise_config(), "k", "k"
    )


# ---------------------------------------------------------------- any machine

WAIT_HINT = (
    "tmp is read while the k-tile's wgmmas may still be adding into it: the main loop "
    "has only waited for the k-tile before (wait_group(1)); call "
    "cute.nvgpu.warpgroup.wait_group(0) before the promotion reads tmp"
)


def waits_before_promoting(c):
    """In the PTX: a wgmma.wait_group 0 inside the k-loop (the main loop has one of its own,
    after the last k-tile), so tmp is read only once every wgmma group retired."""
    waits = sum(1 for line in c.instructions if re.match(WAIT_ALL, line))
    return expect(
        "the PTX: every wgmma group waited for (wait_group 0) before tmp is read",
        waits >= 2,
        f"{waits} wgmma.wait_group 0 (the main loop's own, after its last k-tile, is one)",
        WAIT_HINT,
    )


SCALES_LATE_HINT = (
    "the scales are read after wait_group(0): their loads start only once the tensor cores "
    "have run dry, and their latency adds to every promotion (an earlier promote of the "
    "course's kernel read them so and ran at 34% to 47% of cuBLAS, section 5). Issue the "
    "scale loads before the wait, while k-tile kt's wgmmas still run, and use the values "
    "after it. This is the exercise's speed requirement, read from the PTX: the values are "
    "right either way, and no GPU run was needed to see it"
)


def _loads_after_each_wait(code: list[str]) -> list[tuple[int, int]]:
    """(wait, loads) for each wgmma.wait_group 0: the ld.global between it and the next
    wgmma instruction (the promotion's reads of global memory made after the wait)."""
    found = []
    for i, line in enumerate(code):
        if re.match(WAIT_ALL, line):
            loads = 0
            for later in code[i + 1 :]:
                if later.startswith("wgmma."):
                    break
                loads += later.startswith("ld.global")
            found.append((i, loads))
    return found


def loads_scales_before_the_wait(c):
    """In the PTX: no global load (a scale) between a wgmma.wait_group 0 and the next wgmma:
    the promotion's scales were loaded before the wait, their latency hidden under the
    running wgmmas (notebook 12, section 5: the lesson of `k_tile_scales`)."""
    late = [(i, n) for i, n in _loads_after_each_wait(c.instructions) if n]
    return expect(
        "the PTX: the scales are loaded before the wait, under the running wgmmas",
        not late,
        f"{late[0][1]} global loads after the wgmma.wait_group 0 at instruction {late[0][0]}"
        if late
        else "no global load between a wait_group 0 and the next wgmma",
        SCALES_LATE_HINT,
    )


# ---------------------------------------------------------------- a run (GPU or CPU executor)


def inputs(m: int, n: int, k: int, seed: int = 0, device: str = "cuda") -> dict:
    """A and B integer-valued in [-8, 8] (exact in e4m3, every k-tile's sum exact in fp32);
    power-of-two scales, a row's scales different in every k-tile and B's scales different
    in every block, so a promotion that takes another k-tile's, another block's or no
    scale gives other numbers."""
    import torch

    from kernels.fp8_scales import scale_shapes

    g = torch.Generator().manual_seed(1234 + seed)
    (_, kb), (nb, _) = scale_shapes(m, n, k, "block")
    a = torch.randint(-8, 9, (m, k), generator=g).float()
    b = torch.randint(-8, 9, (n, k), generator=g).float()
    start = torch.randint(0, 5, (m, 1), generator=g)
    a_exp = (start + torch.arange(kb)) % 5 - 2  # -2..2, a row's k-tiles all different
    b_exp = torch.randperm(nb * kb, generator=g).view(nb, kb) % 9 - 4  # -4..4
    return {
        "a": torch.as_tensor(a.to(torch.float8_e4m3fn), device=device),
        "b": torch.as_tensor(b.to(torch.float8_e4m3fn), device=device),
        "a_scale": torch.as_tensor(2.0 ** a_exp.float(), device=device).contiguous(),
        "b_scale": torch.as_tensor(2.0 ** b_exp.float(), device=device).contiguous(),
    }


def _k_tile_terms(x):
    """Per k-tile: (A . B^T over the k-tile, a_scale[m, kt] as (M, 1), b_scale[n // 128, kt]
    as (1, N)), in float64 on the CPU."""
    a, b = x["a"].double().cpu(), x["b"].double().cpu()
    sa, sb = x["a_scale"].double().cpu(), x["b_scale"].double().cpu()
    k, n = a.shape[1], b.shape[0]
    cols = sb.repeat_interleave(BLOCK, dim=0)[:n]  # (N, KB): column n's block's scales
    terms = []
    for kt in range((k + BLOCK - 1) // BLOCK):
        ks = slice(kt * BLOCK, min(k, (kt + 1) * BLOCK))
        terms.append((a[:, ks] @ b[:, ks].T, sa[:, kt : kt + 1], cols[:, kt][None, :]))
    return terms


def reference(x):
    """C in float64: every k-tile's product with its own scales, summed."""
    return sum(p * sa * sb for p, sa, sb in _k_tile_terms(x))


def _rows_blocks(x, kt):
    """B's scales by the *row's* block: b_scale[m // 128, kt] as (M, 1)."""
    import torch

    sb = x["b_scale"].double().cpu()
    rows = (torch.arange(x["a"].shape[0]) // BLOCK).clamp(max=sb.shape[0] - 1)
    return sb[rows, kt][:, None]


HINTS = {
    "tmp never cleared": "tmp is never cleared: k-tile kt's wgmmas add into what the earlier "
    "k-tiles left there, so their sums are promoted again, each time with the new scales; "
    "tmp.fill(0.0) after adding it into acc",
    "acc overwritten": "acc holds the last k-tile alone: each promotion replaced acc instead "
    "of adding to it (acc[i] = acc[i] + tmp[i] * scale)",
    "k-tile 0's scales": "every k-tile was scaled with k-tile 0's scales: the scales of "
    "k-tile kt are column kt of a_scale and b_scale (a_scale[m, kt], b_scale[n // 128, kt])",
    "A's scale only": "B's scale is missing: each element is tmp * a_scale[m, kt] * "
    "b_scale[n // 128, kt]",
    "B's scale only": "A's scale is missing: each element is tmp * a_scale[m, kt] * "
    "b_scale[n // 128, kt]",
    "no scale": "no scale was applied: each element is tmp * a_scale[m, kt] * "
    "b_scale[n // 128, kt], m and n the element's own row and column of C "
    "(self.coordinates(place))",
    "B's block from the row": "B's scale block was taken from the row: B's 128 x 128 blocks "
    "run along N, so an element of column n reads b_scale[n // 128, kt]",
}
VALUES_HINT = (
    "each element of acc gets tmp * a_scale[m, kt] * b_scale[n // 128, kt], with m and n "
    "that element's own row and column of C (self.coordinates(place)[i]); then tmp is cleared"
)


def candidates(x):
    """(name, C, hint) of the known wrong promotions, on the same inputs."""
    terms = _k_tile_terms(x)
    p0, sa0, sb0 = terms[0]
    so_far, tmp_kept = 0, 0
    for p, sa, sb in terms:
        so_far = so_far + p
        tmp_kept = tmp_kept + so_far * sa * sb
    last, sa_l, sb_l = terms[-1]
    formulas = {
        "tmp never cleared": tmp_kept,
        "acc overwritten": last * sa_l * sb_l,
        "k-tile 0's scales": sum(p for p, _, _ in terms) * sa0 * sb0,
        "A's scale only": sum(p * sa for p, sa, _ in terms),
        "B's scale only": sum(p * sb for p, _, sb in terms),
        "no scale": sum(p for p, _, _ in terms),
        "B's block from the row": sum(
            p * sa * _rows_blocks(x, kt) for kt, (p, sa, _) in enumerate(terms)
        ),
    }
    return tuple((_said(name), c, HINTS[name]) for name, c in formulas.items())


def _said(name: str) -> str:
    """How an observation names a known wrong formula ("every output equals ...")."""
    return {
        "tmp never cleared": "the product with every k-tile's sum promoted again in every "
        "later k-tile (tmp never cleared)",
        "acc overwritten": "the last k-tile's scaled product alone",
        "k-tile 0's scales": "the product with k-tile 0's scales in every k-tile",
        "A's scale only": "the product with A's scales only",
        "B's scale only": "the product with B's scales only",
        "no scale": "the product without any scale",
        "B's block from the row": "the product with B's scale block chosen by the row "
        "(b_scale[m // 128, kt])",
    }[name]


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import torch

    from course.exercises.gpu_run import operand_findings

    shapes = QUICK_SHAPES if quick else SHAPES
    scales = ("a_scale", "b_scale")
    return operand_findings(
        gemm_with(fn), exercise_config(), torch.float8_e4m3fn, shapes, inputs, scales,
        reference, candidates, "e4m3, block scales", VALUES_HINT, launching,
    )  # fmt: skip


kernel_exercise(
    id=ID,
    prompt="Write after_k_tile for block scales, the promotion of the FP8 GEMM: once k-tile "
    "kt's wgmmas (issued into the temporary accumulator tmp) have retired, add each element "
    "tmp[i] * a_scale[m, kt] * b_scale[n // 128, kt] into acc[i] -- m and n that element's "
    "row and column of C (self.coordinates(place)), the scales "
    "place.inputs = (a_scale, b_scale) -- "
    "and clear tmp for the next k-tile; the scales' loads must not wait for the wgmmas.",
    hint="two things take time here, the k-tile's wgmmas and the scales' loads from global "
    "memory: which has to finish before you read tmp, and which can be under way while the "
    "other runs? And a ragged tile's edge lies past the scales' ends.",
    arch="sm_90a",
    needs="sm_90a",
    build=_build,
    cpu_checks=(waits_before_promoting, loads_scales_before_the_wait),
    gpu_checks=gpu_checks,
    timeout_s=120,
    run_shows="whether each k-tile's sums are promoted with their own scales (a run against "
    "torch on ragged shapes)",
    compile_hints=(
        (
            r"self\.promote is the answer",
            "self.promote is what this exercise asks for: write the promotion in "
            "after_k_tile itself",
        ),
    ),
    solution="course/exercises/solutions/nb12_solutions.py: after_k_tile",
)
