"""A device rule for a cgroup v2 group: an eBPF program (BPF_PROG_TYPE_CGROUP_DEVICE).

cgroup v2 has no `devices.deny` file: the kernel asks a program attached to the group
whether each open of a device node may go ahead. This one denies the character devices it
is given (the GPUs a learner was not assigned, "c 195:N rwm" as v1 writes them) and allows
every other device, so a learner's processes cannot open another learner's /dev/nvidiaN
whatever CUDA_VISIBLE_DEVICES says. Built by hand (a few instructions, no compiler) and
attached with bpf(2) through ctypes; attaching again replaces the program, and it goes with
the group when the group is removed.
"""

from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

SYS_BPF = {"x86_64": 321, "aarch64": 280}
BPF_PROG_LOAD, BPF_PROG_ATTACH = 5, 8
BPF_PROG_TYPE_CGROUP_DEVICE, BPF_CGROUP_DEVICE = 15, 6
BPF_DEVCG_DEV_CHAR = 2
# opcodes: r = *(u32 *)(r1 + off); r &= imm; if r != imm goto +off; if r == imm goto +off;
# r0 = imm; exit
LDX_W, AND_K, JNE_K, JEQ_K, MOV_K, EXIT = 0x61, 0x57, 0x55, 0x15, 0xB7, 0x95


def parse_rules(rules) -> list[tuple[int, int]]:
    """'c 195:1 rwm' -> (195, 1): the character devices to deny (only those are written)."""
    found = []
    for rule in rules:
        kind, numbers, _ = rule.split()
        if kind != "c":
            raise ValueError(f"only character devices are denied here: {rule!r}")
        major, minor = numbers.split(":")
        found.append((int(major), int(minor)))
    return found


def _insn(code, dst=0, src=0, off=0, imm=0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def program(denied: list[tuple[int, int]]) -> bytes:
    """The program: 0 (deny) for a character device in `denied`, else 1 (allow). ctx is
    struct bpf_cgroup_dev_ctx {u32 access_type (type in the low 16 bits); u32 major; u32
    minor}."""
    body = [
        _insn(LDX_W, dst=2, src=1, off=0),
        _insn(AND_K, dst=2, imm=0xFFFF),
        _insn(LDX_W, dst=3, src=1, off=4),
        _insn(LDX_W, dst=4, src=1, off=8),
    ]
    for i, (major, minor) in enumerate(denied):  # 3 instructions each
        left = 3 * (len(denied) - i - 1)  # instructions of the later checks
        body += [
            _insn(JNE_K, dst=2, off=2, imm=BPF_DEVCG_DEV_CHAR),
            _insn(JNE_K, dst=3, off=1, imm=major),
            _insn(JEQ_K, dst=4, off=left + 2, imm=minor),  # past the rest and "allow"
        ]
    body += [_insn(MOV_K, imm=1), _insn(EXIT), _insn(MOV_K, imm=0), _insn(EXIT)]
    return b"".join(body)


def _bpf(command: int, attr: bytes) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    number = SYS_BPF.get(os.uname().machine)
    if number is None:
        raise OSError(f"no bpf(2) number known for {os.uname().machine}")
    buffer = ctypes.create_string_buffer(attr, 128)
    result = libc.syscall(number, command, buffer, len(buffer))
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"bpf({command}): {os.strerror(errno)}")
    return result


def attach(group: Path, rules) -> None:
    """Deny `rules`' devices to every process of the v2 group `group`. Raises OSError where
    the kernel refuses (no bpf, no CAP_SYS_ADMIN, a parent's rule that allows no other)."""
    code = program(parse_rules(rules))
    insns = ctypes.create_string_buffer(code, len(code))
    license_ = ctypes.create_string_buffer(b"GPL")
    load = struct.pack(
        "<IIQQIIQ",
        BPF_PROG_TYPE_CGROUP_DEVICE,
        len(code) // 8,
        ctypes.addressof(insns),
        ctypes.addressof(license_),
        0,
        0,
        0,
    )
    prog = _bpf(BPF_PROG_LOAD, load)
    folder = os.open(group, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _bpf(BPF_PROG_ATTACH, struct.pack("<IIII", folder, prog, BPF_CGROUP_DEVICE, 0))
    finally:
        os.close(folder)
        os.close(prog)
