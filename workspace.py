"""A workspace: the memlog home and one project's configuration, resolved once.

Every interface (the CLI, the hook, the MCP server, the page) makes one
``Workspace`` for the project it serves and hands it to the library; nothing
below re-reads the configuration or the working directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from memlog.config import Config, load_config
from memlog.errors import LinkRefused, MemlogError
from memlog.home import Home, resolve_cache, resolve_home
from memlog.project import find_project_root
from memlog.vocabulary import Space

if TYPE_CHECKING:
    from memlog.embeddings.base import EmbeddingProvider
    from memlog.eventlog.log import DamageHandler, EventLog
    from memlog.projections.runner import CatchUp


class Workspace(msgspec.Struct, frozen=True):
    """Where memories live (``home``) and the project they are read and written for."""

    home: Home
    root: Path | None
    config: Config
    #: what was wrong with the configuration (each value fell back to its default)
    warnings: tuple[str, ...] = ()
    #: the project name entries are recorded under (the root's name unless overridden)
    project_name: str | None = None

    @classmethod
    def open(
        cls,
        where: Path | None = None,
        *,
        home: Home | Path | None = None,
        exact: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> Workspace:
        """The workspace of the project holding ``where`` (default: the working directory).

        ``exact``: ``where`` is the project root itself, not a place inside it.
        """
        here = (where or Path.cwd()).resolve()
        return cls.at(here if exact else find_project_root(here), home=home, env=env)

    @classmethod
    def at(
        cls,
        root: Path | None,
        *,
        home: Home | Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Workspace:
        """The workspace of the project at ``root`` (``None``: no project, settings from
        the environment only)."""
        environ = os.environ if env is None else env
        config, warnings = load_config(root, environ)
        where = Home.of(home) if home is not None else resolve_home(environ)
        return cls(where, root, config, tuple(warnings))

    @classmethod
    def unconfigured(cls, home: Home | Path) -> Workspace:
        """The home alone, with default configuration: for reading the log only."""
        return cls(Home.of(home), None, Config())

    @property
    def project(self) -> str:
        if self.project_name is not None:
            return self.project_name
        return self.root.name if self.root is not None else ""

    @property
    def space(self) -> Space:
        """The embedding space in force."""
        return self.config.space

    # The log and the projectors are loaded when used: a start that finds its views
    # current reads them without either (see ``retrieval.light``).
    def log(self, command: str = "", redact: bool = True) -> EventLog:
        from memlog.eventlog.log import EventLog

        wait = self.config.memory_lock_wait_seconds
        return EventLog(self.home, command=command, redact=redact, lock_wait=wait)

    def catch_up(self, on_damage: DamageHandler | None = None) -> CatchUp:
        """Bring the views up to the end of the log before reading them."""
        from memlog.projections.runner import catch_up

        return catch_up(self.home, self.space, on_damage)

    def refresh(self) -> list[str]:
        """After an append: update the views; a failure is a note, the log has the data."""
        try:
            return self.catch_up().notes
        except LinkRefused:
            raise  # never read past: the command stops there
        except MemlogError as exc:
            return [f"views not updated ({exc}); the next command retries"]
        except OSError as exc:  # the markdown files (the global store among them)
            return [
                f"global store not written ({exc}); the log holds every event and the next "
                "memlog command (or memlog replay) writes it"
            ]

    def provider(self) -> EmbeddingProvider:
        """The configured embedding provider; ``ProviderUnavailable`` when it cannot run."""
        from memlog.embeddings.registry import make_provider  # numpy only when embedding

        return make_provider(self.config, resolve_cache())
