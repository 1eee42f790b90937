"""What every kernel module shares: input validation, the compile cache, artifacts.

Validation happens in Python before any launch, so a learner passing the wrong
dtype, a CPU tensor, a misaligned view or an unsupported GPU gets a one-line
`KernelInputError` / `UnsupportedGPU` instead of a hang or garbage.

Compiling: `cute.compile` traces and compiles every time it is called, which takes
from a tenth of a second to tens of seconds. Each kernel compiles a configuration
once through `compile_cached`, so re-running a notebook cell is instant; the
seconds spent compiling are kept in `COMPILE_LOG` because compile time is a cost
the learner pays and the course reports it.
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import torch

from course.runtime.hardware import machine, tiers_for


class KernelInputError(ValueError):
    """An input a kernel cannot take (dtype, shape, layout, alignment, device)."""


class UnsupportedGPU(RuntimeError):
    """This machine's GPU (or lack of one) cannot run the kernel live."""


def require(needs: str, kernel: str) -> None:
    """Raise UnsupportedGPU unless this machine satisfies `needs`."""
    m = machine()
    if not m.can(needs):
        raise UnsupportedGPU(
            f"{kernel} needs {needs} (tier {tiers_for(needs)}); "
            f"this machine is {m.describe()}. Use its compile-only path instead.")


def check_tensor(t: Any, name: str, *, dtypes: Iterable[torch.dtype], ndim: int,
                 align_bytes: int = 16, contiguous_dim: int | None = -1,
                 device_type: str = "cuda") -> None:
    """Validate one tensor argument; raise KernelInputError naming what is wrong."""
    dtypes = tuple(dtypes)
    if not isinstance(t, torch.Tensor):
        raise KernelInputError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        names = ", ".join(str(d).replace("torch.", "") for d in dtypes)
        raise KernelInputError(f"{name} has dtype {str(t.dtype).replace('torch.', '')}; "
                               f"this kernel takes {names}")
    if t.dim() != ndim:
        raise KernelInputError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.device.type != device_type:
        raise KernelInputError(f"{name} is on {t.device}; move it to the GPU (.cuda()) first")
    if contiguous_dim is not None and t.numel() > 1 and t.stride(contiguous_dim) != 1:
        raise KernelInputError(f"{name} must be contiguous along dim {contiguous_dim} "
                               f"(strides {tuple(t.stride())}); pass .contiguous()")
    if t.data_ptr() % align_bytes:
        raise KernelInputError(f"{name}'s data pointer is not {align_bytes}-byte aligned "
                               f"(a sliced view?); pass a fresh or .clone()d tensor")


TORCH_TO_CUTLASS = {}  # filled lazily: importing cutlass costs ~1.5 s


def cutlass_dtype(dtype: torch.dtype):
    """The CuTe DSL numeric type for a torch dtype."""
    if not TORCH_TO_CUTLASS:
        import cutlass

        TORCH_TO_CUTLASS.update({
            torch.float32: cutlass.Float32, torch.float16: cutlass.Float16,
            torch.bfloat16: cutlass.BFloat16, torch.int32: cutlass.Int32,
            torch.int8: cutlass.Int8, torch.uint8: cutlass.Uint8,
        })
    if dtype not in TORCH_TO_CUTLASS:
        raise KernelInputError(f"no CuTe DSL type for {dtype}")
    return TORCH_TO_CUTLASS[dtype]


def gmem_pointer(t: torch.Tensor | None, dtype: torch.dtype, align_bytes: int = 16):
    """A CuTe global-memory pointer to `t`'s data (address 0 when t is None: compile-only)."""
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    address = 0 if t is None else t.data_ptr()
    return make_ptr(cutlass_dtype(dtype), address, cute.AddressSpace.gmem,
                    assumed_align=align_bytes)


def current_stream():
    """torch's current CUDA stream, as the CUstream CuTe DSL launches on."""
    import cuda.bindings.driver as cuda

    return cuda.CUstream(torch.cuda.current_stream().cuda_stream)


def fake_stream():
    from cutlass.cute.runtime import make_fake_stream

    return make_fake_stream()


# ---------------------------------------------------------------- compile cache

@dataclass(frozen=True)
class CompileEvent:
    key: tuple
    arch: str
    seconds: float


_CACHE: dict[tuple, Any] = {}
COMPILE_LOG: list[CompileEvent] = []


def compile_cached(key: tuple, arch: str, build: Callable[[], Any]) -> Any:
    """Return the compiled object for `key`, calling `build()` only the first time."""
    full_key = (*key, arch)
    if full_key not in _CACHE:
        start = time.perf_counter()
        _CACHE[full_key] = build()
        COMPILE_LOG.append(CompileEvent(full_key, arch, time.perf_counter() - start))
    return _CACHE[full_key]


def compile_seconds(key_prefix: tuple = ()) -> float:
    """Total seconds spent compiling configurations whose key starts with `key_prefix`."""
    n = len(key_prefix)
    return sum(e.seconds for e in COMPILE_LOG if e.key[:n] == key_prefix)


