"""Each learner's own copy of the notebooks, kept in step with the course without losing work.

    python -m course.tools.learner_copy --source notebooks --dest ~/course

Run at every login (a hub's spawner calls it when a learner's server starts). The first time
it copies every notebook; later, when the course has moved on, a notebook the learner never
changed is replaced by the new version, and one they edited is left exactly as it is, with
the new version written beside it once as `NN_topic (course update <version>).ipynb`.
"Changed" means what a learner writes: the cells (their kinds and sources). Opening and
saving a notebook changes its bytes without any edit (JupyterLab records the kernel it ran
with and that kernel's Python version; running a cell adds outputs), and such a copy still
receives updates (its outputs go with the old version).
A notebook the learner deleted stays deleted until they ask for it back (`--restore NAME`),
and any other file in their folder is never touched.

What each notebook came from is kept in DEST/.course-manifest.json:

    {"format": 2, "version": "<course version of the last login>", "source": "<notebooks/>",
     "notebooks": {"00_orientation.ipynb": {"sha256": "<of the course copy the learner got>",
                                            "cells": "<hash of its cells' kinds and sources>",
                                            "version": "<its course version>",
                                            "offered": ["<versions written beside it>"]}}}

(A format-1 manifest has no "cells": its notebooks count as untouched only while their bytes
are those the learner got.)

Every write goes to a hidden temporary file in DEST first and is then renamed into place, so
a crash never leaves half a notebook. A damaged or missing manifest loses nothing: every
notebook already there counts as the learner's own work and is never overwritten.
A class hub never runs the copy as root in a learner's home: `copy_as_owner` runs this file
in a child process that is the home's owner (uid, gid and groups, checked before it touches
anything: `--dropped-to`), so a learner who swaps ~/course for a link while it runs can only
make it write where they could write themselves. The child is `python -I` on this file: it
imports nothing of the course (nothing from the environment or the learner's home either),
so it starts in milliseconds. Every file of the learner's it reads is capped
(MAX_FILE_BYTES, read after an fstat and with a bounded read): a bigger notebook is theirs,
left alone. Run as root by hand, the files it writes are given to the owner of the folder
the course folder sits in, so the learner can edit them.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import pwd
import re
import secrets
import selectors
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST_NAME = ".course-manifest.json"
MANIFEST_FORMAT = 2
TEMP_PREFIX = ".course-copy-"  # hidden, and never ends in .ipynb: a crash leaves no notebook
NEW_FILE_MODE = 0o666  # narrowed by the learner's umask, like any file they create
# the most of a learner's file ever read: the course's notebooks are well under 1 MiB, a
# learner's with many pictures a few MiB; a 3 GiB sparse one must not cost the machine 3 GiB
MAX_FILE_BYTES = 32 * 2**20
COPY_SECONDS = 60  # the child copying as the learner; the server starts anyway after it
REPORT_BYTES = 2**16  # the most of the child's output the hub reads (it runs as the learner)


@dataclass
class SyncReport:
    """What one login did to the learner's notebooks, by outcome (file names)."""

    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    offered: list[str] = field(default_factory=list)  # the files written beside edited copies
    yours: list[str] = field(default_factory=list)  # edited by the learner, left as they are
    deleted: list[str] = field(default_factory=list)  # deleted by the learner, not brought back
    unchanged: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # "name: reason"; tried again next login
    manifest_rebuilt: bool = False

    def __str__(self) -> str:
        parts = [
            f"{_count(len(self.new), 'new notebook')}" if self.new else "",
            f"{len(self.updated)} updated" if self.updated else "",
            (
                f"{_count(len(self.offered), 'update')} offered beside your edited copy: "
                + ", ".join(self.offered)
            )
            if self.offered
            else "",
        ]
        lines = [", ".join(p for p in parts if p)] if any(parts) else []
        if self.deleted:
            lines.append(
                "deleted by you, left deleted: "
                + ", ".join(self.deleted)
                + " (bring one back with --restore NAME)"
            )
        if self.failed:
            lines.append("could not write, will try again next time: " + "; ".join(self.failed))
        if self.manifest_rebuilt:
            lines.append(
                "the record of your copies was missing or unreadable: every notebook "
                "already in your folder was kept exactly as it is"
            )
        return "\n".join(lines) or "Your course notebooks are up to date."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cells_hash(data: bytes) -> str:
    """A hash of what a learner can change in a notebook: each cell's kind and source
    (metadata, outputs and the file's layout left out). '' for a file that is not one."""
    try:
        cells = json.loads(data)["cells"]
        written = [
            [
                cell["cell_type"],
                "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"],
            ]
            for cell in cells
        ]
    except (ValueError, KeyError, TypeError):
        return ""
    return sha256_of(json.dumps(written, ensure_ascii=False).encode())


