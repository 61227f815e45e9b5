#!/usr/bin/env bash
# Run a Python script with FastMCP's own client and its tasks extension
# (PyPI `fastmcp[tasks]` 4.1.4, the official Python SDK 2.3 inside: a client
# of protocol 2026-07-28), as the users of that generation run it.
#
# Usage:
#   scripts/client-fastmcp.sh SCRIPT [ARGS...]
#   e.g. scripts/client-fastmcp.sh tests/upstreams/python-tasks/bridge_client.py http://127.0.0.1:8080/mcp
#
# Environment:
#   MCP_TASKS_CACHE       cache folder (default: <repo>/.cache, git-ignored);
#                         the packages go into the venv that
#                         `scripts/upstream-python.sh --tasks` uses,
#                         python-tasks-<version>, the first time
#
# Needs python3 (3.11 or newer) with venv, and PyPI the first time.
# Exits 2 on a setup error; otherwise with the script's status.
set -euo pipefail

FASTMCP_VERSION="4.1.4"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
VENV="$CACHE/python-tasks-$FASTMCP_VERSION"

# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
(($# >= 1)) || die "usage: $(basename "$0") SCRIPT [ARGS...] (see --help)"

python_venv "$VENV" "$CACHE/python-upstream.lock" \
  -c "$REPO/tests/upstreams/python-tasks/constraints.txt" "fastmcp[tasks]==$FASTMCP_VERSION"
exec "$VENV/bin/python" "$@"
