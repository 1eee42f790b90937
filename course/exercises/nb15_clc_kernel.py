"""Notebook 15's kernel exercise `15.read_next_tile`: read one answer of Cluster Launch Control.

The learner writes the `read_next_tile` method of `kernels.cta_pair_clc_gemm.CtaPairClcGemm`,
which every warp of both CTAs runs to learn its next tile: wait for the 16-byte answer that
clusterlaunchcontrol.try_cancel writes into shared memory, decode it (query_cancel: was a
cluster cancelled, and which), make the read visible before the buffer is written again (a
proxy fence), free the buffer for the next request, and return (pair_m, tile_n, valid).
Checked without a GPU: the kernel compiles for sm_100a, and at every place a role reads an
answer the PTX must wait, decode, fence and release in that order.
"""

# no `from __future__ import annotations`: the exercise's kernel class is traced by CuTe DSL
import re
from dataclasses import dataclass

from course.cute import ptx_protocol
from course.exercises.kernel_check import (
    Finding,
    expect,
    kernel_exercise,
    subclass_with,
    variant_name,
)

SHAPES = ((512, 512, 128), (600, 392, 200), (600, 392, 520))  # the last: the ring wraps
QUICK_SHAPES = ((600, 392, 520),)


def gemm_with(read_next_tile):
    """The CLC GEMM with the learner's `read_next_tile`, as a GemmHost."""
    from kernels import cta_pair_clc_gemm as step
    from kernels.cta_pair_gemm import pair_gemm_host

    cls = subclass_with(step.CtaPairClcGemm, "read_next_tile", read_next_tile)
    return pair_gemm_host(variant_name("15.read_next_tile", read_next_tile), cls, step.Config)


def _build(fn, arch):
    import torch

    from kernels import cta_pair_clc_gemm as step

    return gemm_with(fn).build(arch, torch.bfloat16, torch.bfloat16, step.Config(), "k", "k")


def _handle_source(code: list[str], start: int) -> str | None:
    """The registers the 128-bit response handle of the query at `start` is built from
    (`mov.b128 %clc_handle, {%rd6, %rd7}` just before it), or None."""
    m = re.match(r"mov\.b128\s+\S+,\s*(\{[^}]*\})", code[start - 1]) if start else None
    return m.group(1) if m else None


def _reads(c) -> tuple[list[str], list[tuple[int, int]]]:
    """The PTX instructions, and (first, last) index of each place an answer is decoded.
    query_cancel decodes a response already loaded into registers: NVIDIA's scheduler asks
    is_canceled, fences, releases the buffer, then asks get_first_ctaid of the same
    registers, which reads no shared memory, so a query of the registers the place before
    decoded is that place's, not a new read."""
    code = c.instructions
    places, sources, i = [], [], 0
    while i < len(code):
        if "query_cancel" in code[i]:
            j = i
            while j + 1 < len(code) and (
                "query_cancel" in code[j + 1] or code[j + 1].startswith("mov.b128")
            ):
                j += 1
            source = _handle_source(code, i)
            if source is None or not sources or sources[-1] != source:
                places.append((i, j))
                sources.append(source)
            i = j + 1
        else:
            i += 1
    return code, places


def _next(code, start, pattern):
    rx = re.compile(pattern)
    return next((k for k in range(start, len(code)) if rx.search(code[k])), None)


def waits_before_decoding(c):
    broken = [v for v in ptx_protocol.check(c.ptx) if v.rule == "clc_response_waited"]
    return expect(
        "each answer is read after its barrier completes",
        not broken,
        broken[0].detail if broken else "a wait on the CLC barrier before query_cancel",
        "the answer is decoded before it has arrived: clc_pipeline.consumer_wait(read_state) "
        "first; " + ptx_protocol.CLC_WAIT_ISA,
    )


def _previous(code, end, pattern):
    rx = re.compile(pattern)
    return next((k for k in range(end - 1, -1, -1) if rx.search(code[k])), None)


def released_before_decode(c) -> list[tuple[int, int]]:
    """(release, decode): each place whose nearest barrier op before the decode is a release
    (a plain mbarrier.arrive, not the wait that lets the answer be read): the buffer was handed
    back, and the decode reads it after the leader's next try_cancel may rewrite it."""
    code, places = _reads(c)
    found = []
    for first, _ in places:
        k = _previous(code, first, r"mbarrier\.")
        if k is not None and "mbarrier.arrive" in code[k] and "expect_tx" not in code[k]:
            found.append((k, first))
    return found


def _early_observed(early: list, places: int) -> str:
    release, decode = early[0]
    return (
        f"{len(early)} of {places} places release the buffer before decoding the answer "
        f"(mbarrier.arrive at instruction {release}, then query_cancel at instruction {decode})"
    )


READ_AFTER_RELEASE_HINT = (
    "the answer is read after the buffer was freed: once consumer_release has handed it "
    "back, the leader's next try_cancel (the async proxy) may overwrite it, so the decode "
    "can read the next answer. Decode first (cute.arch.clc_response), then "
    "cute.arch.fence_proxy('async.shared', space='cta'), then "
    "clc_pipeline.consumer_release(read_state); " + ptx_protocol.CLC_FENCE_ISA
)


