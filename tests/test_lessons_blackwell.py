"""Notebooks 14 and 15's lessons: TMEM sizes and allocation, the instruction descriptor,
the compile views, the epilogue's TMEM reads, the emulator's checks (right and broken)
and the pair's maps."""

import re
import types

import numpy as np
import pytest

from course.emulate import random_operands
from course.emulate.blackwell_memory import Tmem
from course.lessons import cta_pair_lesson, tcgen05_instructions, tcgen05_lesson
from course.models.instruction_descriptor import InstructionDescriptor


def test_accumulator_footprint_compares_registers_and_tmem(capsys):
    sizes = tcgen05_lesson.accumulator_footprint(128, 256, threads=128)
    assert sizes == {"kib": 128, "registers_per_thread": 256, "tmem_columns": 256}
    assert "256 registers per thread (limit 255)" in capsys.readouterr().out
    assert tcgen05_lesson.accumulator_footprint(128, 64)["registers_per_thread"] == 64


def test_allocate_rounds_requests_up_and_shows_fragmentation(capsys):
    granted = tcgen05_lesson.allocate(
        [
            ("CTA 1", "a", 128),
            ("CTA 2", "b", 128),
            ("CTA 3", "c", 128),
            ("CTA 4", "d", 40),
            ("CTA 1", "exits", None),
            ("CTA 3", "exits", None),
            ("CTA 5", "e", 256),
        ]
    )
    assert granted == [("CTA 2: b", 128, 128), ("CTA 4: d", 384, 64)]
    out = capsys.readouterr().out
    assert (
        "CTA 4: d                      needs  40 columns, asks for  64 -> columns 384..447" in out
    )
    # 320 columns free, but no 256 of them contiguous: fragmentation, not a lack of space
    assert (
        "CTA 5: e                      needs 256 columns, asks for 256 -> does not fit (320 "
        "columns free, no 256 contiguous)" in out
    )
    tmem = Tmem("t")
    assert tcgen05_lesson.allocate([("x", "", 512)], tmem) == [("x: ", 0, 512)]
    assert tcgen05_lesson.allocate([("y", "", 32)], tmem) == []


def test_a_request_that_is_not_a_power_of_two_is_refused(capsys):
    assert not tcgen05_lesson.alloc_as_is(40)
    assert (
        "tcgen05.alloc(40) as such: refused: 40 columns is not a power of two >= 32"
        in capsys.readouterr().out
    )
    assert tcgen05_lesson.alloc_as_is(64)


def test_descriptor_fields_end_with_the_value(capsys):
    idesc = InstructionDescriptor(m=128, n=256, a="bfloat16", b="bfloat16", d="float32")
    value = tcgen05_lesson.descriptor_fields(idesc)
    out = capsys.readouterr().out
    assert value == idesc.encode() and out.rstrip().endswith(f"{value:#010x}")
    assert "N >> 3 (N = 256)" in out and out.count("\n") == len(idesc.fields()) + 3


def test_ptx_counts_and_the_descriptor_search(capsys):
    idesc = InstructionDescriptor(m=128, n=128, a="bfloat16", b="bfloat16", d="float32")
    ptx = f"tcgen05.commit x\ntcgen05.commit y\nmov.b32 %r1, {idesc.encode()};"
    art = types.SimpleNamespace(
        ptx=ptx, count_ptx=lambda p: sum(1 for line in ptx.splitlines() if re.search(p, line))
    )
    counts = tcgen05_instructions.ptx_counts(art, idesc)
    assert counts["tcgen05.commit -> mbarrier"] == 2 and counts["tcgen05.dealloc"] == 0
    assert "appears in the PTX: True" in capsys.readouterr().out
    art.ptx = "nothing"
    tcgen05_instructions.ptx_counts(art, idesc)
    assert "appears in the PTX: False" in capsys.readouterr().out


