#!/usr/bin/env bash
# Start an upstream on the official Python SDK 1.x (PyPI `mcp` 1.30.0):
# protocol 2025-11-25 and older, sessions, no tasks, no 2026-07-28, as most
# servers people run today. Its tools `greet` and `slow` (progress every
# 200 ms) are in tests/upstreams/python1/server.py.
#
# Usage:
#   scripts/upstream-python1.sh HOST:PORT              # port 0 picks a free port
#   scripts/upstream-python1.sh --stateless HOST:PORT  # no sessions (stateless_http)
#   scripts/upstream-python1.sh --stdio                # over stdin and stdout
#
# Prints `listening on http://HOST:PORT/mcp` (the real port) on stdout once
# it accepts connections; the server is exec'd, so the script's PID is the
# server's. The SDK is installed, the first time, into the venv that
# scripts/client-python1.sh uses (MCP_TASKS_CACHE, default <repo>/.cache).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec bash "$REPO/scripts/client-python1.sh" "$REPO/tests/upstreams/python1/server.py" "$@"
