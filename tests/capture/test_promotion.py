"""``memlog promote`` (spec #023 Component 3), the classifier, and references from git."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from memlog.capture.promote import (
    GENERIC_NAMES,
    MAX_DIR_ENTRIES,
    ProjectContext,
    classify,
    file_paths,
    scan_project,
    walk_names,
)
from memlog.commands.cli import COMMANDS, cli
from memlog.eventlog.events import Observed, Promoted
from memlog.eventlog.log import EventLog
from memlog.tests.support import REPO  # noqa: E402

SKILL = REPO / "plugin" / "skills" / "retrospecting" / "SKILL.md"
REPORT = re.compile(
    r"^Memory promotion: (\d+) universal entries promoted to global store, "
    r"(\d+) project-specific entries kept local\.$"
)
ANCHORS = {
    "Always read the target file before writing a parser": "universal",
    "Break tasks into one-file-per-task granularity": "universal",
    "The secretary agent's routing table must match hooks.json matchers": "project",
    "The session-start.sh Python subprocess adds ~200ms per call": "project",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project like iflow: hooks.json, session-start.sh and a secretary agent."""
    root = tmp_path / "iflow"
    for rel in (
        "plugins/iflow-dev/hooks/hooks.json",
        "plugins/iflow-dev/hooks/session-start.sh",
        "plugins/iflow-dev/agents/secretary/AGENT.md",
        "docs/knowledge-bank/patterns.md",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    (root / ".git").mkdir()
    return root


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def line(description: str, category: str = "heuristics", **extra: object) -> str:
    fields = {"name": " ".join(description.split()[:2]), "description": description}
    return json.dumps({**fields, "category": category, "reasoning": "seen twice", **extra})


def promote_json(tree: Path, lines: list[str], *args: str) -> Result:
    data = "\n".join(lines) + "\n"
    return invoke("promote", "--json", "-", "--project-root", str(tree), *args, input=data)


def events(home: Path) -> list[Observed | Promoted]:
    return [r.event for r in EventLog(home).read()]  # type: ignore[misc]


def anchors_batch() -> list[str]:
    categories = ["heuristics", "patterns", "anti-patterns", "anti-patterns"]
    names = ["Read before parsing", "Granular tasks", "Secretary routing", "Hook cost"]
    return [
        line(text, cat, name=name)
        for text, cat, name in zip(ANCHORS, categories, names, strict=True)
    ]


# -- the acceptance criteria of Component 3 ------------------------------------------------


@pytest.mark.ac("023:AC-3.1")
def test_universal_entries_reach_the_global_store(tree: Path, memlog_home: Path) -> None:
    done = promote_json(tree, anchors_batch(), "--feature", "023")
    assert done.exit_code == 0, done.output
    heuristics = (memlog_home / "heuristics.md").read_text()
    patterns = (memlog_home / "patterns.md").read_text()
    assert heuristics.startswith("# Global Heuristics\n")
    assert "Always read the target file before writing a parser\n" in heuristics  # AC-3.1
    assert "Break tasks into one-file-per-task granularity\n" in patterns
    assert "- Tags: universal" in heuristics


@pytest.mark.ac("023:AC-3.2")
def test_project_specific_entries_stay_out_of_the_global_store(
    tree: Path, memlog_home: Path
) -> None:
    assert promote_json(tree, anchors_batch(), "--feature", "023").exit_code == 0
    store = "".join(p.read_text() for p in memlog_home.glob("*.md"))
    assert "secretary" not in store and "session-start.sh" not in store  # AC-3.2
    assert not (memlog_home / "anti-patterns.md").exists()
    local = (memlog_home / "projects" / "iflow" / "anti-patterns.md").read_text()
    assert "The secretary agent's routing table" in local and "session-start.sh" in local


@pytest.mark.ac("023:AC-3.6")
def test_report_line_is_exact_and_every_reason_is_printed(tree: Path) -> None:
    done = promote_json(tree, anchors_batch())
    assert done.exit_code == 0, done.output
    out = done.stdout.splitlines()
    assert out[0] == (
        "Memory promotion: 2 universal entries promoted to global store, "
        "2 project-specific entries kept local."
    )
    assert out[1:] == [  # AC-3.6: one reason line per entry
        "- Read before parsing: Universal because: no project-specific references detected",
        "- Granular tasks: Universal because: no project-specific references detected",
        "- Secretary routing: Project-specific because: names file path `hooks.json`; "
        "names `Secretary`, which exists in the project tree",
        "- Hook cost: Project-specific because: names file path `session-start.sh`",
    ]


@pytest.mark.ac("023:AC-3.3", "023:AC-3.4")
def test_a_duplicate_adds_count_and_provenance_instead_of_a_copy(
    tree: Path, memlog_home: Path
) -> None:
    lesson = line("Always read the target file before writing a parser")
    assert promote_json(tree, [lesson], "--project", "alpha", "--feature", "023").exit_code == 0
    again = promote_json(tree, [lesson], "--project", "beta", "--feature", "024")
    assert again.exit_code == 0, again.output
    text = (memlog_home / "heuristics.md").read_text()
    assert text.count("### Heuristic: ") == 1  # AC-3.3
    assert "- Observation count: 2" in text
    assert "- Source: alpha, Feature #023; beta, Feature #024" in text  # AC-3.4
    promoted = [e for e in events(memlog_home) if isinstance(e, Promoted)]
    assert [(p.project, p.feature) for p in promoted] == [("alpha", "023"), ("beta", "024")]


def test_provenance_can_come_from_the_json_lines(tree: Path, memlog_home: Path) -> None:
    lesson = line("Always read the target file first", project="gamma", feature="031")
    assert promote_json(tree, [lesson], "--feature", "999").exit_code == 0
    assert "- Source: gamma, Feature #031" in (memlog_home / "heuristics.md").read_text()


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_json_input_from_a_file_or_stdin(tree: Path, tmp_path: Path, source: str) -> None:
    data = "\n".join(anchors_batch()) + "\n"
    if source == "file":
        path = tmp_path / "lessons.jsonl"
        path.write_text(data)
        done = invoke("promote", "--json", str(path), "--project-root", str(tree))
    else:
        done = invoke("promote", "--json", "-", "--project-root", str(tree), input=data)
    assert done.exit_code == 0, done.output
    assert REPORT.match(done.stdout.splitlines()[0])


def test_the_retrospective_scope_wins_over_the_classifier(tree: Path, memlog_home: Path) -> None:
    lesson = line(
        "The session-start.sh hook must stay fast", scope="universal", reason="hooks in general"
    )
    done = promote_json(tree, [lesson])
    assert done.exit_code == 0, done.output
    assert "- The session-start.sh: Universal because: hooks in general" in done.stdout
    assert "session-start.sh hook must stay fast" in (memlog_home / "heuristics.md").read_text()
    forced = promote_json(tree, [line("Always pin the lint version")], "--scope", "project")
    assert "Project-specific because: judged so by the retrospective" in forced.stdout


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ('"scope": "global"', "$.scope"),
        ('"category": "tips"', "$.category"),
        ('"colour": "red"', "colour"),
        ('"reason": "no scope"', "$.reason"),
    ],
)
def test_invalid_lines_name_line_and_field_and_append_nothing(
    tree: Path, memlog_home: Path, bad: str, where: str
) -> None:
    good = line("Always read the target file before writing a parser")
    broken = good[:-1] + ", " + bad + "}"
    broken = broken.replace('"category": "heuristics", ', "") if "category" in bad else broken
    done = promote_json(tree, [good, broken])
    assert done.exit_code == 2, done.output
    assert "line 2" in done.output and where in done.output
    assert not (memlog_home / "events").exists() or events(memlog_home) == []


