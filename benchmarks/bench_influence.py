"""Which lessons a session used: memlog's two judges against the labelled sessions.

    python benchmarks/bench_influence.py [--json FILE]

The sessions and their labels are ``benchmarks/influence/`` (its README says how
they were made: real Claude Code sessions over a loopback API, labels written
before any judge existed).  A memlog home holds the corpus their lessons came from;
each session is known to the view as the log left it (what it received, at which
trigger and time) and its transcript is read where the benchmark keeps it.

* **The local estimate** (``capture/extraction/influence.py``): each lesson's share
  of weighed terms found in what the assistant did after it was given.  Its
  threshold is chosen by leaving one session out (the best F1 of *applied* on the
  others, the plainest threshold on a plateau of one standard error), each session
  scored with the threshold chosen without it; then chosen once on every session:
  the default it ships with.
* **The extraction path**: ``memlog``'s own extraction of each session
  (``session.memorize``) through the Messages API provider, against a loopback
  server that answers as a model reading the request would: for each lesson the
  request lists, the labelled verdict when a quote of the session's evidence for
  it (``influence/evidence.jsonl``) is in the text the request carries, else "not
  used".  So its figures measure what the request carries and what memlog makes of
  the answer (a lesson lost, a quote cut by the transcript's limits, a number
  mixed up), not a real model's judgment.  Requests per session are counted.

Precision and recall of *applied* (and of *applied or contradicted* for the
extraction, which alone says contradicted), with 95% bootstrap intervals over
sessions (each session's pairs resampled together).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memlog.home import Home

HERE = Path(__file__).resolve().parent
DATA = HERE / "influence"
CORPUS = HERE / "retrieval" / "corpora" / "s4-tentopics-150"
GRID = [round(0.05 * n, 2) for n in range(2, 19)]
Pair = tuple[str, str]


def load() -> tuple[dict[Pair, str], dict[Pair, list[str]], dict[str, dict[str, Any]]]:
    labels = {}
    for line in (DATA / "labels.jsonl").read_text().splitlines():
        row = json.loads(line)
        labels[(row["session"], row["lesson"])] = row["label"]
    quotes = {}
    for line in (DATA / "evidence.jsonl").read_text().splitlines():
        row = json.loads(line)
        quotes[(row["session"], row["lesson"])] = row["quotes"]
    records = {
        p.name[: -len(".recalled.json")]: json.loads(p.read_text())
        for p in sorted((DATA / "sessions").glob("*.recalled.json"))
    }
    return labels, quotes, records


def session_of(name: str, record: dict[str, Any], transcript: Path) -> Any:
    from memlog.projections.fold import Session

    received, seen = [], set()
    for recall in record["recalls"]:
        for lesson in recall["ids"]:
            if lesson not in seen:
                seen.add(lesson)
                received.append(f"{lesson} {recall['trigger']} {recall['ts']}")
    return Session(id=record["session_id"], transcript=str(transcript), cwd="", status="pending",
                   received=received, unjudged=len(received))  # fmt: skip


# -- figures --------------------------------------------------------------------------------


def counts(said: Sequence[bool], truth: Sequence[bool]) -> tuple[int, int, int]:
    hit = sum(1 for s, t in zip(said, truth, strict=True) if s and t)
    return hit, sum(said), sum(truth)


def ratios(hit: int, said: int, true: int) -> tuple[float, float, float]:
    precision = hit / said if said else float("nan")
    recall = hit / true if true else float("nan")
    f1 = 2 * hit / (said + true) if said + true else float("nan")
    return precision, recall, f1


def bootstrap(by_session: dict[str, tuple[int, int, int]], rounds: int = 10_000) -> dict[str, Any]:
    """Precision and recall, and their 95% intervals over sessions resampled."""
    rows = np.array(list(by_session.values()), dtype=float)
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(rows), size=(rounds, len(rows)))
    sums = rows[picks].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision, recall = sums[:, 0] / sums[:, 1], sums[:, 0] / sums[:, 2]
    total = rows.sum(axis=0)
    p, r, f = ratios(*(int(v) for v in total))
    return {
        "precision": p, "precision_interval": _interval(precision), "recall": r,
        "recall_interval": _interval(recall), "f1": f, "said": int(total[1]),
        "true": int(total[2]), "right": int(total[0]),
    }  # fmt: skip


def _interval(values: np.ndarray) -> tuple[float, float]:
    kept = values[np.isfinite(values)]
    if not kept.size:
        return (float("nan"), float("nan"))
    return float(np.percentile(kept, 2.5)), float(np.percentile(kept, 97.5))


def show(title: str, figures: dict[str, Any]) -> None:
    p, (pl, ph) = figures["precision"], figures["precision_interval"]
    r, (rl, rh) = figures["recall"], figures["recall_interval"]
    print(f"  {title}: precision {p:.2f} [{pl:.2f}, {ph:.2f}] ({figures['right']} of "
          f"{figures['said']}), recall {r:.2f} [{rl:.2f}, {rh:.2f}] ({figures['right']} of "
          f"{figures['true']}), F1 {figures['f1']:.2f}")  # fmt: skip


# -- the local estimate ---------------------------------------------------------------------


def local_scores(home: Path, records: dict[str, dict[str, Any]]) -> dict[Pair, float]:
    """Each (session, lesson)'s share of weighed terms (``influence.scores``)."""
    from memlog.capture.extraction import influence
    from memlog.projections.sqlite_view import queries

    entries = {e.id: e for e in queries.entries(Home(home), vectors=False)}
    found = {}
    for name, record in records.items():
        session = session_of(name, record, DATA / "sessions" / f"{name}.jsonl")
        given = influence.received(session, entries)
        done, times = influence.actions(Path(session.transcript))
        for lesson, score in zip(given, influence.scores(given, done, times), strict=True):
            found[(name, lesson.entry.id)] = score
    return found


