"""Rewriting the log for a redaction: in place, all or nothing, the log always valid.

The text goes from every line that held it; sequence numbers, ids, times and
batches stay; checksums are computed again; one ``entry.redacted`` event is
appended.  A kill -9 at any point of the switch leaves the log wholly old or
(once the next writer has finished the journal) wholly new, never damaged.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlog.errors import InvalidInput
from memlog.eventlog import rewrite
from memlog.eventlog import segments as seg
from memlog.eventlog.codec import encode_line
from memlog.eventlog.events import (
    Labelled,
    Observed,
    Promoted,
    Recalled,
    Redacted,
    Removal,
    content_hash,
)
from memlog.eventlog.expunge import Target, expunge
from memlog.eventlog.log import EventLog
from memlog.eventlog.verify import verify_log
from memlog.projections.fold import fold
from memlog.tests.eventlog.test_events import STORED_BEFORE_REDACTIONS, STORED_EVENT

SECRET = "Hunter2-staging-77"


def leaky(i: int) -> Observed:
    return Observed(
        name=f"Lesson {i}",
        description=f"Lesson {i}: the staging login is {SECRET} for now.",
        reasoning=f"Found {SECRET} in the runbook." if i % 2 else "Seen in CI.",
        category="patterns",
        keywords=("staging", "hunter2-staging-77"),
    )


def clean(i: int) -> Observed:
    return Observed(name=f"Other {i}", description=f"An ordinary lesson {i}.", category="facts")


def write_log(home: Path, segment_bytes: int = 1500) -> EventLog:
    """Several segments; leaky and clean entries; a batch; events about the entries."""
    log = EventLog(home, segment_bytes=segment_bytes, redact=False)
    for i in range(6):
        log.append([leaky(i), clean(i)] if i % 3 == 0 else [leaky(i)])
        log.append([clean(10 + i)])
    first = leaky(0).entry_id
    log.append([Labelled(entry_id=first, keywords=("staging", "hunter2-staging-77", "login"))])
    log.append([Promoted(entry_id=first, reason="universal")])
    log.append([Recalled(ids=(first,), query=f"why {SECRET}")])
    return log


def log_bytes(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in EventLog(home).segments()}


def test_the_text_goes_and_everything_else_stays(memlog_home: Path) -> None:
    log = write_log(memlog_home)
    before = [r.event for r in log.read()]
    assert len(log.segments()) >= 3
    done = expunge(EventLog(memlog_home), Target(None, SECRET), "a staging password")
    after = [r.event for r in EventLog(memlog_home).read()]
    assert after[-1] == done.event and isinstance(done.event, Redacted)
    assert done.event.seq == before[-1].seq + 1 and done.event.kind == "match"
    assert done.event.reason == "a staging password"
    assert set(done.event.ids) == {leaky(i).entry_id for i in range(6)}
    assert done.removed == (SECRET, "hunter2-staging-77")  # the text, and a label cut from it
    for old, new in zip(before, after, strict=False):  # same events, same places
        assert (new.seq, new.id, new.ts, new.batch_end) == (old.seq, old.id, old.ts, old.batch_end)
        assert type(new) is type(old) and new.entry_ids == old.entry_ids
    raw = b"".join(log_bytes(memlog_home).values())
    assert SECRET.encode() not in raw and b"hunter2-staging-77" not in raw
    assert verify_log(EventLog(memlog_home)).clean
    changed = [n for o, n in zip(before, after, strict=False) if o != n]
    assert all(n.redactions and n.redactions[-1].kind == "match" for n in changed)
    assert len(changed) == done.events == 6 + 1 + 1  # observed (with a keyword), label, recall
    first = next(e for e in after if isinstance(e, Observed))
    assert first.stable_id == leaky(0).entry_id != content_hash(first.description)
    assert "[REDACTED]" in first.description and first.keywords == ("staging",)


def test_the_fold_keeps_every_entry_with_its_history(memlog_home: Path) -> None:
    log = write_log(memlog_home)
    state_before = fold(r.event for r in log.read())
    expunge(EventLog(memlog_home), Target(None, SECRET), "leaked")
    state_after = fold(r.event for r in EventLog(memlog_home).read())
    assert state_after.entries.keys() == state_before.entries.keys()
    entry = state_after.entries[leaky(0).entry_id]
    old = state_before.entries[leaky(0).entry_id]
    assert (entry.observation_count, entry.promoted, entry.recall_count) == (
        old.observation_count, old.promoted, old.recall_count,
    )  # fmt: skip
    assert SECRET not in entry.description and "login" in entry.keywords


def test_one_entry_only(memlog_home: Path) -> None:
    write_log(memlog_home)
    target = leaky(1).entry_id
    done = expunge(EventLog(memlog_home), Target(target, SECRET), "leaked")
    assert done.event.ids == (target,)
    texts = [r.event for r in EventLog(memlog_home).read() if isinstance(r.event, Observed)]
    assert [SECRET in e.description for e in texts if e.entry_id == target] == [False]
    assert sum(SECRET in e.description for e in texts) == 5


def test_secrets_the_rules_find_in_one_entry(memlog_home: Path) -> None:
    log = EventLog(memlog_home, redact=False)
    text = "Deploy with STRIPE_SECRET_KEY=sk_live_51HxQkLm2eZvKYlo2C8p"
    event = Observed(name="Deploy", category="patterns", description=text)
    log.append([event, clean(1)])
    done = expunge(EventLog(memlog_home), Target(event.entry_id, None), "found by the rules")
    assert done.event.kind == "detected" and done.event.ids == (event.entry_id,)
    assert done.event.removed == (Removal(event.seq or 1, "description", 1, "stripe-key"),)
    assert done.removed == ("sk_live_51HxQkLm2eZvKYlo2C8p",)
    with pytest.raises(InvalidInput, match="no secret found in the events of entry"):
        expunge(EventLog(memlog_home), Target(event.entry_id, None), "again")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (Target(None, "nowhere-in-the-log"), "is nowhere in the log; nothing was changed"),
        (Target(None, "ab"), "--match needs at least 4 characters"),
        (Target(None, "[REDACTED]"), "--match needs at least 4 characters"),
        (Target(None, None), "give an entry id, --match TEXT, or both"),
    ],
)
def test_refusals_change_nothing(memlog_home: Path, target: Target, message: str) -> None:
    write_log(memlog_home)
    before = log_bytes(memlog_home)
    with pytest.raises(InvalidInput, match=message):
        expunge(EventLog(memlog_home), target, "why")
    assert log_bytes(memlog_home) == before
    with pytest.raises(InvalidInput, match="--reason is empty"):
        expunge(EventLog(memlog_home), Target(None, SECRET), " ")


def test_a_line_stored_by_an_earlier_version_is_rewritten(memlog_home: Path) -> None:
    (memlog_home / "events").mkdir(parents=True)
    (memlog_home / "events" / seg.segment_name(1)).write_bytes(STORED_BEFORE_REDACTIONS)
    expunge(EventLog(memlog_home), Target(None, "bounded retry"), "not a secret, a test")
    (old, closing) = [r.event for r in EventLog(memlog_home).read()]
    assert isinstance(old, Observed) and old.seq == 1 and old.id == STORED_EVENT.id
    assert old.description == "Wrap outbound HTTP calls in a [REDACTED] with jitter."
    assert old.stable_id == STORED_EVENT.entry_id and isinstance(closing, Redacted)
    assert verify_log(EventLog(memlog_home)).clean


def test_damaged_lines_are_scrubbed_and_stay_damaged(memlog_home: Path) -> None:
    log = write_log(memlog_home)
    path = log.segments()[0]
    data = path.read_bytes()
    torn = encode_line(leaky(99))[:-40] + b"\n"  # a line that lost its checksum
    path.write_bytes(data + torn)
    done = expunge(EventLog(memlog_home), Target(None, SECRET), "leaked")
    assert done.scrubbed == 1
    assert SECRET.encode() not in b"".join(log_bytes(memlog_home).values())
    report = verify_log(EventLog(memlog_home))
    assert len(report.damage) == 1 and not report.sequence  # still damaged, nothing else


def test_a_committed_journal_is_finished_by_the_next_writer(memlog_home: Path) -> None:
    log = write_log(memlog_home)
    segments = log.segments()
    staged = {p: p.read_bytes().replace(SECRET.encode(), b"[gone]") for p in segments[:2]}
    for path, data in staged.items():  # as if killed right after the journal was written
        rewrite.staged_path(path).write_bytes(data)
    names = ",".join(f'"{p.name}"' for p in staged)
    (log.home.events / ".rewrite.journal").write_text(f'{{"segments":[{names}]}}')
    EventLog(memlog_home).append([clean(50)])
    assert not (log.home.events / ".rewrite.journal").exists()
    assert all(p.read_bytes() == d for p, d in staged.items())
    assert not list(log.home.events.glob(f".*{rewrite.STAGED_SUFFIX}"))


# -- kill -9 in the middle of a rewrite ------------------------------------------------------

CHILD = r"""
import os, signal, sys
from pathlib import Path
from memlog.eventlog import rewrite
from memlog.eventlog.expunge import Target, expunge
from memlog.eventlog.log import EventLog

