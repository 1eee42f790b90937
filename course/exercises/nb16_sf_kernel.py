"""Notebook 16's kernel exercise `16.sf_copy_and_mma`: the MMA warp's block-scaled k-loop.

The learner writes the `mma_k_loop` method of `kernels.blockscaled_gemm.BlockscaledGemm`: per
k-tile, wait for its stage, copy the stage's SFA and SFB from shared memory into TMEM
(tcgen05.cp), point each of the k-tile's MMAs at its own SFs (`tiled_mma.set(Field.SFA /
Field.SFB, ...)`) and issue it, then release the stage. No Blackwell GPU is needed to check
it: the kernel compiles for sm_100a here, and its PTX must show each k-tile's copies of both
SFs after the wait for the stage and before the MMAs that read them, each MMA reading SF
columns a copy wrote, the k-tile's MMAs each their own SFs, and course.cute.ptx_protocol's
rules kept. The GEMM's values ("mxfp8", exact in fp32) are checked against float64 on a
GPU of compute capability 10.x, or here on the course's CPU executor.
"""

# no `from __future__ import annotations`: the exercise's kernel class is traced by CuTe DSL
import re

from course.cute.ptx_protocol import Address, addresses
from course.exercises.kernel_check import (
    Finding,
    expect,
    failed,
    kernel_exercise,
    passed,
    subclass_with,
    variant_name,
)
from course.exercises.nb14_epilogue_kernel import keeps_the_protocol

ID = "16.sf_copy_and_mma"
KIND = "mxfp8"  # the kind the exercise compiles and runs: the CPU executor runs its e4m3
TILE_M = 128
# (M, N, K): K a multiple of 128 (one k-tile = 128 e4m3); ragged M and N (C in fp32: N a
# multiple of 4). All but the last of at most 4 k-tiles (the ring's stages), so that a
# k-loop copying another stage's SFs reads SFs of a k-tile it can name; the last of 9, so
# that the ring wraps and every stage is refilled (a stage released before its MMAs have
# read it is overwritten under them only then)
SHAPES = ((256, 256, 512), (200, 136, 256), (129, 132, 384), (200, 136, 1152))
QUICK_SHAPES = ((200, 136, 256), (200, 136, 1152))  # 2 and 9 k-tiles, M and N ragged

SKELETON_CELL = '''\
@cute.jit
def mma_k_loop(self, tiled_mma, accumulator, tCrA, tCrB, sfa, sfb, ring, state, k_tiles):
    """Warp 5: every k-tile of the ring into the accumulator, each MMA with its own SFs.

    What you are given:
      sfa, sfb (kernels.blockscaled_gemm.SfCopy), one per operand:
        .s2t   a tiled copy from shared memory to TMEM (it becomes tcgen05.cp)
        .smem  the SFs staged in shared memory: 5 modes, the ring's stage the last
        .tmem  the TMEM one k-tile's SFs are copied into
        .mma   the same TMEM as the MMAs read it, (MMA, MMA_MN, MMA_K)
      tCrA, tCrB: A's and B's MMA fragments, (MMA, MMA_MN, MMA_K, STAGE).
      A block-scaled MMA reads its SFs from the TMEM address held in two runtime fields of
      the tiled MMA, tcgen05.Field.SFA and tcgen05.Field.SFB, set like Field.ACCUMULATE.
    The loop is notebook 14's mma_k_loop plus the SFs: work out where they must be before
    an MMA reads them, and which of them each MMA of a k-tile reads.
    """
    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
    for k_block in cutlass.range(k_tiles, unroll=1):
        ...  # your code
    return state
'''
CHECK_CELL = f'check("{ID}", mma_k_loop)'

# ---------------------------------------------------------------- what the PTX must show

MISSING_HINT = (
    "the MMAs read SF columns of TMEM no tcgen05.cp wrote: copy the stage's SFs into TMEM "
    "before its MMAs, cute.copy(sfa.s2t, sfa.smem[stage], sfa.tmem) and the same for sfb"
)
AFTER_HINT = (
    "the MMAs read SFs before the k-tile's tcgen05.cp wrote them (the previous k-tile's, or "
    "for the first k-tile none at all): issue both copies before the k-tile's first cute.gemm"
)
WAIT_HINT = (
    "the SFs are copied from a stage TMA may still be writing: ring.consumer_wait(state) "
    "before the stage's tcgen05.cp"
)
SAME_SFS_HINT = (
    "every MMA of the k-tile read the same SFs: MMA kk scales its slice of K with its own SFs, "
    "so set Field.SFA and Field.SFB to sfa.mma[(None, None, kk)].iterator and "
    "sfb.mma[(None, None, kk)].iterator inside the kk loop, before that MMA"
)
_MMA = re.compile(r"tcgen05\.mma\.\S*block_scale")
_CP = re.compile(r"tcgen05\.cp\.")
_DEF = re.compile(r"^(?:add|sub|mov)\.\S+ (%r\d+), (%r\d+|-?\d+)(?:, (-?\d+))?;$")


