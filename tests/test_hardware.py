import pytest

from course.runtime import hardware
from course.runtime.hardware import NEEDS, TIERS, Machine, machine, tier_for, tiers_for

from kernels import host as kernel_host

from .helpers import A100, B200, CPU, H100


@pytest.mark.parametrize(
    "cc,tier",
    [
        ((7, 5), "cpu"),
        ((8, 0), "sm_80"),
        ((8, 6), "sm_80"),
        ((8, 9), "sm_80"),
        ((9, 0), "sm_90"),
        ((10, 0), "sm_100"),
        ((10, 3), "sm_100"),
        ((12, 0), "sm_80"),
    ],
)
def test_tier_for(cc, tier):
    assert tier_for(cc) == tier


@pytest.mark.parametrize(
    "cc", [(7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1)]
)
def test_course_tiers_and_the_kernels_agree_on_what_a_gpu_can_run(cc):
    """The kernels check the operands' GPU themselves (kernels.host, no course import);
    a notebook decides live-or-fallback from the course's tier: they must never disagree."""
    tier = tier_for(cc)
    machine_here = Machine(tier=tier, reason="test", compute_capability=cc)
    for needs in kernel_host.NEEDS:
        assert machine_here.can(needs) == kernel_host.satisfies(cc, needs), (cc, needs)


def test_needs_are_nested_the_way_the_ladder_is():
    assert H100.can("sm_90a") and H100.can("sm_90+") and H100.can("gpu")
    assert not H100.can("sm_100a")
    assert B200.can("sm_100a") and B200.can("sm_90+") and not B200.can("sm_90a")
    assert A100.can("sm_80+") and not A100.can("sm_90+")
    assert CPU.can("cpu") and not any(CPU.can(n) for n in NEEDS if n != "cpu")
    with pytest.raises(ValueError, match="unknown need"):
        CPU.can("sm_75")


def test_arch_strings():
    assert H100.arch == "sm_90a" and B200.arch == "sm_100a" and A100.arch == "sm_80"
    assert CPU.arch is None
    assert tiers_for("sm_90+") == "sm_90 or sm_100"


def test_machine_is_detected_once_and_matches_torch():
    import torch

    assert machine() is machine()
    assert machine().has_gpu == (
        torch.cuda.is_available() and tier_for(torch.cuda.get_device_capability()) != "cpu"
    )
    assert machine().tier in TIERS


def test_forced_tier_only_lowers(monkeypatch):
    monkeypatch.setenv("COURSE_TIER", "cpu")
    forced = hardware._apply_forced_tier(H100)
    assert forced.tier == "cpu" and forced.forced and "forced" in forced.reason
    monkeypatch.setenv("COURSE_TIER", "sm_100")
    with pytest.raises(ValueError, match="asks for more"):
        hardware._apply_forced_tier(H100)
    monkeypatch.setenv("COURSE_TIER", "sm_95")
    with pytest.raises(ValueError, match="not a tier"):
        hardware._apply_forced_tier(H100)


def test_describe_names_the_gpu_and_tier():
    assert "H100" in H100.describe() and "9.0" in H100.describe() and "sm_90" in H100.describe()
    assert "cpu" in CPU.describe()
    assert isinstance(Machine(tier="cpu", reason="x").as_dict()["python"], str)
