"""A kernel function's source rewritten so that a branch its lanes take differently runs
both ways under masks: the rewriting, apart from the binding of names (course.execute.translate).

`rewrite(code, fn)` parses `fn`'s source once and turns `if`, `a if c else b`, `and`, `or`,
`not`, chained comparisons, `while`, `for` over a lane-varying `range`, `//`/`%` and
`x.ir_value()` into calls of course.execute.simt (bound as `__simt__` in kernel globals;
simt's docstring shows the shape of each). It gives back the code of a module defining
FACTORY(*free variables), which course.execute.translate.Translator.function runs in the
kernel's translated globals to recreate the function with its closure. Line numbers stay
the source's own, so a hazard names the learner's line (course.execute.hazards). Where the
source cannot be read, `rewrite` gives None and the function runs unrewritten.

Only the AST lives here: no name is looked up and nothing of CuTe DSL is touched, so a new
construct to rewrite is a new `visit_` method of `_Branches`, and a new name to bind is
translate's business.
"""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap
import types

from course.execute import simt


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
        test = ast.Assign([ast.Name(k, ast.Store())], _simt_call("branch", node.test))
        return [ast.copy_location(test, node.test), uniform]  # a hazard in it: the if's line

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        return _simt_call("ifexp", node.test, _thunk(node.body), _thunk(node.orelse))

    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        return _simt_call(fn, *[_thunk(v) for v in node.values])

    # integer `//` and `%` by zero: an unspecified value, not Python's ZeroDivisionError
    # (course.execute.unspecified)
    _DIVISIONS = {ast.FloorDiv: "floordiv", ast.Mod: "mod"}

    def visit_BinOp(self, node: ast.BinOp):
        self.generic_visit(node)
        fn = self._DIVISIONS.get(type(node.op))
        return (
            node if fn is None else ast.copy_location(_simt_call(fn, node.left, node.right), node)
        )

    def visit_AugAssign(self, node: ast.AugAssign):
        self.generic_visit(node)
        fn = self._DIVISIONS.get(type(node.op))
        if fn is None or not isinstance(node.target, ast.Name):
            return node
        value = _simt_call(fn, ast.Name(node.target.id, ast.Load()), node.value)
        return ast.copy_location(ast.Assign([node.target], value), node)

    def visit_AnnAssign(self, node: ast.AnnAssign):
        """An annotation is left as written: the rewritten code is compiled under this
        module's `from __future__ import annotations`, so a class body's annotations (a
        cute.struct's fields) are their source text, which course.execute.smem_struct reads
        in the declaring frame's scope; a rewritten `a if c else b` in them would be a
        lambda that scope cannot reach (Hopper fmha's `cosize(o_layout) if persistent
        else 0`). Trace-time expressions: no lane takes a side of them."""
        if node.value is not None:
            node.value = self.visit(node.value)
        node.target = self.visit(node.target)
        return node

    def visit_Call(self, node: ast.Call):
        """`x.ir_value(...)` -> simt.ir_value(x, ...): the MLIR value of a DSL value, which a
        number the executor holds has no method for."""
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "ir_value" and not node.args:
            call = _simt_call("ir_value", f.value)
            call.keywords = node.keywords
            return ast.copy_location(call, node)
        return node

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
