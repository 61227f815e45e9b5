#!/usr/bin/env bash
# The client × server interop matrix through mcp-tasks-gateway: for each
# cell, a server (a column) is started behind a gateway of its own
# (`--threshold 300ms`), and a client (a row) runs its driver against the
# gateway's URL. A cell has five steps:
#   list    tools/list
#   fast    a call that answers at once
#   slow    a call that becomes a task: its handle, its status following the
#           tool's progress, its result
#   cancel  a task cancelled: it ends `cancelled`, and the server shows the
#           call was stopped (its log line, or for server-everything the
#           gateway's `notifications/cancelled`)
#   ask     a call whose tool asks the client (elicitation), answered by it
# each `ok`, `FAIL` (with the reason) or `n/a` (the server has no such tool).
#
# Clients (MATRIX_CLIENTS, all by default):
#   python1      the Python SDK 1.30 client: 2025-11-25, session, experimental
#                tasks (scripts/client-python1.sh tests/clients/python1_matrix.py)
#   typescript1  the TypeScript SDK 1.32 client: 2025-11-25, session,
#                client.experimental.tasks (scripts/client-typescript1.sh
#                tests/clients/typescript1/matrix.mjs)
#   fastmcp      FastMCP 4.1.4's client (Python SDK 2.3): 2026-07-28, the tasks
#                extension, MRTR (scripts/client-fastmcp.sh tests/clients/fastmcp_matrix.py)
#   rmcp         the rmcp 3.11 client: 2026-07-28, the tasks extension, MRTR
#                (the gateway crate's example matrix_rmcp, built with cargo)
# Servers (MATRIX_SERVERS, all by default):
#   fastmcp-http       FastMCP 4.2.3 over HTTP (scripts/upstream-python.sh)
#   typescript-http    the TypeScript SDK v2 over HTTP (scripts/upstream-typescript.sh)
#   typescript-http-stateless  the same with `--legacy=stateless`: it opens no
#                      2025-11-25 session, so the gateway keeps the sessions of
#                      the 2025-11-25 clients itself
#   python1-http       the Python SDK 1.30 over HTTP (scripts/upstream-python1.sh)
#   python1-stdio      the same over stdio (gateway -- bash scripts/upstream-python1.sh --stdio)
#   everything-stdio   server-everything over stdio (gateway -- bash scripts/stdio-everything.sh)
#
# Usage:
#   scripts/matrix.sh
#   GATEWAY_BIN=/path/to/mcp-tasks-gateway scripts/matrix.sh
#   MATRIX_CLIENTS=fastmcp MATRIX_SERVERS="python1-http python1-stdio" scripts/matrix.sh
#
# Environment:
#   GATEWAY_BIN           the mcp-tasks-gateway to run (default: built now with
#                         `cargo build -p mcp-tasks-gateway`)
#   MATRIX_RMCP_BIN       the rmcp client to run (default: built now with
#                         `cargo build -p mcp-tasks-gateway --example matrix_rmcp`)
#   CARGO_TARGET_DIR      where cargo builds them
#   MATRIX_CLIENTS        the rows, from the list above
#   MATRIX_SERVERS        the columns, from the list above
#   MATRIX_CELL_TIMEOUT   seconds one client may take for one cell (240)
#   MCP_TASKS_CACHE       cache folder (default: <repo>/.cache, git-ignored):
#                         the SDKs are installed there the first time (PyPI,
#                         npm), and each cell's logs are kept in
#                         logs/matrix/SERVER/CLIENT/ (gateway.log,
#                         upstream.log, client.out and client.err)
#
# Output: a line a cell (`CLIENT × SERVER: list ok, fast ok, ...`, with a
# line for each failed step's reason below it), then a Markdown table, rows
# the clients and columns the servers. A step listed in KNOWN_FAILURES below
# is expected to fail (marked `FAIL (known)`); one that passes is noted.
# Exits 1 if a step expected to pass failed, 2 on a setup error (an install,
# the build, a server that does not start), 0 otherwise.
#
# Needs python3 (3.11 or newer) with venv, npm (and a Node.js 20 or newer, else
# Node 22 is installed from npm), timeout (coreutils), cargo for what it
# builds, and PyPI and the npm registry the first time. A run takes about
# 2 minutes once everything is installed (a server and a gateway a cell).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
CLIENTS="${MATRIX_CLIENTS:-python1 typescript1 fastmcp rmcp}"
SERVERS="${MATRIX_SERVERS:-fastmcp-http typescript-http typescript-http-stateless python1-http python1-stdio everything-stdio}"
CELL_TIMEOUT="${MATRIX_CELL_TIMEOUT:-240}"
# The first start of a server installs its SDK.
SERVER_START_TIMEOUT=600
STEPS=(list fast slow cancel ask)

