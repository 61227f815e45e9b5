#!/usr/bin/env bash
# Runs a Node.js script with the Vercel AI SDK's MCP client (npm
# `@ai-sdk/mcp` 2.0.99: protocol 2026-07-28 through server/discover, and the
# experimental MCP Events API, `experimental_events` and
# `experimental_createMCPEventWebhook`), the one released client of the
# Events extension (webhook delivery only).
#
# Usage:
#   scripts/client-ai-sdk-events.sh SCRIPT [ARGS...]
#   e.g. scripts/client-ai-sdk-events.sh tests/clients/ai-sdk-events/subscribe.mjs \
#          --url http://127.0.0.1:8080/mcp --cert cert.pem --key key.pem
#
# The client and its dependencies are pinned by tests/clients/ai-sdk-events/
# package.json and package-lock.json (a bare install of @ai-sdk/mcp picks the
# 1.x line, which has no events). SCRIPT (an ES module) runs from a copy
# beside the install, so that its imports resolve there.
#
# Environment:
#   MCP_TASKS_CACHE   cache folder (default: <repo>/.cache, git-ignored); the
#                     client is installed there with `npm ci`, into
#                     ai-sdk-events-client-<version>, the first time
#
# Needs npm, and the npm registry the first time only. The package wants
# Node 22: uses the machine's node when it is v22 or newer, else installs
# Node 22 from npm into the cache. Exits 2 on a setup error; otherwise with
# the script's status.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
SRC="$REPO/tests/clients/ai-sdk-events"

# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
(($# >= 1)) || die "usage: $(basename "$0") SCRIPT [ARGS...] (see --help)"
[[ -f "$1" ]] || die "no script $1"
# shellcheck source=lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/node.sh"
# shellcheck disable=SC2034 # read by find_node
NODE_MIN_MAJOR=22

VERSION="$(pinned_version "$SRC" @ai-sdk/mcp)"
DIR="$CACHE/ai-sdk-events-client-$VERSION"
find_node
npm_install_pinned "the AI SDK MCP client $VERSION" "$SRC" "$DIR"
copy_beside "$1" "$DIR"
exec 9>&-
shift
exec "$NODE" "$COPY" "$@"