def releases_each_answer(c):
    early = released_before_decode(c)
    code, places = _reads(c)
    if early:
        return expect(
            "every reader frees the answer buffer after reading it",
            False,
            _early_observed(early, len(places)),
            READ_AFTER_RELEASE_HINT,
        )
    following = [_next(code, last, r"mbarrier\.") for _, last in places]  # the next barrier op
    released = [k is not None and "mbarrier.arrive" in code[k] for k in following]
    return expect(
        "every reader frees the answer buffer",
        bool(places) and all(released),
        f"{sum(released)} of {len(places)} places release it",
        "the buffer is never freed: the leader's next request waits for every reader "
        "forever (clc_pipeline.consumer_release(read_state))",
    )


@dataclass(frozen=True)
class FencePlace:
    """One place the answer is decoded, as the PTX has it: where the barrier op after the read
    is (the release), and the fence.proxy.async instructions between the read and the release
    and after the release (before the next decode): the structured cause that
    fences_before_release's sentence and hint are chosen from."""

    read: int  # the last instruction of the decode
    release: int | None  # the next mbarrier op after it
    before: tuple  # fence.proxy.async between the read and the release
    after: tuple  # fence.proxy.async after the release, before the next barrier op

    @property
    def fenced(self) -> bool:
        return self.release is not None and bool(self.before)


def fence_places(c) -> list[FencePlace]:
    """A FencePlace for every place an answer is decoded."""
    code, places = _reads(c)
    found = []
    for n, (_, last) in enumerate(places):
        arrive = _next(code, last, r"mbarrier\.")
        end = places[n + 1][0] if n + 1 < len(places) else len(code)
        if arrive is not None:  # after the release: up to the next barrier op, no further
            end = min(end, _next(code, arrive + 1, r"mbarrier\.") or end)
        fences = [k for k in range(last + 1, end) if "fence.proxy.async" in code[k]]
        cut = arrive if arrive is not None else end
        found.append(
            FencePlace(
                last,
                arrive,
                tuple(k for k in fences if k < cut),
                tuple(k for k in fences if k > cut),
            )
        )
    return found


def _fence_observed(places: list[FencePlace]) -> str:
    fenced = sum(p.fenced for p in places)
    late = [p for p in places if not p.fenced and p.after]
    said = f"{fenced} of {len(places)} places fence before the release"
    if late:
        p = late[0]
        said += (
            f"; at {len(late)} the fence comes after it (fence.proxy.async at instruction "
            f"{p.after[0]}, after the release's mbarrier op at instruction {p.release})"
        )
    return said


FENCE_HINT = (
    "the answer was read through the generic proxy and is rewritten by the async "
    "proxy (the next try_cancel): cute.arch.fence_proxy('async.shared', "
    "space='cta') before consumer_release; " + ptx_protocol.CLC_FENCE_ISA
)
FENCE_LATE_HINT = (
    "the fence is there but after consumer_release: once the buffer is released the leader's "
    "next try_cancel may rewrite it, and a fence after that point orders nothing before it; "
    "move cute.arch.fence_proxy('async.shared', space='cta') between the decode and "
    "clc_pipeline.consumer_release(read_state); " + ptx_protocol.CLC_FENCE_ISA
)


def fences_before_release(c) -> Finding:
    early = released_before_decode(c)
    places = fence_places(c)
    if early:  # a fence orders only what was read before it: here nothing was
        return expect(
            "the read is fenced before the buffer is freed",
            False,
            _early_observed(early, len(places)) + ": no fence orders a read made after the release",
            READ_AFTER_RELEASE_HINT,
        )
    late = any(not p.fenced and p.after for p in places)
    return expect(
        "the read is fenced before the buffer is freed",
        bool(places) and all(p.fenced for p in places),
        _fence_observed(places),
        FENCE_LATE_HINT if late else FENCE_HINT,
    )


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    from course.exercises.gpu_run import gemm_findings

    return gemm_findings(
        gemm_with(fn),
        QUICK_SHAPES if quick else SHAPES,
        launching,
        wrong_hint="a tile computed twice or never: the answer's first CTA x "
        "is a CTA index (divide by the CTAs per pair for pair_m)",
    )


kernel_exercise(
    id="15.read_next_tile",
    prompt="Write read_next_tile(self, scheduler, read_state): wait for the CLC answer, decode "
    "it, fence the read, free the buffer, advance, and return ((pair_m, tile_n, valid), "
    "read_state).",
    hint="the answer's buffer is a one-slot ring (section 6): read it as a consumer reads a "
    "stage of the K-block ring, and remember who writes it next (the async proxy, while your "
    "read went through the generic one); the answer names a CTA, the loop wants a pair.",
    arch="sm_100a",
    needs="sm_100a",
    build=_build,
    cpu_checks=(waits_before_decoding, releases_each_answer, fences_before_release),
    gpu_checks=gpu_checks,
    timeout_s=90,
    run_shows="whether every tile is computed once with the right numbers, which needs a "
    "Blackwell GPU (compute capability 10.x)",
    solution="course/exercises/solutions/nb15_solutions.py: read_next_tile",
)