def test_entries_already_observed_are_promoted_by_id_prefix(tree: Path, memlog_home: Path) -> None:
    stored = EventLog(memlog_home).append(
        [
            Observed(name="Pin", description="Pin tool versions in CI", category="patterns"),
            Observed(name="Hook", description="Keep session-start.sh quick", category="patterns"),
        ]
    )
    ids = [e.entry_id[:8] for e in stored]
    done = invoke("promote", *ids, "--project-root", str(tree), "--feature", "7")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0].startswith("Memory promotion: 1 universal entries")
    assert "Pin tool versions in CI" in (memlog_home / "patterns.md").read_text()
    promoted = [e for e in events(memlog_home) if isinstance(e, Promoted)]
    assert [(p.scope, p.project, p.feature) for p in promoted] == [
        ("universal", "iflow", "7"),
        ("project", "iflow", "7"),
    ]
    judged = invoke("promote", ids[1], "--scope", "universal", "--reason", "any hook")
    assert judged.exit_code == 0, judged.output
    assert "- Hook: Universal because: any hook" in judged.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give entry ids"),
        (("abc", "--json", "-"), "not both"),
        (("abc", "--reason", "why"), "--reason needs --scope"),
        (("zz",), "not an entry id"),
    ],
)
def test_bad_invocations_exit_2(args: tuple[str, ...], message: str) -> None:
    done = invoke("promote", *args, input="")
    assert done.exit_code == 2, done.output
    assert message in done.output


