"""Writing what a sync joined into ``events/``, and what it found on the way.

This device's segments are written back only when deleted here.  Another
device's are written as that device signed them, with the lines this home
asked it to take text out of kept without the text (``_overlaid``), and,
when any machine confirms a redaction, the lines the team asked for taken
the same way; a copy is replaced only by one that loses none of its events.
"""

from __future__ import annotations

from memlog.eventlog import clock, devices, screening
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import BadLine, decode_line
from memlog.eventlog.log import EventLog
from memlog.files import atomic_write
from memlog.home import Home, ensure_dir
from memlog.sync import local, versions
from memlog.sync.job import Exchange
from memlog.sync.merge import Merged
from memlog.sync.repo import LOCAL_REF
from memlog.sync.sealed import SUFFIX
from memlog.sync.sealing import device_of, event_path


def lost(job: Exchange, before: str | None, theirs: str | None, pushed: str | None) -> list[str]:
    """Lines the remote held when this home last looked and holds no longer (files deleted
    or cut short there), named with what this sync puts back."""
    git = job.git
    if before is None or theirs is None or before == theirs or not git.is_ancestor(before, theirs):
        return []
    was, now = git.tree(before), git.tree(theirs)
    held, sent = job.sealer.reach(now), job.sealer.last_seqs(git.tree(pushed))
    said = []
    for device, seq in sorted(job.sealer.reach(was).items()):
        if held.get(device, 0) >= seq or job.sealer.claimed(now, device) >= seq:
            continue  # (there, refused for another reason, which is named)
        gone = sorted(p for p in was if p.startswith(device + "/") and p not in now)
        how = f"{', '.join(gone)} deleted" if gone else "cut short"
        back = ("restored from this home" if sent.get(device, 0) >= seq
                else "this home does not hold them either")  # fmt: skip
        said.append(f"the remote lost device {device}'s lines seq {held.get(device, 0) + 1}.."
                    f"{seq} ({how}): {back}")  # fmt: skip
    return said


def write(
    job: Exchange, ours: str | None, joined: Merged | None, seen: dict[str, str | None]
) -> None:
    """Make ``events/`` hold the local branch's segments (this device's: written back when
    deleted here); another device's with the text this home took out of it left out, and
    (when any machine confirms a redaction) the redactions the team asked of it made."""
    git, log, files, sealer, outcome = job.git, job.log, job.files, job.sealer, job.outcome
    tree = {p: e.oid for p, e in git.tree(git.ref(LOCAL_REF)).items() if p.endswith(SUFFIX)}
    joined_from = {path: entry.oid for path, entry in git.tree(ours).items()}
    changed = joined.changed if joined is not None else {}
    infos = sealer.infos(tree)
    asked = _asked_by_device(job)
    foreign: list[tuple[str, bytes, bool]] = []  # written once their lessons are screened
    with log._locked():
        for path, oid in sorted(tree.items()):
            rel = event_path(path)
            if path.startswith(job.own + "/"):
                if not log.home.segment(rel).exists():
                    atomic_write(
                        log.home.segment(rel), sealer.plain(path, oid), log.home
                    )  # deleted
                continue
            current = files.blob_id(rel)
            requests = asked.get(device_of(path), {})
            if current == infos[path].plain_id and not requests:
                continue
            old = files.read(rel) or b""
            data = _overlaid(rel, changed.get(path) or sealer.plain(path, oid), old, requests)
            if current == versions.blob_id(data):
                continue
            if current != seen.get(rel):
                outcome.held.append(f"{rel} changed here during sync; the next sync takes it")
                continue
            if not data or not _grows(old, data):
                continue  # this home holds lines the remote's version lacks: kept, not offered
            was = joined_from.get(path)
            taken = sealer.plain_as_taken(path, was) if was is not None else None
            joined_in = current is None or (
                taken is not None and old in (taken, _overlaid(rel, taken, old, requests))
            )
            foreign.append((rel, data, not joined_in))
        held = _screen_received(log, files, foreign)
        for rel, data, keep_old in foreign:
            gained, replaced = _replace_foreign(log, files, rel, data, keep_old)
            outcome.received += gained
            seen[rel] = files.blob_id(rel)  # written here: not a change made meanwhile
            if replaced:
                outcome.held = [_restored(h, rel) for h in outcome.held]
    if held:
        outcome.notes.append(
            f"{held} {'lesson' if held == 1 else 'lessons'} from other devices held for "
            "review (their text tries to steer the agent): memlog review"
        )


def _screen_received(
    log: EventLog, files: local.Files, foreign: list[tuple[str, bytes, bool]]
) -> int:
    """The sync door of the scan of lessons, under the log's lock: each observation in the
    lines another device's files gain that the scan holds gets its ``entry.held`` event
    here, appended before those files are written and stamped after every event in them
    (the clock's floor is raised first), so a reader never folds one without its hold
    (one that reads the hold first folds the observation as late, before it).  Returns how
    many were held."""
    received = []
    for rel, data, _ in foreign:
        old = files.read(rel) or b""
        received.append(data[len(old) :] if data.startswith(old) else data)
    held, newest = screening.received_holds(received)
    if held:
        clock.raise_floor(log.home, newest)
        log._append_locked(held)
    return len(held)


