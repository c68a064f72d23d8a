"""The log commands on the command line: observe, log, verify, stats."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import msgspec
import pytest
from click.testing import CliRunner, Result

from memlog.commands import cli as cli_module
from memlog.commands.cli import COMMANDS, cli
from memlog.eventlog.codec import decoder, encode_line
from memlog.eventlog.events import (
    Event,
    Labelled,
    Observed,
    Promoted,
    Recalled,
    Retired,
    Writer,
    content_hash,
)
from memlog.eventlog.log import EventLog
from memlog.eventlog.segments import read_quarantine
from memlog.home import Home


def invoke(*args: str, input: str | bytes | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def logged(home: Path) -> list[Event]:
    return [r.event for r in EventLog(home).read()]


def one_error_line(result: Result) -> str:
    """The single line a failing command printed on stderr."""
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def entry(name: str, description: str, category: str = "patterns", **more: object) -> str:
    return json.dumps({"name": name, "description": description, "category": category, **more})


# -- observe ---------------------------------------------------------------------

TWO_LINES = entry("Retry", "Retry with jitter", keywords=["Net Work", "retry"]) + "\n\n"
TWO_LINES += entry("Cache", "Cache the token", "heuristics", confidence="high") + "\n"
BAD_SECOND_LINE = entry("Ok", "Fine") + "\n" + entry("Bad", "Wrong category", "tips") + "\n"


def _by_argument(tmp_path: Path) -> tuple[list[str], str | None]:
    args = ["--name", "Retry", "--description", "Retry with jitter", "--category", "patterns"]
    args += ["--keyword", "Net Work", "--keyword", "retry"]
    return args, None


def _by_file(tmp_path: Path) -> tuple[list[str], str | None]:
    path = tmp_path / "entries.jsonl"
    path.write_text(TWO_LINES)
    return ["--from", str(path)], None


def _by_stdin(tmp_path: Path) -> tuple[list[str], str | None]:
    return ["--from", "-"], TWO_LINES


SOURCES: dict[str, Callable[[Path], tuple[list[str], str | None]]] = {
    "argument": _by_argument,
    "file": _by_file,
    "stdin": _by_stdin,
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_observe_from_every_input(memlog_home: Path, tmp_path: Path, source: str) -> None:
    args, stdin = SOURCES[source](tmp_path)
    result = invoke("observe", *args, "--project", "alpha", input=stdin)
    assert result.exit_code == 0, result.output
    observed = [e for e in logged(memlog_home) if isinstance(e, Observed)]
    assert observed[0].name == "Retry" and observed[0].keywords == ("net-work", "retry")
    assert observed[0].project == "alpha" and observed[0].writer is not None
    assert observed[0].writer.command == "observe"
    eid = content_hash("Retry with jitter")
    assert result.stdout.splitlines()[0].startswith(f"observed {eid}  Retry  [seq 1]")
    if source != "argument":
        assert [e.name for e in observed] == ["Retry", "Cache"]
        assert observed[1].confidence == "high" and observed[1].category == "heuristics"
        assert [e.seq for e in observed] == [1, 2]  # one batch, then the vectors


def test_observe_json_array_and_json_output(memlog_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "entries.json"
    path.write_text("[" + entry("A", "First") + ", " + entry("B", "Second", "facts") + "]")
    result = invoke("observe", "--from", str(path), "--json")
    assert result.exit_code == 0, result.output
    printed = msgspec.json.decode(result.stdout)
    assert [p["name"] for p in printed] == ["A", "B"]
    assert [p["seq"] for p in printed] == [1, 2]


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_invalid_line_names_line_and_field_and_appends_nothing(
    memlog_home: Path, tmp_path: Path, source: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(BAD_SECOND_LINE)
    target, stdin = (str(path), None) if source == "file" else ("-", BAD_SECOND_LINE)
    result = invoke("observe", "--from", target, input=stdin)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "line 2" in line and "$.category" in line and "tips" in line
    assert logged(memlog_home) == []


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (entry("A", "B", bogus=1) + "\n", ["line 1", "unknown field `bogus`"]),
        (entry("A", "   ") + "\n", ["line 1", "description is empty", "$.description"]),
        (entry("A", "B")[:-1] + "\n", ["line 1", "malformed JSON"]),
        ('{"name": "A", "category": "facts"}\n', ["line 1", "missing required field"]),
        ('{"name": 3, "description": "B", "category": "facts"}', ["$.name", "Expected `str`"]),
        ("[" + entry("A", "B") + "," + entry("C", "D", "x") + "]", ["$[1].category"]),
        ("\n  \n", ["no entries"]),
    ],
    ids=["unknown-field", "empty", "malformed", "missing", "type", "array", "none"],
)
def test_invalid_json_input_is_refused(
    memlog_home: Path, content: str, expected: list[str]
) -> None:
    result = invoke("observe", "--from", "-", input=content)
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    for part in expected:
        assert part in line
    assert not (memlog_home / "events").exists() or logged(memlog_home) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--name", "A", "--description", "B", "--from", "-"], "--from cannot be combined"),
        (["--category", "facts", "--from", "-"], "--from cannot be combined"),
        (["--name", "A"], "missing --description, --category"),
        ([], "missing --name, --description, --category"),
        (["--name", "A", "--description", "B", "--category", "tips"], "'tips' is not one of"),
        (["--name", " ", "--description", "B", "--category", "facts"], "name is empty"),
    ],
    ids=["json-and-name", "json-and-category", "missing", "nothing", "choice", "blank"],
)
def test_invalid_options_are_refused(memlog_home: Path, args: list[str], expected: str) -> None:
    result = invoke("observe", *args, input="")
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert not (memlog_home / "events").exists()


def test_non_utf8_argument_is_refused_without_a_traceback(memlog_home: Path) -> None:
    args = [b"observe", b"--name", b"bad \xff name", b"--description", b"d", b"--category"]
    result = subprocess.run(
        [sys.executable, "-m", "memlog", *args, b"facts"], capture_output=True, timeout=60
    )
    assert result.returncode == 2
    stderr = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr and len(stderr.splitlines()) == 1, stderr
    assert "$.name" in stderr and "UTF-8" in stderr
    assert not (memlog_home / "events").exists()


def test_an_unexpected_error_is_one_line_and_a_traceback_in_the_error_log(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(self: EventLog, events: object) -> None:
        raise RuntimeError("disk gremlin")

    monkeypatch.setattr(EventLog, "append", boom)
    result = invoke("observe", "--name", "A", "--description", "B", "--category", "facts")
    assert result.exit_code == 1
    line = one_error_line(result)
    assert line.startswith("Error: internal error: RuntimeError: disk gremlin")
    assert str(memlog_home / "errors.log") in line
    details = (memlog_home / "errors.log").read_text()
    assert "Traceback (most recent call last)" in details and "in boom" in details


def test_an_unexpected_error_with_unencodable_text_is_still_one_line(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(self: EventLog, events: object) -> None:
        raise RuntimeError("odd \udcff bytes")

    monkeypatch.setattr(EventLog, "append", boom)
    monkeypatch.setattr(sys, "argv", ["memlog", "observe", "\udcff"])
    result = invoke("observe", "--name", "A", "--description", "B", "--category", "facts")
    assert result.exit_code == 1
    assert "internal error: RuntimeError" in one_error_line(result)
    assert "odd \\udcff bytes" in (memlog_home / "errors.log").read_text()


# -- log -------------------------------------------------------------------------

A, B = content_hash("alpha entry"), content_hash("beta entry")
WRITER = Writer(tool="memlog/test", command="seed", host="h", pid=1)


def _seeded() -> list[Event]:
    """Six events, one a day from 2026-03-01, written as a log would hold them."""
    events: list[Event] = [
        Observed(name="Alpha", description="alpha entry", category="patterns"),
        Observed(name="Beta", description="beta entry", category="facts"),
        Promoted(entry_id=A, reason="universal"),
        Recalled(ids=(A, B), query="q"),
        Labelled(entry_id=B, keywords=("x",)),
        Retired(entry_id=B, reason="obsolete"),
    ]
    return [
        msgspec.structs.replace(
            e, seq=i, id=f"id-{i}", ts=f"2026-03-0{i}T12:00:00.000000Z", writer=WRITER
        )
        for i, e in enumerate(events, 1)
    ]


@pytest.fixture
def seeded(memlog_home: Path) -> list[Event]:
    events = _seeded()
    (memlog_home / "events").mkdir(parents=True)
    segment = memlog_home / "events" / "00000000000000000001.jsonl"
    segment.write_bytes(b"".join(encode_line(e) for e in events))
    return events


def seqs(result: Result) -> list[int]:
    assert result.exit_code == 0, result.output
    return [int(line.split()[0]) for line in result.stdout.splitlines()]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], [1, 2, 3, 4, 5, 6]),
        (["--type", "entry.observed"], [1, 2]),
        (["--type", "entry.promoted", "--type", "entry.retired"], [3, 6]),
        (["--entry", A[:6]], [1, 3, 4]),
        (["--entry", B], [2, 4, 5, 6]),
        (["--entry", "ffffffffff"], []),
        (["--since", "3"], [3, 4, 5, 6]),
        (["--until", "2"], [1, 2]),
        (["--since", "2", "--until", "4"], [2, 3, 4]),
        (["--since", "2026-03-03T12:00:00Z"], [3, 4, 5, 6]),
        (["--since", "2026-03-03T12:00:00.000001Z"], [4, 5, 6]),
        (["--until", "2026-03-02T12:00:00"], [1, 2]),  # naive is UTC
        (["--since", "2026-03-02", "--until", "2026-03-04T14:00:00+02:00"], [2, 3, 4]),
        (["--limit", "2"], [5, 6]),
        (["--limit", "0"], []),
        (["--type", "entry.observed", "--limit", "1"], [2]),
        (["--entry", B[:4], "--since", "5", "--limit", "5"], [5, 6]),
    ],
)
def test_log_filters(seeded: list[Event], args: list[str], expected: list[int]) -> None:
    assert seqs(invoke("log", *args)) == expected


def test_log_lines_show_type_ids_and_summary(seeded: list[Event]) -> None:
    lines = invoke("log").stdout.splitlines()
    assert lines[0].split()[:4] == ["1", "2026-03-01T12:00:00.000000Z", "entry.observed", A]
    assert lines[0].endswith("patterns: Alpha")
    assert lines[3].split()[3] == f"{A},{B}" and lines[3].endswith("q")
    assert lines[5].endswith("obsolete")


def test_log_json_lines_parse_back_to_the_events(seeded: list[Event]) -> None:
    result = invoke("log", "--json")
    assert result.exit_code == 0
    back = [msgspec.json.decode(line, type=Event) for line in result.stdout.splitlines()]
    assert back == seeded
    assert [decoder().decode(line) for line in result.stdout.encode().splitlines()] == seeded


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--since", "yesterday"], "'yesterday' is neither a sequence number nor an ISO time"),
        (["--until", "2026-13-01"], "neither a sequence number nor an ISO time"),
        (["--type", "entry.eaten"], "'entry.eaten' is not one of"),
        (["--limit", "-1"], "-1 is not in the range x>=0"),
    ],
)
def test_log_refuses_bad_filters(seeded: list[Event], args: list[str], expected: str) -> None:
    result = invoke("log", *args)
    assert result.exit_code == 2
    assert expected in result.stderr and "Traceback" not in result.output


def test_log_of_an_empty_home_says_so(memlog_home: Path) -> None:
    result = invoke("log")
    assert result.exit_code == 0 and result.stdout.startswith("no memories yet: memlog import")
    assert not memlog_home.exists()  # reading creates nothing
    as_json = invoke("log", "--json")
    assert as_json.stdout == "" and as_json.stderr.startswith("memlog: no memories yet")


# -- verify ----------------------------------------------------------------------


def _damage_line(home: Path, number: int) -> None:
    (segment,) = (home / "events").glob("*.jsonl")
    lines = segment.read_bytes().splitlines(keepends=True)
    lines[number - 1] = lines[number - 1].replace(b'"ts":"2026', b'"ts":"2027')
    segment.write_bytes(b"".join(lines))


def test_verify_clean_log(seeded: list[Event]) -> None:
    result = invoke("verify")
    assert result.exit_code == 0, result.output
    assert "log: 6 events in 1 segment, last seq 6" in result.stdout
    assert "log: clean" in result.stdout
    assert "views: match a rebuild from the log" in result.stdout


def test_verify_fails_on_damage_and_repair_moves_the_line(
    seeded: list[Event], memlog_home: Path
) -> None:
    _damage_line(memlog_home, 3)
    result = invoke("verify", "--log-only")
    assert result.exit_code == 1
    assert "problem: 00000000000000000001.jsonl line 3 (seq 3): checksum mismatch" in result.stderr
    assert "gap" not in result.stderr  # the damaged line is the missing sequence
    assert "log: 1 problems" in result.stdout

    repaired = invoke("verify", "--repair", "--log-only")
    assert repaired.exit_code == 0, repaired.output
    moved = repaired.stdout.splitlines()[0]
    assert moved.startswith("moved 00000000000000000001.jsonl line 3 (seq 3): checksum mismatch")
    assert "log: 1 event lost to damage (seq 3); their bytes are in quarantine.jsonl" in (
        repaired.stdout
    )
    assert "log: clean" in repaired.stdout
    (record,) = [r for r in read_quarantine(Home(memlog_home)) if r.size]
    assert record.seqs == (3,) and record.line == 3
    assert invoke("verify").exit_code == 0  # and stays clean, views included
    assert seqs(invoke("log")) == [1, 2, 4, 5, 6]


def test_verify_json_report(seeded: list[Event], memlog_home: Path) -> None:
    _damage_line(memlog_home, 6)
    result = invoke("verify", "--json", "--log-only")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["clean"] is False and report["moved"] == [] and report["views"] is None
    assert report["log"]["events"] == 5 and len(report["log"]["damage"]) == 1
    assert report["log"]["by_type"]["entry.observed"] == 2


def test_verify_reports_a_torn_tail(seeded: list[Event], memlog_home: Path) -> None:
    with open(memlog_home / "events" / "00000000000000000001.jsonl", "ab") as handle:
        handle.write(b'{"type":"entry.obs')
    result = invoke("verify", "--log-only")
    assert result.exit_code == 1 and "torn tail (no newline)" in result.stderr
    assert invoke("verify", "--repair", "--log-only").exit_code == 0


def test_verify_of_an_empty_home(memlog_home: Path) -> None:
    result = invoke("verify", "--log-only")
    assert result.exit_code == 0 and result.stdout.startswith("no memories yet: ")
    report = json.loads(invoke("verify", "--json").stdout)
    assert report["clean"] and report["log"]["events"] == 0


# -- stats -----------------------------------------------------------------------


def test_stats_json_counts_by_event_type(seeded: list[Event], memlog_home: Path) -> None:
    result = invoke("stats", "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["events"] == 6 and figures["segments"] == 1
    assert figures["by_type"] == {
        "entry.labelled": 1,
        "entry.observed": 2,
        "entry.promoted": 1,
        "entry.recalled": 1,
        "entry.retired": 1,
    }
    assert figures["damaged_lines"] == 0 and figures["home"] == str(memlog_home)


def test_stats_counts_damaged_lines_apart(seeded: list[Event], memlog_home: Path) -> None:
    _damage_line(memlog_home, 2)
    figures = json.loads(invoke("stats", "--json").stdout)
    assert figures["events"] == 5 and figures["damaged_lines"] == 1
    assert figures["by_type"]["entry.observed"] == 1
    text = invoke("stats")
    assert text.exit_code == 0
    assert "events: 5 in 1 segments" in text.stdout and "  entry.observed: 1" in text.stdout
    assert "damaged lines: 1 (run memlog verify)" in text.stdout


def test_stats_of_observations(memlog_home: Path) -> None:
    for i in range(3):
        invoke("observe", "--name", f"N{i}", "--description", f"D{i}", "--category", "facts")
    figures = json.loads(invoke("stats", "--json").stdout)
    assert figures["by_type"]["entry.observed"] == 3
    assert figures["events"] == sum(figures["by_type"].values())


# -- every command -----------------------------------------------------------------


def _all_commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    found = []
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        assert command is not None, name
        found.append((name, command))
        if isinstance(command, click.Group):
            sub = click.Context(command)
            found += [(f"{name} {s}", command.get_command(sub, s)) for s in command.commands]
    return found  # type: ignore[return-value]


def test_every_command_has_help_text() -> None:
    assert {"observe", "log", "verify", "stats"} <= set(COMMANDS)
    for name, command in _all_commands():
        assert command.help and command.help.strip(), f"{name} has no help text"
        result = invoke(*name.split(), "--help")
        assert result.exit_code == 0, (name, result.output)
        assert result.stdout.startswith("Usage: ") and command.help.split("\n")[0] in (
            " ".join(result.stdout.split())
        )
    overview = invoke("--help")
    assert overview.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in overview.stdout


def test_unknown_command_is_a_usage_error() -> None:
    result = invoke("frobnicate")
    assert result.exit_code == 2 and "No such command 'frobnicate'" in result.stderr


def test_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.startswith("memlog, version ")
    assert cli_module.__version__ in result.stdout
