"""A kernel's own code, rebound to the executor's `cute` and `cutlass`.

`Translator.value(obj)` gives the executor's version of anything kernel code can reach:

* a function written in this course or by the learner (any code not installed as a
  library) keeps its code object and gets new globals: a `KernelGlobals` dict that
  translates each name of its module on first use, with `__import__` replaced, so that
  `import cutlass.cute as cute` inside a function binds the stand-in too; closures and
  defaults are translated the same way; a `@cute.kernel` becomes
  course.execute.api.KernelFunction (call it, then `.launch(...)`);
* CuTe DSL's modules and the objects imported from them become course.execute.api's
  stand-ins; a CuTe value created on the host (`cutlass.Int32(5)`) becomes its number;
* an object whose class has `@cute.jit` / `@cute.kernel` methods (a kernel class such as
  kernels.sm80_gemm.Sm80Gemm, or a learner's subclass of it) is seen through a proxy whose
  methods are translated and whose attributes are translated values;
* a module of the course becomes a proxy that translates what is taken from it;
* containers are translated element by element; anything else is itself.

A function's source is rewritten once (course.execute.branches.rewrite, kept importable
here as `translate.rewrite`) so that a branch the lanes of a warp take differently runs
both ways under masks (course.execute.simt):
`if`, `a if c else b`, `and`, `or`, `not`, `while`. Line numbers stay the source's own, so
a hazard names the learner's line (course.execute.hazards). Code whose source cannot be
read keeps its code object and runs unrewritten.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import os
import sys
import sysconfig
import types

from course.execute import api, blackwell, numeric_params, simt, tile_schedulers, warp_fields
from course.execute.branches import FACTORY, rewrite
from course.execute.hazards import KernelGlobals, Unmodelled

_LIBRARY_DIRS = tuple(
    sorted(
        {
            os.path.realpath(p)
            for key in ("stdlib", "platstdlib", "purelib", "platlib")
            if (p := sysconfig.get_paths().get(key))
        }
    )
)


# installed CuTe DSL code translated like the course's own (its `cute`/`cutlass` names bound
# to the stand-ins): NVIDIA's pipelines, so they run on the executor's mbarrier model
TRANSLATED_LIBRARIES = ("cutlass.pipeline", *tile_schedulers.LIBRARIES, *blackwell.LIBRARIES)


def _translated_library(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in TRANSLATED_LIBRARIES)


def is_library_code(fn) -> bool:
    """True for code installed as a library (numpy, torch, CuTe DSL, the stdlib), except
    the CuTe DSL modules in TRANSLATED_LIBRARIES."""
    if _translated_library(getattr(fn, "__module__", "") or ""):
        return False
    filename = fn.__code__.co_filename
    if filename.startswith("<frozen") or filename.startswith("<string>"):
        return True
    path = os.path.realpath(filename) if os.path.isabs(filename) else filename
    return path.startswith(_LIBRARY_DIRS)


def _is_library_module(module: types.ModuleType) -> bool:
    filename = getattr(module, "__file__", None)
    if not filename:
        return module.__name__ in ("builtins", "sys") or not module.__name__.startswith(
            ("course", "kernels", "learner_", "tests", "__main__")
        )
    return os.path.realpath(filename).startswith(_LIBRARY_DIRS)


TRANSLATED = "__on_the_cpu_executor__"

# the keywords CuTe DSL's preprocessor takes on a `for ... in range(...)` of jit code (how
# to unroll or pipeline the loop: nothing that changes what it computes)
_LOOP_KEYWORDS = frozenset(
    ("unroll", "unroll_full", "prefetch_stages", "pipelining", "vectorize", "at_least_once")
)


def _kernel_range(*args, **loop_options):
    """Python's range inside translated code, taking CuTe DSL's loop keywords as its
    preprocessor does (`for k in range(n, unroll_full=True)`); any other keyword is
    Python's TypeError."""
    unknown = set(loop_options) - _LOOP_KEYWORDS
    if unknown:
        raise TypeError(f"range() got an unexpected keyword argument '{sorted(unknown)[0]}'")
    return builtins.range(*args)


@contextlib.contextmanager
def _probe():
    yield


# the code of every function contextlib.contextmanager returns (its `helper`)
_CONTEXT_MANAGER_CODE = _probe.__code__


