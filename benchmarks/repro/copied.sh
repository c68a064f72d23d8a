#!/usr/bin/env bash
# A copied home: cp -a A C after A synced; A observes and syncs; C observes and syncs.
set -u
M=${MEMLOG:-memlog}
T=$(mktemp -d); cd "$T"
export MEMLOG_EMBEDDING_PROVIDER=hashing MEMLOG_EXTRACTION_PROVIDER=off MEMLOG_RESIDENT_MINUTES=0 HOME=$T/h
git init -q --bare remote.git
A=$T/A C=$T/C
MEMLOG_HOME=$A $M observe --name "Shared" --description "A lesson both homes hold." --category patterns >/dev/null
MEMLOG_HOME=$A $M sync --init $T/remote.git >/dev/null 2>&1
cp -a $A $C
MEMLOG_HOME=$A $M observe --name "From A" --description "A lesson written on A after the copy." --category patterns >/dev/null
MEMLOG_HOME=$A $M sync >/dev/null 2>&1
MEMLOG_HOME=$C $M observe --name "From C" --description "A lesson written on C after the copy." --category patterns 2>&1 | sed 's/^/C observe: /'
MEMLOG_HOME=$C $M sync 2>&1 | sed 's/^/C sync: /'
MEMLOG_HOME=$A $M sync 2>&1 | sed 's/^/A sync: /'
for h in A C; do
  echo "$h list: $(MEMLOG_HOME=$T/$h $M list --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d if isinstance(d,list) else d.get("entries",d); print(sorted((e["name"], e.get("observation_count", e.get("count"))) for e in d))')"
  MEMLOG_HOME=$T/$h $M verify 2>&1 | tail -1 | sed "s/^/$h verify: /"
done
grep -h "Observation count" $C/*.md $C/*/*.md $C/*/*/*.md 2>/dev/null | sort | uniq -c
rm -rf "$T"