# shellcheck source=lib/common.sh
source "$REPO/scripts/lib/common.sh"
help_if_asked "${1:-}"
# shellcheck source=lib/start-server.sh
source "$REPO/scripts/lib/start-server.sh"

# Steps expected to fail: "CLIENT SERVER STEP" -> the reason. None today.
declare -A KNOWN_FAILURES=()

# --- Clients ------------------------------------------------------------------

# client_command CLIENT: sets CLIENT_CMD, the command a cell appends URL and
# SPEC to.
client_command() {
  case "$1" in
    python1) CLIENT_CMD=(bash "$REPO/scripts/client-python1.sh" "$REPO/tests/clients/python1_matrix.py") ;;
    typescript1) CLIENT_CMD=(bash "$REPO/scripts/client-typescript1.sh" "$REPO/tests/clients/typescript1/matrix.mjs") ;;
    fastmcp) CLIENT_CMD=(bash "$REPO/scripts/client-fastmcp.sh" "$REPO/tests/clients/fastmcp_matrix.py") ;;
    rmcp) CLIENT_CMD=("${RMCP_CLIENT:-matrix_rmcp}") ;;
    *) die "unknown client $1 (python1, typescript1, fastmcp, rmcp)" ;;
  esac
}

# --- Servers ------------------------------------------------------------------

# The steps' tools of a server, as tests/clients/matrix.py reads them;
# @LABEL@ becomes matrix-CLIENT (the servers log the label of a call).
# FastMCP 4 and the TypeScript SDK v2 fixtures have the same tools.
CONFORMANCE_TOOLS='{
  "fast": {"tool": "greet", "arguments": {"name": "matrix"}, "expect": "Hello, matrix!"},
  "slow": {"tool": "slow_compute", "arguments": {"seconds": 2, "label": "@LABEL@-slow"}, "expect": "done after 2", "progress": true},
  "cancel": {"tool": "slow_compute", "arguments": {"seconds": 60, "label": "@LABEL@-cancel"}, "progress": true},
  "ask": {"tool": "confirm_delete", "arguments": {"filename": "matrix.txt"}, "answer": {"confirm": true}, "expect": "Deleted matrix.txt"}}'
PYTHON1_TOOLS='{
  "fast": {"tool": "greet", "arguments": {"name": "matrix"}, "expect": "Hello, matrix!"},
  "slow": {"tool": "slow", "arguments": {"seconds": 2, "label": "@LABEL@-slow"}, "expect": "done after 2", "progress": true},
  "cancel": {"tool": "slow", "arguments": {"seconds": 60, "label": "@LABEL@-cancel"}, "progress": true},
  "ask": {"tool": "confirm", "arguments": {"question": "Go on?"}, "answer": {"ok": true}, "expect": "answered: yes"}}'
EVERYTHING_TOOLS='{
  "fast": {"tool": "echo", "arguments": {"message": "matrix"}, "expect": "Echo: matrix"},
  "slow": {"tool": "trigger-long-running-operation", "arguments": {"duration": 2, "steps": 4}, "expect": "Long running operation completed", "progress": true},
  "cancel": {"tool": "trigger-long-running-operation", "arguments": {"duration": 60, "steps": 60}, "progress": true},
  "ask": {"tool": "trigger-elicitation-request", "arguments": {}, "answer": {"name": "Ada", "check": true}, "expect": "Name: Ada"}}'

