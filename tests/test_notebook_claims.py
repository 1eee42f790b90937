"""Numbers the notebooks' text states, recomputed from the results and models they come
from: a sentence that no longer matches its source fails here."""

import json

from course.bench import report
from course import ROOT
from course.runtime import results


def _markdown(name: str) -> str:
    cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_notebook_09_stage_sweeps_and_shared_memory():
    from kernels import wgmma_gemm

    text = " ".join(_markdown("09_pipelines.ipynb").split())

    def sweep(config):
        return results.latest(
            "stage_sweep",
            match=lambda r: r.data["kernel"] == "wgmma" and (r.data.get("config") or {}) == config,
        ).data["results"]

    for rows, claims in (
        (sweep({}), {2: 42, 3: 74, 4: 83}),
        (sweep({"tile_n": 128}), {2: 53, 3: 77, 4: 63}),
    ):
        for stages, claimed in claims.items():  # as a row prints it: the ratio of the rates
            pct = report.pct_of_cublas(next(r for r in rows if r["stages"] == stages))
            assert round(pct) == claimed, (stages, pct, claimed)
            assert f"{claimed}%" in text
    three = wgmma_gemm.Config(tile_n=128, stages=3).smem_bytes(2)
    four = wgmma_gemm.Config(tile_n=128, stages=4).smem_bytes(2)
    per_sm, reserved = 228 * 1024, 1024  # an H100 SM; the system's share per resident CTA
    assert f"{four:,} bytes ({four // 1024} KiB)" in text
    assert f"{three:,} bytes, {three // 1024} KiB" in text
    assert 2 * (three + reserved) <= per_sm < 2 * (four + reserved)
    assert f"{2 * (three + reserved):,}" in text and f"{2 * (four + reserved):,}" in text
    assert f"{per_sm:,}" in text


def test_notebook_15_explorer_draws_and_table():
    from course.sim import schedule_sim
    from course.widgets import schedule_explorer as explorer

    def ratio(draw):
        kw = explorer.config(4, 2, 2, "clc", "uneven tiles", 800, 100, draw=draw)
        clc = schedule_sim.simulate(**kw)
        static = schedule_sim.simulate(**(kw | {"scheduler": "static"}))
        return static.total_cycles / clc.total_cycles

    text = " ".join(_markdown("15_cta_pair_clc_gemm.ipynb").split())
    assert f"static is {ratio(0):.2f}x as long as CLC, so CLC loses by under 1%" in text
    assert 0.99 <= ratio(0) < 1 and round(ratio(2), 2) == 1.0
    uneven = schedule_sim.scheduler_lesson().rows[1]
    assert f"by {uneven[5]:.2f}x to {uneven[6]:.2f}x" in text and uneven[5] > 1
