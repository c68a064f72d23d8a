"""Event schemas, the line codec, damage detection and secret redaction."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
import msgspec.inspect as mi
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlog.commands.cli import cli
from memlog.eventlog import reader as log_module
from memlog.eventlog.codec import SUM_KEY, BadLine, checksum, decode_line, encode_line
from memlog.eventlog.events import (
    EVENT_TYPES,
    EventBase,
    Labelled,
    Observed,
    Promoted,
    Recalled,
    Reembedded,
    Retired,
    Superseded,
    Writer,
    content_hash,
)
from memlog.eventlog.log import Damage, EventLog
from memlog.eventlog.secrets import REDACTED
from memlog.eventlog.vectors import quantise
from memlog.eventlog.verify import verify_log
from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view import queries, store
from memlog.projections.sqlite_view.reading import load_matrix
from memlog.vocabulary import Space

# -- strategies built from the schemas themselves ----------------------------------

#: any character JSON can carry as UTF-8 (lone surrogates cannot be encoded at all)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def strategy_for(kind: mi.Type) -> st.SearchStrategy[Any]:
    """A strategy for every value ``kind`` admits (the types events use)."""
    match kind:
        case mi.StrType(pattern=str(pattern)):
            return st.from_regex(pattern, fullmatch=True)
        case mi.StrType(min_length=low):
            return st.text(st.characters(exclude_categories=("Cs",)), min_size=low or 0)
        case mi.IntType(ge=int(low), le=int(high)):
            return st.integers(min_value=low, max_value=high)
        case mi.IntType(gt=None):
            return INT64
        case mi.IntType(gt=int(low)):
            return st.integers(min_value=low + 1, max_value=2**63 - 1)
        case mi.BytesType():
            return st.binary(max_size=256)
        case mi.FloatType():
            return st.floats(allow_nan=False, allow_infinity=False)
        case mi.LiteralType(values=values):
            return st.sampled_from(values)
        case mi.VarTupleType(item_type=item):
            return st.lists(strategy_for(item), max_size=4).map(tuple)
        case mi.UnionType(types=types):
            return st.one_of(*(strategy_for(t) for t in types))
        case mi.NoneType():
            return st.none()
        case mi.BoolType():
            return st.booleans()
        case mi.StructType(cls=cls):
            return struct_strategy(cls)
    raise AssertionError(f"no strategy for {kind!r}")


def struct_strategy(cls: type[msgspec.Struct]) -> st.SearchStrategy[Any]:
    """Every field of ``cls`` drawn, defaulted ones included (a vector as long as its
    dimensions and encoding say)."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    fields = {f.name: strategy_for(f.type) for f in info.fields}
    if issubclass(cls, EventBase):  # the log reads times of 1970-9000 only (or none)
        fields["ts"] = st.one_of(st.just(""), TIMES)
    if cls is Reembedded:
        fields["dimensions"] = st.integers(min_value=1, max_value=64)
        fields.pop("vector")
        return st.fixed_dictionaries(fields).flatmap(
            lambda kwargs: st.binary(
                min_size=(size := 4 * kwargs["dimensions"] if kwargs["encoding"] == "f32"
                          else 4 + kwargs["dimensions"]),
                max_size=size,
            ).map(lambda vector: cls(vector=vector, **kwargs))
        )  # fmt: skip
    return st.fixed_dictionaries(fields).map(lambda kwargs: cls(**kwargs))