class _Unknown:
    """A CuTe DSL object the executor does not model: any use of it says so."""

    def __init__(self, what: str):
        self._what = what

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise Unmodelled(f"{self._what}.{name}")

    def __call__(self, *args, **kwargs):
        raise Unmodelled(self._what)

    def __repr__(self) -> str:
        return f"<not modelled: {self._what}>"


class Translator:
    """One run's translations (made fresh per run: a redefined function is seen anew)."""

    def __init__(self, redirects: dict | None = None):
        """redirects: real object -> what kernel code gets instead (e.g. the GPU's boundary
        functions of the host code, replaced by CPU versions); a dict, or (real, instead)
        pairs where a real object is not hashable."""
        pairs = redirects.items() if isinstance(redirects, dict) else (redirects or ())
        self._redirects = {id(k): (k, v) for k, v in pairs}
        self._done: dict[int, tuple] = {}
        self._globals: dict[int, KernelGlobals] = {}
        self.builtins = dict(vars(builtins))
        self.builtins["__import__"] = self._import
        self.builtins["range"] = _kernel_range
        self._real_names = None

    # --- the entry point
    def value(self, obj):
        if obj is None or isinstance(obj, (bool, int, float, str, bytes, complex)):
            return obj
        key = id(obj)
        hit = self._done.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        self._done[key] = (obj, obj)  # a cycle sees the object itself
        out = self._translate(obj)
        self._done[key] = (obj, out)
        return out

    def _translate(self, obj):
        redirect = self._redirects.get(id(obj))
        if redirect is not None and redirect[0] is obj:
            return redirect[1]
        module = getattr(type(obj), "__module__", "") or ""
        if module.startswith("course.execute") or getattr(obj, TRANSLATED, False):
            return obj
        if isinstance(obj, types.ModuleType):
            return self._module(obj)
        if _translated_library(getattr(obj, "__module__", None) or "") and (
            isinstance(obj, type) or callable(obj)
        ):
            return self._class(obj) if isinstance(obj, type) else self.function(obj)
        if _translated_library(type(obj).__module__ or "") and not isinstance(obj, BaseException):
            return self._library_instance(obj)
        if _is_cutlass(obj):
            return self._cutlass_object(obj)
        if isinstance(obj, types.MethodType):
            return types.MethodType(self.value(obj.__func__), self.value(obj.__self__))
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) or hasattr(
            obj, "_decorator_kind"
        ):
            return self.function(obj)
        if isinstance(obj, functools.partial):
            return functools.partial(
                self.value(obj.func), *self.value(obj.args), **self.value(obj.keywords)
            )
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return _same_or(obj, tuple(self.value(e) for e in obj))
        if isinstance(obj, list):
            return _same_or(obj, [self.value(e) for e in obj])
        if isinstance(obj, dict):
            new = {k: self.value(v) for k, v in obj.items()}
            return obj if all(new[k] is obj[k] for k in obj) else new
        if isinstance(obj, type):
            return self._class(obj) if _translated_class(obj) else obj
        if _has_dsl_methods(type(obj)) or _holds_dsl_values(obj):
            return InstanceProxy(obj, self)
        return obj

    # --- functions
    def function(self, fn):
        if getattr(fn, "__code__", None) is _CONTEXT_MANAGER_CODE:
            # @contextlib.contextmanager over kernel code: the generator translated, the
            # decorator kept (unwrapped, a `with` over it would get a bare generator)
            return contextlib.contextmanager(self.function(fn.__wrapped__))
        kind = getattr(fn, "_decorator_kind", None)
        raw = inspect.unwrap(fn) if hasattr(fn, "__wrapped__") else fn
        if not isinstance(raw, types.FunctionType) or is_library_code(raw):
            if kind is not None:
                raise Unmodelled(
                    f"the {kind} function {getattr(fn, '__name__', fn)} "
                    f"(its source is not reachable)"
                )
            return fn
        g = self.globals_of(raw.__globals__)
        cells = [self.value(_cell(c)) if _filled(c) else simt.UNDEF for c in raw.__closure__ or ()]
        code = rewrite(raw.__code__, raw)
        if code is not None:
            namespace: dict = {}
            exec(code, g, namespace)  # defines the factory that recreates the closure
            new = namespace[FACTORY](*cells)
            new.__defaults__ = self.value(raw.__defaults__)
        else:
            closure = tuple(types.CellType(c) for c in cells) if raw.__closure__ else None
            new = types.FunctionType(
                raw.__code__, g, raw.__name__, self.value(raw.__defaults__), closure
            )
        new.__kwdefaults__ = self.value(raw.__kwdefaults__)
        new.__annotations__ = dict(getattr(raw, "__annotations__", {}))
        new.__qualname__ = raw.__qualname__
        new.__module__ = raw.__module__
        new.__doc__ = raw.__doc__
        new.__dict__.update(getattr(raw, "__dict__", {}))
        setattr(new, TRANSLATED, True)
        if kind in ("jit", "kernel"):  # CuTe DSL converts scalars to their annotated types
            new = numeric_params.converting(new, raw)
        return api.KernelFunction(new) if kind == "kernel" else new

    def _class(self, cls: type) -> type:
        """A class of a translated library: the same class with its functions translated
        (enums and exceptions are kept: they hold no kernel code)."""
        import enum

        if issubclass(cls, (enum.Enum, BaseException)):
            return cls
        namespace = {}
        for key, value in vars(cls).items():
            if key in ("__dict__", "__weakref__"):
                continue
            if isinstance(value, staticmethod):
                value = staticmethod(self.value(value.__func__))
            elif isinstance(value, classmethod):
                value = classmethod(self.value(value.__func__))
            elif isinstance(value, property):
                value = property(*(self.value(f) if f else None for f in (value.fget, value.fset)))
            elif isinstance(value, types.FunctionType) or hasattr(value, "_decorator_kind"):
                value = self.value(value)
            elif isinstance(value, type) and _translated_class(value):
                # a nested class (NVIDIA's EFC.Kernel): kernel code that makes one through
                # the outer class must get translated methods too
                value = self.value(value)
            namespace[key] = value
        if _translated_class(cls):
            namespace.update(_warp_field_methods(cls))
        bases = tuple(self.value(b) for b in cls.__bases__)
        new = type(cls)(cls.__name__, bases, namespace)
        new.__module__, new.__qualname__ = cls.__module__, cls.__qualname__
        _rebind_class_cells(namespace.values(), cls, new)
        setattr(new, TRANSLATED, True)
        return new

    def _library_instance(self, obj):
        """An object of a translated library's class made on the host before the run (a
        kernel class's `pipeline.NamedBarrier(...)` made in its __init__): the same fields,
        translated, in an object of the translated class (enums are kept as they are)."""
        import enum

        cls = self.value(type(obj))
        if cls is type(obj) or isinstance(obj, enum.Enum):
            return obj
        new = object.__new__(cls)
        fields = dict(getattr(obj, "__dict__", {}))
        for klass in type(obj).__mro__:
            for slot in getattr(klass, "__slots__", ()):
                if hasattr(obj, slot):
                    fields.setdefault(slot, getattr(obj, slot))
        for key, value in fields.items():
            object.__setattr__(new, key, self.value(value))
        return new

    def globals_of(self, real: dict) -> KernelGlobals:
        g = self._globals.get(id(real))
        if g is None:
            g = self._globals[id(real)] = _Globals(real, self)
        return g

    # --- modules and imports
    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        real_globals = globals._real if isinstance(globals, _Globals) else globals
        module = builtins.__import__(name, real_globals, locals, fromlist, level)
        return self.value(module)

    def _module(self, module: types.ModuleType):
        name = module.__name__
        if name in api.MODULES:
            if _reexports_library(module):
                return _WithLibrary(api.MODULES[name], module, self)
            return api.MODULES[name]
        if _translated_library(name):
            return ModuleProxy(module, self)
        if name.split(".")[0] in ("cutlass", "cuda"):
            return _Unknown(name)
        if _is_library_module(module):
            return module
        return ModuleProxy(module, self)

    def _cutlass_object(self, obj):
        import cutlass

        if isinstance(obj, cutlass.Numeric):  # a value made on the host: its number
            return obj.value
        if isinstance(obj, cutlass.cute.struct):  # a module-level @cute.struct
            from course.execute import smem_struct

            return smem_struct.from_real(obj, self.value)
        names = self._real_to_standin()
        found = names.get(id(obj))
        if found is not None:
            return found()
        import enum

        if isinstance(obj, enum.Enum):
            # a member of a CuTe DSL enum made on the host (a kernel class's __init__ keeps
            # tcgen05.CtaGroup.ONE): the member of that name of a stand-in of its enum
            member = _standin_member(obj)
            if member is not None:
                return member
        return _Unknown(getattr(obj, "__qualname__", type(obj).__name__))

    def _real_to_standin(self) -> dict:
        """id(real CuTe DSL object) -> a getter of its stand-in, for every public name of
        the modules the executor stands in for."""
        if self._real_names is None:
            names = {}
            for module_name, standin, real in _real_modules():
                for attr, value in vars(real).items():
                    if attr.startswith("_") or isinstance(value, types.ModuleType):
                        continue
                    names.setdefault(
                        id(value), functools.partial(_standin_attr, standin, attr, module_name)
                    )
                for attr, value in _served_by_getattr(real, standin):
                    names.setdefault(
                        id(value), functools.partial(_standin_attr, standin, attr, module_name)
                    )
            self._real_names = names
        return self._real_names


