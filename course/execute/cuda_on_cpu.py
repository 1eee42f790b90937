"""Host code written for a GPU, run where there is none: torch's "cuda" is the CPU.

`python -m course.execute script.py` runs a CuTe DSL script unmodified. Its kernels run on
the executor (course.execute.host); what is left is the host code's own CUDA: tensors made
with `device="cuda"` (or moved there with `.cuda()` / `.to("cuda")`), `torch.cuda`'s
streams, events, synchronisation and graphs, CuTe DSL's stream helpers and the driver's
device count, and `cutlass.cute.testing.benchmark`. Inside `cuda_on_cpu()` each of those
does the CPU's equivalent:

* a tensor asked for on "cuda" is made on the CPU (a torch function mode rewrites the
  device argument of every torch call);
* streams are stream 0 (cutlass.cuda's default stream too); synchronising does nothing
  (every launch has finished when its call returns); a CUDA graph's capture runs its
  launches there and then, and replaying it does nothing more;
* `cutlass.cuda.initialize_cuda_context()` makes no context (the executor needs none);
* `torch.cuda.is_available()` is True and the driver reports one device, so a script's "a
  GPU is required" check passes: the executor is the GPU;
* `testing.benchmark` runs the workload once and returns NaN: the executor does not model
  time, and a made-up number would be a lie;
* `cutlass.utils.HardwareInfo` answers for the GPU the executor is asked to be (an A100,
  H100 SXM, B200, B300 or RTX 5090 by capability): its SM count, and as many active
  clusters as one CTA per SM gives (what the occupancy query gives a kernel that takes
  the SM's whole shared memory, as NVIDIA's persistent GEMMs do), so a persistent
  kernel's grid is the GPU's.

What this does not model raises, as the executor's Unmodelled does: nothing is faked
beyond the list above.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from course.execute.hazards import Hazard, Unmodelled


def _cpu_device(value):
    """`value` with a CUDA device (a string or torch.device) replaced by the CPU."""
    import torch

    if isinstance(value, torch.device) and value.type == "cuda":
        return torch.device("cpu")
    if isinstance(value, str) and (value == "cuda" or value.startswith("cuda:")):
        return "cpu"
    return value


def _device_mode():
    """A torch function mode: every "cuda" device argument of a torch call becomes "cpu"."""
    from torch.overrides import TorchFunctionMode

    class CudaIsTheCpu(TorchFunctionMode):
        def __torch_function__(self, func, types_, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = _cpu_device(kwargs["device"])
            name = getattr(func, "__name__", "")
            if name == "cuda":  # tensor.cuda(): the tensor itself, on the CPU already
                return args[0]
            if name == "to":
                args = tuple(_cpu_device(a) for a in args)
            return func(*args, **kwargs)

    return CudaIsTheCpu()


class _Stream:
    """A CUDA stream where there is none: stream 0, always done."""

    cuda_stream = 0

    def __init__(self, *_, **__):
        pass

    def synchronize(self):
        pass

    def wait_stream(self, _other):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False


class _Event:
    """A CUDA event: recorded and waited for at once; elapsed time is not modelled."""

    def __init__(self, *_, **__):
        pass

    def record(self, *_):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, _other) -> float:
        return math.nan


class _Graph:
    """A CUDA graph: its capture ran the launches; replaying it does nothing more."""

    def replay(self):
        pass

    def reset(self):
        pass


def _benchmark(callable_, *args, workspace_generator=None, **kwargs):
    """cute.testing.benchmark on the executor: the workload once, and NaN for its time."""
    if workspace_generator is not None:
        work = workspace_generator()
        callable_(*work.args, **work.kwargs)
    else:
        params = kwargs.get("kernel_arguments")
        if params is not None:
            callable_(*params.args, **params.kwargs)
    return math.nan


def _benchmark_for_autotune(callable_, *args, **kwargs):
    """cutlass.testing's timing of one configuration for `tune` and `autotune_jit`: the
    workload once on the executor, and 0 us. The executor does not model time, so every
    configuration that runs ties and the tuner keeps the first (params_dict's order); each
    one the tuner tries is still run and checked. Its warmup, iterations, cold-L2 memset
    and stream check are the GPU's business and are dropped."""
    for name in ("warmup_iterations", "iterations", "use_cold_l2", "print_verbose"):
        kwargs.pop(name, None)
    kwargs.pop("current_stream", None)
    try:
        callable_(*args, **kwargs)
    except (Hazard, Unmodelled) as error:
        _SWALLOWED.append(error)  # tune skips a configuration that raised: keep it
        raise
    return 0.0


def _convert(src, dst) -> None:
    """cute.testing.convert (how cutlass.torch fills a float8 tensor from float32 values:
    a kernel on the GPU) on the CPU: each of src's values into dst's element type, rounded
    to nearest even as the executor converts (course.execute.numeric), element by element
    at the same coordinates. Float4E2M1FN (cutlass.torch's tensors of it: a uint8 tensor
    of the same shape, two elements a byte) is written as the kernel reads it: element
    offset i in the low (i even) or high nibble of byte i // 2 (course.execute.memory's
    Nibbles); values must be e2m1's own (rounding to it is not modelled)."""
    import torch

    from course.execute.host import executor_tensor, torch_of
    from course.execute.numeric import by_name

    name = getattr(dst.element_type, "__name__", str(dst.element_type))
    try:
        dtype = by_name(name)
    except KeyError:
        raise Unmodelled(f"cute.testing.convert into {name}") from None
    if dtype.width not in (4, *range(8, 65, 8)):
        raise Unmodelled(f"cute.testing.convert into {name} (a {dtype.width}-bit type)")
    source, target = torch_of(src), torch_of(dst)
    if tuple(source.shape) != tuple(target.shape):
        raise ValueError(f"convert of a {tuple(source.shape)} tensor into {tuple(target.shape)}")
    if dtype.width == 4:  # colexicographic, as the executor's tensor lists its elements
        values = source.to(torch.float32).numpy().flatten(order="F")
        packed = executor_tensor(dst)
        elems = np.asarray(packed.elements()).reshape(-1)
        packed.iterator.memory.typed(dtype)[elems] = dtype.encode(values)
        return
    stored = dtype.encode(source.to(torch.float32).numpy())
    target.copy_(torch.from_numpy(np.ascontiguousarray(stored)).view(target.dtype))


# what the executor raised inside testing.tune's `except Exception: continue`
_SWALLOWED: list = []


def _tune(real):
    """testing.tune, raising the first hazard or unmodelled name any configuration's run
    met (tune itself would skip that configuration and report only "No best kernel
    found", or pick another: a bug the executor found would be hidden)."""

    def tune(*args, **kwargs):
        del _SWALLOWED[:]
        try:
            best = real(*args, **kwargs)
        except Exception:
            if _SWALLOWED:
                raise _SWALLOWED[0] from None
            raise
        if _SWALLOWED:
            raise _SWALLOWED[0]
        return best

    tune.__name__ = tune.__qualname__ = "tune"
    tune.__wrapped__ = real
    return tune


def _seed_the_cpu(seed) -> None:
    """torch.cuda.manual_seed(_all): "cuda" tensors are made by the CPU's generator, so
    seed that one. Not torch.manual_seed: it calls torch.cuda.manual_seed_all itself."""
    import torch

    torch.default_generator.manual_seed(int(seed))


@contextlib.contextmanager
def _patched(target, **names):
    saved = {name: getattr(target, name) for name in names if hasattr(target, name)}
    for name, value in names.items():
        setattr(target, name, value)
    try:
        yield
    finally:
        for name in names:
            if name in saved:
                setattr(target, name, saved[name])
            else:
                delattr(target, name)


@contextlib.contextmanager
def cuda_on_cpu(capability: tuple = (10, 0)):
    """Inside: torch's CUDA calls and CuTe DSL's stream, device and timing helpers behave
    as the CPU equivalents listed in this module's docstring; the "GPU" reports
    `capability` (what the executor is asked to be: sm_90a is (9, 0))."""
    import torch

    stream = _Stream()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_device_mode())
        stack.enter_context(
            _patched(
                torch.cuda,
                is_available=lambda: True,
                device_count=lambda: 1,
                current_device=lambda: 0,
                get_device_capability=lambda *_: tuple(capability),
                get_device_name=lambda *_: "the course's CPU executor",
                get_device_properties=_device_properties(capability),
                synchronize=lambda *_, **__: None,
                current_stream=lambda *_, **__: stream,
                default_stream=lambda *_, **__: stream,
                Stream=_Stream,
                Event=_Event,
                CUDAGraph=_Graph,
                graph=lambda *_, **__: contextlib.nullcontext(),
                stream=lambda *_, **__: contextlib.nullcontext(),
                manual_seed=_seed_the_cpu,
                manual_seed_all=_seed_the_cpu,
            )
        )
        stack.enter_context(_cutlass_helpers(stream, capability))
        # the block-scaled cases of torch._scaled_mm, which torch's CPU build lacks
        from course.execute.scaled_mm_on_cpu import scaled_mm

        stack.enter_context(_patched(torch, _scaled_mm=scaled_mm(torch._scaled_mm)))
        yield


