"""Pictures of data handed between the CTAs of a cluster: split-K's hand-off of partial sums
through distributed shared memory (notebook 13), and the CTA pair's data flow and barrier
handshake (notebook 15).

Static, labelled matplotlib figures. Every number on them is a parameter taken from the
kernels' own configuration or from CuTe's partitioning (the notebooks pass them in); the
order of the steps is the order the kernels' code runs them in (kernels/split_k_gemm.py:
reduce_partial_sums; kernels/cta_pair_gemm.py: the three roles and tmem.free).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

INK, MUTED, LEADER, HELPER, BARRIER = "#24292f", "#57606a", "#0969da", "#8250df", "#bf8700"


def _box(ax, x, y, w, h, text, ec=MUTED, fc="#f6f8fa", size=8.5, weight="normal"):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", fc=fc, ec=ec, lw=1.3))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, color=INK,
            weight=weight)  # fmt: skip


def _arrow(ax, start, end, label="", color=INK, rad=0.0, offset=(0.0, 0.0), style="-|>",
           dashed=False, size=7.5):  # fmt: skip
    ax.add_patch(
        FancyArrowPatch(
            start, end, arrowstyle=style, mutation_scale=11, color=color, lw=1.3,
            connectionstyle=f"arc3,rad={rad}", linestyle="--" if dashed else "-",
        )
    )  # fmt: skip
    if label:
        mx = (start[0] + end[0]) / 2 + offset[0]
        my = (start[1] + end[1]) / 2 + offset[1]
        ax.text(mx, my, label, ha="center", va="center", fontsize=size, color=color,
                bbox=dict(fc="white", ec="none", pad=0.6))  # fmt: skip


def _finish(fig, ax, title):
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    ax.axis("off")
    ax.set_title(title, fontsize=11, loc="left")
    return fig


def split_k_handoff(split_k: int, slots: int, handoff: int, elements: int, threads: int):
    """Split-K's hand-off of one tile (kernels/split_k_gemm.py, reduce_partial_sums): a helper
    CTA writes its partial sums `handoff` elements per thread at a time into one of `slots`
    slots of its own shared memory; the leader reads them through DSMEM (mapa) and adds them
    to its accumulator. `elements` is the accumulator per thread, `threads` the consumer
    threads of a CTA. The strip below is the order of the slices, computed as the kernel
    computes it (slot = e % slots, use = e // slots, the phase parity = use & 1)."""
    fig, (ax, strip) = plt.subplots(
        2, 1, figsize=(10.5, 6.4), gridspec_kw={"height_ratios": [3.3, 1]}
    )
    slot_kib = threads * handoff * 4 / 1024
    helpers = split_k - 1
    # the two CTAs
    _box(ax, 0.2, 0.6, 4.2, 8.2, "", ec=HELPER, fc="#fbefff")
    _box(ax, 5.6, 0.6, 4.2, 8.2, "", ec=LEADER, fc="#ddf4ff")
    parts = "part 1" if helpers == 1 else f"parts 1..{helpers}"
    ax.text(2.3, 8.45, f"a helper CTA ({parts} of K)", ha="center", fontsize=9.5,
            color=HELPER, weight="bold")  # fmt: skip
    ax.text(7.7, 8.45, "the leader CTA (part 0 of K)", ha="center", fontsize=9.5,
            color=LEADER, weight="bold")  # fmt: skip
    _box(ax, 0.6, 6.6, 3.4, 1.2, f"registers: its partial sums\n{elements} fp32 per thread "
         f"({threads} threads)")  # fmt: skip
    _box(ax, 6.0, 6.6, 3.4, 1.2, f"registers: its own partial sums\n{elements} fp32 per "
         "thread, the same partition")  # fmt: skip
    for s in range(slots):
        _box(ax, 0.6 + s * 1.75, 3.7, 1.65, 1.5,
             f"slot {s}\n{handoff} fp32 x {threads}\n= {slot_kib:g} KiB", ec=HELPER)  # fmt: skip
    ax.text(3.3, 5.45, "(its shared memory)", ha="center", fontsize=8, color=MUTED)
    _box(ax, 0.6, 1.1, 3.4, 1.2, "mbarrier empty[slot]\n(in the helper)", ec=BARRIER,
         fc="#fff8c5")  # fmt: skip
    _box(ax, 6.0, 3.9, 3.4, 1.2, "mbarrier full[slot]\n(in the leader)", ec=BARRIER,
         fc="#fff8c5")  # fmt: skip
    _box(ax, 6.0, 1.1, 3.4, 1.2, "acc += theirs\n(every helper's slice, in turn)")
    # the steps, in the order reduce_partial_sums runs them
    _arrow(ax, (1.6, 2.35), (1.6, 3.65), "1 wait empty[slot]\n(slot free again)",
           color=BARRIER, offset=(-0.05, 0))  # fmt: skip
    _arrow(ax, (2.3, 6.55), (2.3, 5.25), f"2 st.shared: slice e\n({handoff} values)",
           color=HELPER, offset=(0.6, 0))  # fmt: skip
    _arrow(ax, (4.0, 4.6), (6.0, 4.6), "3 arrive on the leader's\nfull[slot] (cluster scope)",
           color=BARRIER, offset=(0, 0.55))  # fmt: skip
    _arrow(ax, (7.7, 6.55), (7.7, 5.15), "4 wait full[slot]", color=BARRIER, offset=(0.7, 0))
    _arrow(ax, (4.0, 4.05), (6.9, 2.35), "5 ld.shared::cluster through mapa\n(map_dsmem_ptr)",
           color=LEADER, rad=0.15, offset=(0.1, -0.35))  # fmt: skip
    _arrow(ax, (6.0, 1.5), (4.0, 1.5), "6 arrive on each helper's\nempty[slot]",
           color=BARRIER, offset=(0, 0.45))  # fmt: skip
    ax.text(5.0, 0.15, "then: a cluster barrier before any CTA exits (a partner may still "
            "read its shared memory)", ha="center", fontsize=8, color=MUTED)  # fmt: skip
    _finish(fig, ax, f"Split-K, {split_k} CTAs of a cluster per tile: the hand-off "
            "through distributed shared memory")  # fmt: skip
    # the strip: slice e -> slot, use, parity
    slices = elements // handoff
    for e in range(slices):
        slot, use = e % slots, e // slots
        strip.add_patch(
            FancyBboxPatch((e + 0.05, 0.15), 0.9, 0.7, boxstyle="round,pad=0.02",
                           fc="#fbefff" if slot == 0 else "#ddf4ff", ec=MUTED)
        )  # fmt: skip
        strip.text(e + 0.5, 0.5, f"slice {e}\nslot {slot}, use {use}\nparity {use & 1}",
                   ha="center", va="center", fontsize=7.5)  # fmt: skip
    strip.set_xlim(0, slices)
    strip.set_ylim(0, 1)
    strip.axis("off")
    strip.set_title(f"{elements} values per thread in {slices} slices of {handoff}: the "
                    f"helper fills one slot while the leader reads the other", fontsize=9,
                    loc="left")  # fmt: skip
    fig.text(0.01, 0.01, "source: kernels/split_k_gemm.py (Config.handoff, SLOTS, "
             "reduce_partial_sums); steps in the order the code runs them", fontsize=7.5,
             color=MUTED)  # fmt: skip
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def cta_pair_flow(rows: dict, footprint: dict):
    """The CTA pair of kernels/cta_pair_gemm.py: which rows of A, B and C each CTA holds
    (`rows`, from CuTe's partitioning: course.cute.kernel_traces.pair_operand_rows), the
    bytes of a stage and of the leader's full barrier (`footprint`, the kernel's own), and
    the handshake: TMA bytes counted on the leader's barrier, the leader's paired MMA reading
    both CTAs' shared memory and writing both CTAs' TMEM, its commits multicast to both CTAs,
    the epilogues' release on the leader, and the dealloc handshake of the two allocator
    warps."""
    fig, ax = plt.subplots(figsize=(12, 7.6))
    stage, full = footprint["stage_bytes"], footprint["full_barrier_bytes"]
    w = 3.7  # a CTA's box; the gap between them (x 3.85 to 6.15) holds the messages
    for rank, x, color, fc in ((0, 0.1, LEADER, "#ddf4ff"), (1, 6.2, HELPER, "#fbefff")):
        r = rows[rank]
        role = "leader" if rank == 0 else "follower"
        _box(ax, x, 0.35, w, 9.0, "", ec=color, fc=fc)
        ax.text(x + w / 2, 9.0, f"CTA {rank} ({role})", ha="center", fontsize=10, color=color,
                weight="bold")  # fmt: skip
        _box(ax, x + 0.15, 7.55, w - 0.3, 0.95, f"warp 4 (TMA): A rows {r['A']},\n"
             f"B rows {r['B']}: {stage:,} B per stage", size=8)  # fmt: skip
        _box(ax, x + 0.15, 6.0, w - 0.3, 0.9, f"its shared memory: a stage of the ring\n"
             f"(A {r['A']}, B {r['B']})", size=8)  # fmt: skip
        _box(ax, x + 0.15, 3.55, w - 0.3, 0.95, f"its TMEM: C rows {r['C']}\n"
             f"({footprint['accumulator_slots']} accumulator slot(s), fp32)", size=8)  # fmt: skip
        _box(ax, x + 0.15, 1.95, w - 0.3, 0.95, f"warps 0-3 (epilogue):\nTMEM -> C rows "
             f"{r['C']}", size=8)  # fmt: skip
        _box(ax, x + 0.15, 0.55, w - 0.3, 0.9, "warp 0: tcgen05.dealloc.cta_group::2\n"
             "after the handshake", size=8)  # fmt: skip
        _arrow(ax, (x + w / 2, 7.5), (x + w / 2, 6.95), color=color)
        _arrow(ax, (x + w / 2, 3.5), (x + w / 2, 2.95), color=color)
    # the leader's barrier and MMA warp
    _box(ax, 0.25, 4.75, 1.6, 0.95, f"full barrier:\nexpects {full:,} B", ec=BARRIER,
         fc="#fff8c5", size=8)  # fmt: skip
    _box(ax, 1.95, 4.75, 1.75, 0.95, f"warp 5 (MMA),\nleader only:\n{footprint['mma']}",
         ec=LEADER, fc="white", size=7.5)  # fmt: skip
    _arrow(ax, (1.0, 5.95), (1.0, 5.75), color=BARRIER)
    _arrow(ax, (2.8, 5.95), (2.8, 5.75), color=LEADER)
    _arrow(ax, (2.8, 4.7), (2.8, 4.55), color=LEADER)
    # across the gap, top to bottom
    _arrow(ax, (6.35, 7.7), (1.85, 5.5), color=BARRIER, rad=0.12)
    ax.text(5.0, 7.85, f"CTA 1's TMA counts its {stage:,} B\non the leader's full barrier\n"
            "(address bit 24 cleared)", ha="center", fontsize=7.5, color=BARRIER,
            bbox=dict(fc="white", ec="none", pad=0.5))  # fmt: skip
    _arrow(ax, (6.35, 6.45), (3.7, 5.4), color=LEADER)
    ax.text(5.0, 6.55, "the paired MMA reads\nCTA 1's stage", ha="center", fontsize=7.5,
            color=LEADER, bbox=dict(fc="white", ec="none", pad=0.5))  # fmt: skip
    _arrow(ax, (3.7, 4.9), (6.35, 4.1), color=LEADER)
    ax.text(5.0, 4.95, "and writes\nCTA 1's TMEM", ha="center", fontsize=7.5, color=LEADER,
            bbox=dict(fc="white", ec="none", pad=0.5))  # fmt: skip
    ax.text(5.0, 3.3, "tcgen05.commit,\nmulticast to both:\nthe stage's empty barrier\n"
            "(TMA refills it),\nthe accumulator's\nfull barrier\n(epilogues read it)",
            ha="center", va="center", fontsize=7, color=LEADER,
            bbox=dict(fc="white", ec=LEADER, pad=2))  # fmt: skip
    _arrow(ax, (6.35, 2.2), (3.65, 2.2), color=BARRIER)
    ax.text(5.0, 1.85, "epilogues release the\nslot on the leader's\nacc-empty barrier",
            ha="center", va="center", fontsize=7, color=BARRIER,
            bbox=dict(fc="white", ec="none", pad=0.5))  # fmt: skip
    _arrow(ax, (3.65, 0.95), (6.35, 0.95), color=BARRIER, style="<|-|>")
    ax.text(5.0, 0.6, "each arrives on the peer's\ndealloc barrier, waits on its own",
            ha="center", va="center", fontsize=7, color=BARRIER)  # fmt: skip
    _finish(fig, ax, "The CTA pair: what each CTA holds, and who tells whom")
    fig.text(0.01, 0.01, "source: rows from CuTe's partition of the paired MMA "
             "(course.cute.kernel_traces); bytes from the kernel's footprint(); steps as "
             "kernels/cta_pair_gemm.py runs them", fontsize=7.5, color=MUTED)  # fmt: skip
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig
