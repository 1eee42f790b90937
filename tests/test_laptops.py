"""The course on a learner's own machine (README.md, "Your machine").

`course.sh` stops on a platform CuTe DSL has no build for (macOS) or that course.sh does not
run on (a Windows shell outside WSL) before pip fails deep in its resolver, and names the ways
that work; those ways exist as named: the Linux container (`container/compose.yaml`, and the
README's `docker run` line that is the same container), the dev container
(`.devcontainer/devcontainer.json`, checked against the Development Container Specification's
schema, stored in `tests/devcontainer_schema/` with its source), and `requirements.txt`, which
must resolve for Linux aarch64 (Apple silicon's container, ARM servers) as for x86_64.
"""

import concurrent.futures
import json
import os
import re
import shlex
import shutil
import ssl
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from course import ROOT

COURSE_SH = ROOT / "course.sh"
COMPOSE = ROOT / "container" / "compose.yaml"
DEVCONTAINER = ROOT / ".devcontainer" / "devcontainer.json"
SCHEMA = Path(__file__).parent / "devcontainer_schema" / "devContainer.base.schema.json"
README = ROOT / "README.md"

# what course.sh's message and README.md name as the ways that work
CONTAINER_UP = "docker compose -f container/compose.yaml up"
SSH_TUNNEL = "ssh -N -L 8888:127.0.0.1:8888 you@gpu-machine"
REMOTE_LAB = "./course.sh lab --no-browser --port 8888"
WSL = "wsl --install -d Debian"


def course_sh_subcommands() -> set[str]:
    """The subcommands course.sh's `case "$cmd"` dispatches on (its two-space-indented arms)."""
    body = COURSE_SH.read_text().split('case "$cmd" in', 1)[1].split("\nesac", 1)[0]
    return set(re.findall(r"^  ([a-z][a-z-]*)\)", body, re.M))


def names_subcommand(command: str | list[str]) -> str:
    """The course.sh subcommand a container command runs (`./course.sh NAME ...`)."""
    words = shlex.split(command) if isinstance(command, str) else command
    assert words[0] == "./course.sh", words
    return words[1]


# --- course.sh's platform check -------------------------------------------------------------


def fake_bin(folder: Path, uname_s: str, uname_m: str, log: Path) -> Path:
    """A folder for the front of PATH: a `uname` that prints the machine asked for, and
    `python3`/`pip`/`pip3` that only log that they ran (so a setup past the check is seen,
    and nothing is installed)."""
    folder.mkdir()
    scripts = {
        "uname": f'case "$1" in -s) echo "{uname_s}" ;; -m) echo "{uname_m}" ;; '
        f'*) echo "{uname_s}" ;; esac',
        **{name: f'echo "{name} $*" >> "{log}"; exit 97' for name in ("python3", "pip", "pip3")},
    }
    for name, body in scripts.items():
        path = folder / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return folder