def f1_at(threshold: float, pairs: Sequence[Pair], scores: dict[Pair, float],
          applied: dict[Pair, bool]) -> float:  # fmt: skip
    said = [scores[p] >= threshold for p in pairs]
    return ratios(*counts(said, [applied[p] for p in pairs]))[2]


def choose(pairs: Sequence[Pair], scores: dict[Pair, float], applied: dict[Pair, bool]) -> float:
    """The threshold of the best F1 on ``pairs``; on a plateau of one standard error (of
    the F1 over its sessions), the one nearest the middle of the grid's range (0.5)."""
    f1s = [f1_at(t, pairs, scores, applied) for t in GRID]
    best = int(np.nanargmax(f1s))
    sessions = sorted({s for s, _ in pairs})
    per = [f1_at(GRID[best], [p for p in pairs if p[0] == s], scores, applied) for s in sessions]
    kept = [v for v in per if np.isfinite(v)]
    se = float(np.std(kept, ddof=1) / np.sqrt(len(kept))) if len(kept) > 1 else 0.0
    near = [t for t, f in zip(GRID, f1s, strict=True) if np.isfinite(f) and f >= f1s[best] - se]
    return min(near, key=lambda t: (abs(t - 0.5), t))


def local(
    home: Path, labels: dict[Pair, str], records: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    from memlog.capture.extraction.influence import APPLIED_SHARE

    scores = local_scores(home, records)
    pairs = sorted(scores)
    applied = {p: labels[p] == "applied" for p in pairs}
    sessions = sorted({s for s, _ in pairs})
    held, picks = {}, {}
    for name in sessions:
        threshold = choose([p for p in pairs if p[0] != name], scores, applied)
        picks[name] = threshold
        mine = [p for p in pairs if p[0] == name]
        held[name] = counts([scores[p] >= threshold for p in mine], [applied[p] for p in mine])
    everywhere = choose(pairs, scores, applied)
    shipped = {
        s: counts([scores[p] >= APPLIED_SHARE for p in pairs if p[0] == s],
                  [applied[p] for p in pairs if p[0] == s])
        for s in sessions
    }  # fmt: skip
    print(f"\nlocal estimate, {len(pairs)} pairs of {len(sessions)} sessions "
          f"({sum(applied.values())} applied):")  # fmt: skip
    cross = bootstrap(held)
    show("each session judged with the threshold chosen on the others", cross)
    print(f"    thresholds chosen: {sorted(set(picks.values()))}; on every session at once: "
          f"{everywhere} (shipped: {APPLIED_SHARE})")  # fmt: skip
    as_shipped = bootstrap(shipped)
    show(f"the shipped threshold {APPLIED_SHARE} (in sample)", as_shipped)
    return {"cross_validated": cross, "chosen": picks, "on_all": everywhere,
            "shipped": APPLIED_SHARE, "shipped_in_sample": as_shipped}  # fmt: skip


# -- the extraction path --------------------------------------------------------------------


def stand_in(labels: dict[Pair, str], quotes: dict[Pair, list[str]], names: dict[str, str]) -> Any:
    """A loopback Messages API whose answers judge each listed lesson as a model reading
    the request would: the label when a quote of its evidence is in the request."""
    from memlog.tests.messages_api import MessagesAPI

    by_name = {name: entry_id for entry_id, name in names.items()}

    class Reader(MessagesAPI):
        current = ""

        def _content(self, request: dict[str, Any], call: int) -> list[dict[str, Any]]:
            content = request["messages"][-1]["content"]
            prompt = content if isinstance(content, str) else content[0]["text"]
            answer = {"extractions": [], "lessons": self.judge(prompt)}
            return [{"type": "text", "text": json.dumps(answer)}]

        def judge(self, prompt: str) -> list[dict[str, Any]]:
            # the conversation the request carries, as a model reads it (not the lessons)
            seen = " ".join(prompt.split("Lessons memlog gave this session.", 1)[0].split())
            found = []
            for line in prompt.split("Lessons memlog gave this session.", 1)[-1].splitlines():
                if not line.startswith("[") or "] (given" not in line:
                    continue
                number = int(line[1 : line.index("]")])
                name = line.split(") ", 1)[1].split(": ", 1)[0]
                pair = (self.current, by_name.get(name, ""))
                shown = [q for q in quotes.get(pair, []) if " ".join(q.split()) in seen]
                verdict = labels.get(pair, "not used") if shown else "not used"
                found.append({"lesson": number, "verdict": verdict,
                              "evidence": shown[0] if shown else ""})  # fmt: skip
            return found

    return Reader()


def extraction_path(home: Path, labels: dict[Pair, str], quotes: dict[Pair, list[str]],
                    records: dict[str, dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    import httpx

    from memlog.capture.extraction import session as extraction
    from memlog.capture.extraction.sweep import budget_for
    from memlog.eventlog.events import Influenced
    from memlog.llm.registry import make_chain
    from memlog.projections.sqlite_view import queries
    from memlog.workspace import Workspace

    names = {e.id: e.name for e in queries.entries(Home(home), vectors=False)}
    server = stand_in(labels, quotes, names)
    by_session: dict[str, list[Influenced]] = {}
    requests: dict[str, int] = {}
    with server as api, httpx.Client() as client:
        env = {**os.environ, "MEMLOG_ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-x"}
        ws = Workspace.at(None, home=home, env=env)
        for name, record in records.items():
            session = session_of(name, record, DATA / "sessions" / f"{name}.jsonl")
            api.current, before = name, len(api.messages)
            run = extraction.Run(make_chain("anthropic", client, env), budget_for(ws),
                                 time.monotonic() + 600)  # fmt: skip
            log_before = _count(home)
            outcome = extraction.memorize(ws, run, session)
            if outcome.status != "extracted":
                print(f"  {name}: {outcome.status}: {outcome.reason}")
            requests[name] = len(api.messages) - before
            by_session[name] = [e for e in _events_since(home, log_before)
                                if isinstance(e, Influenced)]  # fmt: skip
    applied, either = {}, {}
    pairs = [p for p in labels if p[0] in records]
    sources: dict[str, int] = {}
    for name in records:
        said = {e.entry_id: e for e in by_session[name]}
        mine = [p for p in pairs if p[0] == name]
        missing = [p for p in mine if p[1] not in said]
        if missing:
            print(f"  {name}: no judgment for {len(missing)} of {len(mine)} lessons")
        for e in said.values():
            sources[e.source] = sources.get(e.source, 0) + 1
        verdict = {p: said[p[1]].verdict if p[1] in said else "not used" for p in mine}
        applied[name] = counts([verdict[p] == "applied" for p in mine],
                               [labels[p] == "applied" for p in mine])  # fmt: skip
        either[name] = counts([verdict[p] != "not used" for p in mine],
                              [labels[p] != "not used" for p in mine])  # fmt: skip
    print(f"\nextraction path, {len(pairs)} pairs; requests per session: "
          f"{sorted(set(requests.values()))}; judgments by source: {sources}")  # fmt: skip
    figures = {"applied": bootstrap(applied), "applied_or_contradicted": bootstrap(either)}
    show("applied", figures["applied"])
    show("applied or contradicted (any verdict but not used)", figures["applied_or_contradicted"])
    figures["requests"] = requests
    figures["sources"] = sources
    return figures


def _count(home: Path) -> int:
    from memlog.eventlog.log import EventLog

    return sum(1 for _ in EventLog(home).read())


def _events_since(home: Path, skip: int) -> list[Any]:
    from memlog.eventlog.log import EventLog

    return [r.event for n, r in enumerate(EventLog(home).read()) if n >= skip]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    labels, quotes, records = load()
    with tempfile.TemporaryDirectory(prefix="memlog-bench-influence-") as tmp:
        home = Path(tmp) / "memory"
        os.environ.update({"MEMLOG_HOME": str(home), "MEMLOG_EMBEDDING_PROVIDER": "hashing",
                           "MEMLOG_KEYWORD_PROVIDER": "local"})  # fmt: skip
        from memlog.api.capturing import import_files
        from memlog.workspace import Workspace

        sys.path.insert(0, str(HERE / "retrieval"))
        from labelsets import corpus_files  # noqa: PLC0415

        import_files(Workspace.at(None, home=home), corpus_files(CORPUS))
        figures = {"local": local(home, labels, records),
                   "extraction": extraction_path(home, labels, quotes, records)}  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
