"""Judges' grades back into a label set: check a grades file, import one or more.

    python benchmarks/retrieval/labels.py check SET FILE
    python benchmarks/retrieval/labels.py import SET FILE [FILE …] --name LABELS

A grades file (the format the pool file's header gives judges) has one line
per pooled item, ``QUERY ITEM GRADE`` (``Q07 13 2``), grade 0, 1 or 2;
blank lines and ``#`` lines are ignored.  ``check`` says what is missing,
repeated, unknown or malformed, and exits 1 if anything is.  ``import``
maps the items through the set's key (``pool-key.jsonl``) to entry ids and
writes ``sets/SET/labels/LABELS.jsonl``, one row per judged (query,
entry), zeros included.  With several files (several judges), it prints
their agreement (exact share and Cohen's kappa, weighted linearly) and
keeps the median grade of each item (the lower of the two middle ones).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labelsets  # noqa: E402

Grades = dict[tuple[str, int], int]


class Problems(Exception):
    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def read_key(labelset: labelsets.LabelSet) -> dict[str, dict[str, object]]:
    if not labelset.key_file.exists():
        raise Problems([f"{labelset.name}: no pool key ({labelset.key_file}); pool the set first"])
    rows = list(labelsets.read_jsonl(labelset.key_file))[1:]
    return {str(row["query"]): row for row in rows}


def parse(text: str, key: dict[str, dict[str, object]]) -> tuple[Grades, list[str]]:
    """The grades of a file, and every problem found (missing items included)."""
    grades: Grades = {}
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit() or parts[2] not in ("0", "1", "2"):
            problems.append(
                f"line {number}: expected 'QUERY ITEM GRADE' (grade 0, 1 or 2): {raw!r}"
            )
            continue
        query, item, grade = parts[0], int(parts[1]), int(parts[2])
        items = key.get(query, {}).get("items", {})
        if str(item) not in items:  # type: ignore[operator]
            problems.append(f"line {number}: {query} has no item {item}")
        elif (query, item) in grades:
            problems.append(f"line {number}: {query} item {item} graded again")
        else:
            grades[(query, item)] = grade
    for query, entry in key.items():
        missing = [int(i) for i in entry["items"] if (query, int(i)) not in grades]  # type: ignore[union-attr]
        if missing:
            problems.append(f"{query}: {len(missing)} items without a grade: {sorted(missing)}")
    return grades, problems


def load(path: Path, key: dict[str, dict[str, object]]) -> Grades:
    grades, problems = parse(path.read_text(encoding="utf-8"), key)
    if problems:
        raise Problems([f"{path}: {p}" for p in problems])
    return grades


def kappa(first: Grades, second: Grades) -> float:
    """Cohen's kappa with linear weights over the items both graded."""
    items = sorted(set(first) & set(second))
    if not items:
        return float("nan")
    pairs = [(first[i], second[i]) for i in items]
    left, right = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    n = len(pairs)
    observed = sum(abs(a - b) for a, b in pairs) / n
    expected = sum(left[a] * right[b] * abs(a - b) for a in range(3) for b in range(3)) / n / n
    return 1.0 - observed / expected if expected else 1.0


def merged(all_grades: list[Grades]) -> Grades:
    """Each item's median grade (the lower middle one for an even count)."""
    out: Grades = {}
    for item in all_grades[0]:
        values = sorted(g[item] for g in all_grades)
        out[item] = values[(len(values) - 1) // 2]
    return out


def rows(
    grades: Grades, key: dict[str, dict[str, object]], corpus: dict[str, object]
) -> list[dict[str, object]]:
    found = []
    for (query, item), grade in sorted(grades.items()):
        entry_id = key[query]["items"][str(item)]  # type: ignore[index]
        parsed = corpus.get(entry_id)
        found.append({
            "qid": key[query]["qid"], "id": entry_id, "grade": grade,
            "entry_name": getattr(parsed, "name", ""), "category": getattr(parsed, "category", ""),
        })  # fmt: skip
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="check a grades file against the set's pool")
    check.add_argument("set")
    check.add_argument("file", type=Path)
    take = sub.add_parser("import", help="write the set's labels from grades files")
    take.add_argument("set")
    take.add_argument("files", type=Path, nargs="+")
    take.add_argument("--name", required=True, help="the labels' name, e.g. s1-pooled")
    args = parser.parse_args()
    labelset = labelsets.load_set(labelsets.SETS / args.set)
    try:
        key = read_key(labelset)
        if args.command == "check":
            grades = load(args.file, key)
            print(f"{args.file}: {len(grades)} grades, every item of {len(key)} queries: ok")
            return 0
        judged = [load(path, key) for path in args.files]
    except Problems as exc:
        print("\n".join(exc.lines), file=sys.stderr)
        return 1
    for n in range(1, len(judged)):
        same = sum(judged[0][i] == judged[n][i] for i in judged[0]) / len(judged[0])
        print(f"{args.files[0].name} / {args.files[n].name}: {same:.1%} the same grade, "
              f"kappa {kappa(judged[0], judged[n]):.3f}")  # fmt: skip
    corpus: dict[str, object] = dict(labelsets.corpus_entries(labelset.corpus))
    out = labelset.folder / "labels" / f"{args.name}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    written = rows(merged(judged), key, corpus)
    out.write_text("".join(json.dumps(r) + "\n" for r in written), encoding="utf-8")
    counts = Counter(int(r["grade"]) for r in written)  # type: ignore[call-overload]
    print(f"{out}: {len(written)} labels (grade 2: {counts[2]}, 1: {counts[1]}, 0: {counts[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
