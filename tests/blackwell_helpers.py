"""Shared by the Blackwell kernel tests: a fake B200 that reaches as far as the launch."""

import collections
import re

import pytest
import torch

from .helpers import B200, pretend_gpu, use_machine


def sass_mnemonics(sass: str) -> collections.Counter:
    """How often each SASS opcode (without modifiers) occurs in nvdisasm's output."""
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.search(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]+)", line)
        if m:
            ops[m.group(1)] += 1
    return ops


def last_operand_value(ptx: str, pattern: str) -> int:
    """The constant in the last operand of the first PTX line matching `pattern`.

    PTX passes such constants in a register set just before (mov.b32 %rN, 32768;), so
    this finds the register and the last `mov` into it above the matching line.
    """
    lines = ptx.splitlines()
    rx = re.compile(pattern)
    for i, line in enumerate(lines):
        if rx.search(line):
            reg = re.findall(r"%r\d+", line)[-1]
            for prev in reversed(lines[:i]):
                m = re.search(rf"mov\.b32\s+{re.escape(reg)},\s*(-?\d+);", prev)
                if m:
                    return int(m.group(1))
            raise AssertionError(f"no constant moved into {reg} before: {line.strip()}")
    raise AssertionError(f"no PTX line matches {pattern}")


class LaunchRecorder:
    """Stands in for `module.launch`: records what would have been launched."""

    def __init__(self):
        self.calls = []

    def __call__(self, kernel, args):
        self.calls.append((kernel, args))


def fake_b200_host(monkeypatch, module) -> LaunchRecorder:
    """Pretend this machine is a B200 and stop exactly at the launch.

    Everything run() does before the launch is real: the tier check, the validation of
    the (CPU-resident) tensors, the launch arguments, and a real compile for sm_100a.
    """
    use_machine(monkeypatch, B200)
    pretend_gpu(monkeypatch, B200.compute_capability, accept_cpu_tensors=True)
    recorder = LaunchRecorder()
    monkeypatch.setattr(module.GEMM, "launch", recorder)
    return recorder


def check_recorded_launch(recorder: LaunchRecorder, module, a, b, out) -> None:
    """One launch, of this machine's compiled kernel, with the tensors' pointers and sizes."""
    assert len(recorder.calls) == 1
    kernel, args = recorder.calls[0]
    assert kernel is module.compile(a.dtype, out_dtype=out.dtype)
    a_ptr, b_ptr, c_ptr, m, n, k = args
    assert [p._pointer for p in (a_ptr, b_ptr, c_ptr)] == [t.data_ptr() for t in (a, b, out)]
    assert [int(x) for x in (m, n, k)] == [a.shape[0], b.shape[0], a.shape[1]]


def validation_cases():
    """(description, kwargs for run, expected message) that must be refused before launch."""
    bf = torch.bfloat16
    a, b = torch.zeros(64, 64, dtype=bf), torch.zeros(64, 64, dtype=bf)
    return [
        ("fp32 input", dict(a=a.float(), b=b.float()), "dtype float32"),
        ("mixed dtypes", dict(a=a, b=b.half()), "dtype float16"),
        ("3-D input", dict(a=a[None], b=b), "2-D"),
        ("K mismatch", dict(a=a, b=torch.zeros(64, 32, dtype=bf)), "same K"),
        ("M-major A", dict(a=torch.zeros(64, 64, dtype=bf).t(), b=b), "K-major"),
        ("column slice", dict(a=torch.zeros(64, 128, dtype=bf)[:, :64], b=b), "not packed"),
        (
            "K not a multiple of 8",
            dict(a=torch.zeros(64, 60, dtype=bf), b=torch.zeros(64, 60, dtype=bf)),
            "K = 60",
        ),
        ("N not a multiple of 8", dict(a=a, b=torch.zeros(60, 64, dtype=bf)), "N = 60"),
        (
            "misaligned base",
            dict(a=torch.zeros(65 * 64, dtype=bf)[1 : 64 * 64 + 1].view(64, 64), b=b),
            "aligned",
        ),
        ("fp32 output", dict(a=a, b=b, out=torch.zeros(64, 64)), "dtype float32"),
        ("wrong output shape", dict(a=a, b=b, out=torch.zeros(64, 32, dtype=bf)), "64x64"),
        (
            "transposed output",
            dict(a=a, b=b, out=torch.zeros(64, 64, dtype=bf).t()),
            "compact row-major",
        ),
    ]


def assert_refused(module, kwargs, message):
    from kernels.host import KernelInputError

    with pytest.raises(KernelInputError, match=re.escape(message)):
        module.run(**kwargs)
