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

A function's source is rewritten once (course.execute.translate.rewrite) so that a branch
the lanes of a warp take differently runs both ways under masks (course.execute.simt):
`if`, `a if c else b`, `and`, `or`, `not`, `while`. Line numbers stay the source's own, so
a hazard names the learner's line (course.execute.hazards). Code whose source cannot be
read keeps its code object and runs unrewritten.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import inspect
import os
import sysconfig
import textwrap
import types

from course.execute import api, simt
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
TRANSLATED_LIBRARIES = ("cutlass.pipeline",)


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
            return obj
        if _has_dsl_methods(type(obj)):
            return InstanceProxy(obj, self)
        return obj

    # --- functions
    def function(self, fn):
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
            namespace[key] = value
        bases = tuple(self.value(b) for b in cls.__bases__)
        new = type(cls)(cls.__name__, bases, namespace)
        setattr(new, TRANSLATED, True)
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
        names = self._real_to_standin()
        found = names.get(id(obj))
        if found is not None:
            return found()
        return _Unknown(getattr(obj, "__qualname__", type(obj).__name__))

    def _real_to_standin(self) -> dict:
        """id(real CuTe DSL object) -> a getter of its stand-in, for every public name of
        the modules the executor stands in for."""
        if self._real_names is None:
            import importlib

            names = {}
            for module_name, standin in api.MODULES.items():
                try:
                    real = importlib.import_module(module_name)
                except ImportError:
                    continue
                for attr, value in vars(real).items():
                    if attr.startswith("_") or isinstance(value, types.ModuleType):
                        continue
                    names.setdefault(
                        id(value), functools.partial(_standin_attr, standin, attr, module_name)
                    )
            self._real_names = names
        return self._real_names


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


def _has_dsl_methods(cls) -> bool:
    for klass in cls.__mro__[:-1]:
        for value in vars(klass).values():
            if hasattr(value, "_decorator_kind"):
                return True
    return False


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


class InstanceProxy:
    """An object with @cute.jit/@cute.kernel methods, seen from kernel code: its methods
    are translated and bound to the proxy, its attributes translated."""

    def __init__(self, obj, translator: Translator):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_tr", translator)
        object.__setattr__(self, "_cache", {})

    def __getattr__(self, name):
        cache = object.__getattribute__(self, "_cache")
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
        self._cache[name] = value

    def __call__(self, *args, **kwargs):
        """A kernel object called as its host function (cute.compile(obj, ...) calls it)."""
        return self.__getattr__("__call__")(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self._obj).__name__} on the CPU executor>"


# ---------------------------------------------------------------- rewriting branches

FACTORY = "__simt_factory__"


def rewrite(code: types.CodeType, raw) -> types.CodeType | None:
    """The code of a module that defines FACTORY(*free variables) -> `raw` with its branches
    rewritten for masked execution; None where its source cannot be read."""
    cached = _REWRITTEN.get(code)
    if cached is not None or code in _REWRITTEN:
        return cached
    made = None
    try:
        lines, first = inspect.getsourcelines(raw)
        tree = ast.parse(textwrap.dedent("".join(lines)))
        # lines as in the file, before any rewriting: the rewrites may place one statement
        # in two branches (uniform and masked), which increment_lineno would then move twice
        ast.increment_lineno(tree, first - 1)
        fn = tree.body[0]
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == raw.__name__:
            made = _compile_rewritten(fn, code)
    except (OSError, TypeError, SyntaxError, IndexError):
        made = None
    _REWRITTEN[code] = made
    return made


_REWRITTEN: dict = {}


def _compile_rewritten(fn: ast.FunctionDef, code: types.CodeType):
    fn.decorator_list = []
    for arg in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
        arg.annotation = None
    for arg in (fn.args.vararg, fn.args.kwarg):
        if arg is not None:
            arg.annotation = None
    fn.returns = None
    fn = _Branches().visit(fn)
    factory = ast.FunctionDef(
        name=FACTORY,
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=v) for v in code.co_freevars],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[fn, ast.Return(ast.Name(fn.name, ast.Load()))],
        decorator_list=[],
        returns=None,
    )
    module = ast.Module(body=[factory], type_ignores=[])
    ast.copy_location(factory, fn)
    ast.fix_missing_locations(module)
    return compile(module, code.co_filename, "exec")


