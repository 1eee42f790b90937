"""The stand-in module (`Namespace`) and the one table every modelled CuTe DSL name is in.

Each architecture module declares the names it adds as data, `NAMES = {module: {name:
stand-in}}` (course.execute.hopper, wgmma, blackwell, scaled_mma; the SIMT core's are
course.execute.api's `CORE`); course.execute.api builds every stand-in module once from those
tables, in order (`build`). A name is added once: a second table giving it again is refused,
unless it says how it changes the first, with `Replaces(stand-in)` (the earlier one unused),
`Wraps(make)` (the new stand-in is `make(old)`, e.g. `cute.size` learning TMA partitions) or
`Alias(module, name)` (the same object under a second name, as CuTe DSL re-exports it).

A new CuTe DSL name the executor models is one entry in its architecture module's `NAMES`;
a new copy or MMA unit behind `cute.copy` / `cute.gemm` is one branch in
course.execute.dispatch.

This module sits below every other of course.execute that needs a Namespace (it imports only
hazards, oracle and memory's constants), so that none of them imports course.execute.api.
"""

from __future__ import annotations

import enum
import functools
import types
from dataclasses import dataclass
from typing import Callable

from course.execute.hazards import Unmodelled
from course.execute.memory import GMEM, RMEM, SMEM
from course.execute.oracle import Recipe, resolve


class Namespace:
    """A module stand-in: its modelled names, and Unmodelled for the rest."""

    def __init__(self, path: str, **names):
        self.__dict__["_path"] = path
        self.__dict__.update(names)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        real = _real_module(self._path)
        if real is not None and not hasattr(real, name):
            # CuTe DSL has no such name either: the kernel's own error, as on the GPU
            raise AttributeError(f"module {real.__name__!r} has no attribute {name!r}")
        raise Unmodelled(f"{self._path}.{name}")

    def __repr__(self) -> str:
        return f"<the CPU executor's {self._path}>"


def _real_module(path: str):
    """The CuTe DSL (or CUDA Python) module a stand-in's path names ("cute.arch" is
    cutlass.cute.arch), or None where it is not installed."""
    import importlib

    for name in (path, "cutlass." + path):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def recipe_maker(path: str):
    """An op's constructor: what it is given, kept as a Recipe (course.execute.atoms gives
    it meaning)."""

    def make(*args, **kwargs):
        return Recipe(path, args, kwargs)

    make.__name__ = path.rsplit(".", 1)[-1]
    return make


class EnumNamespace(Namespace):
    """An enum's stand-in; called with a value (`tcgen05.Repetition(32)`), the member the
    real enum names for it."""

    def __call__(self, value):
        return getattr(self, resolve(self._path)(value).name)


def enum_namespace(path: str, *members: str) -> Namespace:
    """An MLIR enum of CuTe DSL (an op's field, a mode): each member a Recipe."""
    return EnumNamespace(path, **{m: Recipe(f"{path}.{m}") for m in members})


def ops_names(path: str, *modelled: str, enums: dict | None = None) -> dict:
    """The names of an ops module (copy/MMA operations are recipes) and its enums."""
    names = {name: recipe_maker(f"{path}.{name}") for name in modelled}
    for name, members in (enums or {}).items():
        names[name] = enum_namespace(f"{path}.{name}", *members)
    return names


class AddressSpace(enum.Enum):
    generic = "generic"
    gmem = GMEM
    smem = SMEM
    rmem = RMEM
    tmem = "tmem"


# one OperandMajorMode for every module that re-exports it (cute.nvgpu's, warpgroup's,
# tcgen05's): kernel code compares its members by identity
OperandMajorMode = enum_namespace("cute.nvgpu.OperandMajorMode", "K", "MN")


# ---------------------------------------------------------------- the table


@dataclass(frozen=True)
class Wraps:
    """A table entry changing a name an earlier table added: the stand-in is make(old)."""

    make: Callable


