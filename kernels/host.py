"""The host side every kernel shares: the GPU it needs, its inputs, its compiled handle.

Validation happens in Python before any launch, so a learner passing the wrong dtype, a
CPU tensor, a misaligned view or an unsupported GPU gets a one-line `KernelInputError`
or `UnsupportedGPU` instead of a hang or garbage.

Compiling: `cute.compile` traces and compiles every time it is called (a tenth of a second
to tens of seconds), and calling a `@cute.jit` function directly re-traces it on every
call. Each kernel therefore compiles a configuration once through `compile_cached`
(`kernels.compile_cache`, which the artifacts share) and launches the handle it keeps; the
seconds spent are logged in its `COMPILE_LOG`, which notebook 00's lesson reads.

Hardware limits come from CuTe DSL's own tables for the target or the operands' device
(`smem_capacity`, `max_active_clusters`), never from literals. Only torch and CuTe DSL
are needed: nothing here knows about the course around the kernels.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch

from .artifacts import compile_artifacts
from .compile_cache import compile_cached


class KernelInputError(ValueError):
    """An input a kernel cannot take (dtype, shape, layout, alignment, device)."""


class UnsupportedGPU(RuntimeError):
    """This machine's GPU (or lack of one) cannot run the kernel live."""


class PipelineHang(RuntimeError):
    """A kernel's pipeline stopped making progress: reported by its own bounded waits, or
    by a watchdog that stopped a launch which did not finish in time."""


# ---------------------------------------------------------------- the GPU a kernel needs

# What a kernel can need -> which compute capabilities provide it.
NEEDS: dict[str, Callable[[tuple[int, int]], bool]] = {
    "gpu": lambda cc: cc >= (8, 0),  # any GPU CuTe DSL runs on
    "sm_80+": lambda cc: cc >= (8, 0),  # mma.sync, cp.async, ldmatrix
    # TMA, mbarrier tx-count, clusters: Hopper and datacenter Blackwell (Thor and consumer
    # Blackwell have them too, with other limits; these kernels were not run there)
    "sm_90+": lambda cc: cc == (9, 0) or cc[0] == 10,
    "sm_90a": lambda cc: cc == (9, 0),  # wgmma, setmaxnreg: Hopper only
    "sm_100a": lambda cc: cc[0] == 10,  # tcgen05, TMEM, CLC: datacenter Blackwell only
}

# The target a CPU-only compile of a kernel with that need uses.
COMPILE_TARGET = {
    "gpu": "sm_90a",
    "sm_80+": "sm_80",
    "sm_90+": "sm_90a",
    "sm_90a": "sm_90a",
    "sm_100a": "sm_100a",
}


def arch_for(compute_capability: tuple[int, int]) -> str:
    """The CuTe DSL target for a compute capability: (9, 0) -> 'sm_90a', (8, 6) -> 'sm_86'."""
    major, minor = compute_capability
    return f"sm_{major}{minor}{'a' if major >= 9 else ''}"


def device_capability(device: torch.device | None = None) -> tuple[int, int] | None:
    """The compute capability of `device` (default: the current CUDA device); None without
    a CUDA GPU. Asked on every launch, so it is cached per device. Tests replace this
    function to pretend to be another GPU."""
    if not _cuda_available():
        return None
    if device is None or device.type != "cuda" or device.index is None:
        return _capability(torch.cuda.current_device())
    return _capability(device.index)


@functools.cache
def _cuda_available() -> bool:
    return torch.cuda.is_available()


@functools.cache
def _capability(index: int) -> tuple[int, int]:
    return tuple(torch.cuda.get_device_capability(index))


def satisfies(compute_capability: tuple[int, int] | None, needs: str) -> bool:
    """True when a GPU of this compute capability can run a kernel that needs `needs`."""
    if needs not in NEEDS:
        raise ValueError(f"unknown need {needs!r}; expected one of {sorted(NEEDS)}")
    return compute_capability is not None and NEEDS[needs](compute_capability)


def require(needs: str, kernel: str, device: torch.device | None = None) -> str:
    """The arch to launch on `device` (default: the current GPU); UnsupportedGPU if it
    cannot run a kernel that needs `needs`."""
    cc = device_capability(device)
    if not satisfies(cc, needs):
        here = "no CUDA GPU" if cc is None else f"a GPU of compute capability {cc[0]}.{cc[1]}"
        raise UnsupportedGPU(
            f"{kernel} needs {needs}; this machine has {here}. Use its compile-only path "
            f"instead: {kernel}.artifacts('{COMPILE_TARGET[needs]}') compiles it here and "
            f"shows the PTX and SASS."
        )
    return arch_for(cc)


@functools.cache
def smem_capacity(arch: str) -> int:
    """Bytes of shared memory one CTA may use on `arch` (CuTe DSL's table: 227 KB on
    sm_90 and sm_100, 163 KB on an A100, 99 KB on consumer parts)."""
    import cutlass.memory

    family = arch.rstrip("af")
    try:
        return cutlass.memory.get_smem_capacity_in_bytes(family)
    except ValueError as e:
        raise KernelInputError(f"CuTe DSL knows no shared-memory capacity for {arch}") from e


def check_smem(kernel: str, needed: int, arch: str) -> None:
    """Refuse, before compiling, a configuration whose shared memory does not fit on `arch`."""
    have = smem_capacity(arch)
    if needed > have:
        raise KernelInputError(
            f"{kernel} needs {needed} bytes of shared memory per CTA but {arch} has {have}: "
            f"use fewer stages or smaller tiles"
        )


