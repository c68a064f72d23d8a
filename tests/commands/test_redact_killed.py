"""A redaction that was started is finished, wherever it was killed.

``memlog redact`` is killed at its Nth rename or Nth fsync (a subprocess that
ends itself there, as SIGKILL would): before its rewrite commits, half way
through switching segments in, while rebuilding the views or cleaning the
backups.  The next writing command (or ``memlog verify``) finishes it before
anything else: no file of the home holds the text afterwards, the views are
a replay of the log, and ``verify`` is never clean while a copy remains.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memlog.home import Home
from memlog.tests.commands.test_redact import (
    LEAKY_ID,
    SECRET,
    holders,
    invoke,
    leaked,
    project,
)

__all__ = ["leaked", "project"]  # the fixtures, used by name

KILLED = """
import os, sys
count, real = [0], os.{call}
def counted(*args, **kwargs):
    count[0] += 1
    if count[0] == {n}:
        os._exit(9)
    return real(*args, **kwargs)
os.{call} = counted
from memlog.__main__ import main
sys.argv = ["memlog", "redact", "--match", {secret!r}, "--reason", "staging password"]
main()
"""


def killed_redaction(home: Path, call: str, n: int) -> int:
    code = KILLED.format(call=call, n=n, secret=SECRET)
    env = {**os.environ, "MEMLOG_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)
    return done.returncode


@pytest.mark.slow
@pytest.mark.parametrize(
    ("call", "n"), [("replace", 1), ("replace", 3), ("replace", 6), ("fsync", 4), ("fsync", 8),
                    ("fsync", 14), ("fsync", 30)],
)  # fmt: skip
@pytest.mark.parametrize("then", ["observe", "verify", "catch-up"])
def test_a_redaction_killed_half_way_is_finished_by_the_next_command(
    leaked: Path, call: str, n: int, then: str
) -> None:
    status = killed_redaction(leaked, call, n)
    if status == 0:
        pytest.skip(f"the redaction made fewer than {n} calls to os.{call}")
    assert status == 9
    started = (leaked / ".redaction.journal").exists() or "entry.redacted" in invoke(
        "log", "--type", "entry.redacted"
    ).stdout
    if not started:  # killed before its journal was written: nothing was done, nor said done
        assert any(name.startswith("events/") for name in holders(leaked))
        return
    if then == "observe":
        invoke("observe", "--name", "After", "--description", "Written after the kill.",
               "--category", "patterns")  # fmt: skip
    elif then == "verify":
        invoke("verify")
    else:
        invoke("catch-up")
    assert holders(leaked) == [] and holders(leaked, SECRET.lower()) == []
    verified = invoke("verify")
    assert "log: clean" in verified.stdout and "views: match a rebuild" in verified.stdout
    assert "redacted on " in invoke("show", LEAKY_ID[:10]).stdout


def test_verify_is_not_clean_while_a_redaction_cannot_be_finished(
    leaked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlog.eventlog import redaction_journal
    from memlog.projections import scrub

    redaction_journal.begin(Home(leaked), redaction_journal.Pending(None, SECRET, "leak", ()))

    def stuck(home: Path, rebuild: object) -> list[str]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(scrub, "finish_redaction", stuck)
    from click.testing import CliRunner

    from memlog.commands.cli import cli

    done = CliRunner().invoke(cli, ["verify"])
    assert done.exit_code != 0
