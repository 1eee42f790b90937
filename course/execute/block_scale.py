"""Block scaling as the hardware does it: where `tcgen05.cp .32x128b.warpx4` puts scale
factors (SFs) in tensor memory, which TMEM byte a block-scaled `tcgen05.mma` reads as the SF
of row r, block s, and the MMA's product -- written from the PTX ISA, not from CuTe's layout
functions, so that a check of a kernel's CuTe layouts against it is not circular.

Sections followed (PTX ISA 9.x, "TensorCore 5th Generation Family Instructions"):
* 9.7.16.10.7 Block Scaling: D = (A * scale_A) * (B * scale_B) + D; each row of A (and of B)
  is cut into SF_N chunks, each multiplied by its SF; "scale factors for A and B matrices need
  to be duplicated to all 32 lane partitions of tensor memory".
* 9.7.16.10.7.1 (Table 54/55): SFs per row and MMA: scale_vec::1X (kind::mxf8f6f4, K = 32:
  one UE8M0 per 32), 2X (kind::mxf4 / mxf4nvf4 block32, K = 64: two UE8M0), 4X (kind::mxf4nvf4
  block16, K = 64: four UE4M3 or UE8M0); .block32 / .block16 are aliases.
* 9.7.16.10.7.2-3 Scale Factor A/B ID: 1X: SF_ID is the *byte* of the 32-bit TMEM cell; 2X:
  the half word (SF_ID 0 or 2, two consecutive bytes); 4X: SF_ID must be 0 (all four bytes).
  Where the rows go is drawn in Figures 231-233 / 240-242, pictures the text of the ISA
  does not carry (the text source used here, a Markdown rendering of the ISA's sections,
  has only their captions): this module's reading of them is row r of the SF matrix in lane
  r % 32 of a 32-lane partition, column (scale address) + r // 32 -- 128 rows of A in 4
  columns, 256 rows of B in 8 -- duplicated in all four partitions, the datapath of lane
  partition q (rows 32q..32q+31 of D) reading its own copy. That reading and CuTe's
  make_tmem_layout_sfa/sfb are independent and agree on every (row, partition, SF, MMA)
  of notebook 16's kernel (tests/test_execute_blockscaled.py); neither is derived from the
  other.
* tcgen05.cp .32x128b with .warpx4 (9.7.16.8.x): 32 rows of 128 bits from shared memory
  (a matrix descriptor; here 512 contiguous bytes, row j at +16 j), written to the same 32
  lanes (4 columns) of each of the four lane partitions: the duplication above.
* 9.7.16.6.2 Pipelined tcgen05 instructions: `tcgen05.cp.cta_group::N -> tcgen05.mma.
  cta_group::N` (same N) from one thread execute in issue order: an MMA reads the SFs of
  the copies issued before it. The reverse pair, an MMA's SF reads before a later copy's
  writes, is not in that list in ISA 9.1 (the text used here); later revisions add it
  ("mma (A/metadata reads) -> cp (writes)", as quoted by a third-party note, not seen
  here). Notebook 16's kernel, like NVIDIA's tutorial, relies on it to reuse one SF slot
  of TMEM for every k-tile. The executor runs a warp's copies and MMAs in issue order when
  a tcgen05.commit lands (course.execute.tcgen05's queue): both pairs ordered.

TMEM here is a (128 lanes, columns, 4 bytes) uint8 array: byte b of a cell is bits 8b..8b+7
(little-endian, as `Tmem.cells.view(np.uint8)` lays it out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from course.execute.numeric import by_name

PARTITION = 32  # lanes of one lane partition (one warp's quarter of TMEM)
PARTITIONS = 4
CP_BYTES = 16  # 128 bits per lane per tcgen05.cp .32x128b
E2M1_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def decode_e2m1x2(packed: np.ndarray) -> np.ndarray:
    """Values of e2m1 codes packed two a byte (the first in the low nibble), (..., 2 n)."""
    packed = np.asarray(packed, dtype=np.uint8)
    pairs = np.stack([E2M1_VALUES[packed & 0xF], E2M1_VALUES[packed >> 4]], axis=-1)
    return pairs.reshape(*packed.shape[:-1], 2 * packed.shape[-1])


def decode_sf(codes: np.ndarray, sf_type: str) -> np.ndarray:
    """Values of SF bytes: UE8M0 (2^(byte - 127)) or UE4M3 (e4m3, sign unused)."""
    name = {"ue8m0": "Float8E8M0FNU", "ue4m3": "Float8E4M3FN"}[sf_type]
    with np.errstate(invalid="ignore"):  # NaN codes (0xFF) stay NaN
        return by_name(name).decode(codes).astype(np.float64)


@dataclass(frozen=True)
class ScaleVec:
    """One block-scaled MMA kind: K per instruction and SFs per row (scale_vec::NX)."""

    kind: str  # "mxf8f6f4" | "mxf4" | "mxf4nvf4"
    k: int  # K elements per MMA
    per_row: int  # SFs per row per MMA: 1, 2 or 4

    @property
    def vec(self) -> int:
        return self.k // self.per_row

    def check_sf_id(self, sf_id: int) -> None:
        """The SF_ID values the ISA allows: a byte (1X), a half word (2X), 0 (4X)."""
        allowed = {1: (0, 1, 2, 3), 2: (0, 2), 4: (0,)}[self.per_row]
        if sf_id not in allowed:
            raise ValueError(f"scale_vec::{self.per_row}X takes SF_ID in {allowed}, not {sf_id}")


MXF8F6F4_1X = ScaleVec("mxf8f6f4", 32, 1)
MXF4_2X = ScaleVec("mxf4nvf4", 64, 2)
NVF4_4X = ScaleVec("mxf4nvf4", 64, 4)


def tcgen05_cp_32x128b_warpx4(tmem: np.ndarray, column: int, lines: np.ndarray) -> None:
    """tcgen05.cp .32x128b.warpx4: `lines` (32, 16) bytes of shared memory; line j goes to
    lane 32 q + j of every partition q, its bytes 4c..4c+3 to column `column` + c."""
    lines = np.asarray(lines, dtype=np.uint8).reshape(PARTITION, CP_BYTES)
    cells = lines.reshape(PARTITION, CP_BYTES // 4, 4)
    for q in range(PARTITIONS):
        tmem[q * PARTITION : (q + 1) * PARTITION, column : column + CP_BYTES // 4] = cells


def read_sfs(tmem: np.ndarray, column: int, sf_id: int, rows: int, per_row: int,
             partition: int) -> np.ndarray:  # fmt: skip
    """The SF bytes (rows, per_row) the datapath of lane partition `partition` reads for an
    SF matrix at TMEM column `column`: row r in lane 32 * partition + r % 32, column +
    r // 32, bytes sf_id .. sf_id + per_row - 1."""
    r = np.arange(rows)
    lanes = PARTITION * partition + r % PARTITION
    cols = column + r // PARTITION
    return tmem[lanes[:, None], cols[:, None], sf_id + np.arange(per_row)[None, :]]


