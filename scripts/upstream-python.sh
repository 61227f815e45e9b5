#!/usr/bin/env bash
# Start the Python upstream fixture: an ordinary MCP server built with
# FastMCP (PyPI `fastmcp`, 4.2.3, on the official SDK `mcp` 2.3.0) that
# knows nothing about tasks, for the gateway to put `TasksLayer` in front of.
# It serves the conformance suite's tools (greet, slow_compute, failing_job,
# protocol_error_job, confirm_delete, multi_input, test_tool_with_task) on
# protocol 2026-07-28 (stateless) and 2025-11-25 (sessions) at one URL.
#
# With --tasks, the upstream with tasks of its own instead: FastMCP with its
# tasks extension (`fastmcp[tasks]`, 4.1.4, the newest fastmcp-tasks;
# in-memory Docket backend), whose tools `research` and `approve` run only
# as tasks (SEP-2663, protocol 2026-07-28), from tests/upstreams/python-tasks/.
#
# Usage:
#   scripts/upstream-python.sh HOST:PORT          # port 0 picks a free port
#   scripts/upstream-python.sh --stdio            # over stdin and stdout (for the gateway's -- COMMAND)
#   scripts/upstream-python.sh --tasks HOST:PORT  # the server with tasks of its own
#
# Prints `listening on http://HOST:PORT/mcp` (the real port) on stdout once
# it accepts connections; logs go to stderr, among them `slow_compute
# started|finished|cancelled label=...`. The fixture is exec'd, so the
# script's PID is the server's: SIGTERM or Ctrl-C stops it.
# Source: tests/upstreams/python/fixture.py; a raw-wire check of every tool
# on both generations: tests/upstreams/python/check_wire.py.
#
# Environment:
#   MCP_TASKS_CACHE       cache folder (default: <repo>/.cache, git-ignored);
#                         the packages are installed into a venv there,
#                         python-upstream-<fastmcp version> (with --tasks:
#                         python-tasks-<version>), the first time
#
# Needs python3 (3.11) with venv, and PyPI the first time (the install
# takes 20-50 s; later starts about 2 s).
# Exits 2 on a setup error.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"

# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
if [[ "${1:-}" == "--tasks" ]]; then
  shift
  FASTMCP_VERSION="4.1.4"
  PACKAGE="fastmcp[tasks]"
  VENV="$CACHE/python-tasks-$FASTMCP_VERSION"
  FIXTURE_DIR="$REPO/tests/upstreams/python-tasks"
else
  FASTMCP_VERSION="4.2.3"
  PACKAGE="fastmcp"
  VENV="$CACHE/python-upstream-$FASTMCP_VERSION"
  FIXTURE_DIR="$REPO/tests/upstreams/python"
fi
(($# == 1)) || die "usage: $(basename "$0") [--tasks] HOST:PORT | --stdio (see --help)"

command -v python3 >/dev/null || die "python3 not found"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || die "fastmcp $FASTMCP_VERSION needs Python 3.11 or newer; python3 is $(python3 --version 2>&1)"
# One install at a time: tests start several upstreams at once.
python_venv "$VENV" "$CACHE/python-upstream.lock" \
  -c "$FIXTURE_DIR/constraints.txt" "$PACKAGE==$FASTMCP_VERSION"
exec "$VENV/bin/python" "$FIXTURE_DIR/fixture.py" "$1"