def _k_loop(code: list[str]) -> tuple[int, int] | None:
    """(start, end) of the innermost loop around the block-scaled MMAs: the last label
    before the first MMA that a branch after the last MMA jumps back to."""
    mmas = [i for i, line in enumerate(code) if _MMA.search(line)]
    if not mmas:
        return None
    for i in range(mmas[0] - 1, -1, -1):
        label = re.match(r"^(\$L__\w+):$", code[i])
        if label:
            back = [
                j
                for j in range(mmas[-1], len(code))
                if re.search(rf"\bbra(\.uni)?\s+{re.escape(label.group(1))};", code[j])
            ]
            if back:
                return i, back[-1]
    return None


def _tmem_address(code: list[str], operand: Address) -> tuple[str, int] | None:
    """A TMEM address operand as (base register, constant offset): its register followed
    back through its one definition by add/sub/mov of constants, the operand's own offset
    (`[%r14+128]`) added; None where it is computed otherwise."""
    if operand.base is None or not operand.base.startswith("%"):
        return None
    reg, offset = operand.base, operand.offset
    for _ in range(16):
        defs = [m for line in code if (m := _DEF.match(line)) and m.group(1) == reg]
        if len(defs) != 1:
            return (reg, offset) if not defs else None
        m = defs[0]
        op, src, imm = m.group(0).split(".", 1)[0], m.group(2), m.group(3)
        if op == "mov":
            if not src.startswith("%"):
                return None
            reg = src
            continue
        if imm is None or not src.startswith("%"):
            return None
        offset += int(imm) if op == "add" else -int(imm)
        reg = src
    return None


def _column(offset: int) -> tuple[int, int]:
    """(column, byte) of a TMEM address's offset from the base: bits 0-15 the column, bits
    30-31 the byte an SF operand starts at (its SF_ID)."""
    offset &= 0xFFFFFFFF
    return offset & 0xFFFF, offset >> 30


def _sf_operands(line: str) -> tuple[Address, Address] | None:
    """A block-scaled tcgen05.mma's SFA and SFB addresses: its last two address operands
    (after [d]), in whatever form PTX writes them."""
    found = addresses(line)
    return (found[-2], found[-1]) if len(found) >= 3 else None


def _cp_destination(line: str) -> Address | None:
    """The TMEM address a tcgen05.cp writes (its first operand); None for other lines."""
    found = addresses(line) if _CP.search(line) else []
    return found[0] if found else None


def _code(ptx: str) -> list[str]:
    """The PTX's instructions and branch labels in order, whitespace normalised (comments,
    directives and the inline assembly's own labels dropped)."""
    out = []
    for line in ptx.splitlines():
        line = re.sub(r"\s+", " ", line.split("//")[0]).strip()
        if re.match(r"^\$L__\w+:$", line) or (
            line.endswith(";") and not line.startswith((".", "{", "}"))
        ):
            out.append(line)
    return out


def _loop_reading(c):
    code = _code(c.ptx)
    loop = _k_loop(code)
    if loop is None:
        return code, None, "no loop around block-scaled tcgen05.mma instructions"
    return code, loop, ""