_NESTED_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _assigned(stmts: list) -> set[str]:
    """Names these statements bind in the enclosing function's scope."""
    found: set[str] = set()

    def walk(node):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
            return
        elif isinstance(node, _NESTED_SCOPES):
            return
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.NamedExpr):
            found.add(node.target.id)
        for child in ast.iter_child_nodes(node):
            walk(child)

    for stmt in stmts:
        walk(stmt)
    return {n for n in found if not n.startswith("__simt_")}


class _NoExits(ast.NodeTransformer):
    """In a branch the lanes take differently: return/break/continue are not modelled."""

    def __init__(self):
        self.loops = 0

    def _exit(self, what: str):
        return ast.Expr(_simt_call("divergent_exit", ast.Constant(what)))

    def visit_Return(self, node):
        return self._exit("return")

    def visit_Break(self, node):
        return node if self.loops else self._exit("break")

    def visit_Continue(self, node):
        return node if self.loops else self._exit("continue")

    def _loop(self, node):
        self.loops += 1
        self.generic_visit(node)
        self.loops -= 1
        return node

    visit_For = visit_While = visit_AsyncFor = _loop

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef


def _simt_call(fn: str, *args):
    return ast.Call(
        func=ast.Attribute(value=ast.Name(simt.NAME, ast.Load()), attr=fn, ctx=ast.Load()),
        args=list(args),
        keywords=[],
    )


def _thunk(expr):
    return ast.Lambda(
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=expr,
    )


def _locals():
    return ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[])


