#!/usr/bin/env bash
# A clock a year behind: B (365 days behind) joins A's remote with the right key; then a third home C.
set -u
M=${MEMLOG:-memlog}
T=$(mktemp -d); cd "$T"; mkdir shim
cat > shim/sitecustomize.py <<'PY'
import os, time
_s = float(os.environ.get("SKEW", "0") or 0)
if _s:
    _t, _n = time.time, time.time_ns
    time.time = lambda: _t() + _s
    time.time_ns = lambda: _n() + int(_s * 1e9)
PY
export MEMLOG_EMBEDDING_PROVIDER=hashing MEMLOG_EXTRACTION_PROVIDER=off MEMLOG_RESIDENT_MINUTES=0 HOME=$T/h
git init -q --bare remote.git
A=$T/A B=$T/B C=$T/C
for i in 1 2 3; do MEMLOG_HOME=$A $M observe --name "A$i" --description "Lesson $i written on A." --category patterns >/dev/null; done
MEMLOG_HOME=$A $M sync --init $T/remote.git >/dev/null 2>&1
KEY=$(MEMLOG_HOME=$A $M sync --print-key)
behind() { SKEW=-31536000 PYTHONPATH=$T/shim MEMLOG_HOME=$B "$M" "$@"; }
behind observe --name "B1" --description "Lesson written on B, a year behind." --category patterns >/dev/null
behind sync --init $T/remote.git --key "$KEY" 2>&1 | sed 's/^/B sync --init: /'
echo "remote files after B's join: $(git -C remote.git ls-tree -r --name-only memlog | wc -l)"
MEMLOG_HOME=$A $M observe --name "A4" --description "Lesson 4 written on A after B joined." --category patterns >/dev/null
MEMLOG_HOME=$A $M sync 2>&1 | sed 's/^/A sync: /'
behind sync 2>&1 | sed 's/^/B sync: /'
MEMLOG_HOME=$C $M sync --init $T/remote.git --key "$KEY" 2>&1 | sed 's/^/C sync --init: /'
behind sync --status 2>&1 | tail -2 | sed 's/^/B status: /'
for h in A B C; do
  n=$(MEMLOG_HOME=$T/$h SKEW=$([ $h = B ] && echo -31536000 || echo 0) PYTHONPATH=$T/shim $M list --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d if isinstance(d,list) else d.get("entries",d); print(sorted(e["name"] for e in d))')
  echo "$h: $n; $(MEMLOG_HOME=$T/$h $M verify 2>&1 | tail -1)"
done
rm -rf "$T"
