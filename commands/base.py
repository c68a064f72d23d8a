"""The little every command needs before anything heavy is imported."""

from __future__ import annotations

import click

from memlog.errors import describe
from memlog.home import resolve_home

#: what a terminal must never receive raw from stored text: C0 controls but tab and
#: newline (ESC starts every escape sequence), DEL, C1 controls, and the characters that
#: reorder or break lines unseen (bidirectional overrides and isolates, U+2028/2029)
_UNPRINTABLE = [
    *(c for c in range(0x20) if c not in (0x09, 0x0A)), 0x7F, *range(0x80, 0xA0),
    0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A),
]  # fmt: skip
_ESCAPED = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _UNPRINTABLE}


def printable(text: str) -> str:
    """``text`` with control characters shown escaped (``\\x1b``, ``\\u202e``), as git and
    ls show them: what a memory holds never drives the terminal it is printed on."""
    return text.translate(_ESCAPED)


def said(text: str) -> str:
    """A line for the user: printable, and no secret the rules know in it."""
    from memlog.eventlog.redaction import redact  # (loaded only when something is said)

    return printable(redact(text).text)


class InputError(click.ClickException):
    """Bad input: one line on stderr, exit 2, nothing appended."""

    exit_code = 2


def as_click_error(exc: BaseException) -> click.ClickException:
    """The one-line click error for any failure (a crash's traceback goes to errors.log)."""
    found = describe(exc, resolve_home().errors_log)
    message = said(found.message)
    return InputError(message) if found.bad_input else click.ClickException(message)