_REEXPORTS: dict = {}


def _reexports_library(module: types.ModuleType) -> bool:
    """True when a module the executor stands in for re-exports names of a translated
    library (`cutlass.utils.StaticPersistentTileScheduler`)."""
    name = module.__name__
    if name not in _REEXPORTS:
        _REEXPORTS[name] = False  # a submodule naming its parent back sees no re-export
        values = list(vars(module).values())
        _REEXPORTS[name] = not _translated_library(name) and (
            any(
                _translated_library(getattr(v, "__module__", None) or "")
                for v in values
                if isinstance(v, type) or callable(v)
            )
            # a stand-in child that does (`cutlass.utils.gemm` reached from `cutlass`)
            or any(_stood_in_child(module, v) and _reexports_library(v) for v in values)
        )
    return _REEXPORTS[name]


def _stood_in_child(module: types.ModuleType, value) -> bool:
    """True when value is a submodule of module that the executor stands in for."""
    return isinstance(value, types.ModuleType) and (
        value.__name__.startswith(module.__name__ + ".") and value.__name__ in api.MODULES
    )


class _WithLibrary:
    """A stand-in module whose real module also re-exports translated library code: the
    stand-in's names first, then the library's, translated (anything else: the stand-in's
    Unmodelled)."""

    def __init__(self, standin, real: types.ModuleType, translator: "Translator"):
        self._standin, self._real, self._tr = standin, real, translator

    def __getattr__(self, name):
        try:
            value = getattr(self._standin, name)
        except Unmodelled:
            value = getattr(self._real, name, None)
            home = value.__name__ if isinstance(value, types.ModuleType) else None
            if value is None or not _translated_library(
                home or getattr(value, "__module__", "") or ""
            ):
                raise
            return self._tr.value(value)  # a translated library's function, class or module
        real = getattr(self._real, name, None)
        if _stood_in_child(self._real, real):
            value = self._tr.value(real)  # its stand-in, itself wrapped where it re-exports
        self.__dict__[name] = value  # stand-ins are fixed: the next look-up skips this
        return value

    def __repr__(self) -> str:
        return repr(self._standin)


