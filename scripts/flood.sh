#!/usr/bin/env bash
# Flood benchmark (issue #10): one anonymous client parks many slow calls.
#
# Builds `examples/conformance_server` (release) and the `flood` bench,
# starts the server on 127.0.0.1:0 (MemoryTaskStore, default limits), runs
# `benches/flood.rs` against it with the server's PID, prints the summary,
# and stops the server on exit. Results: BENCHMARKS.md, "Flood".
#
# Usage:
#   scripts/flood.sh                      # 20,000 calls, 256 in flight
#   FLOOD_CALLS=2000 scripts/flood.sh     # a quicker run
#
# Environment:
#   FLOOD_CALLS           tools/call requests to send (20000)
#   FLOOD_CONCURRENCY     calls in flight at once (256)
#   FLOOD_TIMEOUT_MS      client timeout of one call; the client then hangs
#                         up, which cancels a call kept synchronous (3000)
#   FLOOD_SECONDS         slow_compute's `seconds`, long enough that every
#                         parked call is still running at the end (600)
#   FLOOD_MAX_RUN_SECS    hard limit of the flood itself (600)
#   FLOOD_SETTLE_SECS     how long to keep watching the server afterwards,
#                         while it holds the parked calls (10)
#   SERVER_START_TIMEOUT  seconds to wait for the server's URL (60)
#   CARGO_TARGET_DIR      respected when locating the built binaries
#
# The binaries are copied to a temporary folder before the run, so a build
# in a shared target folder cannot replace them mid-run. The server's log
# is shown if it fails to start. Exits 2 on a setup error.
set -euo pipefail

FLOOD_CALLS="${FLOOD_CALLS:-20000}"
FLOOD_CONCURRENCY="${FLOOD_CONCURRENCY:-256}"
FLOOD_TIMEOUT_MS="${FLOOD_TIMEOUT_MS:-3000}"
FLOOD_SECONDS="${FLOOD_SECONDS:-600}"
FLOOD_MAX_RUN_SECS="${FLOOD_MAX_RUN_SECS:-600}"
FLOOD_SETTLE_SECS="${FLOOD_SETTLE_SECS:-10}"
SERVER_START_TIMEOUT="${SERVER_START_TIMEOUT:-60}"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf 'flood.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }
# shellcheck source=lib/start-server.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/start-server.sh"

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi

use_work_dir flood

# --- Build (before the server starts, so the build does not compete) --------

cd "$REPO"
log "building example conformance_server and bench flood (release)"
cargo build --release --example conformance_server >&2
target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" == /* ]] || target_dir="$REPO/$target_dir"
server_bin="$target_dir/release/examples/conformance_server"
[[ -x "$server_bin" ]] || die "built example not found at $server_bin"
cp "$server_bin" "$WORK/conformance_server"

flood_bin="$(cargo bench --bench flood --no-run --message-format=json \
  | grep -o '"executable":"[^"]*"' | tail -n 1 | cut -d'"' -f4 || true)"
[[ -n "$flood_bin" && -x "$flood_bin" ]] || die "could not build the flood bench"
cp "$flood_bin" "$WORK/flood"

# --- Start the server ----------------------------------------------------------

server_log="$WORK/server.log"
start_server "$WORK/conformance_server" "$server_log"
log "conformance_server (PID $SERVER_PID) listening at $URL"
log "fd limit (ulimit -n): $(ulimit -n); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

# --- Flood -----------------------------------------------------------------------

rc=0
"$WORK/flood" "$URL" "$SERVER_PID" \
  --calls "$FLOOD_CALLS" \
  --concurrency "$FLOOD_CONCURRENCY" \
  --timeout-ms "$FLOOD_TIMEOUT_MS" \
  --seconds "$FLOOD_SECONDS" \
  --max-run-secs "$FLOOD_MAX_RUN_SECS" \
  --settle-secs "$FLOOD_SETTLE_SECS" || rc=$?

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  log "conformance_server is no longer running; last lines of its log:"
  tail -n 40 "$server_log" >&2 || true
  rc=1
fi
exit "$rc"
