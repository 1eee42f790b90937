"""CuTe DSL's host side on the executor: host code written for a GPU runs its kernels here.

NVIDIA's examples (and a learner's script) launch a kernel three ways: `cute.compile(fn,
*args)` and a call of what it returns, a direct call of the `@cute.jit` function, and host
tensors made by `from_dlpack(torch_tensor)` (or a torch tensor passed as it is). Inside
`interpreting()` all three run on the executor (course.execute.runner.run) instead of
being compiled for a GPU, the way `TRITON_INTERPRET=1` runs Triton: `cute.compile` gives a
`Compiled` whose call is a run, a jit function's call is a run, and a host tensor is the
executor's tensor over the torch CPU tensor's own storage (the kernel writes into it).

Each run's `runner.Result` is appended to `interpreting()`'s list, so a caller (a test,
`python -m course.execute script.py`) can say what each launch did. A hazard raises
`hazards.Hazard` from the call, as it would stop a kernel on the GPU.
"""

from __future__ import annotations

import contextlib
import functools

from course.execute.dynamic import marked
from course.execute.hazards import Unmodelled

# the keyword arguments of a jit call that steer CuTe DSL's compiler, not the function
_COMPILER_KEYWORDS = ("no_cache", "options", "compile_only")


def torch_of(host):
    """The torch CPU tensor behind a host tensor: a torch tensor itself, or the one a
    `from_dlpack` tensor was made from (through its DLPack capsule, read once and kept)."""
    import torch

    if isinstance(host, torch.Tensor):
        tensor = host
    else:
        tensor = host.__dict__.get("_course_torch")
        if tensor is None:
            tensor = torch.utils.dlpack.from_dlpack(host._dlpack_data)
            host.__dict__["_course_torch"] = tensor
    if tensor.device.type != "cpu":
        raise ValueError(
            f"the CPU executor runs on CPU tensors, got one on {tensor.device}: "
            "make the tensors on the CPU (or run under `python -m course.execute`, which does)"
        )
    return tensor


def is_host_tensor(obj) -> bool:
    """A tensor host code hands a kernel: a torch tensor or a `from_dlpack` tensor."""
    import torch

    if isinstance(obj, torch.Tensor):
        return True
    runtime = _runtime()
    return runtime is not None and isinstance(obj, runtime._Tensor)


def executor_tensor(host):
    """The executor's tensor for a host tensor: its element type (a `from_dlpack` tensor's
    own, which host code may have set), shape and strides, over the torch storage."""
    from course.execute import api
    from course.execute.numeric import by_name, of_torch
    from course.execute.runner import pointer
    from course.execute.tensor import Pointer

    tensor = torch_of(host)
    dtype = of_torch(tensor.dtype)
    align = 16
    element_type = getattr(host, "element_type", None) if not _is_torch(host) else None
    if element_type is not None:
        name = getattr(element_type, "__name__", str(element_type))
        try:
            dtype = by_name(name)
        except KeyError:
            raise Unmodelled(f"host tensors of element type {name}") from None
        align = int(getattr(host, "_assumed_align", None) or align)
    ptr = pointer(tensor, align=align)
    if dtype is not ptr.dtype:  # storage of one torch type read as another (float8 as uint8)
        ptr = Pointer(ptr.memory, ptr.byte_offset, dtype, align=align)
    shape = marked(tuple(tensor.shape), _dynamic_shapes(host))
    layout = api.make_layout(shape, tuple(tensor.stride()))
    return api.make_tensor(ptr, layout)


def _dynamic_shapes(host) -> tuple:
    """Which extents of a `from_dlpack` tensor host code marked dynamic
    (mark_layout_dynamic, mark_compact_shape_dynamic), as CuTe DSL's runtime records them;
    none of a torch tensor's. The executor keeps their values and that they are dynamic
    (course.execute.dynamic): CuTe's algebra treats such extents otherwise."""
    wrapper = None if _is_torch(host) else host.__dict__.get("_dltensor_wrapper")
    if wrapper is None:  # never loaded: nothing was marked
        return ()
    return tuple(wrapper.get_dynamic_shapes_mask())


def _is_torch(obj) -> bool:
    import torch

    return isinstance(obj, torch.Tensor)


# the torch CPU tensors whose address host code read (tensor.data_ptr()) inside
# interpreting(): what a `make_ptr(dtype, address, ...)` of the host code can point into
_ADDRESSED: list = []


def _recording_data_ptr(real):
    def data_ptr(self):
        address = real(self)
        if self.device.type == "cpu" and not any(t is self for t in _ADDRESSED):
            _ADDRESSED.append(self)
        return address

    return data_ptr