TIMES = st.datetimes(datetime(1970, 1, 1), datetime(8999, 12, 31)).map(
    lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
)


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_event_type_round_trips(cls: type[EventBase], data: st.DataObject) -> None:
    event = data.draw(struct_strategy(cls))
    line = encode_line(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    decoded = decode_line(line)
    assert type(decoded) is cls
    assert decoded == event


def test_writer_is_part_of_the_round_trip() -> None:
    event = Retired(entry_id="0" * 16, writer=Writer(tool="memlog/0", pid=7), reason="é\u2028x")
    assert decode_line(encode_line(event)) == event


# -- schema evolution: lines stored by earlier versions ----------------------------

#: ``entry.observed`` exactly as it is written today: fields at their default left out
STORED_TODAY = (
    b'{"type":"entry.observed","seq":1,"id":"01a2001c-52f4-7a3e-9d1b-3c5e8f0a7b21",'
    b'"ts":"2026-11-21T23:47:12.345678Z","writer":{"tool":"memlog/0.1.0",'
    b'"command":"observe","host":"build-host","pid":4242},"name":"Retry flaky network calls",'
    b'"description":"Wrap outbound HTTP calls in a bounded retry with jitter.",'
    b'"category":"patterns","reasoning":"Seen three times in CI.","confidence":"high",'
    b'"keywords":["retry","http"],"references":["net/client.py"],"source":"retro",'
    b'"project":"alpha","feature":"023-memory","sum":"ad0f9768f1a9fb9a"}\n'
)
#: the same event as written with every field spelled out (before defaults were left out)
STORED_BEFORE_COMPACT = (
    b'{"type":"entry.observed","seq":1,"id":"01a2001c-52f4-7a3e-9d1b-3c5e8f0a7b21",'
    b'"ts":"2026-11-21T23:47:12.345678Z","v":1,"writer":{"tool":"memlog/0.1.0",'
    b'"command":"observe","host":"build-host","pid":4242},"redacted":[],"batch_end":0,'
    b'"redactions":[],"name":"Retry flaky network calls",'
    b'"description":"Wrap outbound HTTP calls in a bounded retry with jitter.",'
    b'"category":"patterns","reasoning":"Seen three times in CI.","confidence":"high",'
    b'"keywords":["retry","http"],"references":["net/client.py"],"source":"retro",'
    b'"project":"alpha","feature":"023-memory","count":null,"last_observed":"","origin":"",'
    b'"details":[],"layout":[],"section":"","branch":"","stable_id":"","revive":null,'
    b'"sum":"54c8a00a5d44619c"}\n'
)
#: the same event as written before ``layout`` (an adopted store entry's lines as written)
STORED_BEFORE_LAYOUT = (
    b'{"type":"entry.observed","seq":1,"id":"01a2001c-52f4-7a3e-9d1b-3c5e8f0a7b21",'
    b'"ts":"2026-11-21T23:47:12.345678Z","v":1,"writer":{"tool":"memlog/0.1.0",'
    b'"command":"observe","host":"build-host","pid":4242},"redacted":[],"batch_end":0,'
    b'"redactions":[],"name":"Retry flaky network calls",'
    b'"description":"Wrap outbound HTTP calls in a bounded retry with jitter.",'
    b'"category":"patterns","reasoning":"Seen three times in CI.","confidence":"high",'
    b'"keywords":["retry","http"],"references":["net/client.py"],"source":"retro",'
    b'"project":"alpha","feature":"023-memory","count":null,"last_observed":"","origin":"",'
    b'"details":[],"section":"","branch":"","stable_id":"","revive":null,"sum":"7ae40ae4cc945ba1"}\n'
)
#: its vector as written before ``q8``: little-endian float32 [0.5, −0.25, 0.125, 1.0]
STORED_F32_VECTOR = (
    b'{"type":"entry.reembedded","seq":2,"id":"01a2001c-52f4-7a3e-9d1b-3c5e8f0a7b22",'
    b'"ts":"2026-11-21T23:47:13.000001Z","v":1,"writer":{"tool":"memlog/0.1.0",'
    b'"command":"embed","host":"build-host","pid":4242},"redacted":[],"batch_end":0,'
    b'"redactions":[],"entry_id":"10861e8caed9c4fe","provider":"hashing",'
    b'"model":"blake2b-words","dimensions":4,"vector":"AAAAPwAAgL4AAAA+AACAPw==",'
    b'"sum":"de9473c75c483376"}\n'
)
#: the same event as written with ``section`` and ``branch`` but before redactions were
#: recorded by class (and before ``stable_id`` and ``revive``)
STORED_BEFORE_REDACTIONS = (
    b'{"type":"entry.observed","seq":1,"id":"01a2001c-52f4-7a3e-9d1b-3c5e8f0a7b21",'
    b'"ts":"2026-11-21T23:47:12.345678Z","v":1,"writer":{"tool":"memlog/0.1.0",'
    b'"command":"observe","host":"build-host","pid":4242},"redacted":[],"batch_end":0,'
    b'"name":"Retry flaky network calls",'
    b'"description":"Wrap outbound HTTP calls in a bounded retry with jitter.",'
    b'"category":"patterns","reasoning":"Seen three times in CI.","confidence":"high",'
    b'"keywords":["retry","http"],"references":["net/client.py"],"source":"retro",'
    b'"project":"alpha","feature":"023-memory","count":null,"last_observed":"","origin":"",'
    b'"details":[],"section":"","branch":"","sum":"571dd767e5fc4e1c"}\n'
)
#: the same event as written before ``section``, ``branch`` and the redaction fields
STORED_BEFORE_BRANCH = (
    b'{"type":"entry.observed","seq":1,"id":"01a2001c-52f4-7a3e-9d1b-3c5e8f0a7b21",'
    b'"ts":"2026-11-21T23:47:12.345678Z","v":1,"writer":{"tool":"memlog/0.1.0",'
    b'"command":"observe","host":"build-host","pid":4242},"redacted":[],"batch_end":0,'
    b'"name":"Retry flaky network calls",'
    b'"description":"Wrap outbound HTTP calls in a bounded retry with jitter.",'
    b'"category":"patterns","reasoning":"Seen three times in CI.","confidence":"high",'
    b'"keywords":["retry","http"],"references":["net/client.py"],"source":"retro",'
    b'"project":"alpha","feature":"023-memory","count":null,"last_observed":"","origin":"",'
    b'"details":[],"sum":"ea790209c48c9199"}\n'
)
#: the same event as written before ``batch_end`` was added to the envelope
STORED_BEFORE_BATCH_END = (
    b'{"type":"entry.observed","seq":1,"id":"01a2001c-52f4-7a3e-9d1b-3c5e8f0a7b21",'
    b'"ts":"2026-11-21T23:47:12.345678Z","v":1,"writer":{"tool":"memlog/0.1.0",'
    b'"command":"observe","host":"build-host","pid":4242},"redacted":[],'
    b'"name":"Retry flaky network calls",'
    b'"description":"Wrap outbound HTTP calls in a bounded retry with jitter.",'
    b'"category":"patterns","reasoning":"Seen three times in CI.","confidence":"high",'
    b'"keywords":["retry","http"],"references":["net/client.py"],"source":"retro",'
    b'"project":"alpha","feature":"023-memory","count":null,"last_observed":"","origin":"",'
    b'"details":[],"sum":"8af56c9328ea8178"}\n'
)
#: ... and as the first release wrote it, before ``details`` was added too
STORED_FIRST_RELEASE = (
    b'{"type":"entry.observed","seq":1,"id":"01a2001c-52f4-7a3e-9d1b-3c5e8f0a7b21",'
    b'"ts":"2026-11-21T23:47:12.345678Z","v":1,"writer":{"tool":"memlog/0.1.0",'
    b'"command":"observe","host":"build-host","pid":4242},"redacted":[],'
    b'"name":"Retry flaky network calls",'
    b'"description":"Wrap outbound HTTP calls in a bounded retry with jitter.",'
    b'"category":"patterns","reasoning":"Seen three times in CI.","confidence":"high",'
    b'"keywords":["retry","http"],"references":["net/client.py"],"source":"retro",'
    b'"project":"alpha","feature":"023-memory","count":null,"last_observed":"","origin":"",'
    b'"sum":"6da4f66878cb2e46"}\n'
)
STORED_LINES = {
    "today": STORED_TODAY,
    "before-compact": STORED_BEFORE_COMPACT,
    "before-layout": STORED_BEFORE_LAYOUT,
    "before-branch": STORED_BEFORE_BRANCH,
    "before-redactions": STORED_BEFORE_REDACTIONS,
    "before-batch-end": STORED_BEFORE_BATCH_END,
    "first-release": STORED_FIRST_RELEASE,
}
STORED_EVENT = Observed(
    seq=1,
    id="01a2001c-52f4-7a3e-9d1b-3c5e8f0a7b21",
    ts="2026-11-21T23:47:12.345678Z",
    writer=Writer(tool="memlog/0.1.0", command="observe", host="build-host", pid=4242),
    name="Retry flaky network calls",
    description="Wrap outbound HTTP calls in a bounded retry with jitter.",
    category="patterns",
    reasoning="Seen three times in CI.",
    confidence="high",
    keywords=("retry", "http"),
    references=("net/client.py",),
    source="retro",
    project="alpha",
    feature="023-memory",
)


@pytest.mark.parametrize("version", sorted(STORED_LINES))
def test_stored_lines_still_decode(version: str) -> None:
    event = decode_line(STORED_LINES[version])
    assert event == STORED_EVENT
    assert isinstance(event, Observed) and event.details == () and event.batch_end == 0
    assert event.layout == ()
    assert event.redactions == () and event.stable_id == "" and event.revive is None
    assert event.entry_id == content_hash(STORED_EVENT.description)


def test_the_encoding_of_today_is_stable() -> None:
    assert encode_line(STORED_EVENT) == STORED_TODAY


def test_a_stored_float32_vector_replays_as_the_same_q8_a_new_line_carries(
    memlog_home: Path,
) -> None:
    old = decode_line(STORED_F32_VECTOR)
    assert isinstance(old, Reembedded) and old.encoding == "f32"
    floats = [0.5, -0.25, 0.125, 1.0]
    assert np.frombuffer(old.vector, "<f4").tolist() == floats
    (memlog_home / "events").mkdir(parents=True)
    segment = memlog_home / "events" / "00000000000000000001.jsonl"
    segment.write_bytes(STORED_BEFORE_COMPACT + STORED_F32_VECTOR)
    space = Space("hashing", "blake2b-words", 4)
    assert catch_up(memlog_home, space).applied == 2
    with store.opened(memlog_home / "memory.db", readonly=True) as db:
        found = queries.entries(Home(memlog_home), [old.entry_id])[0].vectors[space.key]
        matrix = load_matrix(db, Home(memlog_home), space)
    assert found.data == quantise(floats)  # the bytes a q8 line of those floats carries
    assert matrix.ids == [old.entry_id]
    assert matrix.vectors[0].tolist() == pytest.approx(floats, abs=1 / 254)
    new = msgspec.structs.replace(old, vector=quantise(floats), encoding="q8")
    assert decode_line(encode_line(new)) == new and b'"encoding":"q8"' in encode_line(new)


def test_stored_old_line_replays_from_a_log(memlog_home: Path) -> None:
    (memlog_home / "events").mkdir(parents=True)
    (memlog_home / "events" / "00000000000000000001.jsonl").write_bytes(STORED_FIRST_RELEASE)
    log = EventLog(memlog_home)
    assert [r.event for r in log.read()] == [STORED_EVENT]
    assert verify_log(log).clean
    (added,) = log.append([Promoted(entry_id=STORED_EVENT.entry_id)])
    assert added.seq == 2


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (STORED_TODAY.replace(b"jitter", b"jittery"), "checksum mismatch"),
        (STORED_TODAY[:-30] + b"\n", "no checksum"),
        (b"{}\n", "no checksum"),
        (b"\n", "no checksum"),
    ],
)
def test_bad_lines_name_what_is_wrong(line: bytes, reason: str) -> None:
    with pytest.raises(BadLine, match=reason):
        decode_line(line)