def _standin_member(member):
    """The stand-in of a real CuTe DSL enum member: the member of that name in the first
    stand-in module that models the enum (CuTe DSL re-exports an enum in several modules:
    tcgen05.CtaGroup is cpasync.CtaGroup too), or None where none does."""
    for _, standin, real in _real_modules():
        for attr, value in vars(real).items():
            if value is type(member) and not attr.startswith("_"):
                found = standin.__dict__.get(attr)
                found = getattr(found, "__dict__", {}).get(member.name) if found else None
                if found is not None:
                    return found
    return None


def _real_modules():
    """(module name, its stand-in, the real module) for every module the executor stands in
    for that is installed here."""
    import importlib

    for module_name, standin in api.MODULES.items():
        try:
            yield module_name, standin, importlib.import_module(module_name)
        except ImportError:
            continue


def _served_by_getattr(real, standin):
    """(name, object) for the names a stand-in models that the real module serves only
    through its module `__getattr__` (a deprecated alias: tcgen05.OperandMajorMode, a class
    of its own), so host code that imported the alias at module level gets the stand-in."""
    import warnings

    if "__getattr__" not in vars(real):
        return
    for attr in vars(standin):
        if attr.startswith("_") or attr in vars(real):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                value = getattr(real, attr)
            except Exception:  # noqa: BLE001 -- the real module has no such name
                continue
        yield attr, value


