"""Notebook 08's lessons: tensor maps, the TMA checks over shapes (judged here on a CPU
stand-in, and on a Hopper GPU for real) and the multicast cell's fallbacks."""

import types

import pytest
import torch

from course.runtime import results
from course.lessons import multicast_lesson, tma_checks, tma_lesson
from course.models import tensormap
from course.runtime import live
from kernels import tma


def test_copy_instructions_counts_cp_async_per_thread(capsys):
    cfg = types.SimpleNamespace(tile_m=64, tile_n=32, tile_k=32, threads=128)
    counts = tma_lesson.copy_instructions(cfg)
    assert counts == {"bytes": 96 * 32 * 2, "cp.async": 384, "warp instructions": 12, "tma": 2}
    out = capsys.readouterr().out
    assert "384 copies, 3 per thread" in out and "12 warp instructions (4 warps x 3)" in out
    assert "6x fewer" in out  # 12 warp instructions against TMA's 2


def test_check_rules_reports_what_the_model_finds(capsys):
    good = tensormap.tiled(8192, 8192, "bf16", box=(64, 64), swizzle=128)
    assert tma_lesson.check_rules(good) == []
    assert "all satisfied" in capsys.readouterr().out
    bad = tensormap.tiled(100, 100)
    broken = tma_lesson.check_rules(bad)
    assert broken and broken == tensormap.rule_violations(bad)
    assert "all satisfied" not in capsys.readouterr().out


def test_every_rejected_example_breaks_a_rule(capsys):
    tma_lesson.print_rejections()
    out = capsys.readouterr().out
    for label, args in tma_lesson.REJECTED:
        assert tensormap.rule_violations(args), f"{label} is not refused"
        assert f"{label}:" in out


def test_cute_and_the_model_agree_on_every_swizzle_mode(capsys):
    assert tma_lesson.print_swizzle_agreement(nbytes=1024) == {
        0: True,
        32: True,
        64: True,
        128: True,
    }
    out = capsys.readouterr().out
    assert "128B swizzle: CuTe and the model agree on all 64 chunks: True" in out
    # each mode's masks on the rows TMA accepts for it (32B on 32-byte rows, ...)
    assert "rows 0-7 of 32-byte rows XOR their chunk with [0, 0, 0, 0, 1, 1, 1, 1]" in out
    assert "rows 0-7 of 64-byte rows XOR their chunk with [0, 0, 1, 1, 2, 2, 3, 3]" in out


def test_cute_tensor_map_is_printed_indented(capsys):
    built = tma_lesson.print_cute_tensor_map(256, 128)
    out = capsys.readouterr().out
    assert built and all(f"{what}:\n    " in out for what in built)


class _CpuTma:
    """TMA on a CPU, for judging the checks: boxes filled with zeros out of bounds, the
    swizzle applied to the raw bytes. `wrong` breaks one thing on purpose."""

    Config = tma.Config

    def __init__(self, wrong: str = ""):
        self.wrong = wrong

    def load(self, x, out=None, config=tma.Config()):
        y = x.clone()
        if self.wrong == "load" and y.numel() > 1:
            y.view(-1)[-1] += 1
        return y

    def boxes(self, x, config=tma.Config(), physical=False):
        down, across = tma.tiles(tuple(x.shape), config)
        mosaic = torch.full(
            (down * config.box_rows, across * config.box_cols),
            7.0 if self.wrong == "fill" else 0.0,
            dtype=x.dtype,
        )
        mosaic[: x.shape[0], : x.shape[1]] = x
        box = mosaic.view(down, config.box_rows, across, config.box_cols).permute(0, 2, 1, 3)
        if physical and self.wrong != "swizzle":
            box = torch.stack(
                [
                    torch.stack(
                        [
                            torch.as_tensor(
                                tensormap.swizzled_box(
                                    box[i, j].contiguous().view(torch.int16), config.swizzle
                                )
                            ).view(x.dtype)
                            for j in range(across)
                        ]
                    )
                    for i in range(down)
                ]
            )
        return box.contiguous()

    def store(self, x, out, config=tma.Config()):
        out.copy_(x)
        if self.wrong == "store":
            base = out.as_strided((1,), (1,), out.storage_offset() + out.shape[1])
            base.fill_(0)  # one element past the end of row 0: outside the view
        return out


SMALL = [(200, 136), (1, 8)]


def test_load_checks_pass_a_correct_copy_and_catch_each_fault(capsys):
    assert all(tma_checks.check_loads(_CpuTma(), SMALL, device="cpu").values())
    assert "WRONG" not in capsys.readouterr().out
    verdicts = tma_checks.check_loads(_CpuTma("load"), SMALL, device="cpu")
    assert not verdicts["bf16, 128B swizzle (200, 136)"] and "WRONG" in capsys.readouterr().out
    assert not tma_checks.check_loads(_CpuTma("fill"), SMALL, device="cpu")["zeros outside"]
    assert not tma_checks.check_loads(_CpuTma("swizzle"), SMALL, device="cpu")["swizzled bytes"]


def test_store_checks_catch_a_write_outside_the_view(capsys):
    assert all(tma_checks.check_stores(_CpuTma(), SMALL, device="cpu").values())
    bad = tma_checks.check_stores(_CpuTma("store"), SMALL, device="cpu")
    assert not any(bad.values())
    assert "nothing written outside: False" in capsys.readouterr().out


@pytest.mark.compile
@pytest.mark.parametrize(
    "view, ptx, sass",
    [
        (
            tma_checks.load_instructions,
            "cp.async.bulk.tensor.2d.shared::cta.global",
            "'UTMALDG': 1",
        ),
        (
            tma_checks.store_instructions,
            "cp.async.bulk.tensor.2d.global.shared::cta",
            "'UTMASTG': 1",
        ),
    ],
)
def test_instruction_views_show_the_tma_instructions(view, ptx, sass, capsys):
    view("sm_90a")
    shown = capsys.readouterr().out
    assert ptx in shown and sass in shown


