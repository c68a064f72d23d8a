#!/usr/bin/env bash
# A damaged memory.db met by list, a SessionStart, catch-up and verify.
set -u
source "$(dirname "$0")/damaged-home.sh"
echo "list: exit $($M list --limit 2 >$T/l.out 2>&1; echo $?): $(head -c 200 $T/l.out | tr '\n' '|')"
echo "start: $(echo '{"session_id":"s1","cwd":"'$T/proj'","hook_event_name":"SessionStart","source":"startup"}' | $M hook session-start 2>$T/h.err | python3 -c 'import json,sys; d=json.load(sys.stdin); c=d.get("hookSpecificOutput",{}).get("additionalContext",""); print(len(c), "chars,", c.count("Lesson "), "lessons named")'); stderr: $(head -c 300 $T/h.err)"
echo "catch-up: $($M catch-up 2>&1 | tr '\n' '|') exit $?"
echo "verify: $($M verify 2>&1 | tail -1)"
rm -rf "$T"
