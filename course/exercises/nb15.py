"""Notebook 15's exercises: the CTA-pair CLC GEMM's budgets, its tiles, which CTAs issue its MMA."""

from __future__ import annotations

from course.exercises.check import Wrong, exercise, number_or_known_slip


# The notebook prints the footprint of the kernel as it is built (tile_n = 128: 256 TMEM
# columns, 49,152 bytes per full barrier); the exercises ask for the other tile width the
# kernel takes, so the answers are worked out, not read off section 1.
ASKED_TILE_N = 256


def _asked_footprint() -> dict:
    import torch

    from kernels import cta_pair_clc_gemm as step

    return step.footprint(torch.bfloat16, step.Config(tile_n=ASKED_TILE_N))


@exercise(
    "15.tmem_columns",
    f"The CLC kernel built with tile_n = {ASKED_TILE_N} instead of 128: how many TMEM columns "
    "must each CTA allocate for its two fp32 accumulator slots?",
    "what does one slot of a CTA's 128 rows by tile_n columns occupy in TMEM, and which "
    "requests does tcgen05.alloc accept (notebook 14, section 2)?",
    f"each slot is 128 lanes x {ASKED_TILE_N} columns; two slots: 512 columns, already a "
    "power of two, and all of the SM's TMEM.",
)
def _tmem(answer):
    said = {
        256: "256 is section 1's answer for tile_n = 128 (or one slot of tile_n = 256): "
        "two slots of 256 columns each are asked for",
        128: "128 columns is one slot of the tile_n = 128 kernel",
    }
    return number_or_known_slip(answer, _asked_footprint()["tmem_columns"], said, unit="columns")


@exercise(
    "15.barrier_bytes",
    f"The CLC kernel built with tile_n = {ASKED_TILE_N} (bf16, 64-wide k-tiles): how many "
    "bytes must the leader's full barrier expect per stage?",
    "which rows of A and of B does each CTA's TMA load into a stage (section 2's partition), "
    "and whose bytes does the leader's barrier count (section 3)?",
    f"per CTA: its 128 rows of A and half of B's {ASKED_TILE_N} rows, 64 wide, 2 bytes each: "
    "(128 + 128) * 64 * 2 = 32,768; the leader counts both CTAs: 65,536.",
)
def _bytes(answer):
    expected = _asked_footprint()["full_barrier_bytes"]
    said = {
        expected // 2: "that is one CTA's stage: the leader's barrier counts the bytes of "
        "both CTAs' copies",
        49152: "49,152 is section 1's answer for tile_n = 128; with tile_n = 256 each CTA "
        "loads more of B",
        98304: "each CTA loads only its half of B, not all of it",
    }
    return number_or_known_slip(answer, expected, said, unit="bytes")


# 15.tiles: section 1 prints the pair tile and section 8 launches a 600 x 392 C; the exercise
# asks for a C whose sides are no multiple of the tile, so the count must be worked out (and
# checked against the kernel's own tile shape)
ASKED_C = (4100, 3000)  # M x N


def _pair_tile():
    """The CLC kernel's tile as built (section 1): its mma_m rows, n columns, CTAs."""
    import torch

    from kernels import cta_pair_clc_gemm as step

    return step.GEMM.kernel_object(torch.bfloat16).tile