def _asked_by_device(job: Exchange) -> dict[str, dict[int, bytes]]:
    """The lines of other devices this home keeps without the text it asked them to take
    out (this device's requests), and, when any machine confirms a redaction of another
    device's text, those every machine of the team asked for: by device and sequence."""
    found: dict[str, dict[int, bytes]] = {}
    for device, head in sorted(job.trust.heads.items()):
        if device in job.trust.evictions or (device != job.own and job.trust.redactions != "any"):
            continue
        for request in head.requests:
            if request.target != job.own:
                found.setdefault(request.target, {})[request.seq] = request.line.encode() + b"\n"
    return found


def _overlaid(rel: str, data: bytes, old: bytes, requests: dict[int, bytes]) -> bytes:
    """Another device's segment as its device signed it (``data``), with the lines this
    home's copy ``old`` holds with text taken out kept so, and the lines ``requests`` ask
    for taken in the same way."""
    try:
        lines = versions.parse(rel, data)
        mine = {line.seq: line for line in versions.parse(rel, old)} if old else {}
    except versions.Refused:
        return data
    out = []
    for line in lines:
        kept = line
        for other in (mine.get(line.seq), _line_or_none(rel, requests.get(line.seq))):
            if (
                other is not None and other.id == line.id and other.data != kept.data
                and versions.is_redaction(other.event, kept.event)
            ):  # fmt: skip
                kept = other
        out.append(kept.data)
    return b"".join(out)


def _line_or_none(rel: str, data: bytes | None) -> versions.Line | None:
    """The event line ``data`` a request asks for, when it decodes."""
    if data is None or data.count(b"\n") != 1:
        return None
    try:
        event = decode_line(data[:-1])
    except BadLine:
        return None
    return versions.Line(event.seq, event.id, data, event)


def _grows(old: bytes, new: bytes) -> bool:
    """Whether ``new`` holds every event of the copy ``old`` of another device's segment
    under its sequence (a damaged line of ``old`` counts for nothing): a copy is replaced
    only by one that loses none of its events."""
    return versions.covers(versions.plain_ids(new), versions.plain_ids(old))


def _plain_id(job: Exchange, path: str, oid: str) -> str:
    return job.sealer.info(path, oid).plain_id


def _replace_foreign(
    log: EventLog, files: local.Files, path: str, data: bytes, keep_old: bool
) -> tuple[int, bool]:
    """Write another device's segment; with ``keep_old``, a local copy that took no part
    in the join (a damaged one) goes to the quarantine file, unless the new one extends
    it.  Returns how many events the file gained, and whether a copy was put aside."""
    old = files.read(path) or b""
    aside = keep_old and bool(old) and not data.startswith(old)
    if aside:
        seg.quarantine(log.home, path, 0, old, "this home's copy, replaced by the synced one")
    target = log.home.segment(path)
    if not target.parent.is_dir():
        ensure_dir(target.parent)
        seg.fsync_dir(log.home.events)
    atomic_write(target, data, log.home)
    clock.raise_floor(log.home, clock.last_stamp([target]))  # before anything appends
    return max(0, data.count(b"\n") - old.count(b"\n")), aside


def _restored(problem: str, rel: str) -> str:
    """What was held back of ``rel``, once this sync put the synced version in its place."""
    named = problem.startswith(rel) and problem[len(rel) : len(rel) + 1] in (" ", ":")
    if not named or problem.endswith(RESTORED):
        return problem
    return f"{problem.removesuffix(KEPT).removesuffix('; ')}; {RESTORED}"


#: what the offer says of a damaged copy of another device's segment, before the write
KEPT = "the synced version is kept"
#: how a held copy of another device's segment ends when the sync restores it
RESTORED = "replaced by the synced version (this home's copy is in the quarantine file)"


def raise_floor(home: Home, own: str) -> list[str]:
    """Events appended from now on sort after every event received; a note when that
    puts this machine's events ahead of its own clock (another clock runs fast)."""
    stamps = {
        device: clock.last_stamp(seg.list_segments(home.device(device)))
        for device in devices.device_dirs(home)
        if device != own
    }
    if not stamps:
        return []
    newest = max(stamps.values())
    clock.raise_floor(home, newest)
    ahead = (newest - clock.now_micros()) / 3.6e9
    if ahead < 1:
        return []
    device = max(stamps, key=lambda d: stamps[d])
    far = f"{ahead / 24:.0f} days" if ahead >= 48 else f"{ahead:.0f} h"
    return [
        f"device {device} stamps its events {far} ahead of this machine's clock (one of the "
        "two clocks is wrong: check both); its events are taken, and those written here are "
        "stamped after them"
    ]