def mmas_read_copied_sfs(c) -> list[Finding]:
    """In the k-loop, after the wait for the stage, the tcgen05.cp of both SFs, and only then
    the MMAs, each reading SF columns a copy of this k-tile wrote (4 columns a copy)."""
    code, loop, why = _loop_reading(c)
    what_copy = "each k-tile copies both SFs into TMEM before its MMAs"
    what_wait = "the SFs are copied after the wait for their stage"
    if loop is None:
        return [failed(what_copy, why, MISSING_HINT)]
    start, end = loop
    body = code[start:end]
    cps = [(i, dst) for i, line in enumerate(body) if (dst := _cp_destination(line))]
    mmas = [i for i, line in enumerate(body) if _MMA.search(line)]
    if not cps:
        return [
            failed(
                what_copy,
                f"the k-loop issues {len(mmas)} block-scaled tcgen05.mma and no tcgen05.cp: "
                "the MMA read SF columns no tcgen05.cp wrote",
                MISSING_HINT,
            )
        ]
    written = []  # (index in the body, base, first column)
    for i, dst in cps:
        addr = _tmem_address(code, dst)
        if addr is not None:
            written.append((i, addr[0], _column(addr[1])[0]))
    findings = []
    problem = None
    for n, i in enumerate(mmas):
        for operand, sf in zip(("SFA", "SFB"), _sf_operands(body[i]) or ()):
            addr = _tmem_address(code, sf)
            if addr is None:
                continue  # an address computed otherwise: nothing said of it
            col = _column(addr[1])[0]
            covers = [w for w in written if w[1] == addr[0] and w[2] <= col < w[2] + 4]
            if not covers:
                problem = problem or (
                    f"MMA {n} of the k-tile reads {operand} in TMEM column +{col}, which no "
                    "tcgen05.cp of the k-loop writes: the MMA read SF columns no tcgen05.cp "
                    "wrote",
                    MISSING_HINT,
                )
            elif all(w[0] > i for w in covers):
                problem = problem or (
                    f"MMA {n} of the k-tile reads {operand} (TMEM column +{col}) before the "
                    "k-tile's tcgen05.cp writes it: the copy is issued after the MMA",
                    AFTER_HINT,
                )
    if problem is None and max(i for i, _ in cps) > mmas[0]:
        problem = (
            "a tcgen05.cp of the k-loop is issued after the k-tile's first tcgen05.mma",
            AFTER_HINT,
        )
    if problem:
        findings.append(failed(what_copy, *problem))
    else:
        findings.append(
            passed(
                what_copy,
                f"{len(cps)} tcgen05.cp, then {len(mmas)} block-scaled tcgen05.mma reading "
                "the columns they wrote",
            )
        )
    waits = [i for i, line in enumerate(body) if line.startswith("mbarrier.try_wait")]
    first_cp = cps[0][0]
    waited = any(w < first_cp for w in waits)
    findings.append(
        expect(
            what_wait,
            waited,
            "an mbarrier wait, then the k-tile's tcgen05.cp"
            if waited
            else "the k-loop's first tcgen05.cp comes before any mbarrier wait in the loop: "
            "it reads a stage TMA may still be writing",
            WAIT_HINT,
        )
    )
    return findings


def each_mma_its_own_sfs(c) -> Finding:
    """The k-tile's MMAs read different SFs: MMA kk at its own (column, byte) of SFA and of
    SFB (mxfp8: one SF a row per MMA, byte kk of the copied columns)."""
    code, loop, why = _loop_reading(c)
    what = "each MMA of the k-tile reads its own SFs"
    if loop is None:
        return failed(what, why, MISSING_HINT)
    body = code[loop[0] : loop[1]]
    seen = {"SFA": [], "SFB": []}
    for line in body:
        if _MMA.search(line):
            for operand, sf in zip(("SFA", "SFB"), _sf_operands(line) or ()):
                addr = _tmem_address(code, sf)
                seen[operand].append(None if addr is None else (addr[0], _column(addr[1])))
    repeated = [
        name
        for name, places in seen.items()
        if None not in places and len(places) > 1 and len(set(places)) < len(places)
    ]
    detail = (
        f"{len(seen['SFA'])} MMAs, each at its own SF address of A and of B"
        if not repeated
        else f"{' and '.join(repeated)}: the k-tile's {len(seen['SFA'])} MMAs read only "
        f"{len(set(seen[repeated[0]]))} distinct SF address(es): every MMA of the k-tile "
        "read the same SFs"
    )
    return expect(what, not repeated, detail, SAME_SFS_HINT)


# ---------------------------------------------------------------- the learner's loop in the kernel


def exercise_config():
    from kernels import blockscaled_gemm as step

    return step.Config(KIND)


def gemm_with(mma_k_loop):
    """The course's BlockscaledGemm with the learner's `mma_k_loop`, as a GemmHost (its SFs
    passed as the two `tensors`, plain: the step's SCALE_FACTORS check and block them)."""
    from kernels import blockscaled_gemm as step
    from kernels.gemm_host import GemmHost

    cls = subclass_with(step.BlockscaledGemm, "mma_k_loop", mma_k_loop)
    return GemmHost(
        variant_name(ID, mma_k_loop),
        step.NEEDS,
        lambda types, config, arch, a_major, b_major: cls(types, config),
        step.Config,
        step.OPERANDS,
        extra_operands=step.GEMM.extra_operands,
    )


