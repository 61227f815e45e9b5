#!/usr/bin/env bash
# Measures what browsing the operator's console costs over Redis as the
# store grows: the console's list API (/console/api/tasks) reads at most
# SCAN_BUDGET (5,000) tasks a request, so its pages should cost the same
# whatever the number of tasks; the store card's count
# (/console/api/overview) reads every task.
#
# Usage: scripts/console-browse-bench.sh [TASKS...]   (default 10000 1000000)
#        REQUESTS=20 COUNTS=5 CHANGES_PER_SECOND=1 (the defaults)
#
# For each TASKS: starts a fresh `redis-server` (no persistence) on a free
# loopback port, builds and starts `gateway/examples/console_load.rs`
# (release) with CONSOLE_LOAD_REDIS, which fills a RedisTaskStore with
# TASKS working tasks of tool_0..tool_19 (64 creates at a time) and
# changes CHANGES_PER_SECOND of them a second, then reads Redis'
# used_memory and times with curl (`-w %{time_total}`, the bearer
# credential) the median of REQUESTS requests each of:
#
#   first   the first page of 100 (no filter)
#   deep    the 50th page of 100, its cursor found by following `next`
#   tool    tool=tool_7, which 1 task in 20 matches: a page of 100 rows
#   none    a tool no task has: reads the scan budget, answers with `next`
#   count   /console/api/overview, COUNTS times, 5.5 s apart so that each
#           one counts the store again (it counts at most every 5 s)
#
# Prints one line per figure (milliseconds, with the tasks each request
# read, `scanned`). Needs redis-server, redis-cli, curl and jq. Exits 2 on
# a setup error.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(10000 1000000)
REQUESTS="${REQUESTS:-20}"
COUNTS="${COUNTS:-5}"
RATE="${CHANGES_PER_SECOND:-1}"
TOKEN="console-browse-credential-$$"
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

for tool in redis-server redis-cli curl jq python3; do
  command -v "$tool" >/dev/null || die "$tool not found"
done

cd "$REPO"
cargo build --release -q -p mcp-tasks-gateway --example console_load
LOAD="${CARGO_TARGET_DIR:-target}/release/examples/console_load"
echo "console-browse-bench: commit $(git rev-parse --short HEAD), $REQUESTS requests a figure, $RATE changes/s"

# free_port: a free loopback port.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# median: the median of the numbers on stdin, one a line.
median() {
  sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# api PATH_AND_QUERY: the console API's answer.
api() { curl -sf -H "Authorization: Bearer $TOKEN" "$URL/api/$1"; }

# timed PATH_AND_QUERY: the seconds one request takes.
timed() {
  curl -sf -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" "$URL/api/$1"
}

# figure NAME PATH_AND_QUERY: the median of REQUESTS requests, in ms, with
# what one answer holds.
figure() {
  local name="$1" query="$2" answer ms
  answer="$(api "$query")"
  ms="$(for _ in $(seq 1 "$REQUESTS"); do timed "$query"; done | median)"
  printf '%-6s %8.2f ms  rows %s, scanned %s, next %s\n' "$name" "$(awk -v s="$ms" 'BEGIN { print s * 1000 }')" \
    "$(jq '.rows | length' <<<"$answer")" "$(jq '.scanned' <<<"$answer")" \
    "$(jq 'if .next then "yes" else "no" end' -r <<<"$answer")"
}

for TASKS in "${SIZES[@]}"; do
  PORT="$(free_port)"
  mkdir -p "$WORK/redis-$TASKS"
  redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$WORK/redis-$TASKS" >"$WORK/redis-$TASKS.log" &
  REDIS_PID=$!
  for _ in $(seq 1 100); do
    redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
    sleep 0.1 # waiting for redis-server to listen
  done
  redis-cli -p "$PORT" ping >/dev/null 2>&1 || die "redis-server did not start (log: $WORK/redis-$TASKS.log)"

  started=$SECONDS
  CONSOLE_LOAD_REDIS="redis://127.0.0.1:$PORT" MCP_TASKS_CONSOLE_TOKEN="$TOKEN" \
    "$LOAD" "$TASKS" "$RATE" >"$WORK/server.out" &
  LOAD_PID=$!
  until grep -q '^pid ' "$WORK/server.out" 2>/dev/null; do
    kill -0 "$LOAD_PID" 2>/dev/null || die "console_load exited (see its stderr above)"
    sleep 1 # waiting for the example to fill the store and print its address
  done
  URL="$(sed -n 's/^console on //p' "$WORK/server.out")"
  echo "== $TASKS tasks in Redis, filled in $((SECONDS - started)) s," \
    "used_memory $(redis-cli -p "$PORT" info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p') B" \
    "($(redis-cli -p "$PORT" info memory | sed -n 's/^used_memory_human:\(.*\)\r$/\1/p'))"

  figure first 'tasks?limit=100'
  cursor=""
  for _ in $(seq 1 49); do
    cursor="$(api "tasks?limit=100&cursor=$cursor" | jq -r '.next')"
    [[ "$cursor" != null ]] || die "fewer than 50 pages"
    cursor="$(jq -rn --arg c "$cursor" '$c | @uri')"
  done
  figure deep "tasks?limit=100&cursor=$cursor"
  figure tool 'tasks?limit=100&tool=tool_7'
  figure none 'tasks?limit=100&tool=no-such-tool'

  counts=()
  for n in $(seq 1 "$COUNTS"); do
    [[ $n -eq 1 ]] || sleep 5.5 # the overview counts at most every 5 s
    counts+=("$(timed overview)")
  done
  total="$(api overview | jq '.store.total')"
  printf '%-6s %8.2f ms  total %s (%s counts: %s s)\n' count \
    "$(printf '%s\n' "${counts[@]}" | median | awk '{ print $1 * 1000 }')" "$total" "$COUNTS" "${counts[*]}"

  kill "$LOAD_PID" "$REDIS_PID"
  wait "$LOAD_PID" "$REDIS_PID" 2>/dev/null || true
  rm -f "$WORK/server.out"
done
