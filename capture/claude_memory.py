"""Claude Code's auto memory, side by side with memlog's: each memory file as events.

Claude Code keeps its own memories, one markdown file each, in a folder per
project (``claude_files``).  memlog records each file as an ``entry.observed``
event with source ``claude-code``: its ``name``, ``description`` and body
(as the entry's reasoning) kept, a category from its type (feedback is a
heuristic, the rest facts), its type and file as metadata lines, and where it
came from as its origin (``claude_files.origin``: this device and the path).
The entry's id is the content hash of the memory's name, type, description
and body, so an edit makes a new entry.

Incremental, by path and content: a file whose entry is already live with
that origin appends nothing; a new or edited file is observed (an edited
one's old entry superseded by it, with the reason); a file that is gone
retires its entry, with the reason, unless the same memory is still in
another file memlog read.  Only the folders read are judged, and only the
memories this device recorded: another machine's files are its own.
memlog never writes, moves or disables these files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from memlog import claude_files, untrusted
from memlog.capture.native_seen import changed, project_folder, remember
from memlog.capture.pipeline import Meter, capture
from memlog.eventlog.bounds import size_note, too_large
from memlog.eventlog.codec import encode_line
from memlog.eventlog.devices import device_id
from memlog.eventlog.events import EventBase, Observed, Retired, Superseded, content_hash
from memlog.projections.fold import Entry
from memlog.projections.sqlite_view import queries
from memlog.vocabulary import NATIVE_CATEGORIES, Source
from memlog.workspace import Workspace

SOURCE: Source = "claude-code"
#: an auto memory file this large or larger is left out, named (Claude Code's own files
#: are a few KB; the event of one this size would pass what an event may hold)
MAX_MEMORY_BYTES = 64 << 10


class Memory(NamedTuple):
    """A memory file read, with the project it belongs to."""

    file: claude_files.MemoryFile
    project: str


class NativePlan(NamedTuple):
    """What reading the folders would append, and what it found."""

    events: list[EventBase]
    folders: list[str]
    files: int
    added: int
    edited: int
    removed: int
    unchanged: int
    #: a line for each file left out (too large, front matter refused), naming it
    skipped: tuple[str, ...] = ()


def entry_id(memory: claude_files.MemoryFile) -> str:
    """A memory's entry id: the content hash of its name, type, description and body."""
    text = "\n".join((memory.name, memory.type, memory.description, memory.body))
    return content_hash(text)


def observation(memory: Memory, device: str) -> Observed:
    """The ``entry.observed`` event of a memory file."""
    found = memory.file
    details = [f"Type: {found.type or 'unknown'}", f"File: {found.path.name}"]
    if found.modified:
        details.append(f"Modified: {found.modified}")
    return Observed(
        name=found.name, description=found.description, reasoning=found.body,
        category=NATIVE_CATEGORIES.get(found.type, "facts"), source=SOURCE,
        project=memory.project, count=1, origin=claude_files.origin(device, found.path),
        details=tuple(details), last_observed=found.modified, stable_id=entry_id(found),
        revive=True,  # a file that is back brings its memory back
    )  # fmt: skip


def plan(
    memories: Iterable[Memory],
    known: Iterable[Entry],
    device: str,
    folders: Iterable[Path],
    skipped: Iterable[Skipped] = (),
) -> NativePlan:
    """The events that bring memlog in line with the memory files read from ``folders``
    (``known``: every entry of source ``claude-code``; ``skipped``: the files left out).
    A memory whose event would be larger than an event may be is left out too: one file
    never keeps the others from being recorded, and a file left out is not gone (its
    entry, if an earlier version had one, stays as it is)."""
    prefixes = [claude_files.origin_prefix(device, f) for f in folders]
    left = list(skipped)
    found: dict[str, Memory] = {}
    for memory in memories:
        size = len(encode_line(observation(memory, device))) - 1
        if too_large(size):
            left.append(Skipped(memory.file.path, f"its entry would be {size_note(size)}"))
            continue
        found[claude_files.origin(device, memory.file.path)] = memory
    kept = {claude_files.origin(device, s.path) for s in left}
    ids = {o: entry_id(m.file) for o, m in found.items()}
    live = {e.id: e for e in known if e.live}
    events: list[EventBase] = []
    added = unchanged = 0
    for where, memory in found.items():
        current = live.get(ids[where])
        if current is not None and where in current.origins:
            unchanged += 1
            continue
        events.append(observation(memory, device))
        added += 1
    gone = _gone((e for e in live.values() if kept.isdisjoint(e.origins)), ids, prefixes)
    events += gone
    edited = sum(isinstance(e, Superseded) for e in gone)
    return NativePlan(
        events, [str(f) for f in folders], len(found), added - edited, edited, len(gone) - edited,
        unchanged, tuple(f"{s.path}: skipped ({s.reason})" for s in left),
    )  # fmt: skip


