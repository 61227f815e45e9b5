#!/usr/bin/env bash
# Measures the operator's console: time to a live table with 10,000 tasks
# in the store, frame gaps in the browser while 100 tasks change a second,
# and the memory the server's change feeds hold with 10 consoles open.
#
# Usage: scripts/console-bench.sh [TASKS] [CHANGES_PER_SECOND] [CONSOLES]
#        (defaults 10000 100 10)
#
# Builds and starts `gateway/examples/console_load.rs` (release), drives the
# page with tests/clients/console-browser/drive.mjs (mode `load`, through
# scripts/console-browser.sh: Debian's chromium and playwright-core), then
# opens CONSOLES feeds with curl and reads the server's resident memory
# (VmRSS) before and after, while the changes go on. Prints one line per
# figure. Exits 2 on a setup error.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
TASKS="${1:-10000}"
RATE="${2:-100}"
CONSOLES="${3:-10}"
TOKEN="console-bench-credential-$$"
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

cd "$REPO"
cargo build --release -q -p mcp-tasks-gateway --example console_load
MCP_TASKS_CONSOLE_TOKEN="$TOKEN" target/release/examples/console_load "$TASKS" "$RATE" >"$WORK/server.out" &
for _ in $(seq 1 600); do
  grep -q '^pid ' "$WORK/server.out" 2>/dev/null && break
  sleep 0.1 # waiting for the example to fill its store and print its address
done
URL="$(sed -n 's/^console on //p' "$WORK/server.out")"
PID="$(sed -n 's/^pid //p' "$WORK/server.out")"
[[ -n "$URL" && -n "$PID" ]] || die "console_load did not start"
echo "console_load: $TASKS tasks, $RATE changes/s, at $URL (commit $(git rev-parse --short HEAD))"

rss() { awk '/VmRSS/ {print $2}' "/proc/$PID/status"; }

CONSOLE_URL="$URL" CONSOLE_TOKEN="$TOKEN" SHOT="$WORK/load.png" \
  bash scripts/console-browser.sh tests/clients/console-browser/drive.mjs load </dev/null

BEFORE="$(rss)"
for n in $(seq 1 "$CONSOLES"); do
  curl -sN -H "Authorization: Bearer $TOKEN" "$URL/api/feed" >"$WORK/feed-$n.out" &
done
sleep 10 # ten seconds of changes through every open feed
AFTER="$(rss)"
BYTES="$(cat "$WORK"/feed-*.out | wc -c)"
echo "feeds: $CONSOLES open for 10 s, server RSS ${BEFORE} kB -> ${AFTER} kB ($(((AFTER - BEFORE) / CONSOLES)) kB a console), $BYTES bytes sent"
