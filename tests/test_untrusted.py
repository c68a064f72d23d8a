"""Reading what memlog does not own: sizes, aliases, nesting and messages all bounded."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from memlog import untrusted
from memlog.config import load_config
from memlog.untrusted import Malformed, Refused, load_json, load_yaml, read_bytes, shown

#: a "billion laughs": nine anchors, each nine of the one before, under a config key
BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]"
            for prev, name in zip("abcdefg", "bcdefgh", strict=True)
        ),
        f"memory_injection_max_chars: &i [{','.join(['*h'] * 9)}]",
    ]
)


def bomb_project(parent: Path) -> Path:
    """A repository whose configuration holds the YAML bomb."""
    root = parent / "hostile"
    (root / ".claude").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".claude" / "iflow-dev.local.md").write_text(f"---\n{BOMB}\n---\n")
    return root


def test_aliases_are_refused_before_anything_expands() -> None:
    assert len(BOMB) < 600
    with pytest.raises(Refused, match="aliases"):
        load_yaml(BOMB)
    with pytest.raises(Refused, match="aliases"):
        load_yaml(BOMB, plain=True)
    assert load_yaml("a: &x 1\nb: 2") == {"a": 1, "b": 2}  # an anchor alone costs nothing


def test_nesting_and_size_are_capped() -> None:
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(Refused, match="nested more than"):
        load_yaml(f"k: {deep}")
    block = "k:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60)) + "  " * 60 + "v: 1"
    with pytest.raises(Refused, match="nested more than"):
        load_yaml(block)
    assert load_yaml("k: " + "[" * 20 + "]" * 20) == {"k": [[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}
    with pytest.raises(Refused, match="YAML over"):
        load_yaml("k: " + "x" * (untrusted.MAX_YAML_BYTES + 1))
    with pytest.raises(Malformed):
        load_yaml("k: [unclosed")


def test_json_too_deep_is_a_refusal_not_a_recursion_error() -> None:
    with pytest.raises(Refused, match="too deep"):
        load_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(Malformed):
        load_json("{")
    assert untrusted.json_object("/nonexistent/settings.json") == {}


def test_shown_caps_any_value() -> None:
    layer: object = ["lol"] * 9
    for _ in range(9):  # 9**9 strings if walked whole, as repr would
        layer = [layer] * 9
    text = shown(layer)
    assert len(text) <= untrusted.SHOWN_CHARS
    assert shown("short") == "'short'"
    assert len(shown("x" * 10_000)) <= untrusted.SHOWN_CHARS
    assert len(shown({str(i): i for i in range(10_000)})) <= untrusted.SHOWN_CHARS


def test_files_are_read_within_bounds(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 5000)
    with pytest.raises(Refused, match="more than"):
        read_bytes(big, 4096)
    assert read_bytes(big, 4096, whole=False) == b"x" * 4096
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # a writer that never comes: reading it would block forever
    with pytest.raises(Refused, match="not a regular file"):
        read_bytes(fifo, 4096)
    link = tmp_path / "link"
    link.symlink_to(big)
    with pytest.raises(OSError):
        read_bytes(link, 8192, follow=False)
    assert read_bytes(link, 8192) == b"x" * 5000


def test_the_configuration_bomb_gives_defaults_and_one_short_warning(tmp_path: Path) -> None:
    config, warnings = load_config(bomb_project(tmp_path), {})
    assert config.memory_injection_max_chars == 9000
    assert len(warnings) == 1 and "aliases are not read" in warnings[0]
    assert len(warnings[0]) < 300


def test_a_bad_value_is_shown_capped(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".claude").mkdir(parents=True)
    values = "[" + ", ".join(f'"{"v" * 50}{i}"' for i in range(2000)) + "]"
    (root / ".claude" / "iflow-dev.local.md").write_text(
        f"---\nmemory_injection_limit: {values}\n---\n"
    )
    config, warnings = load_config(root, {})
    assert config.memory_injection_limit == 20
    assert len(warnings) == 1 and len(warnings[0]) < 200, warnings


def test_an_oversized_configuration_file_is_not_parsed(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "iflow-dev.local.md").write_text(
        "---\nmemory_injection_limit: 5\n---\n" + "x" * (1 << 20)
    )
    config, warnings = load_config(root, {})
    assert config.memory_injection_limit == 20
    assert len(warnings) == 1 and "more than the 64 KiB read" in warnings[0]


def test_settings_and_specs_too_deep_or_too_large_are_skipped(tmp_path: Path) -> None:
    from memlog import claude_files
    from memlog.retrieval.context import active_feature

    root = tmp_path / "repo"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text("[" * 50_000 + "]" * 50_000)
    assert claude_files.read_json(root / ".claude" / "settings.json") == {}
    assert claude_files.auto_memory_on(str(root), {"HOME": str(tmp_path)})[0] is True
    feature = root / "docs" / "features" / "001-x"
    feature.mkdir(parents=True)
    (feature / ".meta.json").write_text('{"status": "active", "x": ' + "[" * 50_000 + "}")
    assert active_feature(root) is None
    (feature / ".meta.json").write_text('{"status": "active", "slug": "x"}')
    (feature / "spec.md").write_text("# Title\n\nThe opening words.\n\n" + "y " * (1 << 20))
    found = active_feature(root)
    assert found is not None and found.description.startswith("The opening words.")


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux keeps it")
def test_the_bomb_stays_bounded_in_a_process_with_little_memory(tmp_path: Path) -> None:
    """In a process allowed 1 GiB (the bomb expands to tens), the configuration loads."""
    import subprocess

    root = bomb_project(tmp_path)
    script = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30));"
        "from pathlib import Path; from memlog.config import load_config;"
        "c, w = load_config(Path(sys.argv[1]), {}); print(c.memory_injection_max_chars, len(w))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(root)], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["9000", "1"], done.stderr
