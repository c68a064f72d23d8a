"""An entry's metadata lines as its global store file had them, with memlog's current values.

An entry adopted or imported from an iflow global store keeps its header and
every line from its first metadata item on (``Entry.layout``).  Writing it
back, each line stays as it was unless memlog knows better: the observation
count and the confidence once they changed, ``Last observed`` once memlog
observed the entry itself, ``Source`` once it was seen in places the line
does not name.  A promotion changes none of them.  Metadata lines the entry
gained from other files follow; a count, confidence or ``Last observed`` the
store never stated is added only once it means something the file's silence
does not (the project files, which show every field, always add them).
"""

from __future__ import annotations

import re

from memlog.projections.fold import Entry, provenance_label
from memlog.vocabulary import CONFIDENCES

COUNT, CONFIDENCE, OBSERVED, SOURCE, TAGS = (
    "observation count", "confidence", "last observed", "source", "tags",
)  # fmt: skip
_COUNT = re.compile(r"[0-9]{1,9}")


def split_source(value: str) -> tuple[str, str]:
    """``project, Feature #NNN`` of a global store ``Source`` line, as project and feature."""
    project, _, feature = value.partition(",")
    return project.strip(), feature.strip()


def date(ts: str) -> str:
    return ts[:10]


def imported_only(entry: Entry) -> bool:
    """The entry is known only from knowledge-bank files: memlog never observed it itself."""
    return entry.sources == ["import"]


def last_observed(entry: Entry) -> str:
    """When the entry was last observed: the ``Last observed`` its files stated while it is
    known only from them, else the day memlog last observed it (a promotion moves neither)."""
    if imported_only(entry) and entry.last_observed:
        return entry.last_observed
    return date(entry.updated_at)


def item(line: str) -> str:
    """A metadata line; the lines a value continues on are indented, as the parser reads them."""
    return "- " + line.replace("\n", "\n  ")


def keyed(details: list[str], key: str) -> list[str]:
    """The values of the detail lines named ``key`` (lowercase)."""
    split = (d.partition(":") for d in details)
    return [value.strip() for name, colon, value in split if colon and name.lower() == key]


def unkeyed(details: list[str], *keys: str) -> list[str]:
    """The detail lines named none of ``keys`` (lowercase)."""
    return [d for d in details if d.partition(":")[0].lower() not in keys]


def stored_lines(entry: Entry, every: bool) -> list[str]:
    """The layout's metadata lines with current values, the detail lines it lacks, then the
    count, confidence and ``Last observed`` it lacks (all of them with ``every``)."""
    stated = entry.layout[1:]
    named: set[str] = set()
    lines = [_current(line, entry, named) for line in stated]
    known = {_folded(text) for text in _items(stated)}
    lines += [item(d) for d in unkeyed(entry.details, SOURCE, TAGS) if _folded(d) not in known]
    return lines + _missing(entry, named, every)


def _current(line: str, entry: Entry, named: set[str]) -> str:
    """``line`` with memlog's value when it knows a newer one."""
    key, colon, value = line[2:].partition(":")
    if not (line.startswith("- ") and colon):
        return line
    name = key.strip().lower()
    named.add(name)
    now = _newer(name, value.strip(), entry)
    return line if now is None else f"- {key}: {now}"


def _newer(name: str, stated: str, entry: Entry) -> str | None:
    """The value to write instead of ``stated``; None while ``stated`` is still right."""
    if name == COUNT and _count(stated) != entry.observation_count:
        return str(entry.observation_count)
    if name == CONFIDENCE and _confidence(stated) != entry.confidence:
        return entry.confidence
    if name == OBSERVED and not imported_only(entry) and stated != last_observed(entry):
        return last_observed(entry)
    if name == SOURCE and (more := unnamed_places(entry, stated)):
        return "; ".join([stated, *more])
    return None


def _missing(entry: Entry, named: set[str], every: bool) -> list[str]:
    lines = []
    if OBSERVED not in named and (every or not imported_only(entry)) and last_observed(entry):
        lines.append(f"- Last observed: {last_observed(entry)}")
    if COUNT not in named and (every or entry.observation_count != 1):
        lines.append(f"- Observation count: {entry.observation_count}")
    if CONFIDENCE not in named and (every or entry.confidence != "medium"):
        lines.append(f"- Confidence: {entry.confidence}")
    if SOURCE not in named and (more := unnamed_places(entry, "")):
        lines.append(f"- Source: {'; '.join(more)}")
    return lines


def unnamed_places(entry: Entry, stated: str) -> list[str]:
    """Where the entry was seen that a ``Source`` line saying ``stated`` does not name."""
    said = provenance_label(*split_source(stated))
    places = [p for p in entry.provenance if p and p != said]
    places += keyed(entry.details, SOURCE)
    return [p for p in dict.fromkeys(places) if p not in stated]


def _items(lines: list[str]) -> list[str]:
    """The metadata items of ``lines``, each with the indented lines that continue it."""
    items: list[str] = []
    for line in lines:
        if line.startswith("- "):
            items.append(line[2:])
        elif items and line[:1] in (" ", "\t") and line.strip():
            items[-1] += "\n" + line
    return items


def _folded(text: str) -> str:
    return " ".join(text.split())


def _count(value: str) -> int:
    """A stated count as the parser reads it: a positive number, else 1."""
    return int(value) if _COUNT.fullmatch(value) and int(value) >= 1 else 1


def _confidence(value: str) -> str:
    """A stated confidence as the parser reads it: a known level, else medium."""
    return value.lower() if value.lower() in CONFIDENCES else "medium"
