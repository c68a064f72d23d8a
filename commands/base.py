"""The little every command needs before anything heavy is imported."""

from __future__ import annotations

import click

from memlog.errors import describe
from memlog.home import resolve_home


class InputError(click.ClickException):
    """Bad input: one line on stderr, exit 2, nothing appended."""

    exit_code = 2


def as_click_error(exc: BaseException) -> click.ClickException:
    """The one-line click error for any failure (a crash's traceback goes to errors.log)."""
    said = describe(exc, resolve_home())
    return InputError(said.message) if said.bad_input else click.ClickException(said.message)
