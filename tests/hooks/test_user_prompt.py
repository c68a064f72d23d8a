"""The UserPromptSubmit hook as Claude Code runs it: a fresh process, JSON on stdin, a few
lessons past the relevance floor or nothing, always exit 0 within its budget."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np

from memlog.eventlog.events import Observed, Recalled, Reembedded
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.hooks.recorder import settled
from memlog.tests.hooks.test_session_start import hook_env
from memlog.tests.hooks.test_session_start import project as make_project
from memlog.tests.hooks.test_session_start import seed as seed_fillers
from memlog.tests.loopback import LoopbackServer

HOOK = [sys.executable, "-m", "memlog", "hook", "user-prompt"]
LOCK = "Take the lock file's hash into the cache key of dependency installs in CI."
ON_TOPIC = "How should the CI cache key for dependency installs be built?"


def lessons(home: Path) -> None:
    seed_fillers(home)
    EventLog(home).append([
        Observed(name="Cache on the lock", description=LOCK, category="heuristics"),
        Observed(name="Pin versions", description="Pin every tool version in CI.",
                 category="patterns"),
    ])  # fmt: skip


def payload(root: Path, prompt: str, session: str | None = None) -> bytes:
    return json.dumps({
        "session_id": session or f"session-{uuid.uuid4()}", "cwd": str(root), "prompt": prompt,
        "hook_event_name": "UserPromptSubmit", "transcript_path": str(root / "t.jsonl"),
        "permission_mode": "default",
    }).encode()  # fmt: skip


def run(home: Path, stdin: bytes | None, root: Path, **env: str) -> tuple[str, float]:
    """What the hook printed on stdout (checked to be nothing or one envelope), and how
    long it took.  The budget is 4 s unless a test sets its own: what these tests check is
    what the hook answers, and a busy machine (the suite runs on every core) can spend
    the default second on starting Python alone."""
    env = {"MEMLOG_PROMPT_BUDGET_MS": "4000", **env}
    began = time.monotonic()
    done = subprocess.run(
        HOOK, input=stdin, stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True, cwd=root, env=hook_env(home, **env), timeout=30,
    )  # fmt: skip
    took = time.monotonic() - began
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode()
    if out:
        (line,) = out.splitlines()
        envelope = json.loads(line)
        assert envelope["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
        out = envelope["hookSpecificOutput"]["additionalContext"]
        assert out, "an envelope is printed only with a context"
    return out, took


def recalled(home: Path) -> list[Recalled]:
    return [r.event for r in EventLog(home).read() if isinstance(r.event, Recalled)]


def test_a_prompt_on_a_remembered_topic_gets_its_lessons(memlog_home: Path, tmp_path: Path) -> None:
    lessons(memlog_home)
    root = make_project(tmp_path)
    context, _ = run(memlog_home, payload(root, ON_TOPIC, "s1"), root)
    assert context.startswith("## Engineering Memory (recalled for this prompt)")
    assert LOCK in context and len(context) <= 2500
    assert settled(Home(memlog_home))
    (event,) = recalled(memlog_home)
    assert (event.trigger, event.session_id) == ("prompt", "s1") and event.entry_ids
    again, _ = run(memlog_home, payload(root, ON_TOPIC + " Really?", "s1"), root)
    assert LOCK not in again  # never one the session already received


def test_the_prompt_stays_on_the_machine(memlog_home: Path, tmp_path: Path) -> None:
    """The recall keeps entries, scores and a digest under this home's own key: no word of
    the prompt is in the log (which sync carries), and another home's digest of the same
    prompt differs, so a teammate cannot test guesses against it."""
    lessons(memlog_home)
    root = make_project(tmp_path)
    secret_prompt = ON_TOPIC + " The customer is Globex Corporation, password hunter2."
    run(memlog_home, payload(root, secret_prompt, "s1"), root)
    assert settled(Home(memlog_home))
    (event,) = recalled(memlog_home)
    assert event.query == "" and len(event.scores) == len(event.ids) > 0
    log = b"".join(p.read_bytes() for p in (memlog_home / "events").rglob("*.jsonl"))
    for word in (b"Globex", b"hunter2", b"How should"):
        assert word not in log
    other = tmp_path / "other-home"
    lessons(other)
    run(other, payload(root, secret_prompt, "s2"), root)
    assert settled(Home(other))
    (theirs,) = recalled(other)
    assert event.digest and theirs.digest and event.digest != theirs.digest
    assert event.ids == theirs.ids  # the same entries: only the digest's key differs


def test_an_unrelated_prompt_gets_nothing(memlog_home: Path, tmp_path: Path) -> None:
    lessons(memlog_home)
    root = make_project(tmp_path)
    for prompt in ("What is the weather like in Paris this weekend?", "yes", "thanks!"):
        assert run(memlog_home, payload(root, prompt), root)[0] == ""
    assert settled(Home(memlog_home)) and not recalled(memlog_home)
    assert not (memlog_home / "hook-errors.log").exists()


def test_whatever_comes_in_it_exits_0_with_valid_output(memlog_home: Path, tmp_path: Path) -> None:
    root = make_project(tmp_path)
    for stdin in (None, b"", b"not json", b"[1, 2]", b'{"prompt": 42}', payload(root, ON_TOPIC)):
        assert run(memlog_home, stdin, root)[0] == ""  # no home yet: nothing to recall
    assert not memlog_home.exists()


def test_turned_off_it_prints_nothing(memlog_home: Path, tmp_path: Path) -> None:
    lessons(memlog_home)
    root = make_project(tmp_path, "memory_prompt_recall: false")
    assert run(memlog_home, payload(root, ON_TOPIC), root)[0] == ""
    assert run(memlog_home, payload(make_project(tmp_path, name="p2"), ON_TOPIC), tmp_path,
               MEMLOG_PROMPT_RECALL="false")[0] == ""  # fmt: skip
    assert settled(Home(memlog_home)) and not recalled(memlog_home)


def test_two_registrations_recall_once(memlog_home: Path, tmp_path: Path) -> None:
    lessons(memlog_home)
    root = make_project(tmp_path)
    given = payload(root, ON_TOPIC, "s1")
    outputs = [run(memlog_home, given, root)[0] for _ in range(2)]
    assert sorted(bool(o) for o in outputs) == [False, True]
    assert settled(Home(memlog_home)) and len(recalled(memlog_home)) == 1


def test_a_hanging_provider_is_cut_off_within_the_budget(memlog_home: Path, tmp_path: Path) -> None:
    events = [Observed(name="Cache on the lock", description=LOCK, category="heuristics")]
    values = np.random.default_rng(1).standard_normal(8).astype("<f4")
    vector = (values / np.linalg.norm(values)).astype("<f4").tobytes()
    model = "text-embedding-3-small"
    events.append(Reembedded(entry_id=events[0].entry_id, provider="openai", model=model,
                             dimensions=8, vector=vector))  # fmt: skip
    EventLog(memlog_home).append(events)
    budget_ms = 4000
    with LoopbackServer(lambda *_: (200, {}, b'{"data": []}'), delay=30) as server:
        root = make_project(
            tmp_path,
            f"memory_embedding_provider: openai\nmemory_embedding_dimensions: 8\n"
            f"memory_embedding_base_url: {server.url}/v1\nmemory_prompt_budget_ms: {budget_ms}\n"
            "memory_fusion_vector_weight: 1\n",
        )
        context, took = run(memlog_home, payload(root, ON_TOPIC), root,
                            OPENAI_API_KEY="sk-test-" + uuid.uuid4().hex,
                            MEMLOG_PROMPT_BUDGET_MS=str(budget_ms))  # fmt: skip
        assert server.requests, "the query embedding was never attempted"
    assert took < 20  # the provider answers after 30 s: the hook did not wait for it
    assert LOCK in context  # ranked without the vector: its words still match
    log = (memlog_home / "hook-errors.log").read_text()
    assert "query embedding" in log and "sk-test" not in log