@pytest.mark.compile
def test_compile_views_of_the_tcgen05_kernel(capsys):
    import torch
    from kernels import tcgen05_gemm

    art = tcgen05_gemm.artifacts("sm_100a", torch.bfloat16)
    tcgen05_instructions.print_ptx_lines(art)
    assert "tcgen05.mma.cta_group::1" in capsys.readouterr().out
    res = tcgen05_instructions.print_sass(art)
    sass = capsys.readouterr().out
    assert "UTCHMMA" in sass and res["registers"] > 0
    # notebook 14: one tcgen05.alloc is an attempt, then a sleep-and-retry loop
    alloc = [l for l in sass.splitlines() if "FIND_AND_SET" in l or "NANOSLEEP" in l]
    assert [("NANOSLEEP" in l) for l in alloc] == [False, True, False], alloc
    assert "NANOSLEEP.SYNCS" not in sass  # the barrier waits' backoff is not shown
    plan = tcgen05_lesson.occupancy("sm_100a")
    assert f"{plan['threads']} threads x {plan['registers']} registers" in capsys.readouterr().out


def test_epilogue_reads_agree_with_cute(capsys):
    assert tcgen05_lesson.epilogue_agreement(sample=(0, 77))
    out = capsys.readouterr().out
    assert "thread  77 (warp 2) reads lane  77" in out and "lane 77 is warp 2's" in out


def test_ragged_report_counts_the_k_blocks(capsys):
    run = tcgen05_lesson.ragged_report(130, 140, 100, seed=3)
    out = capsys.readouterr().out
    assert run.grid_tiles == (2, 2)
    assert "2 K-blocks each (the last one is 36 of 64 columns real, 28 zero-filled)" in out
    assert "True -- every element written exactly once" in out


def test_pair_operand_rows_split_a_and_c_between_the_ctas(capsys):
    rows = cta_pair_lesson.print_operand_rows(tile_n=128)
    assert rows[0]["A"] == (0, 127) and rows[1]["C"] == (128, 255)
    assert "CTA 1 (follower)" in capsys.readouterr().out


def test_epilogue_warp_map_gives_each_warp_32_rows():
    own = cta_pair_lesson.epilogue_warp_map(tile_n=128)
    assert own.shape == (256, 128)
    assert (own.thread == np.arange(256)[:, None] // 32).all()  # warps 0-3 leader, 4-7 follower


@pytest.fixture(scope="module")
def operands():
    return random_operands(300, 264, 200)


def test_emulate_pair_overlaps_only_with_two_slots(operands, capsys):
    a, b = operands
    emu, one_slot = cta_pair_lesson.emulate_pair(a, b)
    assert emu.check(a, b).ok and one_slot.check(a, b).ok
    assert len(one_slot.overlaps()) == 0 < len(emu.overlaps())
    assert f"CLC answers: {len(emu.clc_log)}" in capsys.readouterr().out


def test_broken_schedules_are_caught(operands, capsys):
    a, b = operands
    verdicts = cta_pair_lesson.broken_schedules(a, b)
    assert set(verdicts) == {"DuplicateTile", "SkipTile"}
    assert not any(v.ok for v in verdicts.values())
    assert verdicts["DuplicateTile"].duplicate_tiles and verdicts["SkipTile"].missing_tiles


@pytest.mark.gpu(needs="sm_100a")
def test_pair_kernel_passes_the_notebook_check():
    rows = cta_pair_lesson.check_and_time(shapes=[(256, 128, 64)], sizes=(4096,))
    assert rows and rows[0]["kernel_tflops"] > 0


def test_notebook_14_runs_the_kernels_own_code_on_the_executor(capsys):
    (run,) = tcgen05_lesson.check_executed([(129, 136, 72)])
    assert run.ok and run.hazard is None, run.summary()
    out = capsys.readouterr().out
    assert "on the CPU executor: PASS" in out and "no hazard" in out


def test_notebook_15_runs_both_pair_kernels_on_the_executor(capsys):
    runs = cta_pair_lesson.run_executed(300, 264, 72, seeds=(1,))
    assert [r.case.split("@")[0] for r in runs] == ["cta_pair_gemm", "cta_pair_clc_gemm"]
    assert all(r.ok for r in runs), [r.summary() for r in runs]
    assert "Cluster Launch Control:" in capsys.readouterr().out


def test_notebook_15_shows_every_planted_mistake_named_by_the_executor(capsys):
    from course.execute import planted

    named = cta_pair_lesson.planted_mistakes()
    assert set(named) == set(planted.PLANTS)
    for name, hazard in named.items():
        assert hazard is not None and hazard.kind == planted.hazard_kind(planted.PLANTS[name])
    assert "not caught" not in capsys.readouterr().out