def run_course_sh(tmp_path: Path, command: str, uname: tuple[str, str], **env) -> tuple:
    """course.sh COMMAND on a machine whose uname says `uname`; returns (the finished process,
    what the fake python3/pip logged, the venv folder it was given)."""
    log = tmp_path / "ran.log"
    log.write_text("")
    venv = tmp_path / "venv"
    fake = fake_bin(tmp_path / "bin", *uname, log)
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("COURSE_PYTHON", "COURSE_BASE_PYTHON", "COURSE_PLATFORM", "VIRTUAL_ENV")
    }
    done = subprocess.run(
        ["bash", str(COURSE_SH), command],
        cwd=tmp_path,
        env={**base, "PATH": f"{fake}:{base['PATH']}", "COURSE_VENV": str(venv), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, log.read_text(), venv


UNSUPPORTED = [
    (("Darwin", "arm64"), "macOS (darwin-arm64)"),
    (("Darwin", "x86_64"), "macOS (darwin-x86_64)"),
    (("MINGW64_NT-10.0-19045", "x86_64"), "a Windows shell (mingw64_nt-10.0-19045-x86_64)"),
    (("MSYS_NT-10.0-19045", "x86_64"), "a Windows shell"),
    (("CYGWIN_NT-10.0-19045", "x86_64"), "a Windows shell"),
    (("Linux", "ppc64le"), "linux-ppc64le: CuTe DSL"),
    (("Linux", "armv7l"), "linux-armv7l: CuTe DSL"),
    (("FreeBSD", "amd64"), "freebsd-amd64: CuTe DSL"),
]


@pytest.mark.parametrize("uname, says", UNSUPPORTED, ids=["-".join(u) for u, _ in UNSUPPORTED])
def test_course_sh_stops_where_cute_dsl_has_no_build(tmp_path, uname, says):
    done, ran, venv = run_course_sh(tmp_path, "lab", uname)
    assert done.returncode == 2, done.stderr
    assert f"course.sh: the course cannot be set up on {says}" in done.stderr
    for way in (CONTAINER_UP, REMOTE_LAB, SSH_TUNNEL, ".devcontainer/", WSL):
        assert way in done.stderr, (way, done.stderr)
    # one paragraph: no blank line inside it
    assert "\n\n" not in done.stderr.strip(), done.stderr
    assert ran == "", f"pip or python3 ran past the check: {ran}"
    assert not venv.exists()


@pytest.mark.parametrize("command", ["setup", "test", "doctor"])
def test_every_command_that_sets_up_stops_first_on_macos(tmp_path, command):
    done, ran, venv = run_course_sh(tmp_path, command, ("Darwin", "arm64"))
    assert done.returncode == 2 and "no build for macOS" in done.stderr, done.stderr
    assert ran == "" and not venv.exists()


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_linux_goes_on_to_set_up(tmp_path, machine):
    """The control: on Linux the check lets setup go on, which asks python3 its version
    first (the fake one, which refuses, so nothing is installed)."""
    done, ran, _ = run_course_sh(tmp_path, "setup", ("Linux", machine))
    assert "cannot be set up on" not in done.stderr, done.stderr
    assert ran.startswith("python3 -c"), (ran, done.stderr)


def test_course_platform_stands_for_uname(tmp_path):
    """COURSE_PLATFORM is what course.sh takes the machine to be, whatever uname says."""
    (tmp_path / "mac").mkdir()
    (tmp_path / "linux").mkdir()
    mac, ran, _ = run_course_sh(
        tmp_path / "mac", "setup", ("Linux", "x86_64"), COURSE_PLATFORM="darwin-arm64"
    )
    assert mac.returncode == 2 and "macOS (darwin-arm64)" in mac.stderr and ran == ""
    linux, ran, _ = run_course_sh(
        tmp_path / "linux", "setup", ("Darwin", "arm64"), COURSE_PLATFORM="linux-x86_64"
    )
    assert "cannot be set up on" not in linux.stderr and ran.startswith("python3 -c")


def test_the_message_and_the_readme_name_the_same_ways():
    """What course.sh prints on a Mac is what README.md's "Your machine" says, and each file
    it names is there."""
    readme = README.read_text()
    section = readme.split("## Your machine", 1)[1].split("\n## ", 1)[0]
    for way in (CONTAINER_UP, REMOTE_LAB, SSH_TUNNEL, ".devcontainer/", WSL):
        assert way in section, way
        assert way in COURSE_SH.read_text(), way
    assert 'section "Your machine"' in COURSE_SH.read_text()
    assert COMPOSE.is_file() and DEVCONTAINER.is_file()
    for machine in ("Linux", "macOS", "Windows", "Codespaces", "Colab", "rented GPU"):
        assert machine in section, machine
    assert "see the Colab cell at the top of each notebook" in section
    # the README's two commands are still there as they were
    assert "```bash\n./course.sh lab\n```" in readme
    assert "```bash\n./course.sh test\n```" in readme


# --- the Linux container ------------------------------------------------------------------


def compose_service() -> dict:
    compose = yaml.safe_load(COMPOSE.read_text())
    (service,) = compose["services"].values()
    return service


def test_the_container_runs_course_sh_lab_with_its_venv_in_a_volume():
    compose = yaml.safe_load(COMPOSE.read_text())
    service = compose_service()
    assert re.fullmatch(r"python:3\.12-(slim-)?bookworm", service["image"]), service["image"]
    # no platform pinned: the multi-arch image runs as linux/amd64 or linux/arm64, whichever
    # the machine is, without emulation
    assert "platform" not in service
    assert service["ports"] == ["127.0.0.1:8888:8888"]
    command = service["command"]
    assert command == ["./course.sh", "lab", "--no-browser", "--ip", "0.0.0.0", "--port", "8888"]
    assert names_subcommand(command) in course_sh_subcommands()
    mounts = dict(reversed(volume.split(":", 1)) for volume in service["volumes"])
    assert service["working_dir"] == "/course"
    assert (COMPOSE.parent / mounts["/course"]).resolve() == ROOT
    # the venv lives in a named volume, where COURSE_VENV points, not in the mounted checkout
    venv = service["environment"]["COURSE_VENV"]
    assert not venv.startswith("/course")
    assert mounts[venv] in compose["volumes"], mounts
    assert compose["volumes"][mounts[venv]]["name"] == "live-kernel-course-venv"
    assert "COURSE_VENV" in COURSE_SH.read_text()


def test_the_readmes_docker_run_is_the_compose_container():
    """README.md's one-line `docker run` runs what compose runs: image, command, port, mounts
    (named volumes by their names) and environment."""
    compose = yaml.safe_load(COMPOSE.read_text())
    service = compose_service()
    (line,) = re.findall(r"^docker run .*$", README.read_text(), re.M)
    words = shlex.split(line.replace('"$PWD"', "PWD"))
    image_at = words.index(service["image"])
    assert words[image_at + 1 :] == service["command"]
    options = words[2:image_at]
    pairs = [(options[i], options[i + 1]) for i in range(len(options) - 1)]
    assert ("-p", service["ports"][0]) in pairs
    assert ("-w", service["working_dir"]) in pairs
    volume_names = {key: value.get("name", key) for key, value in compose["volumes"].items()}
    for volume in service["volumes"]:
        source, target = volume.split(":", 1)
        source = "PWD" if source == ".." else volume_names[source]
        assert ("-v", f"{source}:{target}") in pairs, volume
    for key, value in service["environment"].items():
        assert ("-e", f"{key}={value}") in pairs, key
    assert ("--init" in options) == service.get("init", False)


def test_a_windows_checkout_keeps_course_sh_runnable_in_the_container():
    """The container runs the host's checkout: course.sh must reach its bash with LF line
    endings even from a Windows clone (whose git turns text to CRLF by default)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and the course's git checkout to ask for attributes")
    got = subprocess.run(
        ["git", "check-attr", "eol", "course.sh"], cwd=ROOT, capture_output=True, text=True
    )
    assert got.stdout.strip() == "course.sh: eol: lf", got.stdout + got.stderr


# --- the dev container ----------------------------------------------------------------------


def test_the_dev_container_follows_the_specs_schema():
    """Validated with jsonschema (nbformat's dependency, so in every .venv) against the
    stored schema; a broken copy is refused, so the validation is not vacuous."""
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft201909Validator(schema)
    config = json.loads(DEVCONTAINER.read_text())
    errors = [e.message for e in validator.iter_errors(config)]
    assert errors == []
    for broken in (
        {**config, "hostRequirements": {**config["hostRequirements"], "memory": "8 GB"}},
        {**config, "postCreateCommandd": "./course.sh setup"},
        {**config, "forwardPorts": ["8888"]},
    ):
        assert not validator.is_valid(broken), broken


def test_the_dev_container_is_the_compose_container():
    config = json.loads(DEVCONTAINER.read_text())
    compose = yaml.safe_load(COMPOSE.read_text())
    service = compose_service()
    assert config["image"] == service["image"]
    assert config["containerEnv"] == service["environment"]
    mounts = {m["target"]: m for m in config["mounts"]}
    by_name = {v["name"]: k for k, v in compose["volumes"].items()}
    for volume in service["volumes"]:
        source, target = volume.split(":", 1)
        if source == "..":
            continue  # the checkout: the dev container's own workspace mount
        assert mounts[target]["type"] == "volume"
        assert by_name[mounts[target]["source"]] == source
    assert config["forwardPorts"] == [8888]
    assert shlex.split(config["postAttachCommand"]) == service["command"]
    assert config["postCreateCommand"] == "./course.sh setup"
    for command in (config["postCreateCommand"], config["postAttachCommand"]):
        assert names_subcommand(command) in course_sh_subcommands()
    needs = config["hostRequirements"]
    assert needs["cpus"] >= 2
    assert int(needs["memory"].removesuffix("gb")) >= 8


# --- the container built and started here (container/build-here.sh) -------------------------

BUILD_HERE = ROOT / "container" / "build-here.sh"
CONTAINER_RECORD = ROOT / "results" / "container" / "container_check.json"


def files_commands() -> dict:
    """The commands the two container files say the container runs."""
    config = json.loads(DEVCONTAINER.read_text())
    return {
        "postCreateCommand": config["postCreateCommand"],
        "postAttachCommand": config["postAttachCommand"],
        "compose_command": shlex.join(compose_service()["command"]),
    }


def test_build_here_runs_the_commands_the_files_say():
    """build-here.sh reads what it runs from devcontainer.json and compose.yaml (never its
    own copy): `--commands` prints them, and nothing is built."""
    out = subprocess.run(
        ["bash", str(BUILD_HERE), "--commands"],
        capture_output=True,
        text=True,
        env={**os.environ, "COURSE_HOST_PYTHON": sys.executable},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    printed = dict(line.split(": ", 1) for line in out.stdout.splitlines())
    commands = files_commands()
    assert printed["image"] == compose_service()["image"]
    assert printed["postCreateCommand"] == commands["postCreateCommand"]
    assert printed["postAttachCommand"] == commands["postAttachCommand"]
    assert printed["compose command"] == commands["compose_command"]


def test_the_recorded_container_run_is_of_todays_files_and_passed():
    """The newest record of build-here.sh (README: the container was built and started here)
    ran the commands the files say now, each succeeded, the second setup reused the venv, and
    JupyterLab answered with its token and refused without it. A changed container file
    makes this fail until build-here.sh is run again."""
    rec = json.loads(CONTAINER_RECORD.read_text())[-1]
    assert rec["commands"] == files_commands()
    assert rec["image_in_files"] == compose_service()["image"]
    steps = {step["name"]: step for step in rec["steps"]}
    assert set(steps) == {*files_commands(), "postCreateCommand_again"}
    assert all(step["rc"] == 0 for step in steps.values()), steps
    assert steps["postCreateCommand_again"]["seconds"] < steps["postCreateCommand"]["seconds"] / 5
    for name in ("postAttachCommand", "compose_command"):
        assert steps[name]["jupyterlab_answered"], steps[name]
        assert steps[name]["without_token_http"] in (401, 403), steps[name]


# --- requirements.txt for Linux aarch64 (and x86_64, the control) ----------------------------

# Debian 12's glibc, the container's: a manylinux_2_N wheel with N up to this installs there
GLIBC_MINOR = 36
PYTHON = "3.12"  # the container's
NO_MATCH = re.compile(r"No matching distribution found for (\S+)")


def index_url() -> str:
    """The package index pip is set to use (PyPI unless configured otherwise)."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"]
    for key in ("install.index-url", "global.index-url"):
        got = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", key], capture_output=True, text=True
        )
        if got.returncode == 0 and got.stdout.strip():
            return got.stdout.strip()
    return "https://pypi.org/simple"


def unreachable(url: str) -> str | None:
    """Why the index cannot be reached, or None: asked for CuTe DSL's native package, the one
    a platform most often lacks."""
    page = url.rstrip("/") + "/nvidia-cutlass-dsl-libs-base/"
    # the certificates pip is told to trust (a network that intercepts TLS), else the system's
    context = ssl.create_default_context(cafile=os.environ.get("PIP_CERT") or None)
    request = urllib.request.Request(page, method="HEAD")
    try:
        urllib.request.urlopen(request, timeout=20, context=context).close()
    except urllib.error.HTTPError as e:
        return None if e.code < 500 else f"{page}: HTTP {e.code}"
    except (urllib.error.URLError, OSError) as e:
        return f"{page}: {e}"
    return None


def platforms(arch: str) -> list[str]:
    # pip takes each --platform literally (manylinux_2_28 does not take in 2_27), but for
    # manylinux2014 also 2010 and 1; so every glibc up to Debian 12's
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(5, GLIBC_MINOR + 1)]
    return [f"manylinux2014_{arch}", *tags]


