#!/usr/bin/env bash
# stdio benchmark (issue #33, item 6): a fast tool call of a stdio MCP
# server, four ways in the same run. The server (STDIO_BENCH_SERVER) is
# the official reference server (`everything`, the default:
# `@modelcontextprotocol/server-everything` on Node.js, its `echo` tool,
# scripts/stdio-everything.sh) or the Python fixture (`python`: FastMCP,
# its `greet` tool, scripts/upstream-python.sh --stdio).
#
# | Mode          | Client                                 | Path to the server                          |
# |---------------|----------------------------------------|---------------------------------------------|
# | direct        | benches/stdio.rs --direct              | the server's stdin and stdout, nothing else |
# | gateway       | wrk, a 2026-07-28 request (no session) | mcp-tasks-gateway -- COMMAND (with TasksLayer) |
# | gateway-2025  | wrk, in a 2025-11-25 session           | the same gateway                            |
# | supergateway  | wrk, in a session                      | supergateway --stateful --outputTransport streamableHttp (npm, pinned by tests/upstreams/supergateway) |
#
# Each at two loads: 16 calls in flight (throughput: req/s) and 1 (the time
# one call takes: p50). Targets: the gateway at ≥ 0.8× the direct req/s,
# and ahead of supergateway. Every answer is checked (wrk:
# scripts/lib/http-bench.lua; direct: the echoed text).
#
# Each run measures every mode (the order reversed every other run) after a
# warm-up of its own; the report gives the median over the runs of each
# figure, and the ratios of those medians. Nothing is pinned to a CPU: on
# two CPUs the server, the bridge and the load share them, as they would
# on a small host. Results: BENCHMARKS.md, "stdio servers (issue #33)".
#
# Usage:
#   scripts/stdio-bench.sh
#
# Environment:
#   STDIO_BENCH_RUNS      runs (default 3)
#   STDIO_BENCH_SECONDS   measured seconds per mode and load (default 5)
#   STDIO_BENCH_SERVER    everything (default) or python
#   STDIO_BENCH_MODES     modes to run (default "direct gateway gateway-2025 supergateway")
#   MCP_TASKS_CACHE       cache folder for npm packages and wrk (default: <repo>/.cache)
#
# Needs cargo, npm (Node.js 20 or newer is installed from npm when
# missing), curl, and wrk (installed into the cache from Debian's package
# when missing). Exits 2 on a setup error.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
RUNS="${STDIO_BENCH_RUNS:-3}"
MEASURED="${STDIO_BENCH_SECONDS:-5}"
MODES="${STDIO_BENCH_MODES:-direct gateway gateway-2025 supergateway}"
SERVER_START_TIMEOUT=120

# shellcheck source=lib/common.sh
source "$REPO/scripts/lib/common.sh"
help_if_asked "${1:-}"
# shellcheck source=lib/http-load.sh
source "$REPO/scripts/lib/http-load.sh"
# shellcheck source=lib/node.sh
source "$REPO/scripts/lib/node.sh"

cd "$REPO"
use_work_dir stdio-bench
find_wrk
find_node
command -v curl >/dev/null || die "curl is needed"
SERVER="${STDIO_BENCH_SERVER:-everything}"
case "$SERVER" in
  everything) CHILD=(bash "$REPO/scripts/stdio-everything.sh") ;;
  python) CHILD=(bash "$REPO/scripts/upstream-python.sh" --stdio) ;;
  *) die "STDIO_BENCH_SERVER=$SERVER: everything or python" ;;
esac

log "building the gateway and the direct client (release)"
cargo build --release --quiet -p mcp-tasks-gateway --bin mcp-tasks-gateway
GATEWAY="$REPO/target/release/mcp-tasks-gateway"
cargo bench --quiet --bench stdio -- --requests "$WORK/requests" --server "$SERVER" >/dev/null
REQUESTS="$WORK/requests"
# Installs the server into the cache (it exits at end of input).
"${CHILD[@]}" </dev/null >/dev/null 2>&1 || die "scripts/stdio-everything.sh does not run"