# start_column SERVER: starts SERVER and a gateway in front of it, logging
# in LOGS; sets URL (the gateway's), SPEC, and STOPPED_LOG and STOPPED (the log
# and the fixed text in it that shows a cancelled call was stopped; @LABEL@
# as in SPEC).
start_column() {
  local script args=(127.0.0.1:0) gateway_args=(--listen 127.0.0.1:0 --threshold 300ms)
  [[ "$1" != *-stdio ]] || args=(--stdio)
  STOPPED_LOG="$LOGS/upstream.log"
  case "$1" in
    fastmcp-http)
      script="$REPO/scripts/upstream-python.sh" SPEC="$CONFORMANCE_TOOLS"
      STOPPED="slow_compute cancelled label=@LABEL@-cancel"
      ;;
    typescript-http | typescript-http-stateless)
      script="$REPO/scripts/upstream-typescript.sh" SPEC="$CONFORMANCE_TOOLS"
      STOPPED="slow_compute cancelled (label \"@LABEL@-cancel\""
      [[ "$1" != *-stateless ]] || args+=(--legacy=stateless)
      ;;
    python1-http | python1-stdio)
      script="$REPO/scripts/upstream-python1.sh" SPEC="$PYTHON1_TOOLS"
      STOPPED="slow cancelled label=@LABEL@-cancel"
      ;;
    everything-stdio)
      script="$REPO/scripts/stdio-everything.sh" SPEC="$EVERYTHING_TOOLS" args=()
      # Its tool does not stop (it ignores its abort signal); the gateway's
      # cancel of the call is what there is to see.
      STOPPED="notifications/cancelled sent to the stdio server"
      ;;
    *) die "unknown server $1 (fastmcp-http, typescript-http, typescript-http-stateless, python1-http, python1-stdio, everything-stdio)" ;;
  esac
  if [[ "$1" == *-stdio ]]; then
    STOPPED_LOG="$LOGS/gateway.log"
    gateway_args+=(--start-timeout 600s -- bash "$script" "${args[@]}")
  else
    start_command "$LOGS/upstream.log" bash "$script" "${args[@]}"
    PIDS+=("$SERVER_PID")
    gateway_args+=(--upstream "$URL")
  fi
  RUST_LOG="info,mcp_tasks=debug,mcp_tasks_gateway=debug" \
    start_command "$LOGS/gateway.log" "$GATEWAY" "${gateway_args[@]}"
  PIDS+=("$SERVER_PID")
  log "$1: the gateway listens at $URL"
}

# stop_all: stops every process started (the gateway before its upstream).
stop_all() {
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    SERVER_PID="${PIDS[i]}"
    stop_server
  done
  PIDS=()
}

# --- A cell -------------------------------------------------------------------

# Results: "CLIENT SERVER STEP" -> ok | FAIL | n/a, and the reason of a FAIL.
declare -A STATUS=() REASON=()

# stopped_since LINE TEXT: whether TEXT shows in STOPPED_LOG after its line
# LINE, within 5 s.
stopped_since() {
  local deadline=$((SECONDS + 5))
  while ((SECONDS < deadline)); do
    tail -n "+$(($1 + 1))" "$STOPPED_LOG" | grep -qF -- "$2" && return 0
    sleep 0.2
  done
  return 1
}

# run_cell CLIENT SERVER: runs CLIENT's driver against URL and records each
# step's outcome.
run_cell() {
  local client="$1" server="$2" out="$LOGS/client.out" err="$LOGS/client.err"
  local label="matrix-$1" rc=0 step line mark
  client_command "$client"
  mark="$(wc -l <"$STOPPED_LOG")"
  # In the background, so that a signal's trap runs at once (not after it).
  timeout "$CELL_TIMEOUT" "${CLIENT_CMD[@]}" "$URL" "${SPEC//@LABEL@/$label}" >"$out" 2>"$err" &
  PIDS+=("$!")
  wait "$!" || rc=$?
  for step in "${STEPS[@]}"; do
    local key="$client $server $step"
    line="$(grep -m 1 "^$step: " "$out" || true)"
    line="${line#"$step: "}"
    case "$line" in
      ok*) STATUS[$key]=ok ;;
      n/a*) STATUS[$key]=n/a ;;
      FAIL*) STATUS[$key]=FAIL REASON[$key]="${line#FAIL }" ;;
      *)
        STATUS[$key]=FAIL
        REASON[$key]="the driver printed no line (exit $rc)"
        ((rc != 124)) || REASON[$key]+=": timed out after ${CELL_TIMEOUT}s"
        [[ ! -s "$err" ]] || REASON[$key]+="; $(tail -n 1 "$err" | cut -c1-160)"
        ;;
    esac
  done
  local key="$client $server cancel" stopped="${STOPPED//@LABEL@/$label}"
  if [[ "${STATUS[$key]}" == ok ]] && ! stopped_since "$mark" "$stopped"; then
    STATUS[$key]=FAIL
    REASON[$key]="the task is cancelled, but no \`$stopped\` in $(basename "$STOPPED_LOG"): the call was not stopped"
  fi
}

