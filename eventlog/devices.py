"""Which device wrote what: the home's device id and the layout of ``events/``.

A log starts *flat*: its segments sit directly in ``events/``.  Once a home
syncs with other machines each device keeps its own directory,
``events/<device-id>/``, with its own gapless sequence; the device id is
made once and kept in ``events/.device``.  The switch (``to_devices``) moves
the flat segments into this device's directory without changing a byte of
them, and is atomic: the segments are hard-linked into a hidden directory
which one ``rename`` then makes the device's, so a crash leaves either the
flat layout or the device layout, never a mix a reader could be misled by.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from memlog.digests import blake2b
from memlog.errors import HomeError
from memlog.eventlog import segments as seg
from memlog.files import atomic_write, is_link, private_dir, write_synced

DEVICE_FILE = ".device"
#: a device's segments roll over at 1 MiB: sync commits the growing one whole each time
ROLL_BYTES = 1 << 20
#: a device directory's name: what this module mints, and what a remote may carry
DEVICE_RE = re.compile(r"^[0-9a-z][0-9a-z_-]{0,63}$")
_STAGING = ".moving-"


def device_dirs(events_dir: Path) -> list[str]:
    """The device directories of a log, sorted (none: the log is flat)."""
    try:
        names = os.listdir(events_dir)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if DEVICE_RE.match(n) and (events_dir / n).is_dir())


def is_per_device(events_dir: Path) -> bool:
    return bool(device_dirs(events_dir))


def known_device_id(events_dir: Path) -> str:
    """This home's device id when one was made ("" before that); never makes one."""
    try:
        found = (events_dir / DEVICE_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return found if DEVICE_RE.match(found) else ""


def device_id(events_dir: Path) -> str:
    """This home's device id, made (and kept in ``events/.device``) on first use."""
    path = events_dir / DEVICE_FILE
    try:
        found = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        found = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise HomeError(f"cannot read the device id in {path}: {exc}") from None
    if DEVICE_RE.match(found):
        return found
    made = os.urandom(8).hex()
    try:
        atomic_write(path, f"{made}\n".encode("ascii"), events_dir.parent)
    except OSError as exc:
        raise HomeError(f"cannot write the device id to {path}: {exc.strerror}") from None
    return made


#: this home's own secret key (never synced: sync carries segments only), for digests that
#: must mean nothing off this machine (``local_digest``)
KEY_FILE = ".local-key"
_KEY_BYTES = 32


def local_key(events_dir: Path) -> bytes:
    """This home's secret key, made (and kept in ``events/.local-key``, 0600) on first use:
    the first process to make it wins, every other reads that one."""
    path = events_dir / KEY_FILE
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise HomeError(f"cannot read {path}: {exc.strerror}") from None
        else:
            with os.fdopen(fd, "rb") as handle:
                found = handle.read(_KEY_BYTES + 1)
            if len(found) == _KEY_BYTES:
                return found
            raise HomeError(f"{path} is not a key of {_KEY_BYTES} bytes; remove it to make one")
        try:
            private_dir(events_dir, events_dir.parent)
            write_synced(path, os.urandom(_KEY_BYTES), exclusive=True)
        except FileExistsError:
            continue  # another process made it meanwhile: read that one
        except OSError as exc:
            raise HomeError(f"cannot write {path}: {exc.strerror}") from None
    raise HomeError(f"cannot make {path}")


def local_digest(events_dir: Path, text: str) -> str:
    """A keyed digest of ``text`` (whitespace folded, lower-cased) under this home's own
    key: the same text gives the same digest here, and nothing a teammate holding the log
    can test a guess against (BLAKE2b keyed, 96 bits)."""
    if not text.strip():
        return ""
    folded = " ".join(text.lower().split()).encode("utf-8", "surrogatepass")
    return blake2b(folded, key=local_key(events_dir), digest_size=12).hexdigest()


def flat_segments(events_dir: Path) -> list[Path]:
    """Segments lying directly in ``events/`` (the flat layout)."""
    return seg.list_segments(events_dir)


def to_devices(events_dir: Path) -> list[str]:
    """Move a flat log into this device's directory; return the names moved.

    The caller holds the append lock.  Bytes are never rewritten: each
    segment is hard-linked, the staging directory renamed into place, and
    only then are the flat names removed.  Running it again finishes a move
    a crash interrupted.
    """
    device = device_id(events_dir)
    target = events_dir / device
    if target.is_dir():
        return _drop_flat_copies(events_dir, target)
    for stale in events_dir.glob(_STAGING + "*"):
        _remove_tree(stale)
    staging = events_dir / f"{_STAGING}{device}"
    staging.mkdir(mode=0o700)
    names = [p.name for p in flat_segments(events_dir)]
    for name in names:
        os.link(events_dir / name, staging / name)
    seg.fsync_dir(staging)
    os.rename(staging, target)
    seg.fsync_dir(events_dir)
    _drop_flat_copies(events_dir, target)
    return names


def _drop_flat_copies(events_dir: Path, target: Path) -> list[str]:
    """Remove flat names whose file is already in the device directory."""
    dropped = []
    for path in flat_segments(events_dir):
        moved = target / path.name
        if moved.exists() and os.path.samefile(moved, path):
            path.unlink()
            dropped.append(path.name)
    if dropped:
        seg.fsync_dir(events_dir)
    return dropped


def _remove_tree(path: Path) -> None:
    if is_link(path):  # never emptied through a link: only the link goes
        path.unlink()
        return
    for child in path.iterdir():
        child.unlink()
    path.rmdir()


def relative_name(events_dir: Path, path: Path) -> str:
    """A segment's name as the log reports it: ``<device>/<file>``, or ``<file>`` when flat."""
    return path.name if path.parent == events_dir else f"{path.parent.name}/{path.name}"