def course_version(root: Path) -> str:
    """`git describe --always --tags` of the checkout; without git, a hash of its notebooks."""
    # imported here: the child run as a learner (python -I on this file) imports no course
    from course.runtime.results import checkout_version

    return checkout_version(root) or "content-" + notebooks_hash(Path(root) / "notebooks")[:12]


def notebooks_hash(folder: Path) -> str:
    """One hash over every notebook's name and bytes: changes whenever any notebook does."""
    digest = hashlib.sha256()
    for path in course_notebooks(folder):
        digest.update(path.name.encode() + b"\0" + sha256_of(path.read_bytes()).encode())
    return digest.hexdigest()


def course_notebooks(source: Path) -> list[Path]:
    """The notebooks a learner gets: the .ipynb files directly in `source`."""
    if not Path(source).is_dir():
        return []
    return sorted(
        p for p in Path(source).glob("*.ipynb") if p.is_file() and not p.name.startswith(".")
    )


def offer_name(name: str, version: str) -> str:
    """`05_swizzle (course update v2).ipynb`; the version made safe for a file name."""
    safe = re.sub(r"[^A-Za-z0-9._+-]", "-", version)
    return f"{Path(name).stem} (course update {safe}).ipynb"


# --- the manifest ----------------------------------------------------------------------------


def load_manifest(dest: Path) -> dict | None:
    """The manifest, or None when it is missing or not one we can trust."""
    try:
        data = json.loads(read_own_file(dest / MANIFEST_NAME))
    except (OSError, ValueError):
        return None
    return data if _is_manifest(data) else None


def _is_manifest(data) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("notebooks"), dict):
        return False
    return all(
        isinstance(entry, dict)
        and isinstance(entry.get("sha256"), str)
        and isinstance(entry.get("offered", []), list)
        for entry in data["notebooks"].values()
    )


def save_manifest(dest: Path, manifest: dict, owner: tuple[int, int] | None) -> None:
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    write_atomically(dest / MANIFEST_NAME, text.encode(), owner)


def empty_manifest(source: Path, version: str) -> dict:
    return {
        "format": MANIFEST_FORMAT,
        "version": version,
        "source": str(Path(source).resolve()),
        "notebooks": {},
    }


# --- files -----------------------------------------------------------------------------------


