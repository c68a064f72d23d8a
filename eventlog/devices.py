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

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path

from memlog.digests import blake2b
from memlog.errors import HomeError
from memlog.eventlog import segments as seg
from memlog.files import atomic_write, is_link, private_dir, refuse_link, write_synced

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
    found = sorted(n for n in names if DEVICE_RE.match(n) and (events_dir / n).is_dir())
    for name in found:
        if is_link(events_dir / name):  # read as written: never through a link
            raise refuse_link(events_dir / name)
    return found


def is_per_device(events_dir: Path) -> bool:
    return bool(device_dirs(events_dir))


def known_device_id(events_dir: Path) -> str:
    """This home's device id when one was made ("" before that); never makes one."""
    try:
        found = (events_dir / DEVICE_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return found if DEVICE_RE.match(found) else ""


def device_id(events_dir: Path, told: Callable[[str], None] | None = None) -> str:
    """This home's device id, made (and kept in ``events/.device``) on first use, and made
    anew when the home is a copy of another (``is_copy``): ``told`` hears it, in a line."""
    path = events_dir / DEVICE_FILE
    try:
        found = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        found = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise HomeError(f"cannot read the device id in {path}: {exc}") from None
    if DEVICE_RE.match(found) and not is_copy(events_dir):
        return found
    made = new_device_id(events_dir)
    if found and told is not None:
        told(
            f"this home is a copy (or a restore) of the home of device {found}, which may "
            f"still write as it: it writes as device {made} from now on (every event "
            "stays where it is)"
        )
    return made


def new_device_id(events_dir: Path) -> str:
    """Make this home a device of its own: a new id, and the stamp of this home's folder.
    The high-water mark the flat log left in ``events/`` was the old device's: it moves
    into that device's folder, so the new device's sequences start from 1."""
    path = events_dir / DEVICE_FILE
    made = os.urandom(8).hex()
    try:
        _hand_over_flat_mark(events_dir, known_device_id(events_dir))
        atomic_write(path, f"{made}\n".encode("ascii"), events_dir.parent)
        _stamp(events_dir)  # after the id: a crash between makes one more id, never reuses one
    except OSError as exc:
        raise HomeError(f"cannot write the device id to {path}: {exc.strerror}") from None
    return made


def _hand_over_flat_mark(events_dir: Path, old: str) -> None:
    flat = seg.read_high_water(events_dir)
    if flat is None or not old or not (events_dir / old).is_dir():
        return
    seg.raise_high_water_file(events_dir / old, flat)
    (events_dir / seg.HIGH_WATER_NAME).unlink()
    seg.fsync_dir(events_dir)


#: the folder the device id was made in (``events/``'s inode): a copy or a restore of the
#: home is another folder, so another device
STAMP_FILE = ".device-stamp"


def is_copy(events_dir: Path) -> bool:
    """Whether ``events/`` is not the folder this home's device id was made in (a copy of
    the home, or a restore of it: another home may write as that device).  A home whose id
    was made before the stamp was kept is stamped now, as the home of its id."""
    try:
        here = str(os.stat(events_dir).st_ino)
        kept = (events_dir / STAMP_FILE).read_text(encoding="ascii").strip()
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            _stamp(events_dir)
        return False
    except (OSError, UnicodeDecodeError):
        return False  # unreadable: the id stands (a new one for every misread costs devices)
    return kept != here


def _stamp(events_dir: Path) -> None:
    here = os.stat(events_dir).st_ino
    atomic_write(events_dir / STAMP_FILE, f"{here}\n".encode("ascii"), events_dir.parent)


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
