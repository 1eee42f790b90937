"""Notebook 00's first kernel: c = a + b, one element per thread.

The smallest complete CuTe DSL program, shown only to make the course's workflow
concrete: a `@cute.kernel` (what one thread does), a `@cute.jit` host wrapper
(build tensors from pointers, choose the grid, launch), a compile that happens
once per configuration, and Python-side validation before every launch.
It is deliberately naive; notebook 04 is where copies get fast.
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch

from .host import Compiler, KernelInputError, check_tensor, current_stream, fake_stream
from .host import gmem_pointer, require

NEEDS = "gpu"
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Config:
    threads_per_block: int = 256

    def __post_init__(self):
        if self.threads_per_block % 32 or not 32 <= self.threads_per_block <= 1024:
            raise ValueError("threads_per_block must be a multiple of 32 in [32, 1024]")


@cute.kernel
def add_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, n: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    threads, _, _ = cute.arch.block_dim()
    i = bid * threads + tid
    if i < n:  # the last block may run past the end
        c[i] = a[i] + b[i]


@cute.jit
def add(
    a_ptr: cute.Pointer,
    b_ptr: cute.Pointer,
    c_ptr: cute.Pointer,
    n: cutlass.Int32,
    stream: cuda.CUstream,
    threads: cutlass.Constexpr,
):
    layout = cute.make_layout(n)
    a, b, c = (cute.make_tensor(p, layout) for p in (a_ptr, b_ptr, c_ptr))
    blocks = (n + threads - 1) // threads
    add_kernel(a, b, c, n).launch(grid=[blocks, 1, 1], block=[threads, 1, 1], stream=stream)


def _signature(arch: str, dtype: torch.dtype, config: Config):
    p = gmem_pointer(None, dtype)
    return (add, p, p, p, cutlass.Int32(1), fake_stream(), config.threads_per_block)


COMPILER = Compiler("vector_add", NEEDS, _signature)


def compile(dtype: torch.dtype = torch.float32, config: Config = Config()):
    """The launchable kernel for this machine's GPU (compiled once per dtype/config)."""
    return COMPILER.compile(dtype, config)


def artifacts(arch: str = "sm_90a", dtype: torch.dtype = torch.float32, config: Config = Config()):
    """PTX and cubin for `arch`, compiled here without a GPU."""
    return COMPILER.artifacts(arch, dtype, config)


def run(
    a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, config: Config = Config()
) -> torch.Tensor:
    """c = a + b on the GPU; validates the inputs before launching."""
    arch = require(
        NEEDS, "vector_add", a.device if isinstance(a, torch.Tensor) and a.is_cuda else None
    )
    check_tensor(a, "a", dtypes=DTYPES, ndim=1)
    check_tensor(b, "b", dtypes=(a.dtype,), ndim=1)
    if a.shape != b.shape or a.device != b.device:
        raise KernelInputError(
            f"a and b must match: {tuple(a.shape)}@{a.device} vs {tuple(b.shape)}@{b.device}"
        )
    if a.numel() >= 2**31:
        raise KernelInputError("vector_add indexes with 32-bit integers: at most 2^31-1 elements")
    if out is None:
        out = torch.empty_like(a)
    check_tensor(out, "out", dtypes=(a.dtype,), ndim=1)
    if out.shape != a.shape or out.device != a.device:
        raise KernelInputError("out must have the shape and device of a")
    if a.numel() == 0:
        return out
    kernel = COMPILER.for_arch(arch, a.dtype, config)
    kernel(
        *(gmem_pointer(t, a.dtype) for t in (a, b, out)), cutlass.Int32(a.numel()), current_stream()
    )
    return out


def _self_test() -> int:
    """Check c = a + b against torch on ragged sizes; time it against torch's own add."""
    from . import selftest

    if not selftest.runnable_here(NEEDS, "vector_add"):
        selftest.show_artifacts(artifacts())
        return 0
    ok = True
    for dtype in DTYPES:
        for n in (1, 257, 100_003, 2**22 + 1):
            a, b = (torch.randn(n, device="cuda").to(dtype) for _ in range(2))
            out = run(a, b, torch.full_like(a, float("nan")))
            torch.cuda.synchronize()
            ok &= selftest.verdict(f"{str(dtype)[6:]} n={n}", out, a.double() + b.double(), dtype)
    n = 2**26
    sets = [[torch.randn(n, device="cuda") for _ in range(3)] for _ in range(3)]
    t = selftest.paired_rounds(
        {
            "torch": lambda i: torch.add(*sets[i % 3][:2], out=sets[i % 3][2]),
            "kernel": lambda i: run(*sets[i % 3]),
        }
    )
    print(f"  fp32 n=2^26: {selftest.ratio_summary(t['torch'], t['kernel'])} of torch.add's rate")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_self_test())
