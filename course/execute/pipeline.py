"""`cutlass.pipeline` on the executor: NVIDIA's own pipeline code, translated.

course.execute.translate translates CuTe DSL's `cutlass.pipeline` package like the course's
code (TRANSLATED_LIBRARIES): PipelineTmaAsync, PipelineTmaStore, PipelineState,
CooperativeGroup, NamedBarrier, the sm100 pipelines... are NVIDIA's classes, their `cute`
and `cutlass` bound to the executor's stand-ins, so every barrier they touch is the
executor's mbarrier (course.execute.mbarriers) and their arrival counts, tx counts and
phases are NVIDIA's. This module gives that code the few DSL internals it calls
(`cutlass.cutlass_dsl`: if_generate, dsl_user_op), named in course.execute.hopper's table;
Layout.get_hier_coord and get_flat_coord are course.execute.static_layout's.
"""

from __future__ import annotations

from course.execute.lanes import Lanes
from course.execute.numeric import TYPES


def if_generate(cond, then_body, else_body=None, input_args=None, return_types=None, **_):
    """The DSL's IfOp builder, as a Python if; where the lanes disagree (a signalling lane
    of the warp), each side runs masked to its lanes and results merge lane by lane."""
    from course.execute import simt

    args = list(input_args or [])
    k = simt.branch(cond)
    if k is True:
        out = then_body(*args)
    elif k is False:
        out = else_body(*args) if else_body is not None else None
    else:
        with simt.masked(k):
            then = then_body(*args)
        other = None
        if else_body is not None:
            with simt.masked(simt.negate(k)):
                other = else_body(*args)
        if then is None or other is None:
            out = then if other is None else other
        else:
            pair = (
                (tuple(then), tuple(other))
                if isinstance(then, (tuple, list))
                else ((then,), (other,))
            )
            merged = simt.merge(k, *pair)
            out = merged if isinstance(then, (tuple, list)) else merged[0]
    if return_types is not None and isinstance(out, (tuple, list)) and len(return_types) == 1:
        return out[0]
    return list(out) if isinstance(out, tuple) else out


def dsl_user_op(fn):
    return fn


def is_static(x) -> bool:
    return not isinstance(x, Lanes)


DSL = dict(
    if_generate=if_generate,
    dsl_user_op=dsl_user_op,
    Boolean=TYPES["Boolean"],
    Int32=TYPES["Int32"],
    Int64=TYPES["Int64"],
)
