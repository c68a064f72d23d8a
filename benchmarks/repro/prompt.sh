#!/usr/bin/env bash
# A damaged memory.db met by the prompt hook, then catch-up and verify.
set -u
source "$(dirname "$0")/damaged-home.sh"
echo "prompt: $(echo '{"session_id":"s2","cwd":"'$T/proj'","hook_event_name":"UserPromptSubmit","prompt":"how should the parser keep the cache apart from the lock when it retries"}' | $M hook user-prompt 2>$T/h.err | head -c 300); stderr: $(head -c 300 $T/h.err)"
echo "catch-up: $($M catch-up 2>&1 | tr '\n' '|') exit $?"
echo "verify: $($M verify 2>&1 | tail -1)"
rm -rf "$T"