def _count(m: int, n: int, rows: int, cols: int, m_up: bool = True, n_up: bool = True) -> int:
    """Tiles of rows x cols over an m x n C, each side rounded up (or down)."""
    along_m = -(-m // rows) if m_up else m // rows
    along_n = -(-n // cols) if n_up else n // cols
    return along_m * along_n


def tile_slips() -> tuple[int, dict]:
    """(the pair tiles of ASKED_C, {a plausible wrong count: what it counted instead})."""
    tile, (m, n) = _pair_tile(), ASKED_C
    rows, cols = tile.mma_m, tile.n
    expected = _count(m, n, rows, cols)
    slips = {
        _count(m, n, rows, cols, False, False): "that rounds both sides down: the last row and "
        "column of tiles, partly outside C, still hold elements of C",
        _count(m, n, rows, cols, m_up=False): f"the last row of tiles is missing: M = {m:,} is "
        f"no multiple of {rows}, and its last rows need a tile too",
        _count(m, n, rows, cols, n_up=False): f"the last column of tiles is missing: N = {n:,} "
        f"is no multiple of {cols}, and its last columns need a tile too",
        expected * tile.ctas: "that counts CTAs: the pair's two CTAs share one tile (one "
        "cluster per pair tile)",
        _count(m, n, cols, rows): f"the pair tile turned round: it is {rows} rows (along M) by "
        f"{cols} columns (along N)",
        _count(m, n, tile.cta_m, cols): f"that counts {tile.cta_m}-row tiles, one CTA's share: "
        f"a pair tile covers both CTAs' rows, {rows}",
    }
    slips.pop(expected, None)
    return expected, slips


@exercise(
    "15.tiles",
    f"C is {ASKED_C[0]:,} x {ASKED_C[1]:,} (M x N) and the CLC kernel is built as in section 1: "
    "how many pair tiles must Cluster Launch Control hand out (the launch's clusters)?",
    "how many rows and columns of C does one pair tile cover (section 1), and what becomes of "
    "C's last rows and columns when a side is no multiple of the tile? Section 8's run of a "
    "600 x 392 C prints the grid it launched: try your method on it first.",
    "ceil(4100 / 256) x ceil(3000 / 128) = 17 x 24 = 408 pair tiles, one cluster of 2 CTAs "
    "each (816 CTAs).",
)
def _tiles(answer):
    expected, slips = tile_slips()
    return number_or_known_slip(answer, expected, slips, unit="pair tiles")


# 15.mma_issuer: section 2 prints the leader of the notebook's one-pair cluster (CTA 0) and
# section 4 its MMA warp; the exercise asks about a cluster of two pairs, which the notebook
# does not show: the ranks follow from how the PTX ISA forms pairs and the kernel's leader test
ASKED_CLUSTER = (4, 1, 1)


def issuing_ranks(cluster=ASKED_CLUSTER) -> tuple[int, ...]:
    """The cluster ranks whose MMA warp issues a paired MMA: the kernel's leader test, the CTA
    at coordinate 0 of the cluster divided by the MMA's CTAs (cta_layout_vmnk's V mode)."""
    from course.models.layout import idx2crd, make_layout, product, tiled_divide
    from kernels.cta_pair_gemm import CtaPairGemm

    vmnk = tiled_divide(make_layout(cluster), (CtaPairGemm.ctas,))
    return tuple(r for r in range(product(cluster)) if idx2crd(r, vmnk.shape)[0] in (0, (0,)))


def _ranks(answer) -> frozenset:
    """The learner's ranks as a set: a tuple, list or set of whole numbers (or one number)."""
    items = answer if isinstance(answer, (tuple, list, set, frozenset)) else (answer,)
    try:
        ranks = [int(r) for r in items]
    except (TypeError, ValueError):
        raise Wrong(f"answer with a tuple of cluster ranks, got {answer!r}")
    if any(r != x for r, x in zip(ranks, items)):
        raise Wrong(f"a cluster rank is a whole number, got {answer!r}")
    return frozenset(ranks)


def _issuer_slips(expected: frozenset, size: int) -> dict:
    """{a plausible wrong set of ranks: what it shows}, for the asked cluster's pairs."""
    return {
        frozenset({0, 1}): "ranks 0 and 1 form one pair, so one paired MMA covers both: "
        "the other pair needs an issuer of its own",
        frozenset(r ^ 1 for r in expected): "those are the pairs' followers: this kernel's "
        "leader is the CTA at position 0 of its pair (section 2)",
        frozenset(range(size)): "every CTA: only one CTA of each pair issues the paired MMA; "
        "the other's MMA warp runs the tile loop without issuing",
    }


def _issuer_observed(ranks: frozenset, expected: frozenset, size: int) -> str:
    """What a wrong set of ranks says about the pairs: a follower named, a pair left out."""
    if len(ranks) == 1:
        return (
            f"only one issuer: a cluster of {size} CTAs holds {size // 2} pairs, and each "
            "pair's MMA is issued inside that pair"
        )
    said = [f"rank {r} follows in its pair" for r in sorted(ranks - expected)]
    pairs = sorted({frozenset({r, r ^ 1}) for r in range(size)}, key=min)
    said += [f"the pair {set(sorted(p))} has no issuer here" for p in pairs if not p & ranks]
    return f"{tuple(sorted(ranks))}: " + "; ".join(said)


@exercise(
    "15.mma_issuer",
    f"The pair kernel's code run with clusters of {ASKED_CLUSTER[0]} CTAs along M, "
    f"{ASKED_CLUSTER}: two CTA pairs per cluster. Which cluster ranks issue a paired "
    "tcgen05.mma? Answer with a tuple of ranks.",
    "which ranks of a cluster form a CTA pair (the PTX ISA's tcgen05 section, 'CTA Pair', "
    "reads it off %cluster_ctarank), and which CTA of its pair does this kernel let issue "
    "(section 2)?",
    "(0, 2): the pairs are ranks {0, 1} and {2, 3} (ranks that differ only in the last bit); "
    "the kernel's leader is the CTA at coordinate 0 of its pair (the V mode of "
    "cta_layout_vmnk), the even one, and its MMA warp (warp 5) issues.",
)
def _issuer(answer):
    size = ASKED_CLUSTER[0] * ASKED_CLUSTER[1] * ASKED_CLUSTER[2]
    ranks, expected = _ranks(answer), frozenset(issuing_ranks())
    outside = sorted(r for r in ranks if not 0 <= r < size)
    if outside:
        raise Wrong(
            f"a cluster of {size} CTAs has ranks 0 to {size - 1}; {outside} is none of them "
            "(a warp number?)"
        )
    if ranks == expected:
        return True, f"{tuple(sorted(ranks))} is right."
    said = _issuer_slips(expected, size).get(ranks)
    return False, said or _issuer_observed(ranks, expected, size)


from course.exercises import nb15_clc_kernel  # noqa: E402,F401  registers 15.read_next_tile
