"""Claude Code's own files as memlog reads them: the auto memory folder, whether auto memory
is on, memory files, CLAUDE.md files.  The real CLI holds the same rules in
``tests/claude_code/test_delivery.py``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from memlog import claude_files
from memlog.claude_files import (
    auto_memory_on,
    claude_md_files,
    memory_files,
    memory_folder,
    parse_memory,
    sanitise,
)

#: Claude Code 2.1.197's own functions, verbatim from its binary (``sanitizePath`` and the
#: hash it uses past 200 characters)
CLAUDE_CODE_JS = r"""
function jCe(e){let t=0;for(let n=0;n<e.length;n++)t=(t<<5)-t+e.charCodeAt(n)|0;return t}
function fNu(e){return Math.abs(jCe(e)).toString(36)}
var rtt=200;
function $E(e){let t=e.replace(/[^a-zA-Z0-9]/g,"-");if(t.length<=rtt)return t;
return`${t.slice(0,rtt)}-${fNu(e)}`}
const paths=JSON.parse(require("fs").readFileSync(0,"utf8"));
process.stdout.write(JSON.stringify(paths.map($E)));
"""
PATHS = [
    "/home/me/src/shop",
    "/tmp/a b/c.d_e",
    "/home/zoë/проект/日本",
    "/home/me/emoji-😀-dir",
    "/srv/" + "deep/" * 60 + "project",
    "/srv/" + "é" * 250,
    "/" + "x" * 199,
    "/" + "x" * 200,
]


def test_sanitise_is_claude_codes_own_function() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    done = subprocess.run(
        [node, "-e", CLAUDE_CODE_JS], input=json.dumps(PATHS), capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    assert [sanitise(p) for p in PATHS] == json.loads(done.stdout)


def test_long_paths_are_cut_and_hashed() -> None:
    name = sanitise("/srv/" + "deep/" * 60 + "project")
    head, _, digest = name.rpartition("-")
    assert len(head) == 200 and head.startswith("-srv-deep-deep-") and digest.isalnum()
    assert sanitise("/a/b") == "-a-b" and len(sanitise("/" + "x" * 199)) == 200


def git_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q",
         "--allow-empty", "-m", "start"], check=True,
    )  # fmt: skip
    return root


def test_the_folder_is_the_main_checkouts_for_every_worktree(tmp_path: Path) -> None:
    config = tmp_path / "claude-config"
    env = {"CLAUDE_CONFIG_DIR": str(config), "HOME": str(tmp_path)}
    main = git_repo(tmp_path / "repo")
    (main / "src").mkdir()
    worktree = tmp_path / "wt"
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(worktree)], check=True)
    expected = config / "projects" / sanitise(str(main)) / "memory"
    assert memory_folder(str(main / "src"), env) == expected
    assert memory_folder(str(worktree), env) == expected
    outside = tmp_path / "plain"
    outside.mkdir()
    assert (
        memory_folder(str(outside), env) == config / "projects" / sanitise(str(outside)) / "memory"
    )


def test_config_dir_defaults_to_the_home(tmp_path: Path) -> None:
    assert claude_files.config_dir({"HOME": str(tmp_path)}) == tmp_path / ".claude"


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_auto_memory_directory_from_user_and_local_settings_not_project(tmp_path: Path) -> None:
    config, project = tmp_path / "config", tmp_path / "project"
    env = {"CLAUDE_CONFIG_DIR": str(config), "HOME": str(tmp_path)}
    write_json(project / ".claude" / "settings.json", {"autoMemoryDirectory": "/checked-in"})
    default = config / "projects" / sanitise(str(project)) / "memory"
    assert memory_folder(str(project), env) == default  # checked-in settings are ignored
    write_json(config / "settings.json", {"autoMemoryDirectory": "~/notes/memory/"})
    assert memory_folder(str(project), env) == tmp_path / "notes" / "memory"
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": "/srv/mem"})
    assert memory_folder(str(project), env) == Path("/srv/mem")
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": "~/../x"})
    assert memory_folder(str(project), env) == tmp_path / "notes" / "memory"  # refused: next
    env["CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"] = "/override"
    assert memory_folder(str(project), env) == Path("/override")


def test_whether_auto_memory_is_on(tmp_path: Path) -> None:
    config, project = tmp_path / "config", tmp_path / "project"
    env = {"CLAUDE_CONFIG_DIR": str(config), "HOME": str(tmp_path)}
    project.mkdir()
    assert auto_memory_on(str(project), env) == (True, "on by default")
    write_json(config / "settings.json", {"autoMemoryEnabled": False})
    assert auto_memory_on(str(project), env)[0] is False
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryEnabled": True})
    assert auto_memory_on(str(project), env)[0] is True
    assert not auto_memory_on(str(project), {**env, "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"})[0]
    assert not auto_memory_on(str(project), {**env, "CLAUDE_CODE_SIMPLE": "true"})[0]
    write_json(config / "settings.json", {"autoMemoryEnabled": False})
    (project / ".claude" / "settings.local.json").unlink()
    assert auto_memory_on(str(project), {**env, "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "0"})[0]


MEMORY = """---
name: no-db-mocks
description: Integration tests must hit a real database, not mocks
metadata:
  type: feedback