@dataclass(frozen=True)
class Replaces:
    """A table entry taking over a name an earlier table added, the earlier stand-in unused
    (cute.arch.barrier: Hopper's named barriers in place of the SIMT core's barrier 0)."""

    value: object


@dataclass(frozen=True)
class Alias:
    """A table entry naming an object another module's stand-in has (CuTe DSL's re-exports
    and deprecated names): the same object, so identity comparisons hold."""

    module: str
    name: str


class Gap:
    """A table entry for a CuTe DSL name the executor knows it does not model, saying what
    it is: any use of it (an attribute, a call) stops the run naming `what`, where a bare
    Unmodelled would name only the attribute."""

    def __init__(self, what: str):
        self._what = what

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise Unmodelled(self._what)

    def __call__(self, *args, **kwargs):
        raise Unmodelled(self._what)

    def __repr__(self) -> str:
        return f"<not modelled: {self._what}>"


class DuplicateName(ValueError):
    """Two tables give one name without either saying it changes the other."""


# every stand-in module, by the real module's name, once course.execute.api has built them
# (course.execute.translate binds these)
MODULES: dict[str, Namespace] = {}


def short_path(module: str) -> str:
    """The path a stand-in names itself by in messages: `cute.arch` for cutlass.cute.arch."""
    return module[len("cutlass.") :] if module.startswith("cutlass.cute") else module


def build(tables: list[tuple[str, dict]], location_free: tuple = ()) -> dict[str, Namespace]:
    """Every stand-in module from the tables, in order: (who, {module: {name: stand-in}}).
    A module is a Namespace, and an attribute of its parent where the parent is one too
    (made where a table names only the child: cutlass.utils for its hopper_helpers).
    Functions of the modules in `location_free` take and drop `loc=`/`ip=` (MLIR locations
    NVIDIA's library code passes). Returns {module: Namespace} and {(module, name): who}."""
    modules: dict[str, Namespace] = {}
    owners: dict[tuple[str, str], str] = {}
    for who, table in tables:
        for module, names in table.items():
            namespace = _module(modules, owners, module, who)
            for name, value in names.items():
                _add(modules, owners, module, namespace, name, value, who)
    for module in location_free:
        namespace = modules[module]
        for key, value in list(vars(namespace).items()):
            if isinstance(value, types.FunctionType):
                namespace.__dict__[key] = _without_location(value)
    return modules, owners


def _module(modules: dict, owners: dict, module: str, who: str) -> Namespace:
    if module not in modules:
        parent, _, attr = module.rpartition(".")
        if "." in parent:  # cutlass.utils for cutlass.utils.hopper_helpers; never a package
            _module(modules, owners, parent, who)
        modules[module] = Namespace(short_path(module))
        if parent in modules:
            _add(modules, owners, parent, modules[parent], attr, modules[module], who)
    return modules[module]


def _add(modules, owners, module, namespace, name, value, who) -> None:
    key = (module, name)
    old = namespace.__dict__.get(name)
    if isinstance(value, Wraps):
        if old is None:
            raise DuplicateName(f"{who} wraps {module}.{name}, which no table before it adds")
        namespace.__dict__[name] = value.make(old)
        owners[key] = f"{owners[key]}, wrapped by {who}"
        return
    if isinstance(value, Replaces):
        if old is None:
            raise DuplicateName(f"{who} replaces {module}.{name}, which no table before it adds")
        namespace.__dict__[name] = value.value
        owners[key] = f"{who}, replacing {owners[key]}"
        return
    if isinstance(value, Alias):
        value = getattr(modules[value.module], value.name)
    if key in owners and old is not value:
        raise DuplicateName(f"{module}.{name}: given by {owners[key]} and again by {who}")
    owners.setdefault(key, who)
    namespace.__dict__[name] = value


def _without_location(fn):
    """The DSL's functions take `loc=`/`ip=` (MLIR locations): NVIDIA's library code passes
    them; the stand-ins have no use for them."""

    @functools.wraps(fn)
    def call(*args, loc=None, ip=None, **kwargs):
        return fn(*args, **kwargs)

    return call