# ---------------------------------------------------------------- artifacts

@dataclass(frozen=True)
class Artifacts:
    """What the compiler produced for one kernel configuration on one arch."""

    arch: str
    ptx: str
    cubin: bytes
    compile_seconds: float

    def sass(self) -> str:
        """The cubin disassembled by nvdisasm (from the nvidia-cuda-nvdisasm wheel)."""
        tool = nvdisasm()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "kernel.cubin"
            path.write_bytes(self.cubin)
            out = subprocess.run([tool, "-c", str(path)],
                                 capture_output=True, text=True, check=True, timeout=120)
        return out.stdout

    def ptx_lines(self, pattern: str) -> list[str]:
        """PTX instruction lines matching the regular expression `pattern`."""
        rx = re.compile(pattern)
        return [ln.strip() for ln in self.ptx.splitlines() if rx.search(ln)]

    def sass_lines(self, pattern: str) -> list[str]:
        rx = re.compile(pattern)
        return [ln.strip() for ln in self.sass().splitlines() if rx.search(ln)]

    def count_ptx(self, pattern: str) -> int:
        return len(self.ptx_lines(pattern))

    def resource_usage(self) -> dict[str, dict]:
        """Registers per thread and static shared memory of each kernel in the cubin."""
        return cubin_resources(self.cubin)


def nvdisasm() -> str:
    """Path of an nvdisasm new enough for CuTe DSL's cubins (>= 13.4)."""
    try:
        import nvidia.cu13  # the nvidia-cuda-nvdisasm wheel installs here

        for base in nvidia.cu13.__path__:
            candidate = Path(base) / "bin" / "nvdisasm"
            if candidate.exists():
                return str(candidate)
    except ImportError:
        pass
    found = shutil.which("nvdisasm")
    if found is None:
        raise FileNotFoundError("nvdisasm not found: pip install 'nvidia-cuda-nvdisasm>=13.4'")
    return found


# .nv.info attribute ids (EIATTR_*) that carry per-kernel resources
_EIATTR = {0x2F: "registers", 0x11: "stack_frame_bytes"}


def cubin_resources(cubin: bytes) -> dict[str, dict]:
    """Registers, stack frame and static shared memory per kernel, read from the cubin.

    A CUDA ELF keeps per-kernel attributes in its `.nv.info` section as records
    (format u8, id u8, size u16, symbol u32, value u32); static shared memory is the
    size of the kernel's `.nv.shared.<name>` section. A non-zero stack frame means
    local memory (often spilled registers).
    """
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not a 64-bit ELF cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    # (name, type, flags, addr, offset, size, link, info, align, entsize)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize)
               for i in range(shnum)]

    def cstr(offset: int) -> str:
        return cubin[offset:cubin.index(b"\0", offset)].decode()

    names = [cstr(headers[shstrndx][4] + h[0]) for h in headers]
    section = dict(zip(names, headers))
    symtab, strtab = section[".symtab"], section[".strtab"]
    symbols = [cstr(strtab[4] + struct.unpack_from("<I", cubin, symtab[4] + i * 24)[0])
               for i in range(symtab[5] // 24)]

    kernels: dict[str, dict] = {n[6:]: {"registers": None, "stack_frame_bytes": 0,
                                        "shared_bytes": 0}
                                for n in names if n.startswith(".text.")}
    for name, h in section.items():
        if name.startswith(".nv.shared.") and name[11:] in kernels:
            kernels[name[11:]]["shared_bytes"] = h[5]
    info = section.get(".nv.info")
    pos, end = (info[4], info[4] + info[5]) if info else (0, 0)
    while pos + 4 <= end:
        fmt, attr, size = struct.unpack_from("<BBH", cubin, pos)
        if fmt == 0x04 and attr in _EIATTR and size == 8:
            sym, value = struct.unpack_from("<II", cubin, pos + 4)
            if symbols[sym] in kernels:
                kernels[symbols[sym]][_EIATTR[attr]] = value
        pos += 4 + (size if fmt == 0x04 else 0)
    return kernels


def compile_artifacts(key: tuple, arch: str, jit_fn, *args) -> Artifacts:
    """Compile `jit_fn(*args)` for `arch` (no GPU needed) and keep PTX and cubin."""
    import cutlass.cute as cute

    def build() -> Artifacts:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            compiled = cute.compile(jit_fn, *args, options=f"--gpu-arch {arch} --keep-ptx "
                                                           f"--keep-cubin --dump-dir {tmp}")
            seconds = time.perf_counter() - start
            art = compiled.artifacts
            return Artifacts(arch, art.PTX, art.CUBIN, seconds)

    return compile_cached(("artifacts", *key), arch, build)


def launch_arch() -> str:
    """The arch to compile for when launching on this machine's GPU."""
    arch = machine().arch
    if arch is None:
        raise UnsupportedGPU(f"no GPU to launch on: {machine().describe()}")
    return arch


os.environ.setdefault("CUTE_DSL_LOG_TO_CONSOLE", "0")