---

Integration tests hit a real SQLite file.

**Why:** a mocked test passed while the migration failed.
**How to apply:** open a temporary database file in tests/integration.
"""


def test_a_memory_file_is_read_as_claude_code_reads_it(tmp_path: Path) -> None:
    found = parse_memory(tmp_path / "no-mocks.md", MEMORY)
    assert (found.name, found.type) == ("no-db-mocks", "feedback")
    assert found.description == "Integration tests must hit a real database, not mocks"
    assert found.body.startswith("Integration tests hit") and found.body.endswith("integration.")
    flat = "---\nname: x\ndescription: d\ntype: user\nmodified: 2026-01-02T03:04:05Z\n---\nBody\n"
    assert parse_memory(tmp_path / "x.md", flat)[3:] == ("user", "Body", "2026-01-02T03:04:05Z")
    bare = parse_memory(tmp_path / "loose-note.md", "# A heading\n\nSome fact.\n")
    assert (bare.name, bare.description, bare.type) == ("loose-note", "A heading", "")
    broken = parse_memory(tmp_path / "b.md", "---\nname: [unclosed\n---\nText\n")
    assert (broken.name, broken.description) == ("b", "Text")


def test_memory_files_leave_the_index_out(tmp_path: Path) -> None:
    (tmp_path / "team").mkdir()
    for name in ("MEMORY.md", "a.md", "team/b.md", "team/MEMORY.md", "notes.txt"):
        (tmp_path / name).write_text("x")
    found = [p.relative_to(tmp_path).as_posix() for p in memory_files(tmp_path)]
    assert found == ["a.md", "team/MEMORY.md", "team/b.md"]


def test_claude_md_files_from_the_config_dir_and_each_folder_down(tmp_path: Path) -> None:
    config, root = tmp_path / "config", tmp_path / "repo"
    (root / "sub" / ".claude").mkdir(parents=True)
    config.mkdir()
    for path in (config / "CLAUDE.md", root / "CLAUDE.md", root / "sub" / "CLAUDE.local.md",
                 root / "sub" / ".claude" / "CLAUDE.md"):  # fmt: skip
        path.write_text("x")
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    assert claude_md_files(str(root / "sub"), env) == [
        config / "CLAUDE.md", root / "CLAUDE.md", root / "sub" / "CLAUDE.local.md",
        root / "sub" / ".claude" / "CLAUDE.md",
    ]  # fmt: skip


def test_a_link_is_never_followed(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("top secret")
    (tmp_path / "link.md").symlink_to(tmp_path / "secret")
    assert claude_files.read_text(tmp_path / "link.md") is None
