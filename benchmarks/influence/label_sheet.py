"""The labelling sheet of the influence benchmark: every (session, lesson) pair to judge.

    python benchmarks/influence/label_sheet.py [--out build/influence-sheet.md]

For each session (in a shuffled order) the sheet shows what the session did, as a
person reads it in the transcript (prompts, the assistant's words, each tool call
with its input in full), then every lesson the session received, shuffled, each with
its whole text and a number.  No estimate and no score is shown.  The judge writes one
line per pair into ``labels.jsonl``: ``{"session", "lesson", "label", "note"}`` with
label ``applied`` (the session did what the lesson says, in its code, commands or
answer), ``contradicted`` (it did the opposite, or said the lesson does not hold) or
``not used``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SESSIONS = HERE / "sessions"
SEED = 3407


def lines_of(path: Path) -> list[dict[str, Any]]:
    found = []
    for line in path.read_text().splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def shown(line: dict[str, Any]) -> list[str]:
    """What a person reads of one transcript line."""
    if line.get("type") not in ("user", "assistant") or line.get("isSidechain"):
        return []
    content = (line.get("message") or {}).get("content")
    who = line["type"]
    if isinstance(content, str):
        return [f"**{who}**: {content}"]
    out = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and block.get("text"):
            out.append(f"**{who}**: {block['text']}")
        elif block.get("type") == "tool_use":
            out.append(f"**{who} calls {block.get('name')}**:\n```\n"
                       f"{json.dumps(block.get('input'), indent=1)}\n```")  # fmt: skip
        elif block.get("type") == "tool_result":
            out.append(f"*(tool result: {str(block.get('content'))[:200]})*")
    return out


def lesson_text(lesson: dict[str, Any]) -> str:
    details = "\n".join(f"- {d}" for d in lesson["details"])
    return f"**{lesson['name']}** ({lesson['category']})\n{lesson['description']}\n{details}"


def sheet() -> str:
    lessons = {e["id"]: e for e in json.loads((SESSIONS / "lessons.json").read_text())}
    names = sorted(p.name[: -len(".recalled.json")] for p in SESSIONS.glob("*.recalled.json"))
    rng = random.Random(SEED)
    rng.shuffle(names)
    parts = ["# Influence labels: what each session did with each lesson it received\n"]
    for name in names:
        record = json.loads((SESSIONS / f"{name}.recalled.json").read_text())
        given = [(r["trigger"], i) for r in record["recalls"] for i in r["ids"]]
        rng.shuffle(given)
        parts.append(f"\n## Session {name}\n")
        parts += [t for line in lines_of(SESSIONS / f"{name}.jsonl") for t in shown(line)]
        parts.append(f"\n### Lessons {name} received\n")
        for number, (trigger, lesson) in enumerate(given, 1):
            parts.append(f"{number}. `{lesson}` (at {trigger})\n{lesson_text(lessons[lesson])}\n")
    return "\n".join(parts) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build") / "influence-sheet.md")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(sheet())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
