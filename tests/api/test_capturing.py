"""Writing through the library API: what a writer is told (issue 12, failure 5).

Keywords a user gives are kept as given, with a notice when they were
changed; observing a retired entry records the observation and leaves it
retired unless asked to revive it; an entry's keywords never include the
``[REDACTED]`` marker.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memlog.commands.cli import cli
from memlog.eventlog.codec import SUM_KEY, checksum, encode_line
from memlog.eventlog.events import Labelled, Observed, Retired, content_hash
from memlog.eventlog.log import EventLog
from memlog.projections.fold import fold

TEXT = "Parse CSV headers once and cache the column map by file path."
ENTRY = content_hash(TEXT)


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result


def observe(*extra: str) -> Result:
    return invoke("observe", "--name", "Header cache", "--description", TEXT,
                  "--category", "patterns", *extra)  # fmt: skip


def status(home: Path) -> tuple[str, int]:
    entry = fold(r.event for r in EventLog(home).read()).entries[ENTRY]
    return entry.status, entry.observation_count


def test_a_retired_entry_observed_again_stays_retired_unless_revived(memlog_home: Path) -> None:
    observe()
    invoke("retire", ENTRY[:8], "--reason", "the parser was replaced")
    again = observe()
    assert (
        f"entry {ENTRY} is retired (the parser was replaced): the observation is recorded and "
        "the entry stays retired (memlog observe --revive brings it back)"
    ) in again.stderr
    assert status(memlog_home) == ("retired", 2)
    shown = invoke("show", ENTRY[:8]).stdout
    assert "status: retired" in shown and "observation_count: 2" in shown
    revived = observe("--revive")
    assert f"entry {ENTRY} was retired (the parser was replaced); brought back" in revived.stderr
    assert status(memlog_home) == ("live", 3)
    assert "status: live" in invoke("show", ENTRY[:8]).stdout


def test_lines_written_before_revival_was_a_choice_keep_their_meaning(memlog_home: Path) -> None:
    """An old ``entry.observed`` line has no ``revive``: it brought a retired entry back
    then, and a replay of it must too (nothing stored changes meaning)."""
    log = EventLog(memlog_home)
    log.append([Observed(name="n", description=TEXT, category="patterns", revive=False)])
    log.append([Retired(entry_id=ENTRY, reason="gone")])
    old = Observed(
        name="n",
        description=TEXT,
        category="patterns",
        seq=3,
        id="old",
        ts="2026-01-01T00:00:00.000000Z",
    )
    body = encode_line(old).split(SUM_KEY)[0].replace(b',"stable_id":"","revive":null', b"")
    assert b"revive" not in body
    with open(log.segments()[-1], "ab") as segment:  # as an earlier version wrote it
        segment.write(body + SUM_KEY + checksum(body) + b'"}\n')
    last = [r.event for r in EventLog(memlog_home).read()][-1]
    assert isinstance(last, Observed) and last.revive is None
    assert status(memlog_home) == ("live", 2)


def test_keywords_given_are_kept_and_changes_are_told(memlog_home: Path) -> None:
    done = observe("--keyword", "CSV Headers", "--keyword", "zebrafish")
    assert "recorded 'CSV Headers' as 'csv-headers'" in done.stderr
    assert not [r for r in EventLog(memlog_home).read() if isinstance(r.event, Labelled)]
    entry = fold(r.event for r in EventLog(memlog_home).read()).entries[ENTRY]
    assert entry.keywords == ["csv-headers", "zebrafish"]  # two, one not in the text: kept


@pytest.mark.parametrize("provider", ["local", "auto"])
def test_the_redaction_marker_is_never_a_keyword(
    memlog_home: Path, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLOG_KEYWORD_PROVIDER", provider)
    monkeypatch.setenv("MEMLOG_OLLAMA_BASE_URL", "http://127.0.0.1:9")
    invoke("observe", "--name", "Redacted token", "--category", "anti-patterns",
           "--description", "Never log ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 in CI output.",
           "--reasoning", "The token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 leaked.")  # fmt: skip
    (labelled,) = [r.event for r in EventLog(memlog_home).read() if isinstance(r.event, Labelled)]
    assert labelled.keywords and "redacted" not in labelled.keywords
