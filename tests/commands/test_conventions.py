"""The conventions every command follows: -h, --json output, --from input, empty homes,
closed pipes, progress on a terminal, missing paths, shell completion."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from memlog.api.reading import NO_MEMORIES
from memlog.commands import conventions
from memlog.commands.cli import COMMANDS, cli
from memlog.eventlog.events import Observed, Promoted, content_hash
from memlog.eventlog.log import EventLog
from memlog.tests.support import REPO

DEMO = REPO / "examples" / "demo-project"
#: commands that print nothing of their own to format: the hook speaks JSON, the server MCP
NO_OUTPUT = {"hook", "serve-mcp"}


def invoke(*args: str, input: str | bytes | None = None, **kwargs: Any) -> Result:
    kwargs.setdefault("prog_name", "memlog")
    return CliRunner().invoke(cli, list(args), input=input, **kwargs)


def command(name: str) -> click.Command:
    found = cli.get_command(click.Context(cli), name)
    assert found is not None
    return found


def seed(home: Path) -> list[str]:
    events = [
        Observed(name=f"Lesson {i}", description=f"Retry network call {i} with jitter",
                 category="patterns", project="alpha")
        for i in range(3)
    ]  # fmt: skip
    stored = EventLog(home).append(events)
    EventLog(home).append([Promoted(entry_id=stored[0].entry_id, reason="universal")])
    return [e.entry_id for e in stored]


# -- help -------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["-h", "--help"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_explains_itself(name: str, flag: str) -> None:
    result = invoke(name, flag)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Usage: memlog {name}")
    assert (command(name).help or "").strip()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_h_does_not_depend_on_what_ran_first(name: str) -> None:
    """click keeps a command's help option once made: a group first run on its own (as
    tests of the hook do) made it without -h for every later run through memlog."""
    found = command(name)
    if isinstance(found, click.Group):
        alone = CliRunner().invoke(found, ["-h"], prog_name=f"memlog {name}")
        assert alone.exit_code == 0 and alone.stdout.startswith("Usage:"), alone.output
    assert invoke(name, "-h").exit_code == 0


def test_the_group_and_subcommands_take_h() -> None:
    assert invoke("-h").stdout.startswith("Usage: memlog")
    assert invoke("hook", "session-start", "-h").stdout.startswith("Usage: memlog hook session")


# -- --json means output -------------------------------------------------------------------------


def leaves(name: str) -> list[tuple[str, click.Command]]:
    """The command ``name``, or each subcommand of the group ``name``."""
    found = command(name)
    if isinstance(found, click.Group):
        return [(f"{name} {sub}", found.commands[sub]) for sub in sorted(found.commands)]
    return [(name, found)]


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - NO_OUTPUT))
def test_every_command_that_prints_has_a_json_flag(name: str) -> None:
    for full, leaf in leaves(name):
        flags = [p for p in leaf.params if "--json" in p.opts]
        assert len(flags) == 1, f"memlog {full} has no --json"
        assert isinstance(flags[0], click.Option) and flags[0].is_flag  # output, never a file


def json_out(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_output_of_writing_commands(memlog_home: Path, tmp_path: Path) -> None:
    observed = json_out(invoke("observe", "--name", "A", "--description", "Pin tools",
                               "--category", "patterns", "--json"))  # fmt: skip
    assert observed[0]["name"] == "A" and observed[0]["type"] == "entry.observed"
    imported = json_out(invoke("import", str(DEMO), "--json"))
    assert imported["entries"] == 9 and imported["events"] > 0 and not imported["dry_run"]
    assert json_out(invoke("import", str(DEMO), "--json"))["events"] == 0
    pin = content_hash("Pin tools")
    promoted = json_out(invoke("promote", pin[:8], "--scope", "universal", "--reason", "any code",
                               "--json"))  # fmt: skip
    assert promoted["entries"][0]["scope"] == "universal"
    assert promoted["summary"].startswith("Memory promotion: 1 universal")
    retired = json_out(invoke("retire", pin[:8], "--reason", "old", "--json"))
    assert retired == {"retired": pin, "name": "A", "reason": "old"}
    replayed = json_out(invoke("replay", "--json"))
    assert replayed["live_entries"] == 9 and len(replayed["sqlite_digest"]) == 64
    assert json_out(invoke("catch-up", "--json"))["applied"] == 0
    assert json_out(invoke("reembed", "--json"))["embedded"] == 0


def test_json_output_of_reading_commands(memlog_home: Path) -> None:
    ids = seed(memlog_home)
    assert json_out(invoke("stats", "--json"))["entries"]["live"] == 3
    assert json_out(invoke("show", ids[0][:6], "--json"))["entry"]["id"] == ids[0]
    assert json_out(invoke("verify", "--json"))["clean"] is True
    assert json_out(invoke("search", "network jitter", "--json"))[0]["id"] in ids
    injected = json_out(invoke("inject", str(REPO), "--json"))
    assert {c["id"] for c in injected["chosen"]} <= set(ids) and injected["chosen"]
    listed = json_out(invoke("list", "--json"))
    assert listed["total"] == 3 and {e["id"] for e in listed["entries"]} == set(ids)
    lines = invoke("log", "--json").stdout.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2, 3, 4]


def test_json_output_of_setup_and_doctor(
    memlog_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    planned = json_out(invoke("setup", "--dry-run", "--json"))
    assert {Path(p["path"]).name for p in planned} == {"settings.json", ".claude.json"}
    done = json_out(invoke("setup", "--json"))
    assert done["action"] == "install" and {f["note"] for f in done["files"]} == {"created"}
    report = json_out(invoke("doctor", "--json"))
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["hook"]["status"] == "ok" and "user settings" in checks["hook"]["detail"]
    assert checks["mcp server"]["status"] == "ok"


# -- --from means input; the old --json FILE still works, with a deprecation line -------------

LINE = json.dumps(
    {"name": "Jitter", "description": "Add jitter to retries", "category": "patterns"}
)


@pytest.mark.parametrize("how", ["from-file", "from-stdin", "old-file", "old-stdin", "old-equals"])
def test_input_files_are_from_and_the_old_spelling_still_works(
    memlog_home: Path, tmp_path: Path, how: str
) -> None:
    path = tmp_path / "lessons.jsonl"
    path.write_text(LINE + "\n")
    args = {
        "from-file": ["--from", str(path)],
        "from-stdin": ["--from", "-"],
        "old-file": ["--json", str(path)],
        "old-stdin": ["--json", "-"],
        "old-equals": [f"--json={path}"],
    }[how]
    result = invoke("observe", *args, input=LINE + "\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"observed {content_hash('Add jitter to retries')}")
    deprecated = [ln for ln in result.stderr.splitlines() if "deprecated" in ln]
    assert len(deprecated) == (1 if how.startswith("old") else 0)
    if deprecated:
        assert "--from FILE" in deprecated[0] and "0.3" in deprecated[0]


def test_old_spelling_and_json_output_together(memlog_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "lessons.jsonl"
    path.write_text(LINE + "\n")
    result = invoke("promote", "--json", str(path), "--json", "--scope", "universal")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["entries"][0]["name"] == "Jitter"
    assert "deprecated" in result.stderr


def test_json_before_an_entry_id_is_the_output_flag(memlog_home: Path) -> None:
    ids = seed(memlog_home)
    result = invoke("promote", "--json", ids[1][:8], "--scope", "project", "--reason", "ours")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["entries"][0]["scope"] == "project"
    assert "deprecated" not in result.stderr


def test_the_rewrite_leaves_other_commands_and_values_alone(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("{}")
    observe = command("observe")
    assert conventions.legacy_input(observe, ["--json"]) == (["--json"], False)
    assert conventions.legacy_input(observe, ["--json", "--name", "a"]) == (
        ["--json", "--name", "a"],
        False,
    )
    assert conventions.legacy_input(observe, ["--", "--json", str(path)]) == (
        ["--", "--json", str(path)],
        False,
    )
    assert conventions.legacy_input(command("stats"), ["--json", str(path)])[1] is False


# -- empty homes ------------------------------------------------------------------------------

READERS = [
    ["stats"], ["log"], ["list"], ["search", "anything"], ["verify"], ["inject", str(REPO)],
    ["show", "abc123"],
]  # fmt: skip


@pytest.fixture(params=["missing", "empty"])
def empty_home(request: pytest.FixtureRequest, memlog_home: Path) -> Path:
    if request.param == "empty":
        (memlog_home / "events").mkdir(parents=True)
    return memlog_home


@pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
def test_reading_an_empty_home_says_so_in_one_line(empty_home: Path, args: list[str]) -> None:
    before = sorted(empty_home.rglob("*")) if empty_home.exists() else None
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert result.stdout == NO_MEMORIES + "\n"
    assert result.stderr == ""
    as_json = invoke(*args, "--json")
    assert as_json.exit_code == 0
    assert as_json.stderr == f"memlog: {NO_MEMORIES}\n"
    if args[0] != "log":  # JSON lines: none
        json.loads(as_json.stdout)
    after = sorted(empty_home.rglob("*")) if empty_home.exists() else None
    assert after == before  # reading wrote nothing


def test_doctor_on_an_empty_home(empty_home: Path) -> None:
    result = invoke("doctor")
    assert result.exit_code == 0, result.output
    assert NO_MEMORIES in result.stdout.splitlines()[0]


# -- closed pipes ------------------------------------------------------------------------------


class ClosedPipe(io.TextIOWrapper):
    """A stdout whose reader went away after ``room`` characters (as `| head` does)."""

    def __init__(self, room: int) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8")
        self.room = room

    def write(self, text: str) -> int:
        self.room -= len(text)
        if self.room < 0:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


@contextmanager
def closed_pipe(room: int) -> Iterator[None]:
    runner_isolation = CliRunner.isolation

    @contextmanager
    def isolation(self: CliRunner, *args: Any, **kwargs: Any) -> Iterator[Any]:
        with runner_isolation(self, *args, **kwargs) as streams:
            sys.stdout = ClosedPipe(room)
            yield streams

    CliRunner.isolation = isolation  # type: ignore[method-assign]
    try:
        yield
    finally:
        CliRunner.isolation = runner_isolation  # type: ignore[method-assign]


@pytest.mark.parametrize("args", [["log"], ["list"], ["log", "--json"], ["stats"]])
def test_a_closed_pipe_ends_quietly(memlog_home: Path, args: list[str]) -> None:
    seed(memlog_home)
    with closed_pipe(room=40):
        result = invoke(*args)
    assert result.exit_code == 0
    assert "Error" not in result.stderr and "Broken pipe" not in result.stderr


@pytest.mark.slow
def test_memlog_log_into_head(memlog_home: Path) -> None:
    """A real pipe: `memlog log | head -1` with far more output than the pipe holds."""
    events = [
        Observed(name=f"Lesson {i}", description=f"Lesson number {i}", category="facts")
        for i in range(3000)
    ]
    EventLog(memlog_home).append(events)
    env = {**os.environ, "MEMLOG_HOME": str(memlog_home)}
    pipeline = f"'{sys.executable}' -m memlog log | head -1; echo \"status=${{PIPESTATUS[0]}}\""
    done = subprocess.run(
        ["bash", "-c", pipeline], capture_output=True, text=True, env=env, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.stdout.splitlines()[0].split()[0] == "1"
    assert done.stdout.splitlines()[-1] == "status=0"
    assert done.stderr == ""


# -- progress on a terminal -----------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_only() -> None:
    screen = Terminal()
    meter = conventions.TerminalProgress(screen)
    step = meter("embedding", 4)
    step(2)
    step(2)
    assert "embedding" in screen.getvalue() and "2/4" in screen.getvalue()
    assert screen.getvalue().rstrip().endswith("4/4\x1b[?25h")
    quiet = io.StringIO()
    silent = conventions.TerminalProgress(quiet)
    silent("embedding", 4)(4)
    silent.close()
    assert quiet.getvalue() == ""


def test_import_shows_embedding_progress_on_a_terminal(
    memlog_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    screen = Terminal()
    real = conventions.TerminalProgress
    monkeypatch.setattr(conventions, "TerminalProgress", lambda: real(screen))
    result = invoke("import", str(DEMO))
    assert result.exit_code == 0, result.output
    assert "embedding" in screen.getvalue() and "9/9" in screen.getvalue()
    assert result.stdout.startswith("9 entries in 3 files")


def test_no_progress_when_stderr_is_not_a_terminal(memlog_home: Path) -> None:
    result = invoke("import", str(DEMO))
    assert result.exit_code == 0 and result.stderr == ""


# -- paths that do not exist ------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["inject", "/nonexistent/project"],
        ["inject", "--project-root", "/nonexistent/project"],
        ["import", "/nonexistent/kb"],
        ["observe", "--from", "/nonexistent/lessons.jsonl"],
        ["promote", "--from", "/nonexistent/lessons.jsonl"],
        ["setup", "--project", "--project-root", "/nonexistent/project"],
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_paths_that_do_not_exist_are_errors(memlog_home: Path, args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "does not exist" in result.stderr or "No such file" in result.stderr
    assert not (memlog_home / "events").exists()


# -- shell completion --------------------------------------------------------------------------


def test_shell_completion_script_and_answers() -> None:
    script = invoke(env={"_MEMLOG_COMPLETE": "bash_source"})
    assert script.exit_code == 0 and "_memlog_completion" in script.stdout
    env = {"_MEMLOG_COMPLETE": "bash_complete", "COMP_WORDS": "memlog li", "COMP_CWORD": "1"}
    answered = invoke(env=env)
    assert "plain,list" in answered.stdout.splitlines()
    env = {**env, "COMP_WORDS": "memlog list --cat", "COMP_CWORD": "2"}
    assert "plain,--category" in invoke(env=env).stdout.splitlines()


# -- memlog list --------------------------------------------------------------------------------


def test_list_filters(memlog_home: Path) -> None:
    ids = seed(memlog_home)
    EventLog(memlog_home).append(
        [Observed(name="Other", description="Use a lock file", category="heuristics",
                  project="beta", source="retro")]
    )  # fmt: skip
    assert invoke("retire", ids[2][:8], "--reason", "wrong").exit_code == 0

    def listed(*args: str) -> set[str]:
        return {e["name"] for e in json_out(invoke("list", "--json", *args))["entries"]}

    assert listed() == {"Lesson 0", "Lesson 1", "Other"}
    assert listed("--category", "heuristics") == {"Other"}
    assert listed("--project", "alpha") == {"Lesson 0", "Lesson 1"}
    assert listed("--source", "retro") == {"Other"}
    assert listed("--status", "retired") == {"Lesson 2"}
    assert len(listed("--status", "any")) == 4
    assert listed("--branch", "feature/x") == set()
    EventLog(memlog_home).append(
        [Observed(name="On a branch", description="Run the formatter before commits",
                  category="patterns", source="extraction", section="conventions",
                  project="alpha", branch="feature/x")]
    )  # fmt: skip
    assert listed("--branch", "feature/x") == {"On a branch"}
    assert listed("--branch", "feature/x", "--project", "beta") == set()
    text = invoke("list", "--limit", "1", "--offset", "1")
    assert len(text.stdout.splitlines()) == 1 and text.stderr == "2-2 of 4 entries\n"
