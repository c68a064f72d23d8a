#!/usr/bin/env bash
# A home of 265 lessons whose memory.db has 40 KB flipped in its middle after a checkpoint:
# sourced by damaged.sh and prompt.sh, which set nothing before it.
M=${MEMLOG:-memlog}
T=$(mktemp -d); cd "$T"; mkdir proj
export MEMLOG_EMBEDDING_PROVIDER=hashing MEMLOG_EXTRACTION_PROVIDER=off MEMLOG_RESIDENT_MINUTES=0 HOME=$T/h MEMLOG_HOME=$T/home
python3 - "$T/rows.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(265):
        f.write(json.dumps({"name": f"Lesson {i}", "description": f"Lesson {i}: keep the cache {i} apart from lock {i*7} when the parser retries {'x'*200}", "category": "patterns"}) + "\n")
PY
$M observe --from rows.jsonl >/dev/null 2>&1
python3 - "$T/home/memory.db" <<'PY'
import sqlite3, sys
p = sys.argv[1]
with sqlite3.connect(p) as db: db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
d = bytearray(open(p, "rb").read()); m = len(d) // 2
for i in range(m, min(m + 40960, len(d))): d[i] ^= 0xFF
open(p, "wb").write(bytes(d)); print(f"memory.db: {len(d)} bytes, 40 KB flipped at {m}")
PY
