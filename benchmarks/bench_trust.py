"""What the scan of lessons holds: injection payloads (should all be held) and real lessons
(should all pass), per rule, style and intent, tuned and held-out parts apart.

    python benchmarks/bench_trust.py [--fixtures DIR] [--json] [--show-held]

Every text goes through the door it would take: a payload is an observation
(``memlog observe``, the MCP server: ``capture.observe.to_event``, secrets
redacted as the log does), a real lesson is what ``memlog import`` makes of
its knowledge bank (``capture.importer``), and each is scanned as the log's
append scans it (``eventlog.steering.observed_fields``).

* payloads: ``benchmarks/trust/payloads.jsonl`` (``make_corpus.py``); the
  rules were tuned on the ``tune`` part only, ``held-out`` is reported apart;
* real lessons: every entry of the knowledge banks under ``--fixtures``
  (default: ``tests/support.py``'s ``FIXTURES``); the rules were tuned
  against the largest bank (``knowledge-bank-08a38d02``) only, the others
  are held out;
* benign: ``benchmarks/trust/benign.jsonl``, lessons written to be hard for
  the scan (curl, URLs, secrets, "ignore", prompts): where the edges are.

Shares are given with a 95 % Wilson interval.  ``--show-held`` lists every
real or benign lesson held and every payload let through, with the hit.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

from memlog.capture.importer import markdown_files, plan_import  # noqa: E402
from memlog.capture.observe import ObservationInput, to_event  # noqa: E402
from memlog.eventlog.events import Observed  # noqa: E402
from memlog.eventlog.secrets import redact_batch  # noqa: E402
from memlog.eventlog.steering import RULES, Hit, observed_fields, scan  # noqa: E402

CORPUS = HERE / "trust"
#: the bank the rules were tuned against; every other bank is held out
TUNED_BANK = "knowledge-bank-08a38d02"


def default_fixtures() -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from support import FIXTURES  # type: ignore[import-not-found]

    return Path(FIXTURES)


def wilson(hits: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson interval of ``hits`` in ``total``."""
    if not total:
        return (0.0, 0.0)
    share = hits / total
    middle = (share + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total))
    half /= 1 + z * z / total
    return (max(0.0, middle - half), min(1.0, middle + half))


def share(hits: int, total: int) -> dict[str, Any]:
    low, high = wilson(hits, total)
    return {
        "held": hits, "of": total, "share": round(hits / total, 4) if total else 0.0,
        "interval": [round(low, 4), round(high, 4)],
    }  # fmt: skip


def observation(fields: dict[str, Any]) -> Observed:
    """A payload as the observe door makes it (validated, secrets redacted)."""
    item = ObservationInput(
        name=fields.get("name") or "x", description=fields["description"], category="heuristics",
        reasoning=fields.get("reasoning", ""), keywords=list(fields.get("keywords", [])),
        references=list(fields.get("references", [])),
    )  # fmt: skip
    return redact_batch([to_event(item)])[0]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def real_lessons(fixtures: Path) -> dict[str, list[Observed]]:
    """Every lesson of each knowledge bank under ``fixtures``, as ``memlog import`` makes it."""
    found = {}
    for bank in sorted(fixtures.glob("knowledge-bank-*")):
        plan = plan_import(markdown_files([bank]), {}, bank.name)
        found[bank.name] = [e for e in plan.events if isinstance(e, Observed)]
    return found


class Scanned:
    def __init__(self) -> None:
        self.seconds: list[float] = []

    def hits(self, event: Observed) -> list[Hit]:
        began = time.perf_counter()
        found = scan(observed_fields(event))
        self.seconds.append(time.perf_counter() - began)
        return found


def per_rule(hits: Iterable[list[Hit]]) -> dict[str, int]:
    counted: Counter[str] = Counter()
    for found in hits:
        counted.update({h.rule for h in found})
    return {rule: counted[rule] for rule in RULES}


def payload_report(rows: list[dict[str, Any]], scanned: Scanned) -> dict[str, Any]:
    hits = {row["id"]: scanned.hits(observation(row["entry"])) for row in rows}
    groups: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        for key in ("all", f"part:{row['part']}", f"style:{row['style']}",
                    f"intent:{row['intent']}"):  # fmt: skip
            groups[key].append(row["id"])
    return {
        "groups": {
            k: share(sum(bool(hits[i]) for i in ids), len(ids)) for k, ids in groups.items()
        },
        "per_rule": per_rule(hits.values()),
        "alone": per_rule(h for h in hits.values() if len(h) == 1),
        "missed": [row for row in rows if not hits[row["id"]]],
    }


def lesson_report(events: Sequence[Observed], scanned: Scanned) -> dict[str, Any]:
    hits = [scanned.hits(e) for e in events]
    return {
        **share(sum(bool(h) for h in hits), len(events)),
        "per_rule": per_rule(hits),
        "listed": [(e.name, [tuple(h) for h in found]) for e, found in zip(events, hits,
                                                                            strict=True) if found],
    }  # fmt: skip


def append_cost(events: Sequence[Observed], rounds: int = 5) -> dict[str, float]:
    """What the scan adds to appending ``events`` as one batch (the door of ``memlog
    import``): medians of ``rounds`` alternating appends to fresh homes, scanned and not."""
    import tempfile

    from memlog.eventlog.log import EventLog

    took: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as scratch:
        for n in range(rounds):
            for screen in (True, False):
                log = EventLog(Path(scratch) / f"{n}-{screen}", screen=screen)
                began = time.perf_counter()
                log.append(list(events))
                took[screen].append(time.perf_counter() - began)
    scanned, plain = (statistics.median(took[s]) for s in (True, False))
    return {"scanned_s": round(scanned, 3), "unscanned_s": round(plain, 3),
            "ratio": round(scanned / plain, 2)}  # fmt: skip