def _standin_attr(standin, attr: str, module_name: str):
    try:
        return getattr(standin, attr)
    except Unmodelled:
        short = {"cutlass.cute": "cute", "cutlass.cute.arch": "cute.arch"}.get(
            module_name, module_name
        )
        return _Unknown(f"{short}.{attr}")


def _is_cutlass(obj) -> bool:
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        module = getattr(type(obj), "__module__", "") or ""
    return module.split(".")[0] in ("cutlass", "cuda", "_mlir") or (
        module.startswith("nvidia_cutlass_dsl")
    )


def _translated_class(cls: type) -> bool:
    """A class whose methods kernel code must run on the stand-ins, so that kernel code
    which makes one gets a translated class (as a library's class is): a script's own class
    outside the course (an NVIDIA example's helper, `fmha_helpers.FmhaStaticTileScheduler`),
    or a helper of the course's kernels that kernel code makes (`kernels.fp8_gemm.GroupSteps`:
    @cute.jit methods, no @cute.kernel). The course's kernel classes keep their proxies
    (InstanceProxy: their objects are made on the host); enums, exceptions and tuples hold no
    kernel code and stay as they are."""
    import enum

    if issubclass(cls, (enum.Enum, BaseException, tuple)) or getattr(cls, TRANSLATED, False):
        return False
    if "__slots__" in vars(cls):  # its slots' descriptors belong to the class it was built as
        return False
    name = cls.__module__ or ""
    if name.startswith(("course.", "kernels.")):
        kinds = {
            getattr(v, "_decorator_kind", None) for k in cls.__mro__[:-1] for v in vars(k).values()
        }
        return "jit" in kinds and "kernel" not in kinds
    module = sys.modules.get(name)
    if module is None or _is_library_module(module):
        return False
    return any(
        isinstance(v, types.ModuleType) and v.__name__.split(".")[0] == "cutlass"
        for v in vars(module).values()
    )


def _warp_field_methods(cls: type) -> dict:
    """`__setattr__`/`__getattr__` for a translated script class, so that what kernel code
    sets on one of its objects is the setting warp's own (course.execute.warp_fields); none
    where the class has its own attribute hooks. Reads of fields set on the host stay
    Python's own look-up: only a field kernel code wrote goes through `__getattr__`."""
    hooks = ("__getattr__", "__setattr__", "__getattribute__")
    if any(h in vars(k) for k in cls.__mro__[:-1] for h in hooks):
        return {}

    def __setattr__(self, name, value):
        if not warp_fields.set_in_warp(self.__dict__, name, value):
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        value = warp_fields.get_in_warp(self.__dict__, name, _MISSING)
        if value is _MISSING:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return value

    return {"__setattr__": __setattr__, "__getattr__": __getattr__}


def _rebind_class_cells(values, old: type, new: type) -> None:
    """Point the `__class__` cell of a translated method (what a bare `super()` reads) at
    the translated class, so super() inside it accepts the translated class's instances."""
    for value in values:
        fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        if isinstance(fn, property):
            for part in (fn.fget, fn.fset):
                _rebind_class_cells((part,) if part else (), old, new)
            continue
        code = getattr(fn, "__code__", None)
        if code is None or "__class__" not in code.co_freevars or not fn.__closure__:
            continue
        cell = fn.__closure__[code.co_freevars.index("__class__")]
        if _filled(cell) and cell.cell_contents is old:
            cell.cell_contents = new


def _has_dsl_methods(cls) -> bool:
    for klass in cls.__mro__[:-1]:
        for value in vars(klass).values():
            if hasattr(value, "_decorator_kind"):
                return True
    return False


