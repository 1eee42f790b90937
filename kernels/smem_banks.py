"""Notebook 05's measuring kernel: warps read shared memory at given addresses, many times.

Every warp of every CTA replays the same access pattern: request q, lane l reads
`vec` 4-byte words at shared-memory offset offsets[q, l] * vec words (-1: the lane
sits that request out). The offsets come from the course's bank model
(course.models.smem_access.Case.kernel_offsets), so the GPU issues exactly the requests the
model predicts; the kernel's time and Nsight Compute's bank-conflict counters then
say whether the prediction was right.

The loads are 32-, 64- or 128-bit (LDS, LDS.64, LDS.128) as `vec` = 1, 2, 4 asks.
Every value read is summed into the output, which run() checks against a torch
reference, so the compiler can neither drop a load nor hoist it out of the timing
loop (the address also depends on the loop counter through a runtime zero).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.memory.smem import SmemAllocator

from .host import Compiler, KernelInputError, check_tensor, current_stream, fake_stream
from .host import gmem_pointer, require

NEEDS = "gpu"
WARP = 32
SMEM_WORDS = 4096  # 16 KiB of 4-byte words: room for every tile of notebook 05
VECTORS = (1, 2, 4)  # 4-byte words per lane per load: LDS, LDS.64, LDS.128


@dataclass(frozen=True)
class Config:
    threads_per_block: int = 256

    def __post_init__(self):
        if self.threads_per_block % WARP or not WARP <= self.threads_per_block <= 1024:
            raise ValueError("threads_per_block must be a multiple of 32 in [32, 1024]")


@cute.kernel
def smem_read_kernel(
    offsets: cute.Tensor,
    data: cute.Tensor,
    out: cute.Tensor,
    iters: cutlass.Int32,
    zero: cutlass.Int32,
    n_req: cutlass.Constexpr,
    vec: cutlass.Constexpr,
    threads: cutlass.Constexpr,
):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    lane = tid % WARP
    smem = SmemAllocator()
    # (vector index, word in vector): row i is the vec words at byte 4 * vec * i
    s = smem.allocate_tensor(
        cutlass.Float32,
        cute.make_layout((SMEM_WORDS // vec, vec), stride=(vec, 1)),
        byte_alignment=128,
    )
    for i in range(tid, SMEM_WORDS // vec, threads):
        for k in cutlass.range_constexpr(vec):
            s[i, k] = data[i * vec + k]
    cute.arch.sync_threads()

    mine = cute.make_rmem_tensor((n_req,), cutlass.Int32)  # this lane's offset per request
    for q in cutlass.range_constexpr(n_req):
        mine[q] = offsets[q * WARP + lane]
    acc = cute.make_rmem_tensor((vec,), cutlass.Float32)
    acc.fill(0.0)
    for it in range(iters):
        moved = it & zero  # always 0, but the compiler cannot know: no load leaves the loop
        for q in cutlass.range_constexpr(n_req):
            if mine[q] >= 0:
                acc.store(acc.load() + s[(mine[q] + moved, None)].load())
    out[bid * threads + tid] = acc.load().reduce(cute.ReductionOp.ADD, 0.0, 0)


@cute.jit
def smem_read(
    off_ptr: cute.Pointer,
    data_ptr: cute.Pointer,
    out_ptr: cute.Pointer,
    iters: cutlass.Int32,
    zero: cutlass.Int32,
    blocks: cutlass.Int32,
    stream: cuda.CUstream,
    n_req: cutlass.Constexpr,
    vec: cutlass.Constexpr,
    threads: cutlass.Constexpr,
):
    offsets = cute.make_tensor(off_ptr, cute.make_layout(n_req * WARP))
    data = cute.make_tensor(data_ptr, cute.make_layout(SMEM_WORDS))
    out = cute.make_tensor(out_ptr, cute.make_layout(blocks * threads))
    smem_read_kernel(offsets, data, out, iters, zero, n_req, vec, threads).launch(
        grid=[blocks, 1, 1], block=[threads, 1, 1], stream=stream
    )


def _signature(arch: str, n_req: int, vec: int, config: Config):
    if vec not in VECTORS:
        raise KernelInputError(f"vec must be one of {VECTORS} (4-byte words per load)")
    if not 1 <= n_req <= 64:
        raise KernelInputError(f"{n_req} requests: the kernel unrolls 1..64 requests per pass")
    ip, fp = gmem_pointer(None, torch.int32), gmem_pointer(None, torch.float32)
    one = cutlass.Int32(1)
    return (
        smem_read,
        ip,
        fp,
        fp,
        one,
        cutlass.Int32(0),
        one,
        fake_stream(),
        n_req,
        vec,
        config.threads_per_block,
    )


COMPILER = Compiler("smem_banks", NEEDS, _signature)


def compile(n_req: int, vec: int, config: Config = Config(), device=None):
    """The launchable kernel for this GPU, once per (requests, vector width, config)."""
    return COMPILER.compile(n_req, vec, config, device=device)


def artifacts(arch: str = "sm_90a", n_req: int = 1, vec: int = 4, config: Config = Config()):
    """PTX and cubin for `arch`, compiled here without a GPU."""
    return COMPILER.artifacts(arch, n_req, vec, config)


def reference(offsets: torch.Tensor, data: torch.Tensor, vec: int, iters: int) -> torch.Tensor:
    """What one warp's 32 lanes sum (float64, on the CPU): iters x the words each lane read."""
    off = offsets.detach().cpu().long()
    words = data.detach().cpu().double().reshape(-1, vec).sum(dim=1)  # one sum per vector
    picked = torch.where(off >= 0, words[off.clamp(min=0)], torch.zeros((), dtype=torch.float64))
    return iters * picked.sum(dim=0)  # (32,)