SG_SRC="$REPO/tests/upstreams/supergateway"
SG_DIR="$CACHE/supergateway-$(sed -n 's|.*"supergateway": *"\([^"]*\)".*|\1|p' "$SG_SRC/package.json" | head -n 1)"
if [[ "$MODES" == *supergateway* ]] && ! cmp -s "$SG_SRC/package-lock.json" "$SG_DIR/package-lock.json"; then
  log "installing supergateway (npm ci) into $SG_DIR"
  rm -rf "$SG_DIR"
  mkdir -p "$SG_DIR"
  cp "$SG_SRC/package.json" "$SG_SRC/package-lock.json" "$SG_DIR/"
  (cd "$SG_DIR" && npm ci --no-audit --no-fund --no-update-notifier --loglevel=error >&2) \
    || die "npm ci of supergateway failed"
fi

# free_port: a free loopback port (for supergateway, which takes --port).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# open_session URL: sends initialize and notifications/initialized; sets
# SESSION to the Mcp-Session-Id the server gave.
open_session() {
  local url="$1" headers="$WORK/init.headers"
  curl -sS -o /dev/null -D "$headers" -X POST "$url" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    --data '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stdio-bench","version":"1"}}}'
  SESSION="$(awk 'tolower($1) == "mcp-session-id:" {print $2}' "$headers" | tr -d '\r')"
  [[ -n "$SESSION" ]] || die "no Mcp-Session-Id from $url"
  curl -sS -o /dev/null -X POST "$url" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: $SESSION" \
    -H 'MCP-Protocol-Version: 2025-11-25' \
    --data '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  cp "$REQUESTS/session-call.body" "$WORK/session.body"
  { cat "$REQUESTS/session-call.headers"; echo "Mcp-Session-Id: $SESSION"; } >"$WORK/session.headers"
}

# wrk_load URL BODY HEADERS TYPE CONNECTIONS: a warm-up second, then
# MEASURED seconds; sets RPS and P50_US (check_wrk), dies on any wrong
# answer.
wrk_load() {
  local url="$1" body="$2" headers="$3" type="$4" connections="$5" out="$WORK/wrk.out"
  "$WRK" -t1 -c "$connections" -d1s -s "$HTTP_LOAD_LUA" "$url" -- "$body" "$headers" "$type" >/dev/null 2>&1 || true
  "$WRK" -t1 -c "$connections" -d "${MEASURED}s" -s "$HTTP_LOAD_LUA" "$url" -- "$body" "$headers" "$type" >"$out" 2>&1 \
    || { cat "$out" >&2; die "wrk failed on $url"; }
  check_wrk "$out" "$url" ""
}

# measure MODE CONNECTIONS: sets RPS and P50_US for one mode and load.
measure() {
  local mode="$1" connections="$2"
  case "$mode" in
    direct)
      local out="$WORK/direct.out"
      cargo bench --quiet --bench stdio -- --direct --server "$SERVER" --concurrency "$connections" \
        --warmup 1 --seconds "$MEASURED" -- "${CHILD[@]}" >"$out" 2>/dev/null
      RPS="$(awk '$1 == "rps" {print $2}' "$out")"
      P50_US="$(awk '$1 == "p50_us" {print $2}' "$out")"
      [[ "$(awk '$1 == "wrong" {print $2}' "$out")" == 0 && -n "$RPS" ]] \
        || { cat "$out" >&2; die "the direct client saw wrong answers"; }
      ;;
    gateway | gateway-2025)
      start_command "$WORK/gateway.log" "$GATEWAY" --listen 127.0.0.1:0 -- "${CHILD[@]}"
      if [[ "$mode" == gateway ]]; then
        wrk_load "$URL" "$REQUESTS/call.body" "$REQUESTS/call.headers" application/json "$connections"
      else
        open_session "$URL"
        wrk_load "$URL" "$WORK/session.body" "$WORK/session.headers" "" "$connections"
      fi
      stop_server
      ;;
    supergateway)
      local port
      port="$(free_port)"
      : >"$WORK/supergateway.log"
      "$NODE" "$SG_DIR/node_modules/supergateway/dist/index.js" --stdio "${CHILD[*]}" \
        --outputTransport streamableHttp --stateful --port "$port" --logLevel none \
        >>"$WORK/supergateway.log" 2>&1 </dev/null &
      SERVER_PID=$!
      URL="http://127.0.0.1:$port/mcp"
      local deadline=$((SECONDS + SERVER_START_TIMEOUT))
      until curl -s -o /dev/null "http://127.0.0.1:$port/"; do
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/supergateway.log" >&2; die "supergateway exited"; }
        ((SECONDS < deadline)) || die "supergateway did not listen"
        sleep 0.2
      done
      open_session "$URL"
      wrk_load "$URL" "$WORK/session.body" "$WORK/session.headers" "" "$connections"
      stop_server
      ;;
    *) die "unknown mode $mode" ;;
  esac
}

declare -A FIGURES
for run in $(seq 1 "$RUNS"); do
  order=($MODES)
  if ((run % 2 == 0)); then
    mapfile -t order < <(printf '%s\n' "${order[@]}" | tac)
  fi
  for mode in "${order[@]}"; do
    for connections in 16 1; do
      measure "$mode" "$connections"
      log "run $run $mode c=$connections: $RPS req/s, p50 $P50_US µs"
      FIGURES["$mode.$connections.rps"]+="$RPS "
      FIGURES["$mode.$connections.p50"]+="$P50_US "
    done
  done
done

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

printf '\n%-14s %14s %12s %14s %12s\n' mode "req/s c=16" "vs direct" "p50 µs c=1" "req/s c=1"
for mode in $MODES; do
  rps16="$(median <<<"${FIGURES[$mode.16.rps]}")"
  p50="$(median <<<"${FIGURES[$mode.1.p50]}")"
  rps1="$(median <<<"${FIGURES[$mode.1.rps]}")"
  ratio="-"
  if [[ "$MODES" == *direct* ]]; then
    direct="$(median <<<"${FIGURES[direct.16.rps]}")"
    ratio="$(awk -v a="$rps16" -v b="$direct" 'BEGIN {printf "%.2fx", a / b}')"
  fi
  printf '%-14s %14s %12s %14s %12s\n' "$mode" "$rps16" "$ratio" "$p50" "$rps1"
done
printf '\nserver %s, runs %s, %s s each; every run: %s\n' "$SERVER" "$RUNS" "$MEASURED" "$(for key in "${!FIGURES[@]}"; do printf '%s=[%s] ' "$key" "${FIGURES[$key]% }"; done)"