def _holds_dsl_values(obj) -> bool:
    """An object of the script's own class (not a library's) with a CuTe DSL value among
    its fields (a config holding `cutlass.BFloat16`), or a kernel object (one with
    @cute.jit/@cute.kernel methods: NVIDIA's EFC helper holds its GEMM): kernel code reading
    the field must get the stand-in -- for a kernel object the one proxy its host function
    runs on, whose attributes it sets there -- so it is seen through an InstanceProxy."""
    fields = getattr(obj, "__dict__", None)
    if not isinstance(fields, dict) or isinstance(obj, type):
        return False
    module = sys.modules.get(type(obj).__module__ or "")
    if module is None or _is_library_module(module):
        return False
    return any(
        _is_cutlass(v) or (not isinstance(v, type) and _has_dsl_methods(type(v)))
        for v in fields.values()
    )


def _same_or(old, new):
    return old if all(a is b for a, b in zip(old, new)) else new


def _filled(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _cell(cell):
    return cell.cell_contents


class _Globals(KernelGlobals):
    """A module's globals as kernel code on the executor sees them (translated lazily)."""

    def __init__(self, real: dict, translator: Translator):
        super().__init__()
        self._real, self._tr = real, translator
        self["__builtins__"] = translator.builtins
        self[simt.NAME] = simt
        for key in ("__name__", "__package__", "__file__", "__spec__"):
            if key in real:
                dict.__setitem__(self, key, real[key])

    def __missing__(self, name):
        if name in self._real:
            value = self._tr.value(self._real[name])
            self[name] = value
            return value
        raise KeyError(name)


class ModuleProxy(types.ModuleType):
    """A course module seen from kernel code: what is taken from it is translated."""

    def __init__(self, module: types.ModuleType, translator: Translator):
        super().__init__(module.__name__)
        self.__dict__["_real"] = module
        self.__dict__["_tr"] = translator

    def __getattr__(self, name):
        value = self._tr.value(getattr(self._real, name))
        self.__dict__[name] = value
        return value


_MISSING = object()


def _plain(value) -> bool:
    """None, a bool, number or string, or a tuple or list of them (nested): a host value
    that means the same to CuTe DSL's objects as to the executor's."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return False


class InstanceProxy:
    """An object with @cute.jit/@cute.kernel methods, seen from kernel code: its methods
    are translated and bound to the proxy, its attributes translated."""

    def __init__(self, obj, translator: Translator):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_tr", translator)
        object.__setattr__(self, "_cache", {})

    def __getattr__(self, name):
        own = self.__dict__
        if warp_fields.LAYERS in own:  # kernel code set fields here: the warp's own first
            value = warp_fields.get_in_warp(own, name, _MISSING)
            if value is not _MISSING:
                return value
        cache = own["_cache"]
        if name in cache:
            return cache[name]
        obj, tr = self._obj, self._tr
        cls = type(obj)
        attr = next((vars(k)[name] for k in cls.__mro__ if name in vars(k)), _MISSING)
        inst = getattr(obj, "__dict__", {})
        if isinstance(attr, property):
            return tr.value(attr.fget)(self)
        if name in inst:
            value = tr.value(inst[name])
        elif isinstance(attr, staticmethod):
            value = tr.value(attr.__func__)
        elif isinstance(attr, classmethod):
            value = types.MethodType(tr.value(attr.__func__), cls)
        elif isinstance(attr, types.FunctionType) or hasattr(attr, "_decorator_kind"):
            value = types.MethodType(tr.value(attr), self)
        elif attr is _MISSING:
            value = tr.value(getattr(obj, name))
        else:
            value = tr.value(attr)
        cache[name] = value
        return value

    def __setattr__(self, name, value):
        if warp_fields.set_in_warp(self.__dict__, name, value):
            return  # kernel code's field (a thread's partition): the warp's own
        self._cache[name] = value
        if _plain(value):
            # CuTe DSL runs a host function's Python on the object itself: what it sets
            # there (a stage count, a tile shape) the script's host code may read after
            # the call, so plain values reach the real object too
            setattr(self._obj, name, value)

    def __call__(self, *args, **kwargs):
        """A kernel object called as its host function (cute.compile(obj, ...) calls it)."""
        return self.__getattr__("__call__")(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self._obj).__name__} on the CPU executor>"