def _recording_iterator(real: property) -> property:
    """A `from_dlpack` tensor's `.iterator` on the host (a make_ptr-style pointer at its
    DLPack data address) that remembers the torch CPU tensor behind it, as data_ptr does:
    host code may hand the kernel the pointer instead of the tensor."""

    def iterator(self):
        found = real.fget(self)
        tensor = torch_of(self)
        if not any(t is tensor for t in _ADDRESSED):
            _ADDRESSED.append(tensor)
        return found

    return property(iterator, real.fset, real.fdel, real.__doc__)


def is_host_pointer(obj) -> bool:
    """A pointer host code made with `cutlass.cute.runtime.make_ptr` (an integer address)."""
    runtime = _runtime()
    return runtime is not None and isinstance(obj, runtime._Pointer)


def executor_pointer(host):
    """The executor's pointer for `make_ptr(dtype, tensor.data_ptr() + offset, gmem)`: into
    the storage of the torch CPU tensor whose address host code read, at that byte offset,
    so the kernel's reads and writes stay inside (and are checked against) that storage."""
    import torch

    from course.execute.numeric import by_name
    from course.execute.runner import pointer
    from course.execute.tensor import Pointer

    space = str(getattr(host, "_addr_space", ""))
    if not space.endswith(("gmem", "generic")):  # generic: a device tensor's address is global
        raise Unmodelled(f"a host pointer (make_ptr) in {space}")
    address = int(host._pointer)
    for tensor in reversed(_ADDRESSED):
        storage = tensor.untyped_storage()
        start = storage.data_ptr()
        if start <= address < start + storage.nbytes():
            whole = torch.empty(0, dtype=torch.uint8).set_(storage)
            base = pointer(whole, align=int(host._assumed_align or 16))
            name = getattr(host._dtype, "__name__", str(host._dtype))
            try:
                dtype = by_name(name)
            except KeyError:
                raise Unmodelled(f"host pointers of element type {name}") from None
            return Pointer(base.memory, address - start, dtype, align=base._align)
    raise Unmodelled(
        "a host pointer (make_ptr) to memory no torch CPU tensor's data_ptr() gave inside the run"
    )


def host_values(value):
    """Host tensors (and make_ptr pointers) among a call's arguments (at any depth of
    tuples and lists) as the executor's; everything else as it is (course.execute.translate
    does the rest)."""
    if is_host_tensor(value):
        return executor_tensor(value)
    if is_host_pointer(value):
        return executor_pointer(value)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(host_values(v) for v in value)
    if isinstance(value, list):
        return [host_values(v) for v in value]
    return value


def _without_tvm_ffi(init):
    """`from_dlpack(t, enable_tvm_ffi=True)` inside `interpreting()`: TVM-FFI is the calling
    convention of a compiled function (how it takes its tensors); the executor calls none
    and reads a host tensor's storage through DLPack, so the flag is taken as False, and
    apache-tvm-ffi need not be installed (Hopper cta_norm asks for it)."""

    @functools.wraps(init)
    def __init__(self, tensor, *args, enable_tvm_ffi=False, **kwargs):
        init(self, tensor, *args, **kwargs)

    return __init__


def _runtime():
    try:
        import cutlass.cute.runtime as runtime
    except ImportError:  # no CuTe DSL here: no from_dlpack tensors either
        return None
    return runtime


