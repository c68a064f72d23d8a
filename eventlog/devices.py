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
from memlog.home import Home

#: a device's segments roll over at 1 MiB: sync commits the growing one whole each time
ROLL_BYTES = 1 << 20
#: a device directory's name: what this module mints, and what a remote may carry
DEVICE_RE = re.compile(r"^[0-9a-z][0-9a-z_-]{0,63}$")


def device_dirs(home: Home) -> list[str]:
    """The device directories of a log, sorted (none: the log is flat)."""
    try:
        names = os.listdir(home.events)
    except FileNotFoundError:
        return []
    found = sorted(n for n in names if DEVICE_RE.match(n) and home.device(n).is_dir())
    for name in found:
        if is_link(home.device(name)):  # read as written: never through a link
            raise refuse_link(home.device(name))
    return found


def is_per_device(home: Home) -> bool:
    return bool(device_dirs(home))


def known_device_id(home: Home) -> str:
    """This home's device id when one was made ("" before that); never makes one."""
    try:
        found = home.device_file.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return found if DEVICE_RE.match(found) else ""


def device_id(home: Home, told: Callable[[str], None] | None = None) -> str:
    """This home's device id, made (and kept in ``events/.device``) on first use, and made
    anew when the home is a copy of another (``is_copy``): ``told`` hears it, in a line."""
    path = home.device_file
    try:
        found = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        found = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise HomeError(f"cannot read the device id in {path}: {exc}") from None
    if DEVICE_RE.match(found) and not is_copy(home):
        return found
    made = new_device_id(home)
    if found and told is not None:
        told(
            f"this home is a copy (or a restore) of the home of device {found}, which may "
            f"still write as it: it writes as device {made} from now on (every event "
            "stays where it is)"
        )
    return made


def new_device_id(home: Home) -> str:
    """Make this home a device of its own: a new id, and the stamp of this home's folder.
    The high-water mark the flat log left in ``events/`` was the old device's: it moves
    into that device's folder, so the new device's sequences start from 1."""
    path = home.device_file
    made = os.urandom(8).hex()
    try:
        _hand_over_flat_mark(home, known_device_id(home))
        atomic_write(path, f"{made}\n".encode("ascii"), home.root)
        _stamp(home)  # after the id: a crash between makes one more id, never reuses one
    except OSError as exc:
        raise HomeError(f"cannot write the device id to {path}: {exc.strerror}") from None
    return made


def _hand_over_flat_mark(home: Home, old: str) -> None:
    flat = seg.read_high_water(home.events)
    if flat is None or not old or not home.device(old).is_dir():
        return
    seg.raise_high_water_file(home.device(old), flat)
    seg.drop_high_water(home.events)
    seg.fsync_dir(home.events)


def is_copy(home: Home) -> bool:
    """Whether ``events/`` is not the folder this home's device id was made in (a copy of
    the home, or a restore of it: another home may write as that device).  A home whose id
    was made before the stamp was kept is stamped now, as the home of its id."""
    try:
        here = str(os.stat(home.events).st_ino)
        kept = home.device_stamp.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            _stamp(home)
        return False
    except (OSError, UnicodeDecodeError):
        return False  # unreadable: the id stands (a new one for every misread costs devices)
    return kept != here


def _stamp(home: Home) -> None:
    here = os.stat(home.events).st_ino
    atomic_write(home.device_stamp, f"{here}\n".encode("ascii"), home.root)


#: this home's own secret key (never synced: sync carries segments only), for digests that
#: must mean nothing off this machine (``local_digest``)
_KEY_BYTES = 32


def local_key(home: Home) -> bytes:
    """This home's secret key, made (and kept in ``events/.local-key``, 0600) on first use:
    the first process to make it wins, every other reads that one."""
    path = home.local_key
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
            private_dir(home.events, home.root)
            write_synced(path, os.urandom(_KEY_BYTES), exclusive=True)
        except FileExistsError:
            continue  # another process made it meanwhile: read that one
        except OSError as exc:
            raise HomeError(f"cannot write {path}: {exc.strerror}") from None
    raise HomeError(f"cannot make {path}")


def local_digest(home: Home, text: str) -> str:
    """A keyed digest of ``text`` (whitespace folded, lower-cased) under this home's own
    key: the same text gives the same digest here, and nothing a teammate holding the log
    can test a guess against (BLAKE2b keyed, 96 bits)."""
    if not text.strip():
        return ""
    folded = " ".join(text.lower().split()).encode("utf-8", "surrogatepass")
    return blake2b(folded, key=local_key(home), digest_size=12).hexdigest()


def flat_segments(home: Home) -> list[Path]:
    """Segments lying directly in ``events/`` (the flat layout)."""
    return seg.list_segments(home.events)


def to_devices(home: Home) -> list[str]:
    """Move a flat log into this device's directory; return the names moved.

    The caller holds the append lock.  Bytes are never rewritten: each
    segment is hard-linked, the staging directory renamed into place, and
    only then are the flat names removed.  Running it again finishes a move
    a crash interrupted.
    """
    device = device_id(home)
    target = home.device(device)
    if target.is_dir():
        return _drop_flat_copies(home, target)
    for stale in home.found(home.moving("*")):
        _remove_tree(stale)
    staging = home.moving(device)
    staging.mkdir(mode=0o700)
    names = [p.name for p in flat_segments(home)]
    for name in names:
        os.link(home.segment(name), staging / name)
    seg.fsync_dir(staging)
    os.rename(staging, target)
    seg.fsync_dir(home.events)
    _drop_flat_copies(home, target)
    return names


def _drop_flat_copies(home: Home, target: Path) -> list[str]:
    """Remove flat names whose file is already in the device directory."""
    dropped = []
    for path in flat_segments(home):
        moved = target / path.name
        if moved.exists() and os.path.samefile(moved, path):
            path.unlink()
            dropped.append(path.name)
    if dropped:
        seg.fsync_dir(home.events)
    return dropped


def _remove_tree(path: Path) -> None:
    if is_link(path):  # never emptied through a link: only the link goes
        path.unlink()
        return
    for child in path.iterdir():
        child.unlink()
    path.rmdir()


def relative_name(home: Home, path: Path) -> str:
    """A segment's name as the log reports it: ``<device>/<file>``, or ``<file>`` when flat."""
    return path.name if path.parent == home.events else f"{path.parent.name}/{path.name}"