def read_own_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; a link is refused, so a run as
    root reads only real files, and a bigger file (a sparse one costs its owner nothing) is
    refused before it is read, and never read past `limit` if it grows meanwhile."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if info.st_size > limit:
            raise OSError(f"{path.name} is bigger than {limit} bytes")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise OSError(f"{path.name} is bigger than {limit} bytes")
        return data
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, owner: tuple[int, int] | None) -> None:
    """Write `data` to `path` whole or not at all: a hidden temporary file, then a rename."""
    temp = path.parent / f"{TEMP_PREFIX}{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, NEW_FILE_MODE)
    try:
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(data)
            f.flush()
            os.fsync(fd)
        if owner:
            os.fchown(fd, *owner)
        os.close(fd)
        fd = -1
        os.replace(temp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        temp.unlink(missing_ok=True)
        raise


def remove_leftover_temps(dest: Path) -> None:
    """Temporary files a crashed earlier run left behind (only ours, by their prefix)."""
    for temp in dest.glob(f"{TEMP_PREFIX}*.tmp"):
        temp.unlink(missing_ok=True)


def owner_for(dest: Path) -> tuple[int, int] | None:
    """Whom new files belong to: None normally; as root, the owner of dest's nearest folder."""
    if os.geteuid() != 0:
        return None
    folder = Path(dest).absolute()
    while not folder.exists():
        folder = folder.parent
    info = folder.stat()
    return None if info.st_uid == 0 else (info.st_uid, info.st_gid)


def make_folder(dest: Path, owner: tuple[int, int] | None) -> None:
    """Create dest (and missing parents) with the learner's umask, owned by the learner."""
    missing = [p for p in [dest, *dest.parents] if not p.exists()]
    dest.mkdir(parents=True, exist_ok=True)
    for folder in missing if owner else []:
        os.chown(folder, *owner, follow_symlinks=False)


# --- one notebook ----------------------------------------------------------------------------


def sync_one(
    course_copy: Path, dest: Path, entry: dict | None, version: str, owner: tuple[int, int] | None
) -> tuple[str, dict | None]:
    """Bring one notebook up to date: its outcome and its new manifest entry."""
    name, course_bytes = course_copy.name, course_copy.read_bytes()
    course_sha, target = sha256_of(course_bytes), dest / course_copy.name
    fresh = {
        "sha256": course_sha,
        "cells": cells_hash(course_bytes),
        "version": version,
        "offered": [],
    }
    if not os.path.lexists(target):
        if entry is not None:
            return "deleted", entry
        write_atomically(target, course_bytes, owner)
        return "new", fresh
    try:
        learner_bytes = read_own_file(target)
    except OSError:  # a link or a folder in its place: the learner's, left alone
        return "yours", entry
    learner_sha, learner_cells = sha256_of(learner_bytes), cells_hash(learner_bytes)
    if learner_sha == course_sha or (learner_cells and learner_cells == fresh["cells"]):
        # the course's cells already: nothing to bring (opened and saved, or run)
        same = entry is not None and entry["sha256"] == course_sha
        return "unchanged", entry if same else fresh
    if entry is not None and untouched(entry, learner_sha, learner_cells):
        write_atomically(target, course_bytes, owner)
        return "updated", fresh
    # edited by the learner (or of unknown origin): never overwritten
    if entry is not None and entry["sha256"] == course_sha:
        return "yours", entry
    return offer_beside(course_bytes, dest, name, entry, version, owner)


def untouched(entry: dict, learner_sha: str, learner_cells: str) -> bool:
    """Whether the learner's copy still holds the cells they were given."""
    if learner_sha == entry["sha256"]:
        return True
    return bool(learner_cells) and learner_cells == entry.get("cells")


def offer_beside(
    course_bytes: bytes,
    dest: Path,
    name: str,
    entry: dict | None,
    version: str,
    owner: tuple[int, int] | None,
) -> tuple[str, dict]:
    """Write the new version beside the learner's edited copy, once per course version."""
    entry = dict(
        entry or {"sha256": "", "cells": "", "version": "", "offered": []}
    )  # "": origin unknown
    offered = list(entry.get("offered", []))
    if version in offered:
        return "yours", entry
    beside = dest / offer_name(name, version)
    wrote = not os.path.lexists(beside)  # one already there may hold the learner's edits
    if wrote:
        write_atomically(beside, course_bytes, owner)
    entry["offered"] = offered + [version]
    return ("offered" if wrote else "yours"), entry


# --- the whole folder ------------------------------------------------------------------------


def sync_notebooks(source: Path, dest: Path, version: str) -> SyncReport:
    """Give the learner in `dest` the course's notebooks from `source`, never losing an edit."""
    source, dest = Path(source), Path(dest).expanduser()
    owner = owner_for(dest)
    make_folder(dest, owner)
    remove_leftover_temps(dest)
    manifest = load_manifest(dest)
    report = SyncReport(manifest_rebuilt=manifest is None and _holds_notebooks(dest))
    if manifest is None:
        manifest = empty_manifest(source, version)
    entries = manifest["notebooks"]
    for course_copy in course_notebooks(source):
        name = course_copy.name
        try:
            outcome, entry = sync_one(course_copy, dest, entries.get(name), version, owner)
        except OSError as error:
            report.failed.append(f"{name}: {error.strerror or error}")
            continue
        if entry is not None:
            entries[name] = entry
        getattr(report, outcome).append(offer_name(name, version) if outcome == "offered" else name)
    manifest.update(format=MANIFEST_FORMAT, version=version, source=str(source.resolve()))
    try:
        save_manifest(dest, manifest, owner)
    except OSError as error:  # next login works it out again from the notebooks themselves
        report.failed.append(f"{MANIFEST_NAME}: {error.strerror or error}")
    return report


def _holds_notebooks(dest: Path) -> bool:
    return any(dest.glob("*.ipynb"))


def restore(dest: Path, name: str, source: Path | None = None) -> Path:
    """Bring back a notebook the learner deleted: the course's current version of it.

    `source` defaults to the notebooks folder of the last login. An existing file is never
    overwritten (FileExistsError)."""
    dest = Path(dest).expanduser()
    manifest = load_manifest(dest) or {}
    source = Path(source or manifest.get("source", ""))
    course_copy, target = source / name, dest / name
    if not name.endswith(".ipynb") or Path(name).name != name or not course_copy.is_file():
        raise FileNotFoundError(f"the course has no notebook called {name!r}")
    if os.path.lexists(target):
        raise FileExistsError(f"{name} is already in {dest}; it was left as it is")
    owner = owner_for(dest)
    data = course_copy.read_bytes()
    write_atomically(target, data, owner)
    version = manifest.get("version") or course_version(source.resolve().parent)
    manifest = manifest or empty_manifest(source, version)
    manifest["notebooks"][name] = {
        "sha256": sha256_of(data),
        "cells": cells_hash(data),
        "version": version,
        "offered": [],
    }
    save_manifest(dest, manifest, owner)
    return target


# --- run as the learner ----------------------------------------------------------------------


def home_owner(home: Path) -> tuple[int, int, list[int]]:
    """Whom the copy into `home` runs as: the owner of the home (or of its nearest existing
    folder), with their primary group and groups. A learner cannot change who owns their
    home (only root can), so this is the learner in a class's account and the hub's own
    user in shared mode."""
    folder = Path(home).absolute()
    while not os.path.lexists(folder):
        folder = folder.parent
    info = os.lstat(folder)
    try:
        account = pwd.getpwuid(info.st_uid)
    except KeyError:  # a uid without an account: its own group only
        return info.st_uid, info.st_gid, [info.st_gid]
    return account.pw_uid, account.pw_gid, os.getgrouplist(account.pw_name, account.pw_gid)


def drop_to(uid: int, gid: int, groups: list[int]) -> dict:
    """Popen's arguments that make its child `uid` (setgroups, setgid, setuid: real,
    effective and saved) before it runs; {} when this process is `uid` already."""
    if os.geteuid() == uid:
        return {}
    return {"user": uid, "group": gid, "extra_groups": groups}


def copy_as_owner(
    source: Path, dest: Path, version: str, python: str = sys.executable
) -> SyncReport | str:
    """`sync_notebooks(source, dest, version)` run in a child process that is the owner of
    dest's home (`home_owner`), never this process: its report, or why there is none. The
    child runs as the learner, who may kill it, stop it or (ptrace) make it print without
    end: it gets COPY_SECONDS and REPORT_BYTES, and its report is checked."""
    uid, gid, groups = home_owner(Path(dest).parent)
    argv = [python, "-I", str(Path(__file__).resolve()), "--source", str(source)]
    argv += ["--dest", str(dest), "--version", version, "--json"]
    argv += ["--dropped-to", str(uid)] if uid != os.geteuid() else []
    try:
        child = subprocess.Popen(
            argv,
            cwd="/",
            env={"PATH": os.defpath, "LC_ALL": "C.UTF-8"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not in the hub's terminal: its Ctrl-C is the hub's
            **drop_to(uid, gid, groups),
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"notebooks not copied: the copy could not start as uid {uid}: {error}"
    with child:
        output, finished = read_bounded(child.stdout, REPORT_BYTES, COPY_SECONDS)
        try:  # a child that closed its output and is stopped would be waited for forever
            code = child.wait(timeout=5 if finished else 0)
        except subprocess.TimeoutExpired:
            finished = False
            child.kill()
    text = output.decode(errors="replace").strip()
    if not finished:
        return (
            f"notebooks not copied: the copy gave no report within {COPY_SECONDS} s "
            f"and {REPORT_BYTES} bytes"
        )
    return report_from_json(text) if code == 0 else f"notebooks not copied: {text[-500:]}"


def read_bounded(stream, limit: int, seconds: float) -> tuple[bytes, bool]:
    """What a child printed until it closed its output: at most `limit` bytes within
    `seconds`, and whether it did close it by then (a blocking read would wait for as long
    as the child, or a process it handed its output to, keeps it open)."""
    fd, out, deadline = stream.fileno(), bytearray(), time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while len(out) <= limit:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return bytes(out), False
            chunk = os.read(fd, limit + 1 - len(out))
            if not chunk:
                return bytes(out), True
            out += chunk
    return bytes(out[:limit]), False


def report_json(report: SyncReport) -> str:
    return json.dumps(dataclasses.asdict(report))


def report_from_json(text: str) -> SyncReport | str:
    """The child's report (the last line it printed), or what it said instead: it ran as the
    learner, so only a report of the right shape is taken."""
    try:
        data = json.loads(text.splitlines()[-1])
    except (ValueError, IndexError):
        data = None
    kinds = {
        f.name: bool if f.name == "manifest_rebuilt" else list
        for f in dataclasses.fields(SyncReport)
    }
    if (
        isinstance(data, dict)
        and set(data) == set(kinds)
        and all(isinstance(data[k], kind) for k, kind in kinds.items())
        and all(isinstance(n, str) for k, kind in kinds.items() if kind is list for n in data[k])
    ):
        return SyncReport(**data)
    return f"notebooks not copied: no report from the copy: {text[-500:]!r}"


def not_dropped(uid: int) -> str:
    """Why this process is not safely the account `uid` ('' if it is): it must be `uid` for
    real, effective and saved ids, in none of root's groups, hold no capability and be
    unable to become root again. Checked by the child before it touches any file."""
    if uid == 0 or os.getresuid() != (uid, uid, uid):
        return f"runs as uids {os.getresuid()}, not {uid}"
    if 0 in os.getresgid() or 0 in os.getgroups():
        return "still in root's group"
    for regain in (os.setuid, os.setgid):
        try:
            regain(0)
        except PermissionError:
            continue
        return f"could become root again ({regain.__name__})"
    status = Path("/proc/self/status")
    caps = [line for line in status.read_text().splitlines() if line.startswith("CapEff:")]
    if caps and int(caps[0].split()[1], 16):
        return "still holds capabilities"
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course.tools.learner_copy",
        description="Copy the course's notebooks into a learner's folder, or bring the newer "
        "course version without overwriting the learner's edits.",
    )
    parser.add_argument("--source", type=Path, required=True, help="the course's notebooks/")
    parser.add_argument("--dest", type=Path, required=True, help="the learner's folder")
    parser.add_argument(
        "--version",
        help="course version (default: git describe of the checkout that holds --source)",
    )
    parser.add_argument("--restore", metavar="NAME", help="bring back a deleted notebook")
    parser.add_argument("--json", action="store_true", help="the report as one line of JSON")
    parser.add_argument(
        "--dropped-to",
        metavar="UID",
        type=int,
        help="refuse to touch anything unless this process is UID for good (the hub's child)",
    )
    args = parser.parse_args(argv)
    problem = "" if args.dropped_to is None else not_dropped(args.dropped_to)
    if problem:
        print(f"not copied: {problem}", file=sys.stderr)
        return 2
    try:
        if args.restore:
            print(f"restored {restore(args.dest, args.restore, args.source)}")
            return 0
        version = args.version or course_version(args.source.resolve().parent)
        report = sync_notebooks(args.source, args.dest, version)
        print(report_json(report) if args.json else report)
    except OSError as error:
        print(f"could not update {args.dest}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
