"""Low-level file operations on log segments: naming, tails, quarantine."""

from __future__ import annotations

import os
import re
from pathlib import Path

import msgspec

from memlog.eventlog.codec import BadLine, check_line, decode_line, salvage
from memlog.eventlog.events import MAX_SEQ, Event
from memlog.eventlog.ids import utc_now
from memlog.files import fsync_dir as fsync_dir
from memlog.files import open_private
from memlog.files import write_all as write_all
from memlog.home import Home

SEGMENT_SUFFIX = ".jsonl"
_SEQ_RE = re.compile(rb'"seq":(\d+)')
_WINDOW = 1 << 16
_CLEAN_WINDOW = 1 << 13


def segment_name(first_seq: int) -> str:
    """Segment file name: the first sequence it holds, zero padded, so name order = log order."""
    return f"{first_seq:020d}{SEGMENT_SUFFIX}"


def list_segments(folder: Path) -> list[Path]:
    """The segments of a log, in log order."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(SEGMENT_SUFFIX))
    except FileNotFoundError:
        return []
    return [folder / n for n in names if not n.startswith(".")]


def tail_window(fd: int, size: int, window: int) -> tuple[int, bytes]:
    """The last ``window`` bytes of the file (fewer when it is shorter) and their offset."""
    start = max(0, size - window)
    return start, os.pread(fd, size - start, start)


def tail_lines(fd: int, size: int, window: int) -> tuple[int, list[bytes]]:
    """The complete lines in the last ``window`` bytes of the file (without the first
    when the window starts inside the file: it may be cut) and the window's offset."""
    start, data = tail_window(fd, size, window)
    lines = data.split(b"\n")[:-1]
    return start, lines[1:] if start > 0 else lines


def last_newline_end(fd: int, size: int) -> int:
    """Offset just past the last newline in the first ``size`` bytes (0 when none)."""
    window = _WINDOW
    while True:
        start, data = tail_window(fd, size, window)
        cut = data.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        if start == 0:
            return 0
        window *= 2


def clean_end(fd: int, size: int) -> Event | None:
    """The last event of a segment that ends cleanly (a good line, ending its batch or
    standing alone, then the end of the file), read from its last few kilobytes; None
    when there is anything else to look at."""
    if size == 0:
        return None
    start, data = tail_window(fd, size, _CLEAN_WINDOW)
    if not data.endswith(b"\n"):
        return None
    cut = data.rfind(b"\n", 0, len(data) - 1)
    if cut < 0 and start > 0:
        return None
    try:
        event = decode_line(data[cut + 1 :])
    except BadLine:
        return None
    return event if event.batch_end <= event.seq else None


def unfinished_batch_start(fd: int, end: int, written: int | None) -> int:
    """Where the batch the first ``end`` bytes stop inside of starts (``end`` if none).

    A batch is written with one ``write``; a crash can leave its first lines
    complete and the rest torn.  Those lines must go with the rest.  A batch
    ending at or before ``written`` (the device's high-water mark) was written
    whole and acknowledged: lines missing from it were lost at rest, and what
    is left of it stays.  Without a mark (a log of an earlier version), a
    damaged complete line inside the batch says the same: a torn write leaves
    only good lines behind it.
    """
    window = _WINDOW
    while end > 0:
        start, lines = tail_lines(fd, end, window)
        found = _batch_start_in(lines, end, written, whole=start == 0)
        if found is not None:
            return found
        window *= 2
    return end