def test_an_unwritable_global_store_is_a_warning(tree: Path, memlog_home: Path) -> None:
    (memlog_home / "anti-patterns.md").mkdir(parents=True)  # cannot be written as a file
    lesson = line("Never skip the tests before a release", "anti-patterns")
    done = promote_json(tree, [lesson])
    assert done.exit_code == 0, done.output
    assert "global store not written" in done.stderr
    assert REPORT.match(done.stdout.splitlines()[0])
    promoted = [e for e in events(memlog_home) if isinstance(e, Promoted)]
    assert [p.scope for p in promoted] == ["universal"]  # the log has it
    shutil.rmtree(memlog_home / "anti-patterns.md")
    assert invoke("replay").exit_code == 0
    assert "Never skip the tests" in (memlog_home / "anti-patterns.md").read_text()


# -- the classifier --------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "scope"), ANCHORS.items())
def test_the_spec_anchoring_examples(tree: Path, text: str, scope: str) -> None:
    verdict = classify(text, scan_project(tree))
    assert verdict.scope == scope
    label = "Universal" if scope == "universal" else "Project-specific"
    assert verdict.reason.startswith(f"{label} because: ")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Edit src/x.py first", ["src/x.py"]),
        ("Run foo.sh twice", ["foo.sh"]),
        ("The a/b/c module", ["a/b/c"]),
        ("Use ./run or ~/bin/tool, not /etc/hosts", ["./run", "~/bin/tool", "/etc/hosts"]),
        ("Read package.json.", ["package.json"]),
        ("Use and/or, read/write, I/O and 2024/01/02", []),
        ("See https://example.com/a/b.html", []),
        ("Node.js streams, e.g. pipes, i.e. backpressure", []),
    ],
)
def test_file_paths(text: str, found: list[str]) -> None:
    assert file_paths(text) == found


def test_project_name_and_tree_names(tree: Path) -> None:
    context = scan_project(tree)
    assert classify("Run iflow doctor weekly", context).reason == (
        "Project-specific because: names the project `iflow`"
    )
    assert classify("Ask the Secretary first", context).scope == "project"
    assert classify("A secretaryship is no help", context).scope == "universal"  # whole words
    assert "patterns" in GENERIC_NAMES  # a tree name that is an everyday word
    assert classify("Prefer small patterns", context).scope == "universal"
    generic = ProjectContext("main", frozenset())
    assert classify("Merge to main daily", generic).scope == "universal"