class _Branches(ast.NodeTransformer):
    """Branches on values that may differ between lanes -> course.execute.simt calls."""

    def __init__(self):
        self.count = 0

    def _fresh(self, stem: str) -> str:
        self.count += 1
        return f"__simt_{stem}{self.count}"

    def visit_If(self, node: ast.If):
        self.generic_visit(node)
        k = self._fresh("k")
        names = sorted(_assigned(node.body) | _assigned(node.orelse))
        body_div = [_NoExits().visit(s) for s in copy.deepcopy(node.body)]
        else_div = [_NoExits().visit(s) for s in copy.deepcopy(node.orelse)] or [ast.Pass()]
        divergent: list = []
        if names:
            saved, then = self._fresh("s"), self._fresh("t")
            listed = ast.Tuple([ast.Constant(n) for n in names], ast.Load())

            def snapshot(target):
                return ast.Assign(
                    [ast.Name(target, ast.Store())], _simt_call("save", _locals(), listed)
                )

            targets = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
            divergent.append(snapshot(saved))
        divergent.append(
            ast.With([ast.withitem(_simt_call("masked", ast.Name(k, ast.Load())))], body_div)
        )
        if names:
            divergent.append(snapshot(then))
            divergent.append(ast.Assign([copy.deepcopy(targets)], ast.Name(saved, ast.Load())))
        divergent.append(
            ast.With(
                [ast.withitem(_simt_call("masked", _simt_call("negate", ast.Name(k, ast.Load()))))],
                else_div,
            )
        )
        if names:
            divergent.append(
                ast.Assign(
                    [copy.deepcopy(targets)],
                    _simt_call(
                        "merge",
                        ast.Name(k, ast.Load()),
                        ast.Name(then, ast.Load()),
                        _simt_call("save", _locals(), listed),
                    ),
                )
            )

        def is_(value):
            return ast.Compare(ast.Name(k, ast.Load()), [ast.Is()], [ast.Constant(value)])

        uniform = ast.If(
            is_(True), node.body, [ast.If(is_(False), node.orelse or [ast.Pass()], divergent)]
        )
        return [ast.Assign([ast.Name(k, ast.Store())], _simt_call("branch", node.test)), uniform]

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        return _simt_call("ifexp", node.test, _thunk(node.body), _thunk(node.orelse))

    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        return _simt_call(fn, *[_thunk(v) for v in node.values])

    def visit_UnaryOp(self, node: ast.UnaryOp):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _simt_call("not_", node.operand)
        return node

    def visit_While(self, node: ast.While):
        """while c: body  ->  L = Loop(); while L.go(lambda: c): body, masked to the lanes
        still in the loop once they disagree."""
        self.generic_visit(node)
        if node.orelse:  # a while-else: only where every lane agrees
            node.test = _simt_call("loop_test", node.test)
            return node
        loop = self._fresh("L")
        return [
            ast.Assign([ast.Name(loop, ast.Store())], _simt_call("Loop")),
            ast.While(
                ast.Call(
                    ast.Attribute(ast.Name(loop, ast.Load()), "go", ast.Load()),
                    [_thunk(node.test)],
                    [],
                ),
                self._trip(loop, node.body, []),
                [],
            ),
        ]

    def visit_For(self, node: ast.For):
        """for i in range(a, b, c): when a bound differs between lanes (a grid-stride loop),
        the loop runs as a masked while over a per-lane counter; otherwise as written."""
        self.generic_visit(node)
        it = node.iter
        is_range = (
            isinstance(it, ast.Call)
            and not it.keywords
            and 1 <= len(it.args) <= 3
            and (
                (isinstance(it.func, ast.Name) and it.func.id == "range")
                or (isinstance(it.func, ast.Attribute) and it.func.attr == "range")
            )
        )
        if not is_range or node.orelse:
            return node
        counter, loop = self._fresh("r"), self._fresh("L")

        def attr(name, attribute):
            return ast.Attribute(ast.Name(name, ast.Load()), attribute, ast.Load())

        take = ast.Assign([copy.deepcopy(node.target)], ast.Call(attr(counter, "take"), [], []))
        as_written = ast.For(
            node.target, ast.Call(attr(counter, "python_range"), [], []), node.body, []
        )
        masked_loop = [
            ast.Assign([ast.Name(loop, ast.Store())], _simt_call("Loop")),
            ast.While(
                ast.Call(attr(loop, "go"), [_thunk(ast.Call(attr(counter, "more"), [], []))], []),
                self._trip(loop, node.body, [take]),
                [],
            ),
        ]
        return [
            ast.Assign([ast.Name(counter, ast.Store())], _simt_call("Counter", *it.args)),
            ast.If(attr(counter, "uniform"), [as_written], masked_loop),
        ]

    def _trip(self, loop: str, body: list, first: list) -> list:
        """One trip of a loop whose lanes may disagree: as written while they agree, else
        masked to the lanes still in it, each local merged lane by lane."""
        names = sorted(_assigned(first + body))
        div = first + [_NoExits().visit(s) for s in copy.deepcopy(body)]
        uniform = first and [copy.deepcopy(first[0])] + body or body
        if not names:
            divergent = [
                ast.With(
                    [
                        ast.withitem(
                            ast.Call(
                                ast.Attribute(ast.Name(loop, ast.Load()), "body", ast.Load()),
                                [],
                                [],
                            )
                        )
                    ],
                    div,
                )
            ]
        else:
            before, after = self._fresh("s"), self._fresh("t")
            listed = ast.Tuple([ast.Constant(n) for n in names], ast.Load())
            targets = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
            divergent = [
                ast.Assign([ast.Name(before, ast.Store())], _simt_call("save", _locals(), listed)),
                ast.With(
                    [
                        ast.withitem(
                            ast.Call(
                                ast.Attribute(ast.Name(loop, ast.Load()), "body", ast.Load()),
                                [],
                                [],
                            )
                        )
                    ],
                    div,
                ),
                ast.Assign([ast.Name(after, ast.Store())], _simt_call("save", _locals(), listed)),
                ast.Assign(
                    [targets],
                    ast.Call(
                        ast.Attribute(ast.Name(loop, ast.Load()), "merge", ast.Load()),
                        [ast.Name(after, ast.Load()), ast.Name(before, ast.Load())],
                        [],
                    ),
                ),
            ]
        return [
            ast.If(
                ast.Attribute(ast.Name(loop, ast.Load()), "uniform", ast.Load()), uniform, divergent
            )
        ]

    def visit_Compare(self, node: ast.Compare):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        operands = [node.left] + node.comparators
        pairs = [
            ast.Compare(copy.deepcopy(operands[i]), [op], [copy.deepcopy(operands[i + 1])])
            for i, op in enumerate(node.ops)
        ]
        return _simt_call("and_", *[_thunk(p) for p in pairs])