def _batch_start_in(lines: list[bytes], end: int, written: int | None, whole: bool) -> int | None:
    """The start of an unfinished batch at the end of ``lines``; None to look further back."""
    offset = begin = end
    batch_end = next_seq = 0  # of the batch, and of the line after the one looked at
    damaged_after = False  # complete damaged lines after the last good one
    for index, line in enumerate(reversed(lines)):
        offset -= len(line) + 1
        try:
            event = decode_line(line)
        except BadLine:
            if not batch_end:
                damaged_after = damaged_after or b"\0" not in line
                continue
            next_seq -= 1
            if written is None and b"\0" not in line:
                ends_before = _ends_batch(lines, len(lines) - 1 - index, next_seq)
                return begin if ends_before else end  # at rest inside it: written whole
            if written is not None and next_seq <= written:
                return begin  # an acknowledged line before the batch
            begin = offset  # a torn block of the same write
            continue
        if not batch_end:
            if event.batch_end <= event.seq or (written is not None and event.batch_end <= written):
                return end  # the last line ends its batch (or stands alone, or was acknowledged)
            if written is None and damaged_after:
                return end  # damaged at rest after it: the batch was written whole
            batch_end = event.batch_end
        elif event.batch_end != batch_end:
            return begin
        begin, next_seq = offset, event.seq
    return begin if whole else None


def _ends_batch(lines: list[bytes], at: int, seq: int) -> bool:
    """Whether the damaged line ``lines[at]`` (sequence ``seq``) ended the batch of the line
    before it, which names ``seq`` as its batch's end."""
    if at == 0:
        return False
    try:
        before = decode_line(lines[at - 1])
    except BadLine:
        return False
    return before.batch_end == seq > before.seq


#: the highest sequence a device's appender ever handed out, kept beside its segments
HIGH_WATER_NAME = ".seq"
#: the same, kept on the tail segment's own inode (an extended attribute), set once the
#: lines are synced, so it is never ahead of them and costs no flush of its own; a tail cut
#: or damaged later keeps it.  ``.seq`` keeps it too (written after each append, synced by
#: the file system's next commit, or at once where a file system has no such attributes),
#: so a tail segment deleted takes no sequence number with it, and through what replaces a
#: segment's inode (a repair, a rewrite, a restore)
HIGH_WATER_ATTR = "user.memlog.seq"
_HIGH_WATER_WIDTH = 20


def mark_segment(fd: int, seq: int) -> bool:
    """Record ``seq`` on the segment open at ``fd``; False where the file system keeps no
    extended attributes."""
    try:
        os.setxattr(fd, HIGH_WATER_ATTR, b"%d" % seq)
    except (OSError, AttributeError):  # not supported here (or not on this platform)
        return False
    return True


def segment_mark(path: Path) -> int | None:
    """The sequence recorded on a segment by ``mark_segment`` (None when none is)."""
    try:
        value = os.getxattr(path, HIGH_WATER_ATTR, follow_symlinks=False)
    except (OSError, AttributeError):
        return None
    return int(value) if value.isdigit() else None


def raise_high_water_file(folder: Path, seq: int, sync: bool = True) -> None:
    """Raise ``folder``'s ``.seq`` to ``seq`` (made when missing), synced unless not
    ``sync`` (the file system's next commit writes it)."""
    fd = open_high_water(folder, seq)
    try:
        raise_high_water(fd, seq, sync)
    finally:
        os.close(fd)


def high_water_path(folder: Path) -> Path:
    """Where the high-water mark of the segments in ``folder`` is kept."""
    return folder / HIGH_WATER_NAME


def drop_high_water(folder: Path) -> None:
    """Remove the high-water mark of ``folder`` (its segments moved to a device's)."""
    (folder / HIGH_WATER_NAME).unlink()


