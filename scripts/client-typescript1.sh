#!/usr/bin/env bash
# Run a Node.js script with the official TypeScript MCP SDK 1.x client
# (npm `@modelcontextprotocol/sdk` 1.32.2, the last 1.x: protocol 2025-11-25,
# sessions, tasks only through `client.experimental.tasks`), the client most
# TypeScript agents still run.
#
# Usage:
#   scripts/client-typescript1.sh SCRIPT [ARGS...]
#   e.g. scripts/client-typescript1.sh tests/clients/typescript1/matrix.mjs http://127.0.0.1:8080/mcp SPEC
#
# The SDK and its dependencies are pinned by tests/clients/typescript1/
# package.json and package-lock.json. SCRIPT (an ES module) runs from a copy
# beside the install, so that its imports resolve there.
#
# Environment:
#   MCP_TASKS_CACHE   cache folder (default: <repo>/.cache, git-ignored); the
#                     SDK is installed there with `npm ci`, into
#                     typescript1-client-<SDK version>, the first time
#
# Needs npm, and the npm registry the first time only. Uses the machine's node
# when it is v20 or newer, else installs Node 22 from npm into the cache.
# Exits 2 on a setup error; otherwise with the script's status.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
SRC="$REPO/tests/clients/typescript1"

# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
(($# >= 1)) || die "usage: $(basename "$0") SCRIPT [ARGS...] (see --help)"
[[ -f "$1" ]] || die "no script $1"
# shellcheck source=lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/node.sh"

SDK_VERSION="$(pinned_version "$SRC" @modelcontextprotocol/sdk)"
DIR="$CACHE/typescript1-client-$SDK_VERSION"
find_node
npm_install_pinned "the TypeScript MCP SDK $SDK_VERSION (client)" "$SRC" "$DIR"
copy_beside "$1" "$DIR"
exec 9>&-
shift
exec "$NODE" "$COPY" "$@"