def test_a_valid_checksum_over_an_invalid_event_is_still_refused() -> None:
    body = STORED_TODAY[: STORED_TODAY.index(SUM_KEY)].replace(b'"patterns"', b'"nonsense"')
    with pytest.raises(BadLine, match=r"invalid event: .*\$\.category"):
        decode_line(body + SUM_KEY + checksum(body) + b'"}\n')


# -- byte-level damage is always detected, never applied ---------------------------


def _original_events() -> list[EventBase]:
    ids = [content_hash(f"entry {i}") for i in range(4)]
    return [
        Observed(name="Short", description="entry 0", category="patterns"),
        Observed(name="Ünïcode ✓", description='entry 1 \u2028 "quoted"', category="facts"),
        Promoted(entry_id=ids[0], reason="seen in two projects"),
        Recalled(ids=(ids[0], ids[1]), query="how to retry"),
        Reembedded(entry_id=ids[1], provider="hashing", model="m", dimensions=4, vector=b"\0" * 16),
        Labelled(entry_id=ids[1], keywords=("a", "b")),
        Observed(name="Long", description="entry 2 " + "words " * 60, category="heuristics"),
        Superseded(entry_id=ids[0], by=ids[2], reason="merged"),
        Retired(entry_id=ids[3], reason="obsolete"),
        Observed(name="Last", description="entry 3", category="anti-patterns"),
        Promoted(entry_id=ids[2]),
        Recalled(ids=(ids[2],)),
    ]


