"""Occupancy: how many CTAs of a kernel one SM holds at once, and which resource decides.

An SM keeps a CTA resident from its first instruction to its last: its threads, their
registers and its shared memory are set aside for that whole time. How many CTAs fit side
by side is the smallest of four limits: threads (or warps), CTAs, registers and shared
memory. The numbers are the CUDA C++ Programming Guide's per-compute-capability limits; the
arithmetic is the CUDA occupancy calculator's (cuda_occupancy.h): registers are allocated
per warp in units of 256 and the register file is split between the SM's four
sub-partitions; shared memory is allocated in units of 128 bytes, plus 1 KiB the system
reserves per CTA.
"""

from __future__ import annotations

from dataclasses import dataclass

WARP = 32


@dataclass(frozen=True)
class SmLimits:
    """What one SM offers its resident CTAs."""

    name: str
    threads: int = 2048
    warps: int = 64
    ctas: int = 32
    registers: int = 65536  # 32-bit registers
    registers_per_thread: int = 255
    register_unit: int = 256  # registers are allocated per warp, in units of this many
    sub_partitions: int = 4  # the register file is split between the SM's 4 schedulers
    smem_bytes: int = 228 * 1024  # shared memory per SM
    smem_per_cta: int = 227 * 1024  # the most one CTA may ask for
    smem_unit: int = 128
    smem_reserved_per_cta: int = 1024  # set aside by the system for every resident CTA


SM_80 = SmLimits("A100 (sm_80)", smem_bytes=164 * 1024, smem_per_cta=163 * 1024)
SM_90 = SmLimits("H100 (sm_90)")


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    ctas: int  # resident CTAs per SM
    limits: dict  # resource -> the CTAs per SM it alone would allow
    warps_per_cta: int
    sm: SmLimits

    @property
    def limited_by(self) -> str:
        """The resource (or resources, joined by ' and ') that sets `ctas`."""
        return " and ".join(k for k, v in self.limits.items() if v == self.ctas)

    @property
    def warps(self) -> int:
        return self.ctas * self.warps_per_cta

    @property
    def fraction(self) -> float:
        """Resident warps over the most the SM can hold: what 'occupancy' usually means."""
        return self.warps / self.sm.warps

    def summary(self) -> str:
        return (
            f"{self.ctas} CTA(s) per SM = {self.warps} of {self.sm.warps} warps "
            f"({100 * self.fraction:.3g}% occupancy), limited by {self.limited_by}"
        )


def occupancy(threads: int, registers: int, smem_bytes: int = 0, sm: SmLimits = SM_90) -> Occupancy:
    """CTAs of `threads` threads, `registers` registers per thread and `smem_bytes` of shared
    memory each (static + dynamic) that one SM holds at once."""
    if not 0 < threads <= 1024:
        raise ValueError(f"a CTA has 1 to 1024 threads, not {threads}")
    if registers > sm.registers_per_thread:
        raise ValueError(f"a thread has at most {sm.registers_per_thread} registers")
    if smem_bytes > sm.smem_per_cta:
        raise ValueError(f"one CTA may use at most {sm.smem_per_cta} bytes of shared memory")
    warps = -(-threads // WARP)
    per_warp = _round_up(max(registers, 1) * WARP, sm.register_unit)
    warps_by_registers = (sm.registers // sm.sub_partitions // per_warp) * sm.sub_partitions
    smem = _round_up(smem_bytes + sm.smem_reserved_per_cta, sm.smem_unit)
    limits = {
        "threads": min(sm.threads // (warps * WARP), sm.warps // warps),
        "CTAs": sm.ctas,
        "registers": warps_by_registers // warps,
        "shared memory": sm.smem_bytes // smem,
    }
    return Occupancy(min(limits.values()), limits, warps, sm)
