"""What a session did with the lessons memlog gave it: applied, contradicted, not used.

The view keeps what each session received (``Session.received``: every
``entry.recalled`` of the session, at its start and at its prompts) and
what was judged already (``Entry.verdicts``).  Two judges say the rest:

* the **extraction** request, which already reads the transcript, also
  lists those lessons (``section``, ``schema``) and its answer judges each
  one with a short quote of evidence (``judged``): no request of its own;
* a **local estimate** (``estimate``), with extraction off, no provider, a
  session skipped or an answer that left a lesson out: a lesson counts as
  applied when its distinctive terms (its name, description and the lines
  that say what to do, each term weighed by how few of the session's other
  lessons share it) make up at least ``APPLIED_SHARE`` of its weight in
  what the assistant wrote, ran and said after the lesson was given.  It
  only ever says ``applied`` or ``not used``, and its evidence says it is
  an estimate.

Each judgment is one ``entry.influenced`` event; the fold keeps, per session,
the agent's own word over the extraction's over the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from memlog.capture.extraction.records import (
    Block,
    Line,
    active_path,
    decoded_lines,
    is_prompt,
    kept,
    read_complete,
)
from memlog.capture.extraction.transcript import Turn, clean
from memlog.eventlog.bounds import utc_moment
from memlog.eventlog.events import Influenced
from memlog.projections.fold import Entry, Session
from memlog.projections.terms import terms
from memlog.vocabulary import PROVENANCE_KEYS, VERDICTS, InfluenceSource

#: the share of a lesson's weighed terms the session's actions must hold for the local
#: estimate to say ``applied`` (chosen across the labelled sessions, one left out at a
#: time: ``benchmarks/bench_influence.py``)
APPLIED_SHARE = 0.3
#: characters of evidence kept
EVIDENCE_CHARS = 200
#: characters of a lesson's text the extraction request shows
LESSON_CHARS = 240
#: metadata lines that tell a lesson's story, not what to do
_STORY_KEYS = frozenset({"cost", "root cause"}) | PROVENANCE_KEYS
#: characters of one tool input the estimate reads (a file written whole can be long)
_INPUT_CHARS = 20_000


class Given(NamedTuple):
    """A lesson a session received: the entry, and when (``trigger``, time)."""

    entry: Entry
    trigger: str
    at: str


def received(session: Session, entries: dict[str, Entry]) -> list[Given]:
    """The lessons ``session`` received, in order, that ``entries`` (by id) hold."""
    found = []
    for line in session.received:
        entry_id, trigger, at = (line.split(" ", 2) + ["", ""])[:3]
        if entry_id in entries:
            found.append(Given(entries[entry_id], trigger, at))
    return found


def to_judge(given: Sequence[Given], session_id: str, source: InfluenceSource) -> list[Given]:
    """The lessons a judge of ``source`` may still say something about: those without a
    judgment of a higher source, or of the same source that found them applied."""
    rank = {"local": 0, "extraction": 1, "agent": 2}
    wanted = []
    for lesson in given:
        held = lesson.entry.verdicts.get(session_id, "")
        verdict, _, by = held.partition("/")
        if not held or rank[by] < rank[source] or (by == source and verdict != "applied"):
            wanted.append(lesson)
    return wanted


def first_turn(at: str, times: Sequence[str]) -> int:
    """The first turn (of turns whose prompts were written at ``times``) a lesson given at
    ``at`` can speak to: the turn whose prompt it came with (the last one written before
    it), or the first."""
    given = utc_moment(at)
    if given is None:
        return 0
    index = 0
    for number, when in enumerate(times):
        moment = utc_moment(when)
        if moment is not None and moment <= given:
            index = number
    return index


# -- the extraction request -----------------------------------------------------------------


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def section(given: Sequence[Given], turns: Sequence[Turn]) -> str:
    """The part of the extraction prompt that lists the lessons to judge ("" for none)."""
    if not given:
        return ""
    times = [t.at for t in turns]
    lines = []
    for number, lesson in enumerate(given, 1):
        turn = first_turn(lesson.at, times) + 1
        when = "at the start" if lesson.trigger != "prompt" else f"with turn {turn}"
        text = _short(f"{lesson.entry.name}: {lesson.entry.description}", LESSON_CHARS)
        lines.append(f"[{number}] (given {when}) {text}")
    return (
        "\n\nLessons memlog gave this session. For each, say what the conversation after it "
        "was given did with it: applied (did what it says), contradicted (did the opposite, "
        "or found it wrong here) or not used; quote at most 200 characters of the "
        "conversation as evidence (empty when not used):\n" + "\n".join(lines)
    )


def schema() -> dict[str, Any]:
    """The answer's ``lessons`` property."""
    item = {
        "lesson": {"type": "integer"},
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "evidence": {"type": "string"},
    }
    shape = {"type": "object", "properties": item, "required": list(item),
             "additionalProperties": False}  # fmt: skip
    return {"type": "array", "items": shape}


class _Judgment(msgspec.Struct, forbid_unknown_fields=True):
    lesson: int
    verdict: str
    evidence: str = ""


class Invalid(Exception):
    """A judgment that breaks the rules (an unknown lesson, one judged twice)."""


_JUDGMENTS = msgspec.json.Decoder(list[_Judgment])