home, step, at = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
calls = {"stage": 0, "replace": 0}

def counting(name, real):
    def call(*args):
        calls[name] += 1
        if name == step and calls[name] == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args)
    return call

rewrite.write_synced = counting("stage", rewrite.write_synced)
os.replace = counting("replace", os.replace)  # the journal's rename, then each segment's
expunge(EventLog(home), Target(None, sys.argv[4]), "killed on the way")
print("finished")
"""


def kill_points(home: Path) -> list[tuple[str, int]]:
    staged = sum(1 for p in EventLog(home).segments() if SECRET.encode() in p.read_bytes())
    tail_extra = 0 if SECRET.encode() in EventLog(home).segments()[-1].read_bytes() else 1
    stages = staged + tail_extra
    # the list of staged files, then each staged segment; the journal's rename, then each one
    return [("stage", i) for i in range(1, stages + 2)] + [
        ("replace", i) for i in range(1, stages + 2)
    ]


@pytest.mark.slow
def test_kill_9_at_every_step_leaves_the_log_old_or_new(tmp_path: Path) -> None:
    template = tmp_path / "template"
    write_log(template, segment_bytes=1200)
    original = log_bytes(template)
    points = kill_points(template)
    assert len(points) >= 6
    for step, at in points:
        home = tmp_path / f"home-{step}-{at}"
        subprocess.run(["cp", "-a", str(template), str(home)], check=True)
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(home), step, str(at), SECRET],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == -signal.SIGKILL, (step, at, done.stdout, done.stderr)
        committed = (home / "events" / ".rewrite.journal").exists()
        if not committed:  # killed before the commit point: the old log, byte for byte
            assert log_bytes(home) == original, (step, at)
        assert verify_log(EventLog(home)).clean  # finishes a committed rewrite first
        assert not (home / "events" / ".rewrite.journal").exists()
        raw = b"".join(log_bytes(home).values())
        events = [r.event for r in EventLog(home).read()]
        redactions = [e for e in events if isinstance(e, Redacted)]
        if committed:  # the whole new log: no text, one redaction event
            assert SECRET.encode() not in raw and len(redactions) == 1, (step, at)
        else:
            assert log_bytes(home) == original and not redactions, (step, at)
        EventLog(home).append([clean(77)])  # the next writer goes on, orphans removed
        assert not list((home / "events").glob(f".*{rewrite.STAGED_SUFFIX}"))
        assert verify_log(EventLog(home)).clean


# -- redaction under concurrent writers ------------------------------------------------------

WRITER = r"""
import os, sys, time
from pathlib import Path
from memlog.eventlog.events import Observed
from memlog.eventlog.log import EventLog

