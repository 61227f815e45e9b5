#!/usr/bin/env bash
# A real third-party client against the layer: the official Python MCP SDK
# (PyPI `mcp`, 2.3.0, protocol 2026-07-28) calls the fast `greet`, then
# `slow_compute` on `examples/conformance_server` with a progress callback,
# once below the threshold (0.45 s) and once above it (1.5 s), and prints
# when each progress notification, the task handle and the result arrive.
# `greet` answers with one SSE event, which the layer relays by its bytes
# (flight::direct); the progress events go through the full relay.
#
# With the live SSE relay (issue #11) the progress of both calls arrives
# at about 0, 200 and 400 ms; the second call then gets the task handle on
# the same stream at ~500 ms (the SDK hands it to the tasks extension
# defined in scripts/interop/python_live_sse.py, which polls tasks/get).
#
# Usage:
#   scripts/interop-python.sh
#
# Environment:
#   MCP_TASKS_CACHE       cache folder (default: <repo>/.cache, git-ignored);
#                         the SDK is installed into a venv there
#   SERVER_START_TIMEOUT  seconds to wait for the server's URL (60)
#
# Needs python3 with venv, and PyPI the first time. Exits 2 on a setup error.
set -euo pipefail

SERVER_START_TIMEOUT="${SERVER_START_TIMEOUT:-60}"
SDK_VERSION="2.3.0"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
VENV="$CACHE/python-mcp-$SDK_VERSION"

# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=lib/start-server.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/start-server.sh"
help_if_asked "${1:-}"

python_venv "$VENV" "$CACHE/python-mcp.lock" "mcp==$SDK_VERSION"

use_work_dir interop-python
cd "$REPO"
log "building example conformance_server"
cargo build --example conformance_server >&2
target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" == /* ]] || target_dir="$REPO/$target_dir"
cp "$target_dir/debug/examples/conformance_server" "$WORK/conformance_server"

start_server "$WORK/conformance_server" "$WORK/server.log"
log "conformance_server (PID $SERVER_PID) at $URL"
timeout 120 "$VENV/bin/python" "$REPO/scripts/interop/python_live_sse.py" "$URL"