def read_high_water(folder: Path) -> int | None:
    """The high-water mark kept in ``folder`` (None when there is none: a log written by an
    earlier version, or another device's)."""
    try:
        fd = os.open(folder / HIGH_WATER_NAME, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        text = os.pread(fd, 64, 0).strip()
    finally:
        os.close(fd)
    return int(text) if text.isdigit() else None


def open_high_water(folder: Path, at_least: int) -> int:
    """The descriptor of ``folder``'s high-water mark, made (and fsynced) when missing, so
    that raising it later only overwrites bytes in place."""
    path = folder / HIGH_WATER_NAME
    try:
        return open_private(path, os.O_RDWR)
    except FileNotFoundError:
        pass
    fd = open_private(path, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    try:
        write_all(fd, _high_water_bytes(at_least))
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise
    fsync_dir(folder)
    return fd


def raise_high_water(fd: int, seq: int, sync: bool = True) -> None:
    """Record that ``seq`` was handed out (synced unless not ``sync``); the mark is never
    lowered."""
    text = os.pread(fd, 64, 0).strip()
    if text.isdigit() and int(text) >= seq:
        return
    os.pwrite(fd, _high_water_bytes(seq), 0)
    if sync:
        os.fdatasync(fd)


def _high_water_bytes(seq: int) -> bytes:
    return f"{seq:0{_HIGH_WATER_WIDTH}d}\n".encode("ascii")


def last_seq(fd: int, size: int) -> int | None:
    """The highest sequence in the complete lines of a segment, or None if it has none.

    Scans back from the end to the last line that passes its checksum; damaged
    lines after it still count when their sequence can be read, so a sequence
    is never handed out twice.
    """
    window = _WINDOW
    while size > 0:
        start, lines = tail_lines(fd, size, window)
        found = _last_seq_in(lines)
        if found is not None or start == 0:
            return found
        window *= 2
    return None


def _last_seq_in(lines: list[bytes]) -> int | None:
    damaged: list[int] = []
    for line in reversed(lines):
        try:
            seq = decode_line(line).seq
        except BadLine:  # (a sequence no event may carry is no sequence handed out)
            damaged.extend(s for m in _SEQ_RE.findall(line) if (s := int(m)) <= MAX_SEQ)
            continue
        return max([seq, *damaged])
    return max(damaged) if damaged else None


def is_good_line(line: bytes) -> bool:
    try:
        check_line(line)
    except BadLine:
        return False
    return True


class QuarantineRecord(msgspec.Struct, frozen=True):
    """Bytes taken out of the log, kept verbatim (base64) with why and where."""

    ts: str
    segment: str
    offset: int
    reason: str
    size: int
    data: str
    line: int | None = None
    #: sequence numbers that left the log with these bytes
    seqs: tuple[int, ...] = ()


def quarantine(
    home: Home,
    segment: str,
    offset: int,
    data: bytes,
    reason: str,
    line: int | None = None,
    seqs: tuple[int, ...] = (),
) -> None:
    """Append ``data`` to the quarantine file beside the log (fsynced, mode 0600)."""
    record = QuarantineRecord(
        ts=utc_now(),
        segment=segment,
        offset=offset,
        reason=reason,
        size=len(data),
        data=_base64(data),
        line=line,
        seqs=seqs,
    )
    payload = msgspec.json.encode(record) + b"\n"
    fd = open_private(home.quarantine, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            payload = b"\n" + payload  # a crash tore the last record: do not glue onto it
        write_all(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_quarantine(home: Home) -> list[QuarantineRecord]:
    """Every record of the quarantine file (empty when there is none).

    A record a crash tore while it was written is skipped.
    """
    try:
        raw = home.quarantine.read_bytes()
    except FileNotFoundError:
        return []
    decoder = msgspec.json.Decoder(QuarantineRecord)
    records = []
    for line in raw.splitlines():
        try:
            records.append(decoder.decode(line))
        except (msgspec.DecodeError, UnicodeDecodeError):
            continue
    return records


def seq_ending_at(path: Path, end: int) -> int | None:
    """The sequence of the good line of ``path`` that ends exactly at ``end`` (None if none)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if end <= 0 or os.pread(fd, 1, end - 1) != b"\n":
            return None
        start = last_newline_end(fd, end - 1)
        line = os.pread(fd, end - start, start)
    finally:
        os.close(fd)
    try:
        return decode_line(line).seq
    except BadLine:
        salvaged = salvage(line[:-1])
        return salvaged[1].seq if salvaged is not None else None


def _base64(data: bytes) -> str:
    import base64  # (only for a quarantined line)

    return base64.b64encode(data).decode("ascii")


def truncate_quietly(fd: int, size: int) -> None:
    """Cut the file open on ``fd`` back to ``size`` bytes, if it can."""
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError:
        pass  # the unfinished line has no newline: the next append quarantines it
