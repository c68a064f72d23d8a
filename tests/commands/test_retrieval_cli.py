"""``memlog inject`` (with the iflow drop-in flags) and ``memlog search``."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from click.testing import CliRunner

from memlog.commands.cli import cli
from memlog.eventlog.events import content_hash
from memlog.tests.retrieval.helpers import (
    HEADER,
    PARSER,
    entry,
    entry_headers,
    knowledge_bank,
    mixed_bank,
    project,
    seed,
)

# -- commands ----------------------------------------------------------------------------------


def test_iflow_drop_in_prints_the_markdown_block(memlog_home: Path, tmp_path: Path) -> None:
    store_dir = tmp_path / "global-store"
    mixed_bank(store_dir)
    root = project(tmp_path, "project-b")
    runner = CliRunner()
    args = ["inject", "--project-root", str(root), "--limit", "5", "--global-store", str(store_dir)]
    done = runner.invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert done.output.startswith(HEADER + "\n")
    assert len(entry_headers(done.output)) == 5
    assert "\n---\n*Memory: 5 entries from 12 | semantic: active" in done.output
    written = json.loads((store_dir / ".last-injection.json").read_text())
    assert written["project"] == "project-b" and written["entries_injected"] == 5
    assert not memlog_home.exists()  # the --global-store home, not MEMLOG_HOME

    done = runner.invoke(cli, [*args[:4], "0", *args[5:]])
    assert (done.exit_code, done.output) == (0, "")


def test_iflow_drop_in_with_semantic_off(memlog_home: Path, tmp_path: Path) -> None:
    root = project(tmp_path, "project-b", "memory_semantic_enabled: false")
    knowledge_bank(root, memlog_home)
    done = CliRunner().invoke(
        cli,
        [
            "inject",
            "--project-root",
            str(root),
            "--limit",
            "20",
            "--global-store",
            str(memlog_home),
        ],
    )
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith(HEADER + "\n") and len(entry_headers(done.stdout)) == 6
    assert done.stdout.endswith("\n---\n")  # memory.py's output: the block and a newline


def test_search_command(memlog_home: Path) -> None:
    mixed_bank(memlog_home)
    seed(memlog_home, entry("Parser error handling", PARSER, "facts"))
    runner = CliRunner()
    done = runner.invoke(cli, ["search", "file parser error handling", "--limit", "3"])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert len(lines) == 3
    assert lines[0].split()[1:3] == [content_hash(PARSER), "facts"]  # search includes facts
    assert float(lines[0].split()[0]) >= float(lines[1].split()[0])

    done = runner.invoke(cli, ["search", "parser", "--json", "--category", "anti-patterns"])
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)
    assert len(found) == 4 and {f["category"] for f in found} == {"anti-patterns"}
    scores = [f["score"] for f in found]
    assert scores == sorted(scores, reverse=True)
    assert {"lexical", "vector", "prominence", "neighbours", "final"} <= set(found[0]["components"])

    done = runner.invoke(cli, ["search", "file parser", "--explain", "--limit", "2"])
    assert done.exit_code == 0, done.output
    assert "mode: semantic; query: 'file parser'" in done.output
    number = r"-?\d+\.\d{4}"
    assert re.search(rf"lexical={number}, .*vector={number}, .*final={number}", done.output)

    done = runner.invoke(cli, ["search", "   "])
    assert done.exit_code != 0 and "empty" in done.output
    assert runner.invoke(cli, ["search"]).exit_code == 2  # a query is required


def test_search_takes_the_words_without_quotes(memlog_home: Path) -> None:
    mixed_bank(memlog_home)
    runner = CliRunner()
    quoted = runner.invoke(cli, ["search", "file parser error handling", "--json"])
    words = runner.invoke(cli, ["search", "file", "parser", "error", "handling", "--json"])
    assert words.exit_code == 0, words.output
    # the same entries with the same scores; the components' recency moves with the clock
    # between the two searches (a second is 4e-7 of it), prominence weighing nothing
    same = [[(e["id"], e["score"]) for e in json.loads(out.output)] for out in (words, quoted)]
    assert same[0] == same[1] != []
    explained = runner.invoke(cli, ["search", "retry", "--limit", "2", "backoff", "--explain"])
    assert "query: 'retry backoff'" in explained.output


def test_inject_command_json_and_explain(memlog_home: Path, tmp_path: Path) -> None:
    mixed_bank(memlog_home)
    root = project(tmp_path, "project-b")
    runner = CliRunner()
    done = runner.invoke(cli, ["inject", str(root), "--json", "--limit", "4"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["mode"] == "prominence" and len(data["chosen"]) == 4
    assert data["text"].startswith(HEADER)
    assert not (memlog_home / ".last-injection.json").exists()  # no --record by default
    done = runner.invoke(cli, ["inject", str(root), "--explain", "--limit", "2"])
    assert done.exit_code == 0 and "mode: prominence; query: None" in done.output


def test_the_project_dir_and_project_root_give_one_block(memlog_home: Path, tmp_path: Path) -> None:
    """A folder inside another repository (the example project inside a clone of memlog):
    both spellings read that folder's active feature, not the repository around it."""
    mixed_bank(memlog_home)
    outer = tmp_path / "outer"
    outer.mkdir()
    (outer / "billing_reports.py").write_text("x = 1\n")  # the repository's last change
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "reports"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                       cwd=outer, check=True, capture_output=True)  # fmt: skip
    (outer / "docs" / "features" / "001-release-notes").mkdir(parents=True)
    meta = {"slug": "release-notes", "status": "active", "lastCompletedPhase": "design"}
    (outer / "docs" / "features" / "001-release-notes" / ".meta.json").write_text(json.dumps(meta))
    inner = project(outer, "demo", spec="Parse CSV files and handle errors at the edges.")
    (inner / ".claude").rmdir()  # no marker of its own: the hook would walk up to `outer`
    runner = CliRunner()
    given = ["--json", "--limit", "4", "--no-record"]
    positional = json.loads(runner.invoke(cli, ["inject", str(inner), *given]).output)
    named = json.loads(runner.invoke(cli, ["inject", "--project-root", str(inner), *given]).output)
    assert "file parser" in positional["query"]
    assert "release" not in positional["query"] and "billing" not in positional["query"]
    assert positional["text"] == named["text"] and positional["query"] == named["query"]
    both = runner.invoke(cli, ["inject", str(inner), "--project-root", str(inner)])
    assert both.exit_code == 2 and "PROJECT_DIR or --project-root" in both.output