@pytest.mark.gpu(needs="sm_90+")
def test_tma_kernels_pass_the_notebook_checks():
    assert all(tma_checks.check_loads().values())
    assert all(tma_checks.check_stores().values())


def test_the_executor_fallbacks_copy_every_case_exactly(capsys):
    loads = tma_checks.loads_executed(shapes=[(1, 8)])
    stores = tma_checks.stores_executed(shapes=[(1, 8)])
    assert len(loads) == len(tma_checks.cases()) + 1 and all(loads.values())
    assert len(stores) == len(tma_checks.cases()) and all(stores.values())
    out = capsys.readouterr().out
    assert "exact (" in out and "zeros outside it: exact" in out


def test_the_multicast_fallback_runs_every_variant_on_the_executor(capsys):
    verdicts = multicast_lesson.multicast_executed(tiles=1)
    assert len(verdicts) == 4 and all(verdicts.values())
    assert "every CTA received exactly the tiles: True" in capsys.readouterr().out


def test_multicast_without_a_record_compiles_and_says_how_to_record(
    monkeypatch, capsys, cpu_results
):
    monkeypatch.setattr(multicast_lesson, "multicast_ptx", lambda arch: f"ptx for {arch}")
    out = multicast_lesson.measure_multicast()
    assert out.mode is live.Mode.COMPILE_ONLY and out.value == "ptx for sm_90a"
    assert multicast_lesson.RECORD_COMMAND in capsys.readouterr().out


def test_multicast_with_a_record_prints_its_rows(capsys, cpu_results):
    cpu_results("tma")
    out = multicast_lesson.measure_multicast()
    assert out.mode is live.Mode.RECORDED
    text = capsys.readouterr().out
    assert all(r["variant"] in text for r in out.value["results"])


def test_traffic_report_says_how_to_record_when_nothing_is(capsys, cpu_results):
    assert multicast_lesson.traffic_report() is None
    assert multicast_lesson.TRAFFIC_COMMAND in capsys.readouterr().out
    cpu_results("tma_traffic")
    rec = multicast_lesson.traffic_report()
    text = capsys.readouterr().out
    assert rec is not None and rec.citation() in text
    assert "model 1/2 = 0.50x" in text  # the counters are read against the model
    assert "merged by the coalescer" in text
    # never shown as if measured now, even on a GPU: the profiler runs outside the notebook
    assert text.splitlines()[0].startswith("[⏺ RECORDED] Nsight Compute is run outside")
    # the profiled launch has fewer rounds than the timing run: its bytes are a fraction
    rounds = {row["rounds"] for row in rec.data["rows"]}
    assert f"one launch of {' / '.join(map(str, sorted(rounds)))} round(s)" in text
    cpu_results("tma")
    multicast_lesson.traffic_report()
    (r,) = rounds
    timed = results.latest("tma").data
    assert (
        f"the timing ran {timed['rounds']}: its model bytes are {timed['rounds'] / r:g}x "
        "these" in capsys.readouterr().out
    )
    # ... which is what the numbers say: bytes delivered per launch x that = the model's bytes
    delivered = next(x for x in rec.data["ratios"] if x["metric"].startswith("l1tex__m_xbar"))
    separate = next(x for x in timed["results"] if x["cluster"] == 2 and not x["multicast"])
    assert delivered["separate"] * timed["rounds"] / r == separate["l2_to_sm_bytes_model"]


def test_multicast_rows_say_the_grid_not_ctas_resident_per_sm(capsys, cpu_results):
    cpu_results("tma")
    out = multicast_lesson.measure_multicast()
    # the first recorded row (the executor's check of every variant comes before the rows)
    first = next(line for line in capsys.readouterr().out.splitlines() if "a grid of" in line)
    ctas = out.value["waves"] * out.value["sms"]
    assert f"a grid of {ctas} CTAs ({out.value['waves']} per SM" in first
    assert "run in waves" in first


def test_profile_rows_come_under_a_recorded_banner(capsys, cpu_results):
    cpu_results("profile")
    multicast_lesson.gemm_with_and_without()
    text = capsys.readouterr().out
    assert text.startswith("[⏺ RECORDED] Nsight Compute is run outside the notebook")
    assert "recorded: measured on NVIDIA H100" in text


def test_the_counters_are_read_against_the_model_and_the_coalescer():
    def ratio(cluster, metric, separate, multicast):
        return {
            "cluster": cluster,
            "metric": metric,
            "separate": separate,
            "multicast": multicast,
            "ratio": multicast / separate if separate else None,
        }

    m = multicast_lesson
    data = {
        "ratios": [
            ratio(2, m.L2_SECTORS, 4.0e6, 5.4e6),
            ratio(2, m.REQUESTS, 2.7e6, 1.35e6),
            ratio(2, m.ASKED, 10.8e6, 5.4e6),
            ratio(2, m.MERGED, 6.8e6, 0.0),
            ratio(4, m.L2_SECTORS, 3.2e6, 2.7e6),
        ]
    }  # an older record: no lrc counters
    two, four = m.model_vs_counters(data)
    assert two == (
        "cluster 2: model 1/2 = 0.50x; requests 0.50x; L2 sectors read 1.35x; "
        "separate loads had 63% of their sectors merged by the coalescer, multicast 0%"
    )
    assert four == "cluster 4: model 1/4 = 0.25x; L2 sectors read 0.84x"
    table = "\n".join(m.counter_table(data))
    assert "sectors L2 actually read" in table and "1.35x" in table