def _gone(live: Iterable[Entry], ids: Mapping[str, str], prefixes: list[str]) -> list[EventBase]:
    """Supersede or retire the live entries whose files (all of them within the folders
    read) no longer hold them."""
    events: list[EventBase] = []
    present = set(ids.values())
    for entry in live:
        mine = [o for o in entry.origins if o.startswith(tuple(prefixes))]
        if not mine or len(mine) < len(entry.origins) or entry.id in present:
            continue  # not from these folders, also held elsewhere, or still there (renamed)
        name = os.path.basename(mine[-1])
        edited = next((ids[o] for o in reversed(mine) if o in ids), None)
        if edited is not None:
            reason = f"edited in Claude Code's auto memory ({name})"
            events.append(Superseded(entry_id=entry.id, by=edited, reason=reason))
        else:
            reason = f"removed from Claude Code's auto memory ({name})"
            events.append(Retired(entry_id=entry.id, reason=reason))
    return events


class Skipped(NamedTuple):
    """A memory file left out, and why."""

    path: Path
    reason: str


def read_folder(folder: Path, project: str, skipped: list[Skipped] | None = None) -> list[Memory]:
    """The memory files of ``folder`` that can be read; one that cannot (``MAX_MEMORY_BYTES``
    or more, front matter refused: ``untrusted``) is left out with a line naming it in
    ``skipped``, and the others are read."""
    found = []
    for path in claude_files.memory_files(folder):
        try:
            text = untrusted.read_text(path, MAX_MEMORY_BYTES - 1, follow=False)
            if text.strip():
                found.append(Memory(claude_files.parse_memory(path, text), project))
        except untrusted.Refused as exc:
            if skipped is not None:
                skipped.append(Skipped(path, str(exc)))
        except OSError:
            continue  # gone or unreadable meanwhile: as a file that is not there
    return found


def every_folder(cwd: str | None, env: Mapping[str, str] | None = None) -> list[tuple[Path, str]]:
    """Every auto memory folder of the user: each project's under the config dir, and the
    one configured for ``cwd`` (``autoMemoryDirectory``), with their projects' names."""
    found: dict[Path, str] = {}
    if cwd is not None:
        folder, project = project_folder(cwd, env)
        found[folder] = project
    projects = claude_files.projects_dir(env)
    try:
        listing = sorted(os.scandir(projects), key=lambda e: e.name)
    except OSError:
        listing = []
    for item in listing:
        folder = Path(item.path, "memory")
        if folder.is_dir() and folder not in found:
            found[folder] = project_of(Path(item.path))
    return list(found.items())


def project_of(folder: Path) -> str:
    """The project a Claude Code projects folder belongs to: the name of the working
    directory its transcripts record (the folder's own name when none says)."""
    for transcript in sorted(folder.glob("*.jsonl"))[:5]:
        head = claude_files.read_text(transcript, 64 << 10) or ""
        for line in head.splitlines()[:50]:
            try:
                cwd = json.loads(line).get("cwd")
            except (ValueError, AttributeError):
                continue
            if isinstance(cwd, str) and cwd:
                return Path(claude_files.project_key(cwd)).name
    return folder.name


def read(ws: Workspace, folders: list[tuple[Path, str]]) -> NativePlan:
    """What reading ``folders`` would append to ``ws``'s log."""
    skipped: list[Skipped] = []
    memories = [m for folder, project in folders for m in read_folder(folder, project, skipped)]
    known = queries.of_source(ws.home, SOURCE)
    return plan(memories, known, device_id(ws.home), [f for f, _ in folders], skipped)


def record(
    ws: Workspace, folders: list[tuple[Path, str]], meter: Meter | None = None
) -> tuple[NativePlan, list[str]]:
    """Read ``folders`` and append what changed (embedded and labelled as any capture)."""
    ws.catch_up()
    found = read(ws, folders)
    if not found.events:
        return found, list(found.skipped)
    done = capture(ws, found.events, "import --claude-memory", meter=meter)
    return found, [*found.skipped, *done.notes]


def at_start(ws: Workspace, cwd: str) -> tuple[NativePlan, list[str]] | None:
    """After a session start: record the project's auto memory when its files changed
    since last read (None when they did not, or auto memory is not there)."""
    folder, project = project_folder(cwd)
    print_ = changed(ws.home, folder)
    if print_ is None:
        return None
    done = record(ws, [(folder, project)])
    remember(ws.home, folder, print_)
    return done