class Compiled:
    """What `cute.compile(fn, *args)` gives inside `interpreting()`: each call runs `fn` on
    the executor with that call's arguments."""

    def __init__(self, fn, session: "Session", args: tuple = (), kwargs: dict | None = None):
        self.fn = fn
        self._session = session
        self.__name__ = getattr(fn, "__name__", "compiled")
        self._compile_args = args
        self._compile_kwargs = {
            k: v for k, v in (kwargs or {}).items() if k not in _COMPILER_KEYWORDS
        }

    def __call__(self, *args, **kwargs):
        args, kwargs = self._with_constexprs(args, kwargs)
        return self._session.run(self.fn, args, kwargs)

    def _constexprs(self):
        """(the function's signature, its `Constexpr` parameters in order as (index, name)),
        or (None, []) where the signature cannot be read. Which parameters those are is
        CuTe DSL's own rule (`is_arg_annotation_constexpr`)."""
        import inspect

        from cutlass.base_dsl.runtime.jit_arg_adapters import is_arg_annotation_constexpr

        try:  # postponed annotations evaluated, as CuTe DSL reads the signature
            signature = inspect.signature(self.fn, eval_str=True)
        except (TypeError, ValueError, NameError):
            return None, []
        fixed = [
            (i, p.name)
            for i, p in enumerate(signature.parameters.values())
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            and is_arg_annotation_constexpr(p.annotation, p.name, i, None)
        ]
        return signature, fixed

    @property
    def execution_args(self) -> "_ExecutionArgs":
        """What CuTe DSL's compiled function tells of its arguments: the Constexpr ones
        pruned from its signature (testing.autotune_jit drops them before each call)."""
        return _ExecutionArgs(self._constexprs()[1])

    def _with_constexprs(self, args: tuple, kwargs: dict) -> tuple:
        """CuTe DSL's compiled function is called without its `Constexpr` parameters (and
        a method's `self`): they keep the values given to `cute.compile`."""
        import inspect

        signature, pruned = self._constexprs()
        fixed = {name for _, name in pruned}
        if not fixed:
            return args, kwargs
        params = list(signature.parameters.values())
        compiled = signature.bind_partial(*self._compile_args, **self._compile_kwargs)
        runtime = signature.replace(parameters=[p for p in params if p.name not in fixed])
        given = runtime.bind_partial(*args, **kwargs).arguments
        merged = {}  # in the signature's order; what neither gave takes its default
        for p in params:
            source = compiled.arguments if p.name in fixed else given
            if p.name in source:
                merged[p.name] = source[p.name]
        full = inspect.BoundArguments(signature, merged)
        return full.args, full.kwargs

    def __repr__(self) -> str:
        return f"<{self.__name__} compiled for the CPU executor>"


class _ExecutionArgs:
    """CuTe DSL's ExecutionArgs, as far as host code asks of it."""

    def __init__(self, pruned: list):
        self._pruned = pruned

    def get_constexpr_args(self) -> list:
        return [{"argument_index": i, "argument_name": name} for i, name in self._pruned]


class Session:
    """The runs of one `interpreting()` block: their results, in order."""

    def __init__(self, seed: int = 0, count_banks: bool = False, on_run=None):
        self.seed = seed
        self.count_banks = count_banks
        self.results: list = []
        self.on_run = on_run  # called with (fn, runner.Result) after each run

    def run(self, fn, args, kwargs):
        from course.execute import runner

        kwargs = {k: v for k, v in kwargs.items() if k not in _COMPILER_KEYWORDS}
        result = runner.run(
            fn,
            *host_values(tuple(args)),
            seed=self.seed,
            count_banks=self.count_banks,
            kwargs={k: host_values(v) for k, v in kwargs.items()},
        )
        self.results.append(result)
        if self.on_run is not None:
            self.on_run(fn, result)


@contextlib.contextmanager
def interpreting(seed: int = 0, count_banks: bool = False, on_run=None):
    """Inside: `cute.compile(...)` and calls of `@cute.jit` functions run on the executor.
    Yields the Session (its `results`: one runner.Result per call; `on_run(fn, result)`
    after each)."""
    from cutlass.base_dsl import compiler, dsl

    from course.execute import runner

    session = Session(seed, count_banks, on_run)
    saved = (compiler.CompileCallable.__call__, dsl.BaseDSL._func)

    # inside a run, CuTe DSL is the executor's oracle of static layout algebra
    # (course.execute.oracle compiles and calls small jit functions): the real thing
    def compile_call(self, fn, *args, **kwargs):
        if runner.running():
            return saved[0](self, fn, *args, **kwargs)
        return Compiled(fn, session, args, kwargs)

    def jit_call(self, func_body, *args, **kwargs):
        if runner.running():
            return saved[1](self, func_body, *args, **kwargs)
        return session.run(func_body, args, kwargs)

    import torch

    real_data_ptr = torch.Tensor.data_ptr
    runtime = _runtime()
    real_tensor_init = runtime._Tensor.__init__
    real_iterator = runtime._Tensor.__dict__["iterator"]
    compiler.CompileCallable.__call__ = compile_call
    dsl.BaseDSL._func = jit_call
    torch.Tensor.data_ptr = _recording_data_ptr(real_data_ptr)
    runtime._Tensor.__init__ = _without_tvm_ffi(real_tensor_init)
    runtime._Tensor.iterator = _recording_iterator(real_iterator)
    try:
        yield session
    finally:
        compiler.CompileCallable.__call__, dsl.BaseDSL._func = saved
        torch.Tensor.data_ptr = real_data_ptr
        runtime._Tensor.__init__ = real_tensor_init
        runtime._Tensor.iterator = real_iterator
        _ADDRESSED.clear()