@dataclass(frozen=True)
class SfAddress:
    """Where an MMA's SFs of A or B are: its TMEM column and SF_ID (tiled_mma.set(SFA/SFB))."""

    column: int
    sf_id: int = 0


def blockscaled_mma(a: np.ndarray, b: np.ndarray, tmem: np.ndarray, sfa: SfAddress,
                    sfb: SfAddress, scale: ScaleVec, sf_type: str) -> np.ndarray:  # fmt: skip
    """One block-scaled MMA's product (M, N) in fp32 (exact products, one rounding):
    a (M, K) and b (N, K) the operands' values, their SFs read from `tmem` as the ISA places
    them -- A's row m by the datapath of its own lane partition m // 32, B's rows by each
    partition from its own copy (so rows of D in partition q use partition q's SFB)."""
    scale.check_sf_id(sfa.sf_id)
    scale.check_sf_id(sfb.sf_id)
    m, k = a.shape
    n = b.shape[0]
    if k != scale.k:
        raise ValueError(f"a {scale.kind} MMA of scale_vec::{scale.per_row}X has K = {scale.k}")
    out = np.empty((m, n))
    for q in range(-(-m // PARTITION)):
        rows = slice(q * PARTITION, min(m, (q + 1) * PARTITION))
        sfa_codes = read_sfs(tmem, sfa.column, sfa.sf_id, m, scale.per_row, q)[rows]
        sfb_codes = read_sfs(tmem, sfb.column, sfb.sf_id, n, scale.per_row, q)
        a_scaled = a[rows] * np.repeat(decode_sf(sfa_codes, sf_type), scale.vec, axis=1)
        b_scaled = b * np.repeat(decode_sf(sfb_codes, sf_type), scale.vec, axis=1)
        out[rows] = a_scaled @ b_scaled.T
    return out.astype(np.float32)
