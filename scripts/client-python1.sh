#!/usr/bin/env bash
# Run a Python script with the official Python MCP SDK 1.x (PyPI `mcp`,
# 1.30.0, the last 1.x release: protocol 2025-11-25, no tasks unless asked
# for), the client most Python agents still run.
#
# Usage:
#   scripts/client-python1.sh SCRIPT [ARGS...]
#   e.g. scripts/client-python1.sh scripts/interop/python1_fallback.py http://127.0.0.1:8080/mcp 180
#
# Environment:
#   MCP_TASKS_CACHE       cache folder (default: <repo>/.cache, git-ignored);
#                         the SDK is installed into a venv there,
#                         python-client-<version>, the first time
#
# Needs python3 (3.10 or newer) with venv, and PyPI the first time.
# Exits 2 on a setup error; otherwise with the script's status.
set -euo pipefail

SDK_VERSION="1.30.0"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
VENV="$CACHE/python-client-$SDK_VERSION"

# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
(($# >= 1)) || die "usage: $(basename "$0") SCRIPT [ARGS...] (see --help)"

python_venv "$VENV" "$CACHE/python-client.lock" \
  -c "$REPO/scripts/interop/python1-constraints.txt" "mcp==$SDK_VERSION"
exec "$VENV/bin/python" "$@"