def test_the_walk_is_bounded(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    for rel in (
        ".git/objects/hiddenobject",
        "node_modules/leftpad/index.js",
        "env/pyvenv.cfg",
        "src/visible_module.py",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    big = root / "data"
    big.mkdir()
    for n in range(MAX_DIR_ENTRIES + 1):
        (big / f"sample{n}.csv").touch()
    names = set(walk_names(root))
    assert "visible_module.py" in names and "data" in names
    assert not names & {"hiddenobject", "leftpad", "pyvenv.cfg", "sample1.csv"}


# -- references from git (AC10) --------------------------------------------------------------


def git(repo: Path, *args: str) -> None:
    who = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "-C", str(repo), *who, *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("hello\n")
    (root / "old.txt").write_text("old\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "src").mkdir()
    (root / "src" / "parser.py").write_text("x = 1\n")
    (root / "README.md").write_text("hello again\n")
    git(root, "rm", "-q", "old.txt")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "work")
    monkeypatch.chdir(root)
    return root


@pytest.mark.ac("024:10")
def test_observe_fills_references_from_the_git_diff(repo: Path, memlog_home: Path) -> None:
    done = invoke(
        "observe", "--name", "Read", "--description", "Read the input before parsing",
        "--category", "heuristics", "--reference", "docs/x.md", "--references-from-git", "main",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    (observed,) = [e for e in events(memlog_home) if isinstance(e, Observed)]
    assert isinstance(observed, Observed)
    assert observed.references == ("docs/x.md", "README.md", "src/parser.py")  # no deletions


@pytest.mark.ac("024:10")
def test_promote_json_fills_references_from_the_git_diff(repo: Path, memlog_home: Path) -> None:
    lesson = line("Always read the target file before writing a parser")
    done = invoke("promote", "--json", "-", "--references-from-git", "main", input=lesson)
    assert done.exit_code == 0, done.output
    observed = [e for e in events(memlog_home) if isinstance(e, Observed)]
    assert observed[0].references == ("README.md", "src/parser.py")


@pytest.mark.parametrize("base", ["no-such-branch", "--output=x"])
def test_a_failing_git_diff_is_a_clear_error(repo: Path, memlog_home: Path, base: str) -> None:
    done = invoke(
        "observe", "--name", "N", "--description", "D", "--category", "patterns",
        f"--references-from-git={base}",
    )  # fmt: skip
    assert done.exit_code == 2, done.output
    assert "--references-from-git" in done.output and "Traceback" not in done.output
    assert not (memlog_home / "events").exists()


# -- the retrospective step ------------------------------------------------------------------


def test_the_skill_step_is_short_and_documents_real_commands() -> None:
    front, body = skill_parts()
    assert front["name"] == "retrospecting" and len(front["description"]) > 40
    text = body
    assert len(text.splitlines()) <= 40
    commands = set(re.findall(r"(?m)(?:^\s*|`)memlog ([a-z-]+)", text))
    assert {"observe", "promote"} <= commands <= set(COMMANDS)
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", text))
    known = {
        opt
        for name in ("observe", "promote")
        for param in cli.get_command(None, name).params  # type: ignore[arg-type,union-attr]
        for opt in param.opts
    }
    assert options and options <= known, options - known
    for phrase in ("Memory promotion: ", *ANCHORS):
        assert phrase in " ".join(text.split())


def skill_parts() -> tuple[dict[str, str], str]:
    """The SKILL.md front matter (as Claude Code reads it) and the step after it."""
    text = SKILL.read_text()
    assert text.startswith("---\n"), "SKILL.md needs front matter for Claude Code"
    head, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(head), body


def test_the_skill_example_line_is_valid_input(tree: Path) -> None:
    example = next(ln.strip() for ln in SKILL.read_text().splitlines() if ln.strip()[:1] == "{")
    keywords = json.loads(example)["keywords"]
    assert 3 <= len(keywords) <= 10
    done = promote_json(tree, [example])
    assert done.exit_code == 0, done.output
    assert "Universal because: no project references" in done.stdout