@pytest.fixture(scope="module")
def original_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], list[Any]]:
    """A log of every event type over several segments (one batch among them)."""
    home = tmp_path_factory.mktemp("original")
    log = EventLog(home, segment_bytes=1200)
    events = _original_events()
    log.append(events[:1])
    log.append(events[1:4])  # a batch
    for event in events[4:-2]:
        log.append([event])
    log.append(events[-2:])  # a batch at the very end too
    files = {p.name: p.read_bytes() for p in log.segments()}
    assert len(files) >= 3
    return files, [r.event for r in log.read()]


def _damage(data: bytes, draw: st.DataObject) -> bytes:
    """``data`` with one random byte-level change applied."""
    size = len(data)
    op = draw.draw(st.sampled_from(["flip", "insert", "delete", "truncate", "dup", "glue"]))
    at = draw.draw(st.integers(0, size))  # ``size`` itself: the end of the file
    if op == "insert" or not size:
        extra = draw.draw(st.binary(min_size=1, max_size=40) | st.sampled_from([b"\n", b"}\n"]))
        return data[:at] + extra + data[at:]
    if op == "truncate":
        return data[:at]
    at = min(at, size - 1)
    length = draw.draw(st.integers(1, size - at))
    if op == "flip":
        bit = draw.draw(st.integers(0, 7))
        return data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1 :]
    if op == "delete":
        return data[:at] + data[at + length :]
    if op == "dup":
        where = draw.draw(st.integers(0, size))
        return data[:where] + data[at : at + length] + data[where:]
    cuts = [i for i, b in enumerate(data) if b == ord("\n")] or [at]
    cut = draw.draw(st.sampled_from(cuts))  # glue two lines by dropping a newline
    return data[:cut] + data[cut + 1 :]


