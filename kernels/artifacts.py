"""What the compiler produced for one kernel configuration on one arch, read without a GPU.

`artifacts(arch)` of every kernel returns an `Artifacts`: the PTX, the cubin, its SASS
(disassembled by nvdisasm from the nvidia-cuda-nvdisasm wheel) and the resources of each
kernel in it (registers per thread, stack frame = spills, static shared memory). This is
how a CPU-only machine still shows what a kernel compiles to.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .compile_cache import compile_cached


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
            out = subprocess.run(
                [tool, "-c", str(path)], capture_output=True, text=True, check=True, timeout=120
            )
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
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    # (name, type, flags, addr, offset, size, link, info, align, entsize)
    headers = [
        struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)
    ]

    def cstr(offset: int) -> str:
        return cubin[offset : cubin.index(b"\0", offset)].decode()

    names = [cstr(headers[shstrndx][4] + h[0]) for h in headers]
    section = dict(zip(names, headers))
    symtab, strtab = section[".symtab"], section[".strtab"]
    symbols = [
        cstr(strtab[4] + struct.unpack_from("<I", cubin, symtab[4] + i * 24)[0])
        for i in range(symtab[5] // 24)
    ]

    kernels: dict[str, dict] = {
        n[6:]: {"registers": None, "stack_frame_bytes": 0, "shared_bytes": 0}
        for n in names
        if n.startswith(".text.")
    }
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
            compiled = cute.compile(
                jit_fn, *args, options=f"--gpu-arch {arch} --keep-ptx --keep-cubin --dump-dir {tmp}"
            )
            seconds = time.perf_counter() - start
            art = compiled.artifacts
            return Artifacts(arch, art.PTX, art.CUBIN, seconds)

    return compile_cached(("artifacts", *key), arch, build)
