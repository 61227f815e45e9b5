#!/usr/bin/env bash
# Run the official MCP reference server, `@modelcontextprotocol/server-everything`
# (npm), over stdio (for `mcp-tasks-gateway -- bash scripts/stdio-everything.sh`)
# or over Streamable HTTP (an upstream for `--upstream URL`).
# The package and its dependencies are pinned by
# tests/upstreams/everything/package-lock.json and installed (npm ci) into
# the git-ignored cache the first time.
#
# Usage:
#   scripts/stdio-everything.sh                  # JSON-RPC on stdin and stdout
#   scripts/stdio-everything.sh 127.0.0.1:PORT   # Streamable HTTP there (PORT 0:
#                                                # a free one); prints
#                                                # `listening on URL` on stdout
#
# Environment:
#   MCP_TASKS_CACHE   cache folder (default: <repo>/.cache)
#
# Needs npm, and a Node.js 20 or newer (else Node 22 is installed from npm).
# Exits 2 on a setup error.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
SRC="$REPO/tests/upstreams/everything"

# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
# shellcheck source=lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/node.sh"

VERSION="$(pinned_version "$SRC" @modelcontextprotocol/server-everything)"
DIR="$CACHE/server-everything-$VERSION"
find_node
npm_install_pinned "@modelcontextprotocol/server-everything $VERSION" "$SRC" "$DIR"
exec 9>&-
MAIN="$DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [[ $# -gt 0 ]]; then
  [[ "$1" =~ ^127\.0\.0\.1:([0-9]+)$ ]] || die "usage: $(basename "$0") [127.0.0.1:PORT]"
  PORT="${BASH_REMATCH[1]}" exec "$NODE" --require "$SRC/loopback.cjs" "$MAIN" streamableHttp
fi
exec "$NODE" "$MAIN" stdio