def _is_clean_cut(damaged: bytes, original: bytes) -> bool:
    """Whether ``damaged`` is ``original`` cut after a batch: a shorter, valid log."""
    if not original.startswith(damaged) or not damaged.endswith(b"\n"):
        return damaged == b""
    last = decode_line(damaged[:-1].rsplit(b"\n", 1)[-1])
    return last.batch_end <= last.seq


@pytest.fixture
def scratch() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="memlog-damage-"))
    yield folder
    shutil.rmtree(folder)


@settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_damage_is_detected_and_never_applied(
    original_log: tuple[dict[str, bytes], list[Any]], scratch: Path, data: st.DataObject
) -> None:
    files, originals = original_log
    target = data.draw(st.sampled_from(sorted(files)))
    damaged = files[target]
    for _ in range(data.draw(st.integers(1, 3))):
        damaged = _damage(damaged, data)
    home = scratch / f"home-{len(list(scratch.iterdir()))}"
    (home / "events").mkdir(parents=True)
    for name, content in files.items():
        (home / "events" / name).write_bytes(damaged if name == target else content)

    log = EventLog(home)
    reported: list[Damage] = []
    records = list(log.read(on_damage=reported.append, include_torn_tail=True))
    yielded = [r.event for r in records]
    by_id = {e.id: e for e in originals}
    for event in yielded:
        assert by_id.get(event.id) == event, "a damaged line was applied"
    report = verify_log(log)

    chunk = data.draw(st.sampled_from([64, 333, 1000, 2048]))
    with mock.patch.object(log_module, "_READ_CHUNK", chunk):  # small reads find the same
        again: list[Damage] = []
        assert list(log.read(on_damage=again.append, include_torn_tail=True)) == records
        assert again == reported

    if damaged == files[target]:
        assert yielded == originals and report.clean and not reported
    elif target == max(files) and _is_clean_cut(damaged, files[target]):
        # a cut exactly at the end of a batch in the last segment is a valid, shorter log
        assert yielded == originals[: len(yielded)] and report.clean
    else:
        assert not report.clean, f"undetected damage to {target}"


def test_a_tail_without_newline_in_a_middle_segment_is_damage(
    original_log: tuple[dict[str, bytes], list[Any]], memlog_home: Path
) -> None:
    files, originals = original_log
    (memlog_home / "events").mkdir(parents=True)
    first = min(files)
    for name, content in files.items():
        (memlog_home / "events" / name).write_bytes(content + (b"\0" if name == first else b""))
    log = EventLog(memlog_home)
    assert [r.event for r in log.read()] == originals
    report = verify_log(log)
    assert report.damage == [f"{first} byte {len(files[first])}: torn tail (no newline)"]


