"""What the extraction tests share: a scripted model, transcripts, sessions in a log."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from memlog.eventlog.events import SessionPending, Usage
from memlog.llm.base import Answer, Chain, StructuredModel
from memlog.projections.fold import Session
from memlog.projections.sqlite_view import ledger
from memlog.workspace import Workspace

FIXTURES = Path(__file__).parent / "fixtures"


class Scripted(StructuredModel):
    """Answers in turn from a script: an object, an exception to raise, or ``None``
    (no structured answer); the last one repeats.  Every call is kept."""

    name: ClassVar[str] = "scripted"

    def __init__(self, *answers: Any, tokens: tuple[int, int] = (1000, 200)) -> None:
        self.answers = list(answers)
        self.tokens = tokens
        self.model = "claude-haiku-4-5"
        self.calls: list[dict[str, Any]] = []

    def ask(self, system: str, prompt: str, schema: dict[str, Any], timeout: float) -> Answer:
        self.calls.append({"system": system, "prompt": prompt, "schema": schema})
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        tokens_in, tokens_out = self.tokens
        usage = Usage(
            provider=self.name, model=self.model, calls=1, tokens_in=tokens_in,
            tokens_out=tokens_out, cost_micros=tokens_in + 5 * tokens_out,
        )  # fmt: skip
        return Answer(answer, usage, "" if answer is not None else "no answer")


def chain(model: StructuredModel) -> Chain:
    return Chain([(model.name, lambda: model)])


def item(
    text: str, section: str = "conventions", confidence: float = 0.9, scope: str = ""
) -> dict[str, Any]:
    found: dict[str, Any] = {"section": section, "content": text, "confidence": confidence}
    if scope:
        found["scope"] = scope
    return found


def extraction(*items: dict[str, Any]) -> dict[str, Any]:
    return {"extractions": list(items)}


def git_project(parent: Path, name: str = "shop", branch: str = "feature/x") -> Path:
    root = parent / name
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", branch, str(root)], check=True)
    return root


def line(kind: str, uuid: str, parent: str | None, cwd: Path, branch: str, **more: Any) -> str:
    data = {
        "parentUuid": parent, "isSidechain": False, "type": kind, "uuid": uuid,
        "timestamp": "2026-11-20T10:00:00.000Z", "userType": "external", "entrypoint": "cli",
        "cwd": str(cwd), "sessionId": "s", "version": "2.1.197", "gitBranch": branch, **more,
    }  # fmt: skip
    return json.dumps(data) + "\n"


def exchange(n: int, cwd: Path, branch: str, question: str, answer: str, parent: str | None) -> str:
    """One prompt and one streamed answer of two blocks (thinking, text)."""
    user = line("user", f"u{n}", parent, cwd, branch,
                message={"role": "user", "content": question})  # fmt: skip
    message = {"id": f"msg_{n}", "role": "assistant", "model": "claude-sonnet-5"}
    think = line(
        "assistant",
        f"a{n}t",
        f"u{n}",
        cwd,
        branch,
        message={**message, "content": [{"type": "thinking", "thinking": "hm"}]},
    )
    text = line(
        "assistant",
        f"a{n}",
        f"a{n}t",
        cwd,
        branch,
        message={**message, "content": [{"type": "text", "text": answer}]},
    )
    return user + think + text


def write_transcript(path: Path, cwd: Path, branch: str, pairs: Sequence[tuple[str, str]],
                     start: int = 1, append: bool = False) -> Path:  # fmt: skip
    parent = f"a{start - 1}" if start > 1 else None
    text = ""
    for n, (question, answer) in enumerate(pairs, start):
        text += exchange(n, cwd, branch, question, answer, parent)
        parent = f"a{n}"
    with open(path, "a" if append else "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def pend(ws: Workspace, session_id: str, transcript: Path, cwd: Path, trigger: str = "SessionEnd",
         branch: str = "feature/x") -> Session:  # fmt: skip
    event = SessionPending(
        session_id=session_id, transcript=str(transcript), cwd=str(cwd), project=cwd.name,
        branch=branch, trigger=trigger, reason="other", size=transcript.stat().st_size,
    )  # fmt: skip
    ws.log("test").append([event])
    ws.catch_up()
    return ledger.sessions(ws.home, ids=[session_id])[0]


def session_of(ws: Workspace, session_id: str) -> Session:
    ws.catch_up()
    return ledger.sessions(ws.home, ids=[session_id])[0]
