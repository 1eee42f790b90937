"""The pictures of split-K's hand-off through DSMEM (notebook 13) and of the CTA pair's data
flow and handshake (notebook 15): they render, are labelled, and carry the kernels' own
numbers (issue 42)."""

import matplotlib

matplotlib.use("Agg")

from course.viz import dsmem_pictures  # noqa: E402


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [
        t.get_text() for t in fig.texts
    ] + [ax.get_title(loc="left") for ax in fig.axes]  # fmt: skip


def _render(fig):
    fig.canvas.draw()  # raises if the figure cannot be drawn
    width, height = fig.canvas.get_width_height()
    assert width > 400 and height > 300


def test_the_split_k_picture_renders_with_the_kernels_numbers():
    from kernels import split_k_gemm as step

    cfg = step.PRESETS["split_k2"]
    elements = step.hopper_gemm.TILE_M * cfg.tile_n // step.CONSUMER_THREADS
    fig = dsmem_pictures.split_k_handoff(
        cfg.split_k, step.SLOTS, cfg.handoff, elements, step.CONSUMER_THREADS
    )
    _render(fig)
    texts = "\n".join(_texts(fig))
    slot_kib = step.CONSUMER_THREADS * cfg.handoff * 4 // 1024
    assert f"= {slot_kib} KiB" in texts  # one slot: 256 threads x 16 fp32
    assert step.SLOTS * slot_kib * 1024 == cfg.extra_smem_bytes()  # the notebook's "32 KB"
    assert "mapa" in texts and "full[slot]" in texts and "empty[slot]" in texts
    slices = elements // cfg.handoff
    assert f"slice {slices - 1}\nslot {(slices - 1) % step.SLOTS}" in texts
    assert "cluster barrier" in texts and texts.count("source:") == 1


def test_the_cta_pair_picture_renders_with_cutes_rows_and_the_footprints_bytes():
    from course.cute import kernel_traces
    from kernels import cta_pair_clc_gemm as pair

    rows = kernel_traces.pair_operand_rows(128)
    plan = pair.footprint()
    fig = dsmem_pictures.cta_pair_flow(rows, plan)
    _render(fig)
    texts = "\n".join(_texts(fig))
    assert f"A rows {rows[1]['A']}" in texts and f"C rows {rows[1]['C']}" in texts
    assert f"expects {plan['full_barrier_bytes']:,} B" in texts
    assert f"{plan['stage_bytes']:,} B per stage" in texts
    assert "multicast to both" in texts and "dealloc barrier" in texts
    assert "leader only" in texts and plan["mma"] in texts