def _build(fn, arch):
    import torch

    return gemm_with(fn).build(
        arch, torch.float8_e4m3fn, torch.float32, exercise_config(), "k", "k"
    )


# ---------------------------------------------------------------- a run (GPU or CPU executor)


def inputs(m: int, n: int, k: int, seed: int = 0, device: str = "cuda") -> dict:
    """A (M, K) and B (N, K) in e4m3 with values in {-2, -1.5, ..., 2}, and their plain SFs
    (rows, K // 32), powers of two in [1/4, 4], different from one K-block to the next: every
    product and every sum exact in fp32, and an MMA that reads another K-block's, another
    k-tile's or the other operand's SFs gives other numbers."""
    import torch

    g = torch.Generator().manual_seed(1500 + seed + m + 7 * n + 13 * k)
    small = torch.tensor([-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0])

    def values(rows):
        return small[torch.randint(0, len(small), (rows, k), generator=g)]

    def sfs(rows):
        blocks = k // 32
        start = torch.randint(0, 5, (rows, 1), generator=g)
        step = torch.randint(1, 5, (rows, 1), generator=g)  # never 0 nor 5: next block differs
        exps = (start + step * torch.arange(blocks)) % 5 - 2  # -2..2
        return torch.pow(2.0, exps.float())

    a, b, sa, sb = values(m), values(n), sfs(m), sfs(n)
    return {
        "a": torch.as_tensor(a.to(torch.float8_e4m3fn), device=device),
        "b": torch.as_tensor(b.to(torch.float8_e4m3fn), device=device),
        "a_sf": torch.as_tensor(sa.to(torch.float8_e8m0fnu), device=device),
        "b_sf": torch.as_tensor(sb.to(torch.float8_e8m0fnu), device=device),
    }


def _blocks(x):
    """Per K-block of 32: A's and B's values there, unscaled, and the plain SFs (float64)."""
    a, b = x["a"].double().cpu(), x["b"].double().cpu()
    sa, sb = x["a_sf"].double().cpu(), x["b_sf"].double().cpu()
    return a, b, sa, sb


