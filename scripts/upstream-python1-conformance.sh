#!/usr/bin/env bash
# Start the conformance suite's fixtures on the official Python SDK 1.x
# (PyPI `mcp` 1.30.0): an ordinary server of protocol 2025-11-25 and older,
# with sessions, no tasks and no 2026-07-28, exposing every tool, prompt
# and resource the suite's server scenarios call by name (including the
# tasks extension's greet, slow_compute, failing_job, protocol_error_job,
# confirm_delete, multi_input, test_tool_with_task). Where a scenario wants
# an MRTR `input_required` result, it asks the client with a real request
# in its session (elicitation/create, sampling/createMessage, roots/list).
# Source and the full list: tests/upstreams/python1/conformance.py (the
# entry point; the fixture is the package conformance_fixture/ beside it).
#
# Usage:
#   scripts/upstream-python1-conformance.sh HOST:PORT    # port 0 picks a free port
#   scripts/upstream-python1-conformance.sh --port PORT  # on 127.0.0.1
#   scripts/upstream-python1-conformance.sh --stdio      # over stdin and stdout (for the gateway's -- COMMAND)
#
# Prints `listening on http://HOST:PORT/mcp` (the real port) on stdout once
# it accepts connections; logs go to stderr. The server is exec'd, so the
# script's PID is the server's. The SDK is installed, the first time, into
# the venv that scripts/client-python1.sh uses (MCP_TASKS_CACHE, default
# <repo>/.cache).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
exec bash "$REPO/scripts/client-python1.sh" "$REPO/tests/upstreams/python1/conformance.py" "$@"
