#!/usr/bin/env bash
# Runs a Node.js script that drives the gateway's operator console in a real
# headless browser: Debian's chromium (package `chromium`), driven by
# Playwright's library (npm `playwright-core`, which downloads no browser).
#
# Usage:
#   scripts/console-browser.sh SCRIPT [ARGS...]
#   e.g. scripts/console-browser.sh tests/clients/console-browser/drive.mjs live
#
# playwright-core is pinned by tests/clients/console-browser/package.json and
# package-lock.json. SCRIPT (an ES module) runs from a copy beside the
# install, so that its imports resolve there; it finds the browser in
# CHROMIUM.
#
# Environment:
#   MCP_TASKS_CACHE   cache folder (default: <repo>/.cache, git-ignored);
#                     playwright-core is installed there with `npm ci`, into
#                     console-browser-<version>, the first time
#   CHROMIUM          the browser (default: /usr/bin/chromium; `.ci/run`
#                     installs Debian's package `chromium` when missing)
#
# Needs npm, and the npm registry the first time only. Exits 2 on a setup
# error; otherwise with the script's status.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
SRC="$REPO/tests/clients/console-browser"

# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
(($# >= 1)) || die "usage: $(basename "$0") SCRIPT [ARGS...] (see --help)"
[[ -f "$1" ]] || die "no script $1"
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
[[ -x "$CHROMIUM" ]] || die "no browser at $CHROMIUM: install Debian's chromium (apt-get install chromium), as .ci/run does"
# shellcheck source=lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/node.sh"

VERSION="$(pinned_version "$SRC" playwright-core)"
DIR="$CACHE/console-browser-$VERSION"
find_node
npm_install_pinned "playwright-core $VERSION" "$SRC" "$DIR"
copy_beside "$1" "$DIR"
exec 9>&-
shift
exec "$NODE" "$COPY" "$@"
