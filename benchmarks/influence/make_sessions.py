"""Make the influence benchmark's sessions with the real Claude Code CLI.

    python benchmarks/influence/make_sessions.py [--out benchmarks/influence/sessions]

A memlog home holds the 150 lessons of ``retrieval/corpora/s4-tentopics-150`` (hashing
vectors: no model needed).  For each session of ``scripts.SESSIONS`` a git project with
its feature's spec is made, memlog's hooks are registered (``memlog setup``) in a HOME of
its own, and ``claude -p`` runs each prompt against a loopback Messages API that answers
with the session's scripted calls (``--resume`` for a follow-up prompt).  What the hooks
injected is what memlog's own hooks chose, recorded as ``entry.recalled`` events.

For each session it writes ``<name>.jsonl`` (the transcript Claude Code wrote) and
``<name>.recalled.json`` (every recall of the session: trigger, time, the lessons' ids
and names), and ``lessons.json`` (every lesson's id, name and text).  Needs npm (the CLI
is installed as the test suite installs it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scripts import SESSIONS, SPECS, Block  # noqa: E402

from memlog.eventlog.events import Recalled  # noqa: E402
from memlog.eventlog.log import EventLog  # noqa: E402
from memlog.home import Home  # noqa: E402
from memlog.hooks.recorder import settled  # noqa: E402
from memlog.projections.sqlite_view import queries  # noqa: E402
from memlog.tests.claude_code import ClaudeCode, claude_binary  # noqa: E402
from memlog.tests.messages_api import MessagesAPI  # noqa: E402
from memlog.tests.support import FIXTURES, REPO  # noqa: E402

CORPUS = HERE.parent / "retrieval" / "corpora" / "s4-tentopics-150"
TOOLS = "Write Edit Bash"
#: transcripts written without memlog, and how many lessons a start would have given them
OTHERS = {
    "f01-decorators": FIXTURES / "claude-code-transcripts" / "representative_messages.jsonl",
    "f02-todo-feature": FIXTURES / "claude-code-transcripts" / "todowrite_examples.jsonl",
    "f03-csv-bom": REPO / "tests" / "capture" / "extraction" / "fixtures" / "branch_switch.jsonl",
}
OTHER_LESSONS = 6


def memlog(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "memlog", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=600, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"memlog {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def project(root: Path, slug: str) -> Path:
    number, title, prose = SPECS[slug]
    folder = root / "docs" / "features" / f"{number}-{slug}"
    folder.mkdir(parents=True)
    (folder / "spec.md").write_text(f"# {title}\n\n{prose}\n")
    meta = {"id": number, "slug": slug, "status": "active", "lastCompletedPhase": "design"}
    (folder / ".meta.json").write_text(json.dumps(meta))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "-m", "spec"], check=True)  # fmt: skip
    return root


def placed(calls: list[list[Block]], root: Path) -> list[list[dict[str, Any]]]:
    """The calls with ``{root}`` replaced in every tool's input."""
    text = json.dumps(calls).replace("{root}", str(root))
    found: list[list[dict[str, Any]]] = json.loads(text)
    return found


def run_session(work: Path, name: str, env: dict[str, str], out: Path) -> None:
    slug, runs = SESSIONS[name]
    root = project(work / "projects" / name, slug)
    claude_home = work / "homes" / name
    claude_home.mkdir(parents=True)
    with MessagesAPI(text="ok") as api:
        claude = ClaudeCode(claude_binary(), claude_home, api.url, env)
        memlog(claude.env(), root, "setup")
        session = ""
        for prompt, resume, calls in runs:
            api.script = placed(calls, root)
            api._successes = itertools.count(1)  # the script is read from its first call
            del api.messages[:]
            more = ["--resume", session] if resume else []
            ran = claude.run(["-p", prompt, "--allowedTools", TOOLS, "--output-format", "json",
                              *more], cwd=root, timeout=300)  # fmt: skip
            if ran.returncode != 0:
                raise SystemExit(f"{name}: claude failed: {ran.stdout}{ran.stderr}")
            session = ran.result["session_id"]
            if len(api.messages) != len(calls):
                raise SystemExit(f"{name}: {len(api.messages)} calls for {len(calls)} scripted")
            settled(Home(Path(env["MEMLOG_HOME"])))
        (transcript,) = [t for t in claude.transcripts(root) if t.stem == session]
    shutil.copyfile(transcript, out / f"{name}.jsonl")
    home = Path(env["MEMLOG_HOME"])
    names = {e.id: e.name for e in queries.entries(Home(home), vectors=False)}
    recalls = [
        {"trigger": r.event.trigger, "ts": r.event.ts, "ids": list(r.event.ids),
         "names": [names[i] for i in r.event.ids]}
        for r in EventLog(home).read()
        if isinstance(r.event, Recalled) and r.event.session_id == session
    ]  # fmt: skip
    record = {"session_id": session, "cwd": str(root), "feature": slug, "recalls": recalls}
    (out / f"{name}.recalled.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"{name}: session {session}, {sum(len(r['ids']) for r in recalls)} lessons received")


def other_session(name: str, source: Path, env: dict[str, str], out: Path) -> None:
    """A transcript written without memlog, given the lessons memlog ranks first for its
    first prompt as if a start had injected them just before it."""
    lines = []
    for line in source.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue  # a torn last line, as Claude Code may leave one
    first = next(d for d in lines if d.get("type") == "user" and _prompt(d))
    prompt = _prompt(first)
    found = json.loads(memlog(env, source.parent, "search", "--json", "--limit",
                              str(OTHER_LESSONS), "--category", "anti-patterns", "--category",
                              "heuristics", "--category", "patterns", prompt[:2000]))  # fmt: skip
    chosen = found
    recall = {"trigger": "startup", "ts": first["timestamp"], "ids": [c["id"] for c in chosen],
              "names": [c["name"] for c in chosen]}  # fmt: skip
    record = {
        "session_id": first.get("sessionId", name),
        "cwd": first.get("cwd", ""),
        "feature": "",
        "recalls": [recall],
        "given_by": "memlog search of the first prompt",
    }
    shutil.copyfile(source, out / f"{name}.jsonl")
    (out / f"{name}.recalled.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"{name}: {len(chosen)} lessons as if given at its start")


def _prompt(line: dict[str, Any]) -> str:
    content = (line.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in content or [] if isinstance(b, dict)]
    return " ".join(t for t in texts if t)


def lessons(home: Path, out: Path) -> None:
    found = [
        {"id": e.id, "name": e.name, "category": e.category, "description": e.description,
         "details": e.details}
        for e in sorted(queries.entries(Home(home), vectors=False), key=lambda e: e.id)
    ]  # fmt: skip
    (out / "lessons.json").write_text(json.dumps(found, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "sessions")
    parser.add_argument("--only", nargs="*", help="session names (default: all)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memlog-influence-") as tmp:
        work = Path(tmp)
        bin_dir = str(Path(sys.executable).parent)
        env = {
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "MEMLOG_HOME": str(work / "memory"),
            "MEMLOG_EMBEDDING_PROVIDER": "hashing",
            "MEMLOG_EXTRACTION_PROVIDER": "off",
            "MEMLOG_CACHE_DIR": str(work / "cache"),
        }
        memlog({**os.environ, **env}, work, "import", str(CORPUS))
        lessons(Path(env["MEMLOG_HOME"]), args.out)
        for name in args.only or [*SESSIONS, *OTHERS]:
            if name in OTHERS:
                other_session(name, OTHERS[name], {**os.environ, **env}, args.out)
            else:
                run_session(work, name, env, args.out)


if __name__ == "__main__":
    main()