@functools.cache
def max_active_clusters(device_index: int, cluster_size: int) -> int:
    """How many clusters of `cluster_size` CTAs (one CTA per SM, all of its shared memory)
    can be resident at once on that GPU: CuTe DSL asks the driver's occupancy API."""
    import cutlass.utils

    with torch.cuda.device(device_index):
        torch.zeros(1, device=f"cuda:{device_index}")  # the device's context, made current
        return cutlass.utils.HardwareInfo(device_index).get_max_active_clusters(cluster_size)


# ---------------------------------------------------------------- tensors

EXPECTED_DEVICE = "cuda"  # tests set "cpu" to run the host side without a GPU


def check_tensor(
    t: Any,
    name: str,
    *,
    dtypes: Iterable[torch.dtype],
    ndim: int,
    align_bytes: int = 16,
    contiguous_dim: int | None = -1,
) -> None:
    """Validate one tensor argument; raise KernelInputError naming what is wrong."""
    dtypes = tuple(dtypes)
    if not isinstance(t, torch.Tensor):
        raise KernelInputError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        names = ", ".join(dtype_name(d) for d in dtypes)
        raise KernelInputError(f"{name} has dtype {dtype_name(t.dtype)}; this kernel takes {names}")
    if t.dim() != ndim:
        raise KernelInputError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.device.type != EXPECTED_DEVICE:
        raise KernelInputError(f"{name} is on {t.device}; move it to the GPU (.cuda()) first")
    if contiguous_dim is not None and t.numel() > 1 and t.stride(contiguous_dim) != 1:
        raise KernelInputError(
            f"{name} must be contiguous along dim {contiguous_dim} "
            f"(strides {tuple(t.stride())}); pass .contiguous()"
        )
    if t.data_ptr() % align_bytes:
        raise KernelInputError(
            f"{name}'s data pointer is not {align_bytes}-byte aligned "
            f"(a sliced view?); pass a fresh or .clone()d tensor"
        )


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def cutlass_dtype(dtype: torch.dtype):
    """The CuTe DSL numeric type for a torch dtype."""
    table = _cutlass_types()
    if dtype not in table:
        raise KernelInputError(f"no CuTe DSL type for {dtype}")
    return table[dtype]


@functools.cache
def _cutlass_types() -> dict:
    import cutlass  # on first use: importing CuTe DSL takes about a second

    return {
        torch.float32: cutlass.Float32,
        torch.float16: cutlass.Float16,
        torch.bfloat16: cutlass.BFloat16,
        torch.float8_e4m3fn: cutlass.Float8E4M3FN,
        torch.float8_e5m2: cutlass.Float8E5M2,
        torch.float8_e8m0fnu: cutlass.Float8E8M0FNU,  # block scale factors (MX formats)
        torch.float4_e2m1fn_x2: cutlass.Float4E2M1FN,  # two e2m1 a byte
        torch.int32: cutlass.Int32,
        torch.int8: cutlass.Int8,
        torch.uint8: cutlass.Uint8,
    }


def gmem_pointer(t: torch.Tensor | None, dtype: torch.dtype, align_bytes: int = 16):
    """A CuTe global-memory pointer to `t`'s data (address 0 when t is None: compile-only)."""
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    address = 0 if t is None else t.data_ptr()
    return make_ptr(
        cutlass_dtype(dtype), address, cute.AddressSpace.gmem, assumed_align=align_bytes
    )


def current_stream():
    """torch's current CUDA stream, as the CUstream CuTe DSL launches on."""
    import cuda.bindings.driver as cuda

    return cuda.CUstream(torch.cuda.current_stream().cuda_stream)


def fake_stream():
    """A stream placeholder for compiling without a GPU."""
    from cutlass.cute.runtime import make_fake_stream

    return make_fake_stream()


# ---------------------------------------------------------------- compile once


def compile_for(arch: str, jit_fn, *args):
    """cute.compile(jit_fn, *args) for `arch`: the handle that launches without re-tracing."""
    import cutlass.cute as cute

    return cute.compile(jit_fn, *args, options=f"--gpu-arch {arch}")


@dataclass(frozen=True)
class Compiler:
    """Compile-once and artifacts for one kernel: `signature(arch, *key)` returns the
    `@cute.jit` function and the stand-in arguments to compile it with for `arch` (no
    tensors: pointers at address 0, sizes as placeholders), so one compile serves every
    call with the same key."""

    name: str
    needs: str
    signature: Callable[..., tuple]

    def compile(self, *key, device: torch.device | None = None):
        """The launchable handle for this machine's GPU (or `device`'s), compiled once."""
        return self.for_arch(require(self.needs, self.name, device), *key)

    def for_arch(self, arch: str, *key):
        """The handle for `arch`, compiled once (the caller has checked the GPU)."""
        return compile_cached(
            (self.name, *key), arch, lambda: compile_for(arch, *self.signature(arch, *key))
        )

    def artifacts(self, arch: str | None, *key):
        """PTX, cubin and SASS for `arch` (default: the kernel's compile-only target),
        compiled on this machine without a GPU."""
        arch = arch or COMPILE_TARGET[self.needs]
        return compile_artifacts((self.name, *key), arch, *self.signature(arch, *key))


os.environ.setdefault("CUTE_DSL_LOG_TO_CONSOLE", "0")