# the SM count of the GPU each capability is taken to be (A100, H100 SXM, B200, Blackwell
# Ultra: the 160 SMs of NVIDIA's "Inside Blackwell Ultra", GeForce RTX 5090): it sets only
# how many CTAs a persistent kernel launches, never what a CTA computes
_SMS = {(8, 0): 108, (9, 0): 132, (10, 0): 148, (10, 3): 160, (12, 0): 170}


def _device_properties(capability: tuple):
    """torch.cuda.get_device_properties for the executor's GPU: its capability (major,
    minor), name and SM count; any other property is Unmodelled."""

    class Properties:
        def __init__(self):
            self.major, self.minor = tuple(capability)
            self.name = "the course's CPU executor"
            if tuple(capability) in _SMS:
                self.multi_processor_count = _SMS[tuple(capability)]

        def __getattr__(self, name):
            raise Unmodelled(f"torch.cuda.get_device_properties(...).{name}")

    def get_device_properties(device=None):
        return Properties()

    return get_device_properties


def _hardware_info(capability: tuple):
    """cutlass.utils.HardwareInfo for the executor's GPU (see the module docstring)."""
    sms = _SMS.get(tuple(capability))

    class HardwareInfo:
        def __init__(self, device_id: int = 0):
            if sms is None:
                raise Unmodelled(f"HardwareInfo of an sm_{capability[0]}{capability[1]} GPU")
            if device_id != 0:
                raise ValueError(f"Device ID {device_id} is out of range for device count 1")
            self.device_id = device_id

        def get_device_multiprocessor_count(self) -> int:
            return sms

        def get_max_active_clusters(self, cluster_size: int, stream=None) -> int:
            if not 0 < cluster_size <= 32:
                raise ValueError(
                    f"Cluster size must be between 1 and 32, {cluster_size} is not supported"
                )
            return sms // cluster_size

        def __getattr__(self, name):
            raise Unmodelled(f"cutlass.utils.HardwareInfo.{name}")

    return HardwareInfo