# verdict KEY: the step's status as shown: ok, n/a, FAIL, or FAIL (known)
verdict() {
  local status="${STATUS[$1]:-}"
  if [[ "$status" == FAIL && -n "${KNOWN_FAILURES[$1]:-}" ]]; then
    echo "FAIL (known)"
  elif [[ "$status" == FAIL ]]; then
    echo "FAIL"
  else
    echo "$status"
  fi
}

# report_cell CLIENT SERVER: the cell's line and its failures' reasons.
report_cell() {
  local line="" step key
  for step in "${STEPS[@]}"; do line+="${line:+, }$step $(verdict "$1 $2 $step")"; done
  printf '%s × %s: %s\n' "$1" "$2" "$line"
  for step in "${STEPS[@]}"; do
    key="$1 $2 $step"
    if [[ "${STATUS[$key]}" == FAIL ]]; then
      printf '    %s: %s\n' "$step" "${REASON[$key]}"
      [[ -z "${KNOWN_FAILURES[$key]:-}" ]] || printf '      known: %s\n' "${KNOWN_FAILURES[$key]}"
    elif [[ -n "${KNOWN_FAILURES[$key]:-}" ]]; then
      printf '    %s: passes, but is listed in KNOWN_FAILURES (%s): remove it\n' "$step" "${KNOWN_FAILURES[$key]}"
    fi
  done
}

# --- Run ----------------------------------------------------------------------

command -v timeout >/dev/null || die "timeout (coreutils) not found"
for client in $CLIENTS; do client_command "$client"; done
PIDS=()
trap 'stop_all' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
gateway_binary
if [[ " $CLIENTS " == *" rmcp "* ]]; then
  cargo_binary MATRIX_RMCP_BIN examples/matrix_rmcp -p mcp-tasks-gateway --example matrix_rmcp
  RMCP_CLIENT="$BUILT"
fi
cd "$REPO"
started=$SECONDS

# A server and gateway of their own for each cell: what one client did (or
# how long it took to start) does not change what the next one sees.
for server in $SERVERS; do
  for client in $CLIENTS; do
    LOGS="$CACHE/logs/matrix/$server/$client"
    rm -rf "$LOGS"
    mkdir -p "$LOGS"
    start_column "$server"
    run_cell "$client" "$server"
    report_cell "$client" "$server"
    stop_all
  done
done

# The table: a row a client, a column a server.
unexpected=0
echo
printf '| client \\ server |'
for server in $SERVERS; do printf ' %s |' "$server"; done
printf '\n|---|'
for server in $SERVERS; do printf '%s' "---|"; done
echo
for client in $CLIENTS; do
  printf '| %s |' "$client"
  for server in $SERVERS; do
    cell=""
    for step in "${STEPS[@]}"; do
      shown="$(verdict "$client $server $step")"
      if [[ "$shown" == FAIL ]]; then
        unexpected=$((unexpected + 1))
        shown="**FAIL**"
      fi
      cell+="${cell:+ · }$step $shown"
    done
    printf ' %s |' "$cell"
  done
  echo
done
echo
log "clients ($CLIENTS) × servers ($SERVERS) in $((SECONDS - started)) s: $unexpected unexpected failures (logs: $CACHE/logs/matrix/)"
((unexpected == 0)) || exit 1