home, tag, ack = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
log = EventLog(home, segment_bytes=4096, redact=False)
fd = os.open(ack, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
n = 0
while True:
    n += 1
    secret = " Hunter2-staging-77" if n % 3 == 0 else ""
    events = [Observed(name=f"{tag}-{n}-{k}", description=f"{tag} {n} {k}{secret}",
                       category="facts") for k in range(1 + n % 2)]
    stored = log.append(events)
    os.write(fd, "".join(f"{e.id}\n" for e in stored).encode())
"""


@pytest.mark.slow
def test_redact_while_writers_append(memlog_home: Path, tmp_path: Path) -> None:
    write_log(memlog_home, segment_bytes=4096)
    acks = [tmp_path / f"ack-{i}" for i in range(3)]
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(memlog_home), f"w{i}", str(ack)])
        for i, ack in enumerate(acks)
    ]
    rounds = 0
    try:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            time.sleep(random.uniform(0.05, 0.3))
            try:
                expunge(EventLog(memlog_home, segment_bytes=4096), Target(None, SECRET), "leak")
                rounds += 1
            except InvalidInput:
                pass  # no new line held it yet
    finally:
        for writer in writers:
            writer.send_signal(signal.SIGKILL)
            writer.wait()
    assert rounds >= 3
    acknowledged = {line for ack in acks for line in ack.read_text().split()}
    report = verify_log(EventLog(memlog_home))
    assert not report.sequence and len(report.damage) <= 1  # a write the kill cut short
    present = {r.event.id for r in EventLog(memlog_home).read()}
    assert acknowledged <= present  # every acknowledged event survived every rewrite
    with contextlib.suppress(InvalidInput):  # the last round may have had them all
        expunge(EventLog(memlog_home, segment_bytes=4096), Target(None, SECRET), "the last")
    assert SECRET.encode() not in b"".join(log_bytes(memlog_home).values())
    seqs = [r.event.seq for r in EventLog(memlog_home).read()]
    assert seqs == sorted(set(seqs))
    assert os.listdir(memlog_home / "events").count(".rewrite.journal") == 0