def launcher(
    offsets: torch.Tensor,
    data: torch.Tensor,
    iters: int = 1,
    blocks: int = 1,
    out: torch.Tensor | None = None,
    vec: int = 1,
    config: Config = Config(),
) -> Callable[[], torch.Tensor]:
    """Validate once and return a function that launches the kernel (for timing loops).

    offsets: int32 (requests, 32) in units of `vec` words, -1 for an idle lane;
    data: float32 (SMEM_WORDS,) copied into shared memory first.
    """
    require(
        NEEDS,
        "smem_banks",
        offsets.device if isinstance(offsets, torch.Tensor) and offsets.is_cuda else None,
    )
    check_tensor(offsets, "offsets", dtypes=(torch.int32,), ndim=2)
    check_tensor(data, "data", dtypes=(torch.float32,), ndim=1)
    if offsets.shape[1] != WARP:
        raise KernelInputError(f"offsets must be (requests, {WARP}), got {tuple(offsets.shape)}")
    if data.numel() != SMEM_WORDS:
        raise KernelInputError(f"data must hold exactly {SMEM_WORDS} words (the shared buffer)")
    if vec not in VECTORS:
        raise KernelInputError(f"vec must be one of {VECTORS}")
    lo, hi = int(offsets.min()), int(offsets.max())
    if lo < -1 or hi >= SMEM_WORDS // vec:
        raise KernelInputError(
            f"offsets must lie in [-1, {SMEM_WORDS // vec}) for vec={vec}; got [{lo}, {hi}]"
        )
    if iters < 1 or blocks < 1:
        raise KernelInputError("iters and blocks must be >= 1")
    threads = config.threads_per_block
    if out is None:
        out = torch.empty(blocks * threads, dtype=torch.float32, device=offsets.device)
    check_tensor(out, "out", dtypes=(torch.float32,), ndim=1)
    if out.numel() != blocks * threads:
        raise KernelInputError(f"out must hold blocks * threads = {blocks * threads} values")
    if not (offsets.device == data.device == out.device):
        raise KernelInputError("offsets, data and out must be on the same GPU")
    kernel = compile(int(offsets.shape[0]), vec, config, device=offsets.device)
    args = (
        gmem_pointer(offsets, torch.int32),
        gmem_pointer(data, torch.float32),
        gmem_pointer(out, torch.float32),
        cutlass.Int32(iters),
        cutlass.Int32(0),
        cutlass.Int32(blocks),
    )

    def launch() -> torch.Tensor:
        kernel(*args, current_stream())
        return out

    return launch


def run(
    offsets: torch.Tensor,
    data: torch.Tensor,
    iters: int = 1,
    blocks: int = 1,
    out: torch.Tensor | None = None,
    vec: int = 1,
    config: Config = Config(),
) -> torch.Tensor:
    """Every warp reads shared memory as `offsets` says, `iters` times; returns the sums
    (blocks * threads values; see reference() for what each warp's lanes must hold)."""
    return launcher(offsets, data, iters, blocks, out, vec, config)()


def _self_test() -> int:
    """Sums match the reference for a conflict-free and a 32-way conflicting read, and the
    conflicting one takes longer."""
    from . import selftest

    if not selftest.runnable_here(NEEDS, "smem_banks"):
        selftest.show_artifacts(artifacts())
        return 0
    lanes = torch.arange(WARP, dtype=torch.int32, device="cuda")
    patterns = {
        "conflict-free (lane l reads word l)": lanes,
        "32-way conflict (lane l reads word 32 l)": lanes * 32,
    }
    data = torch.randn(SMEM_WORDS, device="cuda")
    ok, times = True, {}
    for name, pattern in patterns.items():
        offsets = pattern.reshape(1, WARP)
        out = run(offsets, data, iters=3)
        torch.cuda.synchronize()
        got = out[:WARP]
        ok &= selftest.verdict(
            name, got, reference(offsets, data, 1, 3).to(got.device), torch.float32
        )
        launch = launcher(offsets, data, iters=1000, blocks=132)
        times[name] = selftest.events_ms(launch, 10)
    slow, fast = times[list(patterns)[1]], times[list(patterns)[0]]
    print(f"  the 32-way conflict takes {slow / fast:.1f}x as long as the conflict-free read")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_self_test())
