"""A home restored from a backup takes its own events back from the remote.

A backup brings back this device's log as it was: the remote may hold
events of this device written after the backup was made, which the restored
home lacks, and the restored home, not knowing, hands their sequences out
again to new events.  Before it offers anything, a sync looks at what the
remote holds of this device: when it holds events this home lacks, and
every event both hold agrees (same sequence, same id) but for events this
home wrote that the remote never had, this home was restored (or copied: a
copy of a home writes as the same device, which no log tells apart from a
restore; nothing is lost either way): the remote's
lines become this device's again, byte for byte, and the events written
here since go on past them, renumbered after the remote's last sequence
(new checksums; ids, times and batches kept).

When the remote holds, under this device, sequences this home never handed
out (past its high-water mark) or another event under one it did, another
home writes as this device (a copy of this home, or a restore of it that a
stamp could not tell, ``devices.is_copy``): this home takes the remote's
lines of that device as they are, becomes a device of its own, and what it
wrote that the remote lacks goes on there, numbered from 1.  The switch is one journalled
rewrite of this device's segments (``rewrite.commit``), the high-water mark
is raised past them, and one line says what was done.  Anything else (the
remote and this home disagree on an event both wrote) is left to the join,
which refuses it as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import msgspec

from memlog.eventlog import devices, rewrite
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import Event
from memlog.eventlog.log import EventLog
from memlog.eventlog.reader import Record, read_segment
from memlog.home import ensure_dir
from memlog.sync import opening, versions
from memlog.sync.repo import LOCAL_REF, Git
from memlog.sync.sealed import SUFFIX
from memlog.sync.sealing import Sealer, event_path


class _Theirs(NamedTuple):
    """This device's segments in the remote: by file name, their bytes and lines."""

    files: dict[str, bytes]
    lines: list[versions.Line]


class TakenBack(NamedTuple):
    """What ``take_back`` did: the line that says so (None: nothing), and this home's
    device from now on (another one when its id was in use elsewhere)."""

    said: str | None
    own: str


def take_back(
    git: Git, log: EventLog, own: str, theirs: str | None, sealer: Sealer, keyless: bool = False
) -> TakenBack:
    """Take this device's events the remote holds back (see the module): only lines its
    signature vouches for (``sealer.trust``), never a line a holder of the team key made.
    ``keyless``: the roster holds another signing key of this device than this home's (a
    copy or a restore of the home joined first, or the key was lost): this home cannot
    sign as it, and becomes a new device."""
    if not keyless and _as_offered(git, log, own, theirs, sealer):
        return TakenBack(None, own)  # nothing of this device there that this home lacks
    remote = _theirs(git, own, theirs, sealer)
    if remote is None or (not remote.lines and not keyless):
        return TakenBack(None, own)
    with log._locked():
        mine = [r.event for r in _mine(log, own)]
        by_id = {line.id: line for line in remote.lines}
        held = {e.id for e in mine}
        missing = [line for line in remote.lines if line.id not in held]
        if keyless:
            return TakenBack(*_become_new_device(log, own, remote, mine, missing))
        if not missing:
            return TakenBack(None, own)
        if _elsewhere(mine, remote.lines, log.written()):
            return TakenBack(*_become_new_device(log, own, remote, mine, missing))
        if not _restored(mine, by_id):
            return TakenBack(None, own)
        folder = log.home.device(own)
        staged = {folder / name: data for name, data in remote.files.items()}
        grown = _grown(folder, remote)
        staged.update({path: data for path, (data, _) in grown.items()})
        kept = {i for _, ids in grown.values() for i in ids}
        extra = [e for e in mine if e.id not in by_id and e.id not in kept]
        last = max([remote.lines[-1].seq, *(s for _, ids in grown.values() for s in ids.values())])
        renumbered = _renumbered(extra, last)
        if renumbered:
            lines = b"".join(encode_line(e) for e in renumbered)
            staged[folder / seg.segment_name(last + 1)] = lines
        others = [p for p in seg.list_segments(folder) if p not in staged]
        rewrite.commit(log.home, {**staged, **dict.fromkeys(others, b"")})
        for path in others:  # their lines are in the staged files now
            path.unlink(missing_ok=True)
        log.raise_mark(renumbered[-1].seq if renumbered else last)
    return TakenBack(_said(missing, extra, last), own)


def _grown(folder: Path, remote: _Theirs) -> dict[Path, tuple[bytes, dict[str, int]]]:
    """This device's segments here that hold the remote's version of them and lines
    appended since (none of them in a later segment of the remote): kept whole, so taking
    lines back never splits a segment (a copy of this home holding it whole would part from
    this device's layout); by path, the bytes kept and the events past the remote's."""
    firsts = sorted(_first_seq(name) for name in remote.files)
    kept = {}
    for name, theirs in remote.files.items():
        path = folder / name
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        if len(data) <= len(theirs) or not data.startswith(theirs):
            continue
        after = list(read_segment(path, len(theirs)))
        later = [first for first in firsts if first > _first_seq(name)]
        if not after or (later and after[-1].event.seq >= later[0]):
            continue
        kept[path] = (data[: after[-1].end], {r.event.id: r.event.seq for r in after})
    return kept


def _first_seq(name: str) -> int:
    return int(name.split(".", 1)[0])