def judged(data: Any, given: Sequence[Given], session_id: str) -> list[Influenced]:
    """The events of the answer's ``lessons`` (validated; evidence cleaned and cut)."""
    raw = data.get("lessons", []) if isinstance(data, dict) else []
    try:
        items = msgspec.convert(raw, list[_Judgment])
    except msgspec.ValidationError as exc:
        raise Invalid(f"{exc} - in `$.lessons`") from None
    seen: set[int] = set()
    events = []
    for item in items:
        if not 1 <= item.lesson <= len(given) or item.lesson in seen:
            raise Invalid(f"lesson {item.lesson} is unknown or judged twice")
        if item.verdict not in VERDICTS:
            raise Invalid(f"verdict {item.verdict!r} of lesson {item.lesson}")
        seen.add(item.lesson)
        evidence = _short(clean(item.evidence), EVIDENCE_CHARS)
        events.append(_event(given[item.lesson - 1], session_id, item.verdict, evidence,
                             "extraction"))  # fmt: skip
    return events


def _event(
    lesson: Given, session_id: str, verdict: str, evidence: str, source: InfluenceSource
) -> Influenced:
    return Influenced(
        entry_id=lesson.entry.id, session_id=session_id, verdict=verdict,  # type: ignore[arg-type]
        evidence=evidence, source=source,
    )  # fmt: skip


# -- the local estimate ---------------------------------------------------------------------


class Action(NamedTuple):
    """Something the assistant wrote, ran or said, in which turn."""

    turn: int
    text: str


def actions(path: Path, offset: int = 0) -> tuple[list[Action], list[str]]:
    """What the assistant did in the transcript at ``path`` from byte ``offset``: its
    words and every tool call's input (in full, up to a bound), with the turn each
    belongs to; and the time each turn's prompt was written."""
    data, _ = read_complete(path, offset)
    lines = active_path([ln for ln in decoded_lines(data) if kept(ln)])
    found: list[Action] = []
    times: list[str] = []
    for line in lines:
        if line.type == "user" and is_prompt(line):
            times.append(line.timestamp)
        elif line.type == "assistant" and line.message is not None:
            turn = max(len(times) - 1, 0)
            found += [Action(turn, text) for text in _said(line)]
    return found, times


def _said(line: Line) -> Iterator[str]:
    content = line.message.content if line.message is not None else ""
    blocks = [content] if isinstance(content, str) else content
    for block in blocks:
        if isinstance(block, str):
            yield block
        elif isinstance(block, Block) and block.type == "text":
            yield block.text
        elif isinstance(block, Block) and block.type == "tool_use":
            yield " ".join(_strings(msgspec.json.decode(block.input)))[:_INPUT_CHARS]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def lesson_text(entry: Entry) -> str:
    """What a lesson says to do: its name, description and the metadata lines that are
    neither provenance nor its story."""
    lines = [d for d in entry.details if d.partition(":")[0].strip().lower() not in _STORY_KEYS]
    return "\n".join([entry.name, entry.description, *lines])


def weights(given: Sequence[Given]) -> list[dict[str, float]]:
    """Each lesson's terms, weighed by how few of the session's lessons hold them
    (``log((n + 1) / df)``)."""
    sets = [set(terms(lesson_text(g.entry))) for g in given]
    count = len(sets)
    df: dict[str, int] = {}
    for found in sets:
        for term in found:
            df[term] = df.get(term, 0) + 1
    return [{t: math.log((count + 1) / df[t]) for t in found} for found in sets]


def share(weighed: dict[str, float], seen: set[str]) -> float:
    """The share of a lesson's weight that the session's terms ``seen`` hold."""
    total = sum(weighed.values())
    return sum(w for t, w in weighed.items() if t in seen) / total if total > 0 else 0.0


def estimate(
    given: Sequence[Given], done: Sequence[Action], times: Sequence[str], session_id: str,
    threshold: float = APPLIED_SHARE,
) -> list[Influenced]:  # fmt: skip
    """The local estimate of each lesson: applied when the assistant's actions after it
    was given hold ``threshold`` of its weighed terms, else not used."""
    events = []
    for lesson, weighed in zip(given, weights(given), strict=True):
        start = first_turn(lesson.at, times)
        after = [a.text for a in done if a.turn >= start]
        found = share(weighed, set(terms("\n".join(after))))
        if found >= threshold:
            quote = _evidence(after, weighed)
            evidence = _short(f"estimate ({found:.2f} of its terms): {quote}", EVIDENCE_CHARS)
            events.append(_event(lesson, session_id, "applied", evidence, "local"))
        else:
            evidence = f"estimate ({found:.2f} of its terms)"
            events.append(_event(lesson, session_id, "not used", evidence, "local"))
    return events


def scores(given: Sequence[Given], done: Sequence[Action], times: Sequence[str]) -> list[float]:
    """The share of each lesson's weighed terms the actions after it hold (``estimate``'s
    measure, for the benchmark)."""
    found = []
    for lesson, weighed in zip(given, weights(given), strict=True):
        start = first_turn(lesson.at, times)
        after = "\n".join(a.text for a in done if a.turn >= start)
        found.append(share(weighed, set(terms(after))))
    return found


def _evidence(texts: Iterable[str], weighed: dict[str, float]) -> str:
    """The line of ``texts`` that holds most of the lesson's weight, cleaned."""
    best, best_weight = "", 0.0
    for text in texts:
        for line in text.splitlines():
            weight = sum(weighed.get(t, 0.0) for t in set(terms(line)))
            if weight > best_weight:
                best, best_weight = line, weight
    return clean(best.strip())