def _product(x, sf_column_a, sf_column_b=None):
    """C with K-block c of A scaled by SFA column sf_column_a(c) and of B by SFB column
    sf_column_b(c) (the same by default), in float64."""
    a, b, sa, sb = _blocks(x)
    sf_column_b = sf_column_b or sf_column_a
    out = 0
    for c in range(a.shape[1] // 32):
        ks = slice(32 * c, 32 * c + 32)
        ca, cb = sf_column_a(c), sf_column_b(c)
        out = out + (a[:, ks] * sa[:, ca : ca + 1]) @ (b[:, ks] * sb[:, cb : cb + 1]).T
    return out


def reference(x):
    return _product(x, lambda c: c)


SF_BLOCKS_PER_K_TILE = 4  # one k-tile = 128 e4m3 = 4 blocks of 32, one SF each


def _last_k_tile_only(x):
    """C of the last k-tile alone: what an accumulator overwritten at every k-tile (ACCUMULATE
    set False at each k-tile's first MMA) holds at the end."""
    a, b, sa, sb = _blocks(x)
    blocks = a.shape[1] // 32
    last = (blocks - 1) // SF_BLOCKS_PER_K_TILE * SF_BLOCKS_PER_K_TILE
    out = 0
    for c in range(last, blocks):
        ks = slice(32 * c, 32 * c + 32)
        out = out + (a[:, ks] * sa[:, c : c + 1]) @ (b[:, ks] * sb[:, c : c + 1]).T
    return out


def _swapped(x, tile_n: int):
    """C when A's rows read SFB's TMEM and B's rows SFA's: row i of a CTA tile gets the SF of
    B's row (tile_col * tile_n + i % 128), column j of A's row (tile_row * 128 + j % tile_n);
    padded rows (the host pads to 128 with byte 0: 2^-127) as the MMA would read them."""
    import torch

    a, b, sa, sb = _blocks(x)
    m, n = a.shape[0], b.shape[0]

    rows = -(-max(m, n) // 128) * 128 + max(TILE_M, tile_n)  # past any row a tile reads

    def padded(s):
        p = torch.full((rows, s.shape[1]), 2.0**-127, dtype=s.dtype)
        p[: s.shape[0]] = s
        return p

    pa, pb = padded(sa), padded(sb)
    i = torch.arange(m)[:, None]
    j = torch.arange(n)[None, :]
    a_row_sf = pb[(j // tile_n) * tile_n + i % 128]  # (m, n, blocks): what row i is scaled by
    b_row_sf = pa[(i // TILE_M) * TILE_M + j % tile_n]
    out = torch.zeros(m, n, dtype=torch.float64)
    for c in range(a.shape[1] // 32):
        ks = slice(32 * c, 32 * c + 32)
        out += (a[:, ks] @ b[:, ks].T) * a_row_sf[..., c] * b_row_sf[..., c]
    return out


HINTS = {
    "stage 0": "every k-tile was scaled with k-tile 0's SFs: the copies read stage 0 (or one "
    "fixed stage) each time; copy from the stage just waited for, "
    "sfa.smem[(None, None, None, None, state.index)]",
    "first SF of the k-tile": SAME_SFS_HINT,
    "swapped": "A's rows were scaled by B's SFs and B's by A's: Field.SFA takes sfa.mma's "
    "iterator and Field.SFB sfb.mma's",
    "last k-tile only": "C holds the last k-tile's product alone, its SFs right: the "
    "accumulator is overwritten at every k-tile -- tiled_mma.set(tcgen05.Field.ACCUMULATE, "
    "False) once, before the k-loop (the tile's first MMA overwrites), and True after each MMA; "
    "never False again inside the k-loop",
}
VALUES_HINT = (
    "rows' values off by their SF: MMA kk of a k-tile must read that k-tile's SFs (copied from "
    "the stage just waited for) at column kk: Field.SFA = sfa.mma[(None, None, kk)].iterator, "
    "Field.SFB = sfb.mma[(None, None, kk)].iterator"
)


def candidates(x, tile_n: int = 128):
    """(name, C, hint) of the known wrong k-loops, on the same inputs."""
    formulas = (
        (
            "the product with k-tile 0's SFs in every k-tile (the copies read stage 0)",
            _product(x, lambda c: c % 4),
            HINTS["stage 0"],
        ),
        (
            "the product with each MMA scaled by its k-tile's first SFs (every MMA at kk = 0's)",
            _product(x, lambda c: c - c % 4),
            HINTS["first SF of the k-tile"],
        ),
        (
            "the product with A's rows scaled by SFB and B's rows by SFA (SFA and SFB swapped)",
            _swapped(x, tile_n),
            HINTS["swapped"],
        ),
        (
            "the last k-tile's product alone (the accumulator overwritten at every k-tile)",
            _last_k_tile_only(x),
            HINTS["last k-tile only"],
        ),
    )
    return formulas


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import torch

    from course.exercises.gpu_run import guarded_output, judge_output

    gemm, cfg = gemm_with(fn), exercise_config()
    gemm.compile(torch.float8_e4m3fn, cfg, out_dtype=torch.float32)
    launching()
    findings = []
    for seed, (m, n, k) in enumerate(QUICK_SHAPES if quick else SHAPES):
        x = inputs(m, n, k, seed)
        out, buffer = guarded_output((m, n), torch.float32)
        gemm.run(x["a"], x["b"], out, cfg, tensors=(x["a_sf"], x["b_sf"]))  # blocked by it
        torch.cuda.synchronize()
        findings.append(
            judge_output(
                f"{m}x{n}x{k} mxfp8 against the dequantized product in float64",
                out.cpu(),
                reference(x),
                buffer.cpu(),
                wrong_hint=VALUES_HINT,
                tile=(TILE_M, cfg.tile_n),
                candidates=lambda x=x: candidates(x, cfg.tile_n),
            )
        )
    return findings


kernel_exercise(
    id=ID,
    prompt="Write mma_k_loop, the MMA warp's k-loop of the block-scaled GEMM: per k-tile, wait "
    "for its stage, copy the stage's SFA and SFB from shared memory into TMEM (tcgen05.cp), "
    "then for each of the k-tile's MMAs point the tiled MMA at that MMA's SFs "
    "(Field.SFA, Field.SFB) and issue it; release the stage.",
    hint="an SF must be in TMEM before the MMA that reads it is issued, and its stage must "
    "have landed before it is copied; the MMAs of one k-tile cover different parts of K, so "
    "each reads a different part of the SFs in TMEM.",
    arch="sm_100a",
    needs="sm_100a",
    build=_build,
    cpu_checks=(mmas_read_copied_sfs, each_mma_its_own_sfs, keeps_the_protocol),
    gpu_checks=gpu_checks,
    timeout_s=120,
    run_shows="whether each MMA scales its slice of K with its own k-tile's SFs of A and of B "
    "(a run against the dequantized product, exact in fp32, on ragged shapes)",
    solution="course/exercises/solutions/nb16_solutions.py: mma_k_loop",
)
