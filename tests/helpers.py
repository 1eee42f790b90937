"""Fakes shared by the tests: machines of every tier, without owning one."""

from course.runtime.hardware import Machine

CPU = Machine(tier="cpu", reason="test: no GPU")
H100 = Machine(
    tier="sm_90",
    reason="test",
    gpu_name="NVIDIA H100 80GB HBM3",
    compute_capability=(9, 0),
    sm_count=132,
    driver="580.159.04",
    cuda_runtime="13.0",
    torch_version="2.11.0",
    cutlass_dsl_version="4.8.1",
)
B200 = Machine(
    tier="sm_100", reason="test", gpu_name="NVIDIA B200", compute_capability=(10, 0), sm_count=148
)
A100 = Machine(tier="sm_80", reason="test", gpu_name="NVIDIA A100", compute_capability=(8, 0))


def use_machine(monkeypatch, m: Machine) -> None:
    """Make every module that asks `machine()` see `m`."""
    import course.runtime.hardware
    import course.runtime.live
    import course.runtime.results
    import course.catalogue

    for mod in (
        course.runtime.hardware,
        course.runtime.live,
        course.runtime.results,
        course.catalogue,
    ):
        monkeypatch.setattr(mod, "machine", lambda m=m: m)


def pretend_gpu(
    monkeypatch, compute_capability: tuple[int, int] = (9, 0), accept_cpu_tensors: bool = False
) -> None:
    """Make the kernels' host side (kernels.host) see a GPU of this compute capability, so
    everything before a launch runs for real on a CPU-only machine. With
    `accept_cpu_tensors`, CPU tensors pass the device check too (to reach the later rules)."""
    import kernels.host

    monkeypatch.setattr(kernels.host, "device_capability", lambda device=None: compute_capability)
    if accept_cpu_tensors:
        monkeypatch.setattr(kernels.host, "EXPECTED_DEVICE", "cpu")


def refuse_launch(monkeypatch, gemm) -> None:
    """A pretended Hopper GPU on which `gemm` (a kernels.gemm_host.GemmHost) fails the test if
    it ever launches: for checks that bad input is refused before a launch."""
    pretend_gpu(monkeypatch, accept_cpu_tensors=True)

    def launch(kernel, args):
        raise AssertionError("launched")

    monkeypatch.setattr(gemm, "launch", launch)


def capture_launches(monkeypatch, gemm) -> list:
    """A pretended Hopper GPU on which `gemm` records each launch's arguments instead of
    launching, its persistent grid one cluster (no GPU asked how many fit)."""
    from kernels.gemm_host import LaunchExtra, host_int32

    pretend_gpu(monkeypatch, accept_cpu_tensors=True)
    launched = []
    monkeypatch.setattr(gemm, "launch", lambda kernel, args: launched.append(args))
    extra = LaunchExtra(gemm.extra.placeholders, lambda a, cfg: (host_int32(1),))
    monkeypatch.setattr(gemm, "extra", extra)
    return launched
