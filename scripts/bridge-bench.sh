#!/usr/bin/env bash
# The generation bridge's cost: a fast call to the official Python SDK 1.30
# server (protocol 2025-11-25) direct in a session, through the gateway in a
# session (passed as it is), and as a 2026-07-28 request through the
# gateway's bridge, in alternating rounds (scripts/interop/bridge_latency.py),
# and the gateway's resident memory after the run; then the memory a
# waiting input round holds: ROUNDS_WAITING calls (default 100, below the
# gateway's 128 connections from one address) whose server asks a
# question, all waiting at once for their retry
# (scripts/interop/bridge_rounds.py).
#
# Usage:
#   scripts/bridge-bench.sh [CALLS] [ROUNDS]     # default 200 calls, 5 rounds
#
# Builds the gateway in release mode (CARGO_TARGET_DIR is respected); installs the Python SDK 1.30 into the
# cache the first time (scripts/client-python1.sh).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"

WORK="$(mktemp -d)"
cleanup() {
  kill "${GATEWAY_PID:-}" "${UPSTREAM_PID:-}" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# announced FILE TENTHS: the URL of the `listening on URL` line FILE gets
# within TENTHS tenths of a second.
announced() {
  for _ in $(seq 1 "$2"); do
    grep -q "listening on" "$1" 2>/dev/null && break
    sleep 0.1
  done
  grep -o 'http://[^ ]*' "$1"
}

(cd "$REPO" && cargo build --release --quiet -p mcp-tasks-gateway --bin mcp-tasks-gateway)
bash "$REPO/scripts/upstream-python1.sh" 127.0.0.1:0 >"$WORK/upstream.out" 2>"$WORK/upstream.err" &
UPSTREAM_PID=$!
UPSTREAM="$(announced "$WORK/upstream.out" 600)" || die "the upstream did not start"
"${CARGO_TARGET_DIR:-$REPO/target}/release/mcp-tasks-gateway" --listen 127.0.0.1:0 --upstream "$UPSTREAM" \
  >"$WORK/gateway.out" 2>"$WORK/gateway.err" &
GATEWAY_PID=$!
GATEWAY="$(announced "$WORK/gateway.out" 100)" || die "the gateway did not start"
log "upstream $UPSTREAM, gateway $GATEWAY ($(git -C "$REPO" rev-parse --short HEAD))"
bash "$REPO/scripts/client-python1.sh" "$REPO/scripts/interop/bridge_latency.py" \
  "$UPSTREAM" "$GATEWAY" "${1:-200}" "${2:-5}"
echo "gateway RSS after the run: $(awk '/VmRSS/ {print $2, $3}' "/proc/$GATEWAY_PID/status")"
echo "upstream sessions the gateway opened: $(grep -c 'opened an upstream session' "$WORK/gateway.err" || true)"
bash "$REPO/scripts/client-python1.sh" "$REPO/scripts/interop/bridge_rounds.py" \
  "$GATEWAY" "$GATEWAY_PID" "${ROUNDS_WAITING:-100}"
echo "upstream sessions the gateway opened in all: $(grep -c 'opened an upstream session' "$WORK/gateway.err" || true)"