# -- redaction of secrets ---------------------------------------------------------

SECRETS = {
    "openai": "sk-proj-4fG7hJ9kL2mN5pQ8rS1tU3vW6xY0zA2b",
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "slack": "xoxb-2048-1234567890-AbCdEfGhIjKl",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sIgNaTuRe_abc-123",
    "rsa-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x\nq9Zs==\n"
    "-----END RSA PRIVATE KEY-----",
    "openssh-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "pgp-block": "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0=\n"
    "-----END PGP PRIVATE KEY BLOCK-----",
}


def _in_context(name: str, secret: str) -> str:
    prefix = "Authorization: Bearer " if name == "bearer" else "the key "
    return f"Never paste {prefix}{secret} into a prompt."


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_secret_pattern_is_redacted(memlog_home: Path, name: str) -> None:
    secret = SECRETS[name]
    description = _in_context(name, secret)
    event = Observed(name="Leak", description=description, category="anti-patterns")
    (stored,) = EventLog(memlog_home).append([event])
    expected = description.replace(secret, REDACTED)
    assert stored.description == expected
    assert stored.redacted == ("description",)
    assert stored.entry_id == content_hash(expected) != content_hash(description)
    (read,) = [r.event for r in EventLog(memlog_home).read()]
    assert read == stored
    raw = b"".join(p.read_bytes() for p in EventLog(memlog_home).segments())
    assert secret.encode() not in raw and secret.split("\n")[0].encode() not in raw


def test_every_text_field_is_scanned_and_named(memlog_home: Path) -> None:
    key, token = SECRETS["aws"], SECRETS["github"]
    event = Observed(
        name=f"uses {key}",
        description="harmless",
        category="patterns",
        reasoning=f"found {token}",
        references=("a.py", f"url?t={token}"),
        keywords=("ok",),
    )
    (stored,) = EventLog(memlog_home).append([event])
    assert stored.redacted == ("name", "reasoning", "references")
    assert stored.name == f"uses {REDACTED}" and stored.reasoning == f"found {REDACTED}"
    assert stored.references == ("a.py", f"url?t={REDACTED}")
    assert stored.description == "harmless" and stored.keywords == ("ok",)


def test_text_that_only_looks_close_is_kept(memlog_home: Path) -> None:
    text = "sk-short, AKIA123, ghp_tooShort, xoxb-1, a bearer of news, risk-averse-design"
    (stored,) = EventLog(memlog_home).append(
        [Observed(name="n", description=text, category="facts")]
    )
    assert stored.description == text and stored.redacted == ()


def test_unredacted_log_keeps_the_text(memlog_home: Path) -> None:
    secret = SECRETS["openai"]
    event = Observed(name="n", description=f"key {secret}", category="facts")
    (stored,) = EventLog(memlog_home, redact=False).append([event])
    assert stored.description == f"key {secret}" and stored.redacted == ()


@pytest.mark.parametrize("flag", [[], ["--no-redact"]], ids=["redact", "no-redact"])
def test_observe_redacts_unless_told_not_to(memlog_home: Path, flag: list[str]) -> None:
    secret = SECRETS["slack"]
    description = f"Rotate the token {secret} after use"
    args = ["observe", "--name", "Tokens", "--description", description, "--category", "facts"]
    result = CliRunner().invoke(cli, [*args, *flag])
    assert result.exit_code == 0, result.output
    logged = CliRunner().invoke(cli, ["log", "--type", "entry.observed", "--json"])
    (line,) = logged.stdout.splitlines()
    stored = msgspec.json.decode(line)
    if flag:
        assert stored["description"] == description and stored["redacted"] == []
        assert "redacted" not in result.stdout
    else:
        assert stored["description"] == description.replace(secret, REDACTED)
        assert stored["redacted"] == ["description"]
        assert "(redacted description: slack-token)" in result.stdout
    assert result.stdout.startswith(f"observed {content_hash(stored['description'])} ")
    raw = b"".join(p.read_bytes() for p in EventLog(memlog_home).segments())
    assert (secret.encode() in raw) == bool(flag)
