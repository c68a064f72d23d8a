"""The conventions every command follows, kept in one place so new commands get them.

* ``-h`` and ``--help`` both print help.
* ``--json`` always asks for JSON output; files to read are ``--from FILE|-``.
  The old ``--json FILE`` of ``observe`` and ``promote`` still works until
  memlog 0.3, with a deprecation line: ``--json`` followed by ``-`` or by an
  existing file, for a command that has ``--from``, is read as ``--from``.
* A closed pipe (``memlog log | head``) ends the command quietly with exit 0.
* Long work shows progress bars on stderr, only when stderr is a terminal.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import click

HELP_OPTIONS = ["-h", "--help"]
DEPRECATED_JSON_INPUT = (
    "`--json FILE` is deprecated and memlog 0.3 drops it: use `--from FILE` "
    "(`--json` now asks for JSON output)"
)


def takes_input_file(command: click.Command) -> bool:
    return any("--from" in param.opts for param in command.params)


def legacy_input(command: click.Command, args: list[str]) -> tuple[list[str], bool]:
    """``args`` with the old ``--json FILE`` spelt ``--from FILE``; whether it was there."""
    if not takes_input_file(command):
        return args, False
    out: list[str] = []
    rewritten = False
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            out += [arg, *rest]
            break
        if arg.startswith("--json="):
            out += ["--from", arg.removeprefix("--json=")]
            rewritten = True
        elif arg == "--json":
            value = next(rest, None)
            if value is not None and _names_input(value):
                out += ["--from", value]
                rewritten = True
            else:
                out += [arg] if value is None else [arg, value]
        else:
            out.append(arg)
    return out, rewritten


def _names_input(value: str) -> bool:
    """``-`` (stdin) or an existing file: what the old ``--json`` took."""
    return value == "-" or (not value.startswith("-") and Path(value).is_file())


# -- closed pipes --------------------------------------------------------------------


_NULL: list[TextIO] = []


def silence_stdout() -> None:
    """Point stdout at /dev/null so nothing more (not even the last flush) can fail."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture)
        if not _NULL:
            _NULL.append(open(os.devnull, "w"))  # noqa: SIM115 - kept for the process
        sys.stdout = _NULL[0]
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def finish(code: Any) -> None:
    """Flush stdout and exit with ``code``; a reader that left early is no failure."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    sys.exit(code)


# -- progress ------------------------------------------------------------------------


class TerminalProgress:
    """Progress bars on ``stream`` (stderr), one per stage, only when it is a terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.bar: Any = None

    @property
    def shown(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def __call__(self, label: str, total: int) -> Callable[[int], None]:
        """Start the stage ``label`` of ``total`` steps; the result counts steps done."""
        self.close()
        if not self.shown or total <= 0:
            return _ignore
        self.bar = click.progressbar(length=total, label=label, file=self.stream, show_pos=True)
        self.bar.render_progress()
        return self._advance

    def _advance(self, steps: int) -> None:
        if self.bar is not None:
            self.bar.update(steps)
            if self.bar.pos >= self.bar.length:
                self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.render_finish()
            self.bar = None


def _ignore(steps: int) -> None:
    return None


@contextlib.contextmanager
def metered() -> Iterator[TerminalProgress]:
    """Progress for work whose stages the library opens: ``with metered() as meter:``."""
    meter = TerminalProgress()
    try:
        yield meter
    finally:
        meter.close()


@contextlib.contextmanager
def progress(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """One stage of progress on the terminal: ``with progress("replaying", n) as step:``."""
    with metered() as meter:
        yield meter(label, total)
