"""Notebook 14's look at what the compiler produced for sm_100a: the tcgen05 and TMA
instructions in the PTX (and the hand-built instruction descriptor among them), and the
SASS they become.

  ptx_counts       how many of each tcgen05 / TMA instruction the PTX holds
  print_ptx_lines  the PTX lines that make it a tcgen05 kernel
  print_sass       the SASS opcodes they become, and the kernel's resources
"""

from __future__ import annotations

import re

PTX_CHECKS = {
    "tcgen05.alloc (warp 0)": r"tcgen05\.alloc\.",
    "tcgen05.relinquish_alloc_permit": r"tcgen05\.relinquish_alloc_permit",
    "tcgen05.mma.cta_group::1.kind::f16": r"tcgen05\.mma\.cta_group::1\.kind::f16",
    "tcgen05.commit -> mbarrier": r"tcgen05\.commit",
    "tcgen05.ld.32x32b.x32": r"tcgen05\.ld\.sync\.aligned\.32x32b\.x32",
    "tcgen05.wait::ld": r"tcgen05\.wait::ld",
    "tcgen05.dealloc": r"tcgen05\.dealloc\.",
    "TMA load (cp.async.bulk.tensor g->s)": r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global",
    "TMA store (cp.async.bulk.tensor s->g)": r"cp\.async\.bulk\.tensor\.2d\.global\.shared",
    "mbarrier.try_wait.parity (spin loops)": r"mbarrier\.try_wait\.parity",
}


def ptx_counts(art, idesc=None, checks=PTX_CHECKS) -> dict[str, int]:
    """How often each instruction of `checks` appears in the PTX; with `idesc`, whether the
    hand-built instruction descriptor's value appears in it too."""
    counts = {what: art.count_ptx(pattern) for what, pattern in checks.items()}
    for what, n in counts.items():
        print(f"{what:40s} {n:2d}")
    if idesc is not None:
        found = re.search(rf"\b{idesc.encode()}\b", art.ptx) is not None
        print(
            f"\nthe hand-built instruction descriptor {idesc.encode()} appears in the PTX: {found}"
        )
    return counts


def print_ptx_lines(art) -> None:
    """The PTX lines of the TMEM allocator, the MMA, the commit, the TMEM loads and the TMA."""
    print(
        f"compiled for {art.arch} in {art.compile_seconds:.2f} s (on this machine; no GPU used)\n"
    )
    print("PTX lines that matter:")
    for pattern in (
        r"tcgen05\.alloc",
        r"tcgen05\.mma",
        r"tcgen05\.commit",
        r"tcgen05\.ld",
        r"tcgen05\.wait",
        r"tcgen05\.dealloc",
        r"cp\.async\.bulk\.tensor",
    ):
        for line in art.ptx_lines(pattern):
            print("   ", re.sub(r"\s+", " ", line)[:150])


def print_sass(art) -> dict:
    """The SASS lines of the MMA, commit, TMEM load, allocator (with the sleep of its retry
    loop) and TMA; then registers, stack and static shared memory."""
    for line in art.sass_lines(r"UTCHMMA|UTCBAR|LDTM|UTCATOMSWS|NANOSLEEP(?!\.)|UTMALDG|UTMASTG"):
        print("   ", re.sub(r"\s+", " ", line)[:120])
    (res,) = art.resource_usage().values()
    print(
        f"\nregisters per thread: {res['registers']}, stack frame: {res['stack_frame_bytes']} B, "
        f"static shared memory: {res['shared_bytes']} B (the ring is dynamic shared memory)"
    )
    return res