_BUILDING = threading.Lock()  # the two resolves run at once and may miss the same package


def build_pure_wheel(requirement: str, into: Path) -> bool:
    """Build a package that has only a source distribution (e.g. onetimepass, a dependency of
    NativeAuthenticator) and keep it if it is pure Python: that installs on any machine, as
    pip would build it there. False when it cannot be built or is not pure: a real gap."""
    name = re.split(r"[\[<>=!~;@ ]", requirement, maxsplit=1)[0]
    with _BUILDING:
        if any(into.glob(re.sub(r"[-_.]+", "_", name).lower() + "-*-none-any.whl")):
            return True  # the other resolve built it
        built = into / "building"
        done = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-binary", name]
            + ["-w", str(built), requirement],
            capture_output=True,
            text=True,
            timeout=300,
        )
        wheels = list(built.glob("*.whl")) if done.returncode == 0 else []
        pure = [w for w in wheels if w.name.endswith("-none-any.whl")]
        for wheel in pure:
            shutil.move(wheel, into / wheel.name.lower())
        shutil.rmtree(built, ignore_errors=True)
        return bool(pure) and len(pure) == len(wheels)


def resolve(
    arch: str, pure_wheels: Path, report: Path, requirements: Path = ROOT / "requirements.txt"
) -> tuple[dict, float]:
    """pip's resolver for `requirements` on Linux `arch`, CPython 3.12, wheels only, no
    install; with the pure-Python wheels built from source distributions as it goes."""
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q"]
    command += ["--only-binary=:all:", "--python-version", PYTHON, "--implementation", "cp"]
    command += ["--abi", "cp" + PYTHON.replace(".", "")]
    command += [f"--platform={tag}" for tag in platforms(arch)]
    command += ["--find-links", str(pure_wheels), "--timeout", "60"]
    command += ["-r", str(requirements), "--report", str(report)]
    start = time.monotonic()
    for _ in range(5):
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode == 0:
            return json.loads(report.read_text()), time.monotonic() - start
        missing = NO_MATCH.search(done.stderr)
        errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        if missing is None or not build_pure_wheel(missing.group(1), pure_wheels):
            why = "\n".join(errors)
            pytest.fail(f"{requirements.name} does not resolve for linux {arch}:\n{why}")
    pytest.fail(f"{requirements.name}: still unresolved for linux {arch} after five rounds")


