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
Run as root (before the server switches to the learner), the files it writes are given to
the owner of the folder the course folder sits in, so the learner can edit them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import secrets
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course.runtime.results import checkout_version

MANIFEST_NAME = ".course-manifest.json"
MANIFEST_FORMAT = 2
TEMP_PREFIX = ".course-copy-"  # hidden, and never ends in .ipynb: a crash leaves no notebook
NEW_FILE_MODE = 0o666  # narrowed by the learner's umask, like any file they create


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


def read_own_file(path: Path) -> bytes:
    """The bytes of a regular file; a link is refused, so a run as root reads only real files."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
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
    args = parser.parse_args(argv)
    try:
        if args.restore:
            print(f"restored {restore(args.dest, args.restore, args.source)}")
            return 0
        version = args.version or course_version(args.source.resolve().parent)
        print(sync_notebooks(args.source, args.dest, version))
    except OSError as error:
        print(f"could not update {args.dest}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
