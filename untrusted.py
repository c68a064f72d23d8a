"""Reading files memlog does not own, within bounds.

A repository memlog works in is anyone's: its ``.claude/iflow-dev.local.md``,
its specs, its ``CLAUDE.md`` files and the settings Claude Code reads from it,
like the auto memory files under Claude Code's folder, may have been written
to hurt whatever reads them.  Everything read from such a file goes through
here:

* its size is known before it is parsed: a file over its cap is refused (or,
  where the start of it is all that is wanted, read that far), and only a
  regular file is read (never a FIFO or a device that would block or never end);
* YAML is read by a loader that refuses aliases (a 560-byte "billion laughs"
  expands to gigabytes when anything walks it) and nests at most
  ``MAX_DEPTH`` deep (PyYAML composes recursively);
* JSON nests at most as deep as Python's recursion allows, reported as a
  refusal rather than a ``RecursionError``;
* a message never shows a whole value: ``shown`` caps every ``repr``.

A refusal is ``Refused``, one line saying why, for the caller to report with
the file's name and go on without that file.
"""

from __future__ import annotations

import json
import os
import reprlib
import stat
from pathlib import Path
from typing import Any

#: the most bytes of YAML front matter parsed
MAX_YAML_BYTES = 64 << 10
#: sequences and mappings nested deeper than this are refused
MAX_DEPTH = 32
#: the most characters ``shown`` gives a value
SHOWN_CHARS = 80


class Refused(ValueError):
    """A file or value refused for its size, shape or nesting: one line saying why."""


class Malformed(Refused):
    """Text that is not the YAML or JSON it should be (a syntax error, not a bound)."""


def read_bytes(path: Path | str, limit: int, *, follow: bool = True, whole: bool = True) -> bytes:
    """The bytes of the regular file ``path``: all of them when it holds at most ``limit``
    (``Refused`` otherwise), or, with ``whole`` off, its first ``limit``.  ``OSError``
    when it cannot be opened; a link is followed only with ``follow``."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused("not a regular file")
        if whole and info.st_size > limit:
            raise Refused(f"{_size(info.st_size)}, more than the {_size(limit)} read")
        data = b""
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) > limit:
        if whole:  # it grew while it was read
            raise Refused(f"more than the {_size(limit)} read")
        data = data[:limit]
    return data


def read_text(path: Path | str, limit: int, *, follow: bool = True, whole: bool = True) -> str:
    """``read_bytes`` as text (bytes that are not UTF-8 replaced)."""
    return read_bytes(path, limit, follow=follow, whole=whole).decode("utf-8", "replace")


def _size(count: int) -> str:
    return f"{count / 1024:.0f} KiB" if count >= 1024 else f"{count} bytes"


# -- YAML -----------------------------------------------------------------------------------


def load_yaml(text: str, *, plain: bool = False, max_bytes: int = MAX_YAML_BYTES) -> Any:
    """The value of the YAML document ``text``: as the safe loader types it, or, with
    ``plain``, every scalar as the text written (``yaml.BaseLoader``).  ``Refused`` for a
    document over ``max_bytes``, with an alias, or nested over ``MAX_DEPTH``; ``Malformed``
    (a ``Refused``) for a YAML error, naming its kind."""
    import yaml  # only where YAML is read

    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise Refused(f"YAML over {_size(max_bytes)}")
    loader = _loader(plain)(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise Malformed(f"not valid YAML ({type(exc).__name__})") from None
    finally:
        loader.dispose()


_LOADERS: dict[bool, type] = {}


def _loader(plain: bool) -> type:
    """A PyYAML loader (pure Python) that refuses aliases and deep nesting."""
    if plain in _LOADERS:
        return _LOADERS[plain]
    import yaml

    base = yaml.BaseLoader if plain else yaml.SafeLoader

    class Bounded(base):  # type: ignore[valid-type,misc]
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise Refused("YAML aliases are not read")
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    raise Refused(f"YAML nested more than {MAX_DEPTH} deep")
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    _LOADERS[plain] = Bounded
    return Bounded


# -- JSON -----------------------------------------------------------------------------------


def load_json(data: bytes | str) -> Any:
    """The value of the JSON text ``data``; ``Malformed`` when it is not JSON, ``Refused``
    when it nests past what Python's recursion allows."""
    try:
        return json.loads(data)
    except RecursionError:
        raise Refused("JSON nested too deep") from None
    except ValueError as exc:
        raise Malformed(f"not valid JSON ({type(exc).__name__})") from None


#: the most bytes of a settings file read as JSON
MAX_JSON_BYTES = 256 << 10


def json_object(path: Path | str, limit: int = MAX_JSON_BYTES) -> dict[str, Any]:
    """A JSON object file (Claude Code's settings, ``.mcp.json``); empty when it is missing,
    unreadable, over ``limit``, not JSON, too deep or not an object: reading it never fails."""
    try:
        data = load_json(read_bytes(path, limit))
    except (OSError, Refused):
        return {}
    return data if isinstance(data, dict) else {}


# -- messages -------------------------------------------------------------------------------

_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 4
_REPR.maxstring = _REPR.maxother = SHOWN_CHARS // 2


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` for a message: nesting, items and characters capped, so a value
    of any size or shape costs a line (a string is cut in the middle, ``...``)."""
    if isinstance(value, str) and len(value) <= limit - 2:
        text = repr(value)
    else:
        text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