@contextlib.contextmanager
def _cutlass_helpers(stream, capability):
    """CuTe DSL's own helpers that ask the driver: stream 0, one device, benchmark once."""
    from cuda.bindings import driver

    with contextlib.ExitStack() as stack:
        try:
            import cutlass.torch as cutlass_torch

            stack.enter_context(
                _patched(
                    cutlass_torch,
                    current_stream=lambda *_, **__: driver.CUstream(0),
                    default_stream=lambda *_, **__: driver.CUstream(0),
                )
            )
        except ImportError:
            pass
        try:
            from cutlass.cute import testing

            stack.enter_context(_patched(testing, benchmark=_benchmark))
        except ImportError:
            pass
        try:  # cute.testing's names are deprecated shims over cutlass.testing's
            import cutlass.testing as cutlass_testing
            from cutlass.cute import testing as cute_testing

            tune = _tune(cutlass_testing.tune)
            stack.enter_context(
                _patched(
                    cutlass_testing,
                    benchmark=_benchmark,
                    tune=tune,
                    _benchmark_for_autotune=_benchmark_for_autotune,
                )
            )
            stack.enter_context(_patched(cute_testing, tune=tune, convert=_convert))
        except ImportError:
            pass
        try:
            import cutlass.utils as cutlass_utils
            from cutlass.utils import hardware_info

            info = _hardware_info(capability)
            stack.enter_context(_patched(cutlass_utils, HardwareInfo=info))
            stack.enter_context(_patched(hardware_info, HardwareInfo=info))
        except ImportError:
            pass
        try:  # cutlass.cuda: the context and stream calls of a script's host code
            from cutlass.base_dsl.runtime import cuda as cutlass_cuda

            stack.enter_context(
                _patched(
                    cutlass_cuda,
                    initialize_cuda_context=lambda *_, **__: None,  # the executor needs none
                    default_stream=lambda *_, **__: driver.CUstream(0),
                    stream_sync=lambda *_, **__: None,
                )
            )
        except ImportError:
            pass
        success = driver.CUresult.CUDA_SUCCESS
        stack.enter_context(
            _patched(
                driver,
                cuInit=lambda *_: (success,),
                cuDeviceGetCount=lambda: (success, 1),
            )
        )
        yield
