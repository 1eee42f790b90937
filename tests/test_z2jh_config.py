"""hub/z2jh: the Kubernetes configuration is not deployed by these tests; they check that it
says what the README says it does (GPU and MIG profiles, limits, the teacher's approval)
and that it runs the image hub/z2jh/Dockerfile builds, which copies the notebooks with
course.tools.learner_copy at every start."""
from pathlib import Path

import yaml

HUB = Path(__file__).resolve().parent.parent / "hub"


def test_values_give_each_learner_a_gpu_a_mig_slice_or_none_with_limits():
    values = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())
    single = values["singleuser"]
    limits = [p["kubespawner_override"].get("extra_resource_limits", {})
              for p in single["profileList"]]
    assert {"nvidia.com/gpu": "1"} in limits
    assert any(k.startswith("nvidia.com/mig-") for lim in limits for k in lim)
    assert {} in limits  # the CPU path, for a class without enough GPUs
    assert single["memory"]["limit"] and single["cpu"]["limit"]
    auth = values["hub"]["config"]
    assert auth["JupyterHub"]["authenticator_class"] == "nativeauthenticator.NativeAuthenticator"
    assert auth["NativeAuthenticator"]["open_signup"] is False
    assert single["image"]["name"] == "live-kernel-course"


def test_the_image_is_built_from_the_course_and_copies_the_notebooks_at_start():
    docker = (HUB / "z2jh" / "Dockerfile").read_text()
    assert "-t live-kernel-course" in docker
    assert "./course.sh setup" in docker  # requirements.txt, as on any machine
    assert "./course.sh test" in docker  # the image's own test is the README's command
    assert "course.tools.learner_copy --source /opt/course/notebooks --dest $HOME/course" in docker
