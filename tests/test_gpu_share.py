"""course.tools.gpu_share: spreading a class's learners over a machine's GPUs (no GPU
needed: nvidia-smi's list is given as text)."""

from course.tools.gpu_share import Gpu, GpuShare, parse_nvidia_smi_list

SMI = """\
GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbb)
  MIG 3g.40gb     Device  0: (UUID: MIG-b0)
  MIG 3g.40gb     Device  1: (UUID: MIG-b1)
GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-cccc)
"""


def test_a_gpu_split_into_mig_slices_offers_its_slices_not_itself():
    gpus = parse_nvidia_smi_list(SMI)
    assert [g.uuid for g in gpus] == ["GPU-aaaa", "MIG-b0", "MIG-b1", "GPU-cccc"]
    assert gpus[1].name == "MIG 3g.40gb Device 0 of GPU 1"
    assert parse_nvidia_smi_list("No devices were found\n") == []


def test_learners_spread_over_the_gpus_and_keep_theirs(tmp_path):
    gpus = [Gpu(u, u) for u in ("g0", "g1", "g2")]
    share = GpuShare(tmp_path / "gpus.json", gpus)
    active = set()
    for learner in ("ann", "bob", "cat", "dan"):
        share.gpu_for(learner, active)
        active.add(learner)
    assert share.assigned == {"ann": "g0", "bob": "g1", "cat": "g2", "dan": "g0"}
    # a restarted hub reads the assignments back; a returning learner keeps their GPU
    again = GpuShare(tmp_path / "gpus.json", gpus)
    assert again.gpu_for("cat", {"ann", "bob", "dan"}).uuid == "g2"
    # only learners working now count: with ann and dan gone, eve gets g0
    assert again.gpu_for("eve", {"bob", "cat"}).uuid == "g0"


def test_a_vanished_gpu_is_replaced_and_one_gpu_is_shared(tmp_path):
    share = GpuShare(tmp_path / "gpus.json", [Gpu("old", "old")])
    share.gpu_for("ann")
    share = GpuShare(tmp_path / "gpus.json", [Gpu("new", "GPU 0: H100")])
    env = share.environment_for("ann", {"ann"})
    assert env == {
        "CUDA_VISIBLE_DEVICES": "new",
        "COURSE_GPU_SHARE": "GPU 0: H100, yours alone for now",
    }
    env = share.environment_for("bob", {"ann", "bob", "cat"})
    assert env["CUDA_VISIBLE_DEVICES"] == "new"
    assert env["COURSE_GPU_SHARE"] == "GPU 0: H100, shared with 1 other learner"


def test_no_gpu_and_a_damaged_state_file(tmp_path):
    state = tmp_path / "gpus.json"
    state.write_text("{not json")
    assert GpuShare(state, []).environment_for("ann") == {
        "CUDA_VISIBLE_DEVICES": "",
        "COURSE_GPU_SHARE": "no GPU on this machine",
    }
    assert GpuShare(state, [Gpu("g0", "g0")]).gpu_for("ann").uuid == "g0"


def test_the_notebook_header_tells_a_learner_whom_they_share_their_gpu_with(monkeypatch):
    from course.notebook import header

    monkeypatch.delenv("COURSE_GPU_SHARE", raising=False)
    assert "Your GPU in this class" not in header(0).text
    monkeypatch.setenv("COURSE_GPU_SHARE", "GPU 0: H100, shared with 3 other learners")
    text = header(0).text
    assert "Your GPU in this class: GPU 0: H100, shared with 3 other learners." in text
    assert "compare ratios measured in one run" in text