def pinned() -> dict[str, str]:
    """requirements.txt's pins, name (normalised) -> version."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        match = re.match(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?==([^\s#;]+)", line)
        if match:
            pins[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[3]
    return pins


ARCHES = ("aarch64", "x86_64")
# pure-Python wheels built from source distributions (build_pure_wheel), kept across runs
PURE_WHEELS = Path(
    os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"), "live-kernel-course", "pure-wheels"
)


@pytest.fixture(scope="module")
def resolved(tmp_path_factory):
    """Both resolves, started together: pip spends about 30 s of one core on each (parsing
    the index's pages for 176 packages), so on two cores side by side they take 40-70 s
    where one after the other took 60-100 s (measured on CI's kind of machine, shared)."""
    why = unreachable(index_url())
    if why:
        pytest.skip(f"the package index cannot be reached, so nothing can be resolved: {why}")
    # kept across runs (as course.sh keeps CuTe DSL's kernels), so a later run resolves in one
    # round instead of two
    PURE_WHEELS.mkdir(parents=True, exist_ok=True)
    reports = tmp_path_factory.mktemp("resolve")
    with concurrent.futures.ThreadPoolExecutor(len(ARCHES)) as pool:
        futures = {
            arch: pool.submit(resolve, arch, PURE_WHEELS, reports / f"{arch}.json")
            for arch in ARCHES
        }
        concurrent.futures.wait(futures.values())
    return futures


@pytest.mark.parametrize("arch", ARCHES)
def test_requirements_resolve_for_linux(arch, resolved):
    """Every pin resolves to a wheel for Linux `arch` (x86_64 is the control: the machine
    CI and the reference H100 are). pip picks the files for the target, but evaluates
    environment markers (platform_machine, python_version) as this machine's: a dependency
    only a marker for aarch64 adds would not be seen here."""
    report, seconds = resolved[arch].result()
    print(f"resolved {len(report['install'])} packages for linux {arch} in {seconds:.0f} s")
    got = {
        re.sub(r"[-_.]+", "-", item["metadata"]["name"]).lower(): item for item in report["install"]
    }
    for name, version in pinned().items():
        assert got[name]["metadata"]["version"] == version, name
    # CuTe DSL's compiler, torch and cupy are native code: a wheel built for this arch
    for name in ("nvidia-cutlass-dsl-libs-base", "torch", "cupy-cuda13x"):
        assert got[name]["download_info"]["url"].endswith(f"_{arch}.whl"), name
    # and no file for another machine slipped in: each is for `arch` or for any
    for name, item in got.items():
        file = item["download_info"]["url"].rsplit("/", 1)[-1]
        platform_tag = file.removesuffix(".whl").rsplit("-", 1)[-1]
        assert platform_tag == "any" or platform_tag.endswith(f"_{arch}"), file
