"""course.tools.upstream_mix on the course's own Blackwell kernels (compiled for sm_100a on
the CPU): its counts name what each kernel really contains, its comparison finds the
differences, and a tutorial that cannot be compiled is reported, never dropped. NVIDIA's
tutorials themselves are not available here, so they are not compiled."""

import json
from types import SimpleNamespace

import pytest

from course.tools import upstream_mix as um


@pytest.fixture(scope="module")
def course():
    return {name: um.course_kernel(name) for name in um.COURSE}


@pytest.mark.compile
def test_the_clc_pair_kernel_counts_clc_and_pair_mmas(course):
    ptx, sass = course["cta_pair_clc_gemm"]["ptx"], course["cta_pair_clc_gemm"]["sass"]
    assert ptx["clusterlaunchcontrol.try_cancel"] >= 1
    assert ptx["clusterlaunchcontrol.query_cancel"] >= 1
    assert ptx["tcgen05.mma cta_group::2"] >= 1 and ptx["tcgen05.mma cta_group::1"] == 0
    assert ptx["tcgen05.commit multicast"] >= 1
    assert ptx["TMA load multicast::cluster"] == ptx["TMA load"] >= 1
    assert ptx["barrier.cluster.wait"] >= 1
    assert sass["UGETNEXTWORKID (CLC try_cancel)"] >= 1
    assert sass["UTC*MMA.2CTA (tcgen05.mma, pair)"] >= 1


@pytest.mark.compile
def test_the_single_cta_kernel_counts_no_cluster_instructions(course):
    ptx = course["tcgen05_gemm"]["ptx"]
    assert ptx["tcgen05.mma cta_group::1"] >= 1 and ptx["tcgen05.mma cta_group::2"] == 0
    for cls in (
        "clusterlaunchcontrol.try_cancel",
        "barrier.cluster.wait",
        "TMA load multicast::cluster",
        "tcgen05.commit multicast",
    ):
        assert ptx[cls] == 0, cls
    assert course["tcgen05_gemm"]["sass"]["UTC*MMA (tcgen05.mma, 1 CTA)"] >= 1


@pytest.mark.compile
@pytest.mark.parametrize("name", um.COURSE)
def test_every_course_kernel_waits_for_its_tmem_loads_and_keeps_the_protocol(course, name):
    k = course[name]
    assert k["ptx"]["tcgen05.wait::ld"] >= k["ptx"]["tcgen05.ld"] >= 1
    assert k["tcgen05_ld_shapes"] == {"32x32b.x32": 1}
    assert k["ptx"]["TMA store"] >= 1 and k["ptx"]["st.global"] == 0
    assert k["protocol"] == []
    assert k["registers"] and k["stack_frame_bytes"] == 0


@pytest.mark.compile
def test_compare_names_what_only_one_side_has(course):
    diff = um.compare(course["tcgen05_gemm"], course["cta_pair_clc_gemm"])
    assert "clusterlaunchcontrol.try_cancel" in diff["only_upstream"]
    assert "tcgen05.mma cta_group::1" in diff["only_course"]
    assert diff["ptx_counts_differ"]["tcgen05.mma cta_group::2"][0] == 0
    same = um.compare(course["cta_pair_gemm"], course["cta_pair_gemm"])
    assert same["only_course"] == same["only_upstream"] == [] and not same["ptx_counts_differ"]


def test_the_gemm_kernel_of_a_module_is_the_one_with_the_mma():
    ptx = (
        ".visible .entry helper(\n ld.global.u32 %r1, [%rd1];\n}\n"
        ".visible .entry gemm(\n tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1;\n}\n"
    )
    kernels = um.ptx_kernels(ptx)
    assert set(kernels) == {"helper", "gemm"}
    assert um.gemm_kernel(kernels, r"tcgen05\.mma") == "gemm"
    assert um.ptx_mix(kernels["gemm"])["tcgen05.mma cta_group::1"] == 1


def test_mbarrier_arrives_are_split_by_scope_and_expect_tx():
    code = (
        "mbarrier.arrive.shared.b64 %rd1, [%r1];\n"
        "mbarrier.arrive.shared::cluster.b64 _, [%r2], %r3;\n"
        "mbarrier.arrive.expect_tx.shared.b64 %rd2, [%r4], %r5;\n"
        "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [%r6], %r7;\n"
    )
    mix = um.ptx_mix(code)
    assert [
        mix[f"mbarrier.arrive{k}"]
        for k in (" (local)", " (cluster)", ".expect_tx (local)", ".expect_tx (cluster)")
    ] == [1, 1, 1, 1]


def test_stand_in_cluster_counts_follow_the_tutorials_cluster_shapes():
    module = SimpleNamespace(cluster_shape_mnk=(2, 1, 1), preferred_cluster_shape_mnk=(2, 4, 1))
    assert um.stand_in(module, "max_active_clusters") == um.B200_SMS // 2
    assert um.stand_in(module, "preferred_max_active_clusters") == um.B200_SMS // 8


@pytest.mark.compile
def test_main_records_a_missing_checkout_as_skipped_not_silently(tmp_path, capsys):
    out = tmp_path / "mix.json"
    assert um.main([str(tmp_path), "--commit", "0" * 40, "--out", str(out)]) == 0
    record = json.loads(out.read_text())["records"][0]
    data, provenance = record["data"], record["provenance"]
    assert set(data["skipped"]) == set(um.TUTORIALS)
    assert all("FileNotFoundError" in why for why in data["skipped"].values())
    assert set(data["kernels"]) == set(um.COURSE) and data["pairs"] == []
    assert data["upstream_commit"] == "0" * 40 and data["arch"] == "sm_100a"
    assert provenance["cutlass_dsl"] and provenance["date"]
    assert provenance["command"].startswith("python -m course.tools.upstream_mix")
    assert "skipped fp16_gemm_3_1" in capsys.readouterr().err
    assert um.table(data).count("\n") == len(um.TABLE_ROWS) + 3
