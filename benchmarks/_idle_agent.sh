#!/bin/sh
# The smallest xcsh-style RPC agent there is, for benchmarks of many idle sessions: a
# dash process of ~1 MiB with no interpreter behind it. It says `ready` (naming its
# version), answers every command with success (get_state: not streaming) and exits when
# its stdin ends. `--version` prints the version. Only shell built-ins run per line.
case "$1" in --version) echo 0.0.1; exit 0 ;; esac
printf '%s\n' '{"type":"ready","version":"0.0.1"}'
while IFS= read -r line; do
    case "$line" in *'"id":"'*) id=${line#*\"id\":\"}; id=${id%%\"*} ;; *) id= ;; esac
    case "$line" in
    *'"type":"get_state"'*)
        printf '%s\n' "{\"type\":\"response\",\"command\":\"get_state\",\"success\":true,\"id\":\"$id\",\"data\":{\"isStreaming\":false}}" ;;
    *'"type":"extension_ui_response"'*) ;;
    *) printf '%s\n' "{\"type\":\"response\",\"success\":true,\"id\":\"$id\"}" ;;
    esac
done