def _elsewhere(mine: list[Event], theirs: list[versions.Line], written: int | None) -> bool:
    """Whether another home writes as this device: the remote holds, under a sequence
    this home handed out, another event than this home's, or holds sequences this home
    never handed out (a copy of it, or a restore of it, wrote them)."""
    here = {e.seq: e.id for e in mine}
    top = max([written or 0, *here])
    return any(here.get(line.seq, line.id) != line.id or line.seq > top for line in theirs)


def _become_new_device(
    log: EventLog, old: str, remote: _Theirs, mine: list[Event], missing: list[versions.Line]
) -> tuple[str, str]:
    """This home's device id is in use elsewhere: the old device's segments become the
    remote's, byte for byte, and what this home wrote that the remote lacks goes on under
    a new device id of its own, numbered from 1 (ids, times and batches kept).  One
    journalled rewrite; the line that says so, and the new id."""
    known = {line.id for line in remote.lines}
    extra = [e for e in mine if e.id not in known]
    new = devices.new_device_id(log.home)
    old_folder, new_folder = log.home.device(old), log.home.device(new)
    ensure_dir(new_folder)
    seg.fsync_dir(log.home.events)
    staged = {old_folder / name: data for name, data in remote.files.items()}
    others = [p for p in seg.list_segments(old_folder) if p not in staged]
    renumbered = _renumbered(extra, 0)
    if renumbered:
        staged[new_folder / seg.segment_name(1)] = b"".join(encode_line(e) for e in renumbered)
    rewrite.commit(log.home, {**staged, **dict.fromkeys(others, b"")})
    for path in others:
        path.unlink(missing_ok=True)
    if renumbered:
        seg.raise_high_water_file(new_folder, renumbered[-1].seq)
    moved = f"; the {_events(len(extra))} written here since went with it" if extra else ""
    took = f"took {_events(len(missing))} of it back from the remote, and " if missing else ""
    return (
        f"device {old} also writes elsewhere, or signs with a key this home lacks (this home "
        f"is a copy or a restore of it): {took}this home writes as device {new} from now "
        f"on{moved}",
        new,
    )


def _as_offered(git: Git, log: EventLog, own: str, theirs: str | None, sealer: Sealer) -> bool:
    """Whether every file of this device in the remote's commit ``theirs`` is the one this
    home committed, and ``events/`` still holds at least as much of each (nothing of this
    device there that this home lacks: what a sync finds almost always)."""
    mine = git.tree(git.ref(LOCAL_REF))
    for path, entry in git.tree(theirs).items():
        if not (path.startswith(own + "/") and path.endswith(SUFFIX)):
            continue
        if mine.get(path) != entry:
            return False
        committed = sealer.info(path, entry.oid)
        try:
            data = log.home.segment(event_path(path)).read_bytes()
        except FileNotFoundError:
            return False
        if versions.blob_id(data[: committed.plain_size]) != committed.plain_id:
            return False
    return True


def _theirs(git: Git, own: str, commit: str | None, sealer: Sealer) -> _Theirs | None:
    """This device's segments in ``commit``, opened (by ``events/`` file name); None when
    one of them does not open whole."""
    if commit is None:
        return None
    entries = {
        p: e for p, e in git.tree(commit).items() if p.startswith(own + "/") and p.endswith(SUFFIX)
    }
    blobs = git.blobs([e.oid for e in entries.values()])
    files, lines = {}, []
    for path in sorted(entries):
        opened = opening.open_sealed(sealer.key, path, blobs[entries[path].oid], None, sealer.trust)
        if opened.fault:
            return None
        lines += opened.lines
        files[event_path(path).split("/", 1)[1]] = versions.joined_bytes(opened.lines)
    return _Theirs(files, lines)


def _mine(log: EventLog, own: str) -> list[Record]:
    folder = log.home.device(own)
    return [r for path in seg.list_segments(folder) for r in read_segment(path)]


def _restored(mine: list[Event], theirs: dict[str, versions.Line]) -> bool:
    """Whether this home's events are the remote's up to where the backup stopped, then
    only events the remote never had: every event both hold at the same sequence, and
    every event only this home holds after all of them."""
    common = [e for e in mine if e.id in theirs]
    if any(theirs[e.id].seq != e.seq for e in common):
        return False
    last_common = max((e.seq for e in common), default=0)
    return all(e.seq > last_common for e in mine if e.id not in theirs)


def _renumbered(events: list[Event], last: int) -> list[Event]:
    """``events`` given the sequences after ``last``, batches kept (ends moved with them)."""
    out = []
    for index, event in enumerate(events):
        seq = last + 1 + index
        end = event.batch_end + seq - event.seq if event.batch_end else 0
        out.append(msgspec.structs.replace(event, seq=seq, batch_end=end))
    return out


def _said(missing: list[versions.Line], extra: list[Event], last: int) -> str:
    held = (
        f"the remote holds {_events(len(missing))} of this device that this home lacks "
        f"(seq {missing[0].seq}..{missing[-1].seq}: restored from a backup, or a copy of this "
        "home writing as it): took them back"
    )
    if not extra:
        return held
    moved = f"{len(extra)} written here since now follow them (seq {last + 1}..{last + len(extra)})"
    return f"{held}; {moved}"


def _events(count: int) -> str:
    return f"{count} event{'s' if count != 1 else ''}"