def one_append_cost(events: Sequence[Observed]) -> dict[str, float]:
    """What the scan adds to appending one lesson (the door of ``memlog observe`` and
    ``store_memory``): medians over ``events``, each appended alone to one log scanned and
    to another not, in alternation."""
    import tempfile

    from memlog.eventlog.log import EventLog

    took: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as scratch:
        logs = {screen: EventLog(Path(scratch) / str(screen), screen=screen)
                for screen in (True, False)}  # fmt: skip
        for event in events:
            for screen, log in logs.items():
                began = time.perf_counter()
                log.append([event])
                took[screen].append(time.perf_counter() - began)
    scanned, plain = (statistics.median(took[s]) for s in (True, False))
    return {"appends": len(events), "scanned_ms": round(scanned * 1000, 3),
            "unscanned_ms": round(plain * 1000, 3), "ratio": round(scanned / plain, 2)}  # fmt: skip


def run(fixtures: Path, costs: bool = True) -> dict[str, Any]:
    """The figures; ``costs`` off: without what the scan adds to appends (the slow part)."""
    scanned = Scanned()
    payloads = payload_report(read_jsonl(CORPUS / "payloads.jsonl"), scanned)
    banks = real_lessons(fixtures)
    real = {name: lesson_report(events, scanned) for name, events in banks.items()}
    every = [e for events in banks.values() for e in events]
    held_out = [e for name, events in banks.items() if name != TUNED_BANK for e in events]
    benign_rows = read_jsonl(CORPUS / "benign.jsonl")
    benign = lesson_report([observation(r["entry"]) for r in benign_rows], scanned)
    report = {
        "payloads": payloads,
        "real": real,
        "real_all": lesson_report(every, Scanned()),
        "real_held_out": lesson_report(held_out, Scanned()),
        "benign": benign,
        "scan_microseconds_median": round(statistics.median(scanned.seconds) * 1e6, 1),
    }
    if costs:
        report["append"] = {"lessons": len(banks[TUNED_BANK]), **append_cost(banks[TUNED_BANK])}
        report["append_one"] = one_append_cost(banks[TUNED_BANK])
    return report


def _pct(figure: dict[str, Any]) -> str:
    low, high = figure["interval"]
    return (
        f"{figure['held']:>3}/{figure['of']:<3} {100 * figure['share']:5.1f} % "
        f"[{100 * low:4.1f}, {100 * high:5.1f}]"
    )


def tuning(report: dict[str, Any]) -> None:
    """Only what the rules may be tuned on: the tune part and the tuned bank."""
    payloads = report["payloads"]
    print(f"tune payloads held {_pct(payloads['groups']['part:tune'])}")
    print(f"tuned bank held    {_pct(report['real'][TUNED_BANK])}")
    for entry, hits in report["real"][TUNED_BANK]["listed"]:
        print(f"HELD {entry!r}: {hits}")
    for row in payloads["missed"]:
        if row["part"] == "tune":
            print(f"MISSED {row['id']}: {json.dumps(row['entry'])[:300]}")


def show(report: dict[str, Any], listed: bool) -> None:
    payloads = report["payloads"]
    print("payloads held (95 % Wilson interval)")
    for key, figure in payloads["groups"].items():
        print(f"  {key:<20} {_pct(figure)}")
    print("  by rule (payloads each rule holds; held by that rule alone):")
    for rule in RULES:
        print(f"    {rule:<20} {payloads['per_rule'][rule]:>4}  {payloads['alone'][rule]:>4}")
    print("real lessons held")
    for name, figure in [*report["real"].items(), ("all banks", report["real_all"]),
                         ("held-out banks", report["real_held_out"])]:  # fmt: skip
        rules = ", ".join(f"{r} {n}" for r, n in figure["per_rule"].items() if n)
        print(f"  {name:<26} {_pct(figure)}  {rules}")
    figure = report["benign"]
    rules = ", ".join(f"{r} {n}" for r, n in figure["per_rule"].items() if n)
    print(f"benign lessons written to be hard {_pct(figure)}  {rules}")
    print(f"scan: median {report['scan_microseconds_median']} µs per lesson")
    cost = report["append"]
    print(
        f"appending the {cost['lessons']} lessons of {TUNED_BANK} as one batch: "
        f"{cost['scanned_s']} s scanned, {cost['unscanned_s']} s not ({cost['ratio']}×)"
    )
    one = report["append_one"]
    print(
        f"appending one lesson ({one['appends']} appends, median): {one['scanned_ms']} ms "
        f"scanned, {one['unscanned_ms']} ms not ({one['ratio']}×)"
    )
    if listed:
        for name, figure in [*report["real"].items(), ("benign", report["benign"])]:
            for entry, hits in figure["listed"]:
                print(f"HELD {name}: {entry!r}: {hits}")
        for row in payloads["missed"]:
            print(f"MISSED {row['id']} ({row['part']}): {json.dumps(row['entry'])[:200]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fixtures", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show-held", action="store_true")
    parser.add_argument(
        "--tuning", action="store_true", help="Show only what rules may be tuned on."
    )
    args = parser.parse_args()
    report = run(args.fixtures or default_fixtures())
    if args.tuning:
        tuning(report)
    elif args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        show(report, args.show_held)


if __name__ == "__main__":
    main()
