#!/usr/bin/env bash
# Gateway benchmark (issue #9, item 5): mcp-tasks-gateway in front of a Rust
# MCP server against calling that server directly, in the same run, over
# loopback, driven by wrk; then the gateway's memory with parked tasks.
#
# The upstream is the HTTP benchmark's server (benches/http_server.rs, one
# tokio worker): its route /bare/json is the rmcp fixture alone, stateless,
# answering JSON. The gateway runs with its defaults and
# `--upstream http://UPSTREAM/bare/json --path /bare/json`, so that both
# targets are reached at the same path, with the same request files (the
# server's `--requests`: a fast `tools/call` of `greet` from a client that
# declares the tasks extension). Every answer is checked as
# scripts/http-bench.sh does (scripts/lib/http-bench.lua: HTTP 200, JSON,
# a JSON-RPC result; the gateway answers the fast call before its 500 ms
# threshold, so it is the fixture's own result).
#
# Two loads, each measured direct and through the gateway:
#
# | Load       | wrk                | Gives                                         | Target                  |
# |------------|--------------------|-----------------------------------------------|-------------------------|
# | throughput | -t1 -c16 (closed)  | req/s; gateway / direct                       | ≥ 0.9× direct           |
# | latency    | -t1 -c1 (closed)   | p50 and p99; gateway − direct (added latency) | added p50 ≤ 50 µs       |
#
# Latency is taken at one connection: a single request in flight, so each
# figure is the time one call takes, with no queueing behind other calls
# in the upstream, the gateway or wrk (at -c16 the upstream is saturated
# and a request's latency is mostly its wait in line: about 16 / req/s).
# The p50/p99 of the throughput load are printed too, as such.
#
# For scale, with socat installed (GATEWAY_BENCH_RELAY=auto; the script
# does not install it: `apt-get install socat`), a third mode goes through
# a plain TCP relay (socat, placed as the gateway): the same extra
# loopback hop and wake-ups with no HTTP at all, the floor of what any
# proxy adds on this machine.
#
# Placement (2 CPUs and taskset: HTTP_BENCH_PIN=1): the upstream alone on
# CPU 0, as in scripts/http-bench.sh; the gateway (one tokio worker,
# started under `taskset -c 1`) and wrk on CPU 1. The upstream has a core
# to itself in both modes, as beside a gateway with CPU of its own; the
# gateway's cost shows as its CPU per request ("gw CPU µs/req") and, if
# CPU 1 runs short, as lost throughput. "up CPU" is the upstream's share
# of its core: near 100% in both modes means the upstream is the
# bottleneck; lower through the gateway means the gateway side is, which
# "CPU 1" (how busy the load's CPU was, from /proc/stat) then shows.
# Direct at -c16, the upstream near 100% and CPU 1 about a third busy
# (wrk alone) is a quiet machine; the report warns otherwise.
#
# On a virtual machine, waking an idle CPU costs tens of microseconds, and
# a call through a hop wakes more processes than a direct one. With
# GATEWAY_BENCH_SPIN=1 a busy loop at nice 19 runs on every CPU during the
# loads (the measured processes take the CPU from it at once), so no CPU
# is idle: latencies without that cost, as with idle states off. The CPU
# columns then count the loops too; the processes' own CPU does not.
#
# With GATEWAY_BENCH_CONSOLE=1, two more gateways of the same settings
# run beside the first, on CPU 1 too: one with `--metrics 127.0.0.1:0`
# (the mode `metrics`), one with the operator's console on as well and no
# console open (`--metrics 127.0.0.1:0 --console-token-file FILE`, a
# 24-character token; the mode `console`), measured in the same runs: the
# console needs the metrics listener, so what the console itself costs
# (its per-call statistics) is `console` against `metrics`. GATEWAY_BENCH_ARGS are added to every gateway of the
# loads (not to those of the memory case).
#
# Each run measures both loads, direct, gateway (console, relay) in turn
# (the order flips every run), each after a warm-up; the tables give the
# medians of the runs and, for the ratio, the range of the runs' own ratios.
#
# Memory: for each kind of parked task, a fresh gateway (on CPU 1, caps
# lifted: --max-tasks, --max-tasks-per-principal and --max-running at
# twice the count) answers one `tasks/get` (warm-up), then
# GATEWAY_BENCH_PARK declaring calls through one keep-alive connection
# (curl), each answered with a task handle (checked). VmRSS and VmHWM of
# the gateway are read from /proc before and after; per task is the growth
# of VmRSS divided by the count.
#
# | Kind      | Call, policy                          | Upstream                          | A task once parked |
# |-----------|---------------------------------------|-----------------------------------|--------------------|
# | completed | `greet` under `greet=always`          | the Rust fixture (/bare/json)     | `completed`, its result kept for the TTL (1 h) |
# | working   | `slow_compute` (1 h) under `slow_compute=always` | scripts/lib/hold-upstream.py (answers nothing) | `working`, holding its upstream connection |
#
# A working task through the gateway holds one upstream HTTP/1.1
# connection while its call runs. The Rust fixture server serves 512
# connections at most (examples/support/http.rs): of 2,000 working calls
# through the gateway about 640 got a connection (the rest of them in its
# listen backlog), the others failed after the gateway's 5 s connect
# timeout. The working kind therefore runs against a Python upstream that
# holds any number of connections and never answers, as a JSON-answering
# server does while its tool runs; the gateway then needs an open-file
# limit above the task count (checked).
#
# With gdb (GATEWAY_BENCH_HEAP=auto), the gateway's heap is read too:
# gdb attaches, calls glibc's malloc_trim(0) then malloc_stats() (which
# prints to the gateway's log), before and after parking: "heap in use"
# is what the tasks really hold, "RSS trimmed" what the process keeps
# once free pages are returned; the difference to VmRSS is free memory
# glibc keeps from the peak while parking. Results: BENCHMARKS.md,
# "Gateway over loopback (issue #9)".
#
# Usage:
#   scripts/gateway-bench.sh                          # 5 runs of 5 s, 10,000 tasks parked
#   GATEWAY_BENCH_RUNS=3 GATEWAY_BENCH_SECONDS=3 scripts/gateway-bench.sh
#   GATEWAY_BENCH_CASES=memory GATEWAY_BENCH_PARKED=working scripts/gateway-bench.sh
#   GATEWAY_BENCH_GATEWAY=/tmp/mcp-tasks-gateway-before scripts/gateway-bench.sh
#
# Environment:
#   GATEWAY_BENCH_RUNS         runs of each load (5)
#   GATEWAY_BENCH_SECONDS      seconds of one measurement (5)
#   GATEWAY_BENCH_WARMUP       seconds of the warm-up before each one; 0: none (1)
#   GATEWAY_BENCH_CASES        what to run, in order ("throughput latency memory")
#   GATEWAY_BENCH_THROUGHPUT_CONNECTIONS  wrk connections of the throughput load (16)
#   GATEWAY_BENCH_LATENCY_CONNECTIONS     wrk connections of the latency load (1)
#   GATEWAY_BENCH_WORKERS      the gateway's tokio worker threads (1)
#   GATEWAY_BENCH_PARK         tasks parked in the memory case (10000)
#   GATEWAY_BENCH_PARKED       kinds of parked tasks ("completed working")
#   GATEWAY_BENCH_HEAP         auto: read the heap with gdb when it is there;
#                              0: do not (auto)
#   GATEWAY_BENCH_GATEWAY      run this prebuilt mcp-tasks-gateway (e.g. a
#                              copy built at another commit) instead of
#                              building this tree's
#   GATEWAY_BENCH_RELAY        auto: measure the socat relay too when socat
#                              is on PATH; 0: do not (auto)
#   GATEWAY_BENCH_SPIN         1: keep every CPU busy with a nice-19 loop
#                              during the loads, so that none goes idle (0)
#   GATEWAY_BENCH_CONSOLE      1: measure two more gateways, with --metrics
#                              (`metrics`) and with the console on too
#                              (`console`) (0)
#   GATEWAY_BENCH_ARGS         more arguments for the gateways of the loads,
#                              split at spaces (none)
#   HTTP_BENCH_SERVER, HTTP_BENCH_WORKERS, HTTP_BENCH_THREADS, HTTP_BENCH_PIN, WRK
#                              as for scripts/http-bench.sh (the upstream)
#   HTTP_BENCH_PARK            tasks the upstream parks on its own layered
#                              routes, unused here (1)
#   SERVER_START_TIMEOUT       seconds to wait for a server's URL (120)
#   CARGO_TARGET_DIR           respected when building
#
# Needs curl (memory case), python3 (working kind) and, for the heap
# figures, gdb and the right to attach to a child process. Exits 1 when a check
# fails, 2 on a setup error.
set -euo pipefail

GATEWAY_BENCH_RUNS="${GATEWAY_BENCH_RUNS:-5}"
GATEWAY_BENCH_SECONDS="${GATEWAY_BENCH_SECONDS:-5}"
GATEWAY_BENCH_WARMUP="${GATEWAY_BENCH_WARMUP:-1}"
GATEWAY_BENCH_CASES="${GATEWAY_BENCH_CASES:-throughput latency memory}"
GATEWAY_BENCH_THROUGHPUT_CONNECTIONS="${GATEWAY_BENCH_THROUGHPUT_CONNECTIONS:-16}"
GATEWAY_BENCH_LATENCY_CONNECTIONS="${GATEWAY_BENCH_LATENCY_CONNECTIONS:-1}"
GATEWAY_BENCH_WORKERS="${GATEWAY_BENCH_WORKERS:-1}"
GATEWAY_BENCH_PARK="${GATEWAY_BENCH_PARK:-10000}"
GATEWAY_BENCH_PARKED="${GATEWAY_BENCH_PARKED:-completed working}"
GATEWAY_BENCH_HEAP="${GATEWAY_BENCH_HEAP:-auto}"
GATEWAY_BENCH_GATEWAY="${GATEWAY_BENCH_GATEWAY:-}"
GATEWAY_BENCH_RELAY="${GATEWAY_BENCH_RELAY:-auto}"
GATEWAY_BENCH_SPIN="${GATEWAY_BENCH_SPIN:-0}"
GATEWAY_BENCH_CONSOLE="${GATEWAY_BENCH_CONSOLE:-0}"
GATEWAY_BENCH_ARGS="${GATEWAY_BENCH_ARGS:-}"
# The upstream's own parked tasks serve http-bench's tasks/get case only.
HTTP_BENCH_PARK="${HTTP_BENCH_PARK:-1}"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/http-load.sh
source "$REPO/scripts/lib/http-load.sh"
help_if_asked "$@"

use_work_dir gateway-bench

# --- Processes -----------------------------------------------------------------

# Every process started here, stopped on exit (use_work_dir's trap stops
# only SERVER_PID, the upstream's).
STARTED=()
stop_all() {
  local pid
  for pid in "${STARTED[@]}" "${SERVER_PID:-}"; do
    [[ -n "$pid" ]] && SERVER_PID="$pid" stop_server
  done
  return 0
}
trap 'stop_all; rm -rf "$WORK"' EXIT

# The prefix that puts a process on the upstream's CPU (empty without
# pinning); LOAD_ON_CPU (lib/http-load.sh) is the other CPU's.
UPSTREAM_ON_CPU=()
if [[ "$HTTP_BENCH_PIN" == 1 ]]; then
  UPSTREAM_ON_CPU=(taskset -c 0)
fi

# gateway ADDR ARG...: runs the gateway listening on ADDR (start_server
# passes the address first) on the load CPU with GATEWAY_BENCH_WORKERS
# tokio workers; exec keeps the PID start_server took.
gateway() {
  local listen="$1"
  shift
  TOKIO_WORKER_THREADS="$GATEWAY_BENCH_WORKERS" \
    exec "${LOAD_ON_CPU[@]}" "$WORK/mcp-tasks-gateway" --listen "$listen" "$@"
}

# hold-upstream ADDR: the upstream that answers nothing, on the upstream's CPU.
hold-upstream() {
  exec "${UPSTREAM_ON_CPU[@]}" python3 "$REPO/scripts/lib/hold-upstream.py" "$1"
}

# start_beside NAME LOG COMMAND ARG...: start_server for a process beside
# the upstream; sets NAME_PID and NAME_URL and leaves SERVER_PID and URL
# (the upstream's) as they were.
start_beside() {
  local name="$1" upstream_pid="$SERVER_PID" upstream_url="$URL"
  shift
  start_server "$2" "$1" "${@:3}"
  STARTED+=("$SERVER_PID")
  printf -v "${name}_PID" '%s' "$SERVER_PID"
  printf -v "${name}_URL" '%s' "$URL"
  SERVER_PID="$upstream_pid" URL="$upstream_url"
}

# stop_beside PID: stops a process start_beside started.
stop_beside() {
  SERVER_PID="$1" stop_server
}

# prepare_gateway: puts the gateway at WORK/mcp-tasks-gateway, built here
# (release, feature gateway) or copied from GATEWAY_BENCH_GATEWAY, so that a
# later build in a shared target folder cannot replace it mid-run.
prepare_gateway() {
  if [[ -n "$GATEWAY_BENCH_GATEWAY" ]]; then
    [[ -x "$GATEWAY_BENCH_GATEWAY" ]] || die "GATEWAY_BENCH_GATEWAY=$GATEWAY_BENCH_GATEWAY is not executable"
    cp "$GATEWAY_BENCH_GATEWAY" "$WORK/mcp-tasks-gateway"
    return
  fi
  log "building mcp-tasks-gateway (release)"
  local json exe
  json="$(cd "$REPO" && cargo build --release -p mcp-tasks-gateway --bin mcp-tasks-gateway \
    --message-format=json)" || die "cargo build of mcp-tasks-gateway failed"
  exe="$(grep -F '"name":"mcp-tasks-gateway"' <<<"$json" \
    | grep -o '"executable":"[^"]*"' | tail -n 1 | cut -d'"' -f4 || true)"
  [[ -n "$exe" && -x "$exe" ]] || die "the build gave no mcp-tasks-gateway executable"
  cp "$exe" "$WORK/mcp-tasks-gateway"
}

# --- Cases -----------------------------------------------------------------------

LOADS=()
MEMORY=0
for case in $GATEWAY_BENCH_CASES; do
  case "$case" in
    throughput | latency) LOADS+=("$case") ;;
    memory) MEMORY=1 ;;
    *) die "unknown case $case (throughput, latency, memory)" ;;
  esac
done
if ((MEMORY)); then
  command -v curl >/dev/null 2>&1 || die "the memory case needs curl"
  for kind in $GATEWAY_BENCH_PARKED; do
    case "$kind" in
      completed) ;;
      working)
        command -v python3 >/dev/null 2>&1 || die "the working kind needs python3"
        # Each working task holds an upstream connection, a file of the gateway's.
        files="$(ulimit -n)"
        if [[ "$files" != unlimited ]] && ((files <= GATEWAY_BENCH_PARK + 256)); then
          die "the working kind needs an open-file limit above $((GATEWAY_BENCH_PARK + 256)) (ulimit -n: $files)"
        fi
        ;;
      *) die "unknown kind of parked task $kind (completed, working)" ;;
    esac
  done
fi

# --- Build, install wrk, start (before measuring anything) -----------------------

find_wrk
log "wrk: $WRK"
# shellcheck disable=SC2119 # no other bench to build
prepare_server
prepare_gateway
start_bench_server
UPSTREAM_PID="$SERVER_PID"
UPSTREAM_URL="$URL"
TARGET="$(grep -m1 -o 'tasks/get target: [0-9a-f]*' "$WORK/server.log" | cut -d' ' -f3)"

# shellcheck disable=SC2206 # split at spaces, as documented
EXTRA=($GATEWAY_BENCH_ARGS)
start_beside GATEWAY "$WORK/gateway.log" gateway --upstream "$UPSTREAM_URL/bare/json" --path /bare/json \
  "${EXTRA[@]}"
log "gateway (PID $GATEWAY_PID) listening at $GATEWAY_URL/bare/json, upstream $UPSTREAM_URL/bare/json"
if [[ "$GATEWAY_BENCH_CONSOLE" == 1 ]]; then
  start_beside METRICS "$WORK/metrics.log" gateway --upstream "$UPSTREAM_URL/bare/json" \
    --path /bare/json "${EXTRA[@]}" --metrics 127.0.0.1:0
  log "gateway with --metrics (PID $METRICS_PID) listening at $METRICS_URL/bare/json"
  head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$WORK/console-token"
  start_beside CONSOLE "$WORK/console.log" gateway --upstream "$UPSTREAM_URL/bare/json" \
    --path /bare/json "${EXTRA[@]}" --metrics 127.0.0.1:0 --console-token-file "$WORK/console-token"
  log "gateway with the console (PID $CONSOLE_PID) listening at $CONSOLE_URL/bare/json"
fi

# start_relay: socat relaying a free loopback port to the upstream, byte
# for byte (a fork per connection, TCP_NODELAY both ways), on the load
# CPU; sets RELAY_PID and RELAY_URL.
start_relay() {
  local port attempt
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + RANDOM % 12000))
    "${LOAD_ON_CPU[@]}" socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork,nodelay" \
      "TCP:127.0.0.1:${UPSTREAM_URL##*:},nodelay" >"$WORK/relay.log" 2>&1 </dev/null &
    RELAY_PID=$!
    STARTED+=("$RELAY_PID")
    sleep 0.3
    if kill -0 "$RELAY_PID" 2>/dev/null; then
      RELAY_URL="http://127.0.0.1:$port"
      return 0
    fi
  done
  die "socat found no free port after $attempt tries (log: $WORK/relay.log)"
}

# The modes measured: direct, the gateway, and the relay when asked for.
MODES=(direct gateway)
[[ "$GATEWAY_BENCH_CONSOLE" == 1 ]] && MODES+=(metrics console)
if ((${#LOADS[@]} > 0)) && [[ "$GATEWAY_BENCH_RELAY" == auto ]] && command -v socat >/dev/null 2>&1; then
  start_relay
  MODES+=(relay)
  log "relay: socat (PID $RELAY_PID) at $RELAY_URL"
fi

# --- Measure ---------------------------------------------------------------------

RESULTS="$WORK/results"
: >"$RESULTS"

# ticks PID: the CPU time PID used so far, in clock ticks.
ticks() {
  SERVER_PID="$1" server_ticks
}

# cpu_jiffies CPU: "busy total" clock ticks of CPU so far (/proc/stat:
# user to steal; busy is all but idle and iowait).
cpu_jiffies() {
  awk -v c="cpu$1" '$1 == c {t = 0; for (i = 2; i <= 9; i++) t += $i; print t - $5 - $6, t}' /proc/stat
}

# drive SECONDS MODE CONNECTIONS: one wrk run of the fast call, direct,
# through the gateway or through the relay (MODE), with CONNECTIONS
# connections; sets RPS, P50_US, P99_US, UPSTREAM_CPU (% of its core),
# GATEWAY_CPU (% of a core; 0 in the other modes) and LOAD_CPU (% busy of
# CPU 1, where the load and the hop run). run_wrk (lib/http-load.sh)
# checks every answer.
drive() {
  local seconds="$1" mode="$2" connections="$3" target
  case "$mode" in
    direct) target="$UPSTREAM_URL" ;;
    gateway) target="$GATEWAY_URL" ;;
    metrics) target="$METRICS_URL" ;;
    console) target="$CONSOLE_URL" ;;
    relay) target="$RELAY_URL" ;;
  esac
  local before start cpu hop="$GATEWAY_PID"
  [[ "$mode" == console ]] && hop="$CONSOLE_PID"
  [[ "$mode" == metrics ]] && hop="$METRICS_PID"
  before="$(ticks "$hop")"
  cpu="$(cpu_jiffies 1)"
  start="$(date +%s.%N)"
  URL="$target" HTTP_BENCH_CONNECTIONS="$connections" run_wrk "$seconds" call-json bare
  GATEWAY_CPU=0
  if [[ "$mode" == gateway || "$mode" == console || "$mode" == metrics ]]; then
    GATEWAY_CPU="$(awk -v used="$(($(ticks "$hop") - before))" -v hz="$(getconf CLK_TCK)" \
      -v start="$start" -v end="$(date +%s.%N)" 'BEGIN {printf "%.1f", 100 * used / hz / (end - start)}')"
  fi
  LOAD_CPU="$(awk -v a="$cpu" -v b="$(cpu_jiffies 1)" \
    'BEGIN {split(a, A, " "); split(b, B, " "); printf "%.0f", 100 * (B[1] - A[1]) / (B[2] - A[2])}')"
  UPSTREAM_CPU="$SERVER_CPU"
  # run_wrk leaves wrk's output, with the Lua script's figures, in WORK/wrk.out.
  P99_US="$(awk '$1 == "p99_us" {print $2}' "$WORK/wrk.out")"
}

# measure RUN LOAD MODE: warm-up, then one measurement into RESULTS.
measure() {
  local run="$1" load="$2" mode="$3" connections="$GATEWAY_BENCH_THROUGHPUT_CONNECTIONS"
  [[ "$load" == latency ]] && connections="$GATEWAY_BENCH_LATENCY_CONNECTIONS"
  if [[ "$GATEWAY_BENCH_WARMUP" != 0 ]]; then
    drive "$GATEWAY_BENCH_WARMUP" "$mode" "$connections"
  fi
  drive "$GATEWAY_BENCH_SECONDS" "$mode" "$connections"
  # Fields: load mode run req/s p50-µs p99-µs upstream-CPU-% gateway-CPU-%
  # CPU-1-busy-%.
  printf '%s %s %s %s %s %s %s %s %s\n' "$load" "$mode" "$run" "$RPS" "$P50_US" "$P99_US" \
    "$UPSTREAM_CPU" "$GATEWAY_CPU" "$LOAD_CPU" >>"$RESULTS"
  log "run $run/$GATEWAY_BENCH_RUNS $load $mode: $RPS req/s, p50 $P50_US µs, p99 $P99_US µs," \
    "upstream CPU $UPSTREAM_CPU%, gateway CPU $GATEWAY_CPU%, CPU 1 busy $LOAD_CPU%"
}

# The busy loops of GATEWAY_BENCH_SPIN, one a CPU.
SPINNERS=()
if ((${#LOADS[@]} > 0)) && [[ "$GATEWAY_BENCH_SPIN" == 1 ]]; then
  for cpu in $(seq 0 $(($(nproc) - 1))); do
    nice -n 19 taskset -c "$cpu" sh -c 'while :; do :; done' &
    SPINNERS+=($!)
    STARTED+=($!)
  done
  log "busy loops at nice 19 on CPUs 0-$(($(nproc) - 1))"
fi

if ((${#LOADS[@]} > 0)); then
  for run in $(seq 1 "$GATEWAY_BENCH_RUNS"); do
    # The modes in order in odd runs, in reverse in even ones.
    order=("${MODES[@]}")
    if ((run % 2 == 0)); then
      order=()
      for mode in "${MODES[@]}"; do
        order=("$mode" "${order[@]}")
      done
    fi
    for load in "${LOADS[@]}"; do
      for mode in "${order[@]}"; do
        measure "$run" "$load" "$mode"
      done
    done
  done
fi

for pid in "$UPSTREAM_PID" "$GATEWAY_PID" ${METRICS_PID:-} ${CONSOLE_PID:-}; do
  if ! kill -0 "$pid" 2>/dev/null; then
    tail -n 20 "$WORK/server.log" "$WORK/gateway.log" >&2 || true
    log "error: the upstream or the gateway is no longer running"
    exit 1
  fi
done
stop_beside "$GATEWAY_PID"
[[ -n "${CONSOLE_PID:-}" ]] && stop_beside "$CONSOLE_PID"
[[ -n "${METRICS_PID:-}" ]] && stop_beside "$METRICS_PID"
[[ -n "${RELAY_PID:-}" ]] && stop_beside "$RELAY_PID"
for pid in "${SPINNERS[@]}"; do
  stop_beside "$pid"
done

# --- Memory with parked tasks ------------------------------------------------------

# post URL NAME: POSTs the request REQUESTS/NAME.{body,headers} to URL;
# prints the answer's body.
post() {
  curl -sS --max-time 10 -H "@$REQUESTS/$2.headers" --data-binary "@$REQUESTS/$2.body" "$1"
}

# task_status URL ID: the status of task ID, read with tasks/get (the
# upstream's request with its target's id replaced).
task_status() {
  sed "s/$TARGET/$2/g" "$REQUESTS/tasks-get.body" >"$REQUESTS/get.body"
  sed "s/$TARGET/$2/g" "$REQUESTS/tasks-get.headers" >"$REQUESTS/get.headers"
  post "$1" get | grep -o '"status":"[a-z_]*"' | head -n 1 | cut -d'"' -f4
}

# wait_for SECONDS COMMAND...: runs COMMAND every 0.2 s until it succeeds;
# false after SECONDS.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# has_status URL ID STATUS: whether task ID has STATUS.
has_status() {
  [[ "$(task_status "$1" "$2")" == "$3" ]]
}

# holds_files PID N: whether PID has at least N open files (a working task
# holds its upstream connection).
holds_files() {
  (($(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l) >= $2))
}

# status_kb PID FIELD: a /proc/PID/status field (VmRSS, VmHWM), in kB.
status_kb() {
  awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"
}

# heap_stats PID LOG: with gdb, glibc's malloc_trim(0) then malloc_stats()
# in PID (whose stderr is LOG); sets HEAP_BYTES (in use, every arena and
# mmap) and TRIMMED_KB (VmRSS after the trim); empty without gdb.
heap_stats() {
  HEAP_BYTES="" TRIMMED_KB=""
  [[ "$GATEWAY_BENCH_HEAP" == auto ]] && command -v gdb >/dev/null 2>&1 || return 0
  if ! timeout 60 gdb -p "$1" -batch -nx -ex 'call (int) malloc_trim(0)' \
    -ex 'call (void) malloc_stats()' >"$WORK/gdb.out" 2>&1; then
    log "gdb could not read the gateway's heap (see GATEWAY_BENCH_HEAP): $(tail -n 1 "$WORK/gdb.out")"
    return 0
  fi
  sleep 0.2
  HEAP_BYTES="$(awk '/^Total \(incl\. mmap\):/ {t = 1} t && /in use bytes/ {v = $NF; t = 0} END {print v}' "$2")"
  TRIMMED_KB="$(status_kb "$1" VmRSS)"
}

MEMORY_RESULTS="$WORK/memory"
: >"$MEMORY_RESULTS"

# park KIND: parks GATEWAY_BENCH_PARK tasks of KIND (completed, working)
# through a fresh gateway and appends its memory figures to MEMORY_RESULTS.
park() {
  local kind="$1" n="$GATEWAY_BENCH_PARK" upstream request tool expected
  case "$kind" in
    completed)
      upstream="$UPSTREAM_URL/bare/json" request=call tool=greet expected=completed
      ;;
    working)
      start_beside HOLD "$WORK/hold.log" hold-upstream
      upstream="$HOLD_URL/mcp" request=slow tool=slow_compute expected=working
      ;;
  esac
  local caps=$((2 * n))
  start_beside PARK "$WORK/gateway-$kind.log" gateway --upstream "$upstream" \
    --policy "$tool=always" --max-tasks "$caps" --max-tasks-per-principal "$caps" --max-running "$caps"
  local url="$PARK_URL" pid="$PARK_PID"
  # Warm-up: a tasks/get the layer answers alone (an unknown task: an
  # error), so that the client side has served a request; the working
  # kind's upstream answers nothing, so nothing goes upstream.
  post "$url" tasks-get | grep -q '"jsonrpc"' || die "no JSON-RPC answer from the gateway to tasks/get"
  sleep 0.5
  # The heap first: with gdb, the baseline is a trimmed one.
  local rss_before hwm_before heap_before rss_before_trimmed
  heap_stats "$pid" "$WORK/gateway-$kind.log"
  heap_before="$HEAP_BYTES"
  rss_before_trimmed="$TRIMMED_KB"
  rss_before="$(status_kb "$pid" VmRSS)"
  hwm_before="$(status_kb "$pid" VmHWM)"

  # One curl, one keep-alive connection, the calls one after another; each
  # answer followed by its status code on a line of its own.
  log "parking $n $kind tasks ($tool under $tool=always)"
  BLOCK="url = \"$url\"
data-binary = \"@$REQUESTS/$request.body\"
$(sed 's/.*/header = "&"/' "$REQUESTS/$request.headers")
write-out = \"\\n%{http_code}\\n\"
" N="$n" awk 'BEGIN {for (i = 1; i <= ENVIRON["N"]; i++) printf "%s%s", (i > 1 ? "next\n" : ""), ENVIRON["BLOCK"]}' \
    >"$WORK/park.curl"
  local started="$SECONDS"
  "${LOAD_ON_CPU[@]}" curl -sS -K "$WORK/park.curl" >"$WORK/park.out" || die "curl failed while parking"
  local handles ok first last
  handles="$(grep -c '"resultType":"task"' "$WORK/park.out" || true)"
  ok="$(grep -cx 200 "$WORK/park.out" || true)"
  if [[ "$handles" != "$n" || "$ok" != "$n" ]]; then
    grep -v '"resultType":"task"' "$WORK/park.out" | grep -vx 200 | head -n 3 >&2 || true
    log "error: $kind: $handles task handles and $ok HTTP 200 in $n answers"
    exit 1
  fi
  first="$(grep -m1 -o '"taskId":"[0-9a-f]*"' "$WORK/park.out" | cut -d'"' -f4)"
  last="$(grep -o '"taskId":"[0-9a-f]*"' "$WORK/park.out" | tail -n 1 | cut -d'"' -f4)"
  log "parked $n tasks in $((SECONDS - started)) s; waiting for them to be $expected"
  if [[ "$kind" == working ]]; then
    wait_for 60 holds_files "$pid" "$n" \
      || { log "error: the gateway holds fewer than $n open files"; exit 1; }
  fi
  wait_for 60 has_status "$url" "$last" "$expected" \
    || { log "error: task $last is $(task_status "$url" "$last"), not $expected"; exit 1; }
  has_status "$url" "$first" "$expected" \
    || { log "error: task $first is $(task_status "$url" "$first"), not $expected"; exit 1; }
  sleep 1
  local rss_after hwm_after
  rss_after="$(status_kb "$pid" VmRSS)"
  hwm_after="$(status_kb "$pid" VmHWM)"
  heap_stats "$pid" "$WORK/gateway-$kind.log"
  # Fields: kind tasks RSS-before RSS-after HWM-before HWM-after (kB)
  # heap-before heap-after (bytes) trimmed-RSS-before trimmed-RSS-after (kB);
  # "-" where gdb gave nothing.
  printf '%s %s %s %s %s %s %s %s %s %s\n' "$kind" "$n" "$rss_before" "$rss_after" \
    "$hwm_before" "$hwm_after" "${heap_before:--}" "${HEAP_BYTES:--}" \
    "${rss_before_trimmed:--}" "${TRIMMED_KB:--}" >>"$MEMORY_RESULTS"
  log "$kind: VmRSS $rss_before → $rss_after kB, VmHWM $hwm_after kB"
  stop_beside "$pid"
  [[ "$kind" == working ]] && stop_beside "$HOLD_PID"
  return 0
}

if ((MEMORY)); then
  # The slow call: the fast one with slow_compute for an hour (longer than
  # any run) in its place, body and Mcp-Name header.
  sed 's/"name":"greet","arguments":{[^}]*}/"name":"slow_compute","arguments":{"seconds":3600}/' \
    "$REQUESTS/call.body" >"$REQUESTS/slow.body"
  sed 's/^Mcp-Name: greet$/Mcp-Name: slow_compute/' "$REQUESTS/call.headers" >"$REQUESTS/slow.headers"
  if ! grep -q '"slow_compute"' "$REQUESTS/slow.body" \
    || ! grep -qx 'Mcp-Name: slow_compute' "$REQUESTS/slow.headers"; then
    die "could not make the slow_compute request from the fast call's"
  fi
  for kind in $GATEWAY_BENCH_PARKED; do
    park "$kind"
  done
fi

# --- Report --------------------------------------------------------------------

# medians LOAD MODE: the medians over the runs of fields 4-9 of RESULTS
# (req/s, p50, p99, upstream CPU, gateway CPU, CPU 1 busy), space-separated.
medians() {
  local f out=()
  for f in 4 5 6 7 8 9; do
    out+=("$(awk -v l="$1" -v m="$2" -v f="$f" '$1 == l && $2 == m {print $f}' "$RESULTS" | sort -g \
      | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}')")
  done
  echo "${out[*]}"
}

# ratio_range LOAD MODE: min–max over the runs of MODE/direct req/s.
ratio_range() {
  awk -v l="$1" -v m="$2" '$1 == l {rps[$3, $2] = $4; runs[$3]}
    END {for (r in runs) {x = rps[r, m] / rps[r, "direct"]; if (lo == "" || x < lo) lo = x; if (x > hi) hi = x}
         printf "%.2f–%.2f", lo, hi}' "$RESULTS"
}

# What was measured: the commit, and whether the sources built differ from it.
commit="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')"
if [[ "$commit" != '?' && -n "$(git -C "$REPO" status --porcelain -- src Cargo.toml Cargo.lock \
  benches examples tests/support 2>/dev/null)" ]]; then
  commit="$commit + local changes"
fi
[[ -n "$GATEWAY_BENCH_GATEWAY" ]] && commit="$GATEWAY_BENCH_GATEWAY"
pinning="upstream on CPU 0; gateway and load on CPU 1"
[[ "$HTTP_BENCH_PIN" == 1 ]] || pinning="no CPU pinning"
[[ "$GATEWAY_BENCH_SPIN" == 1 ]] && pinning="$pinning; busy loops at nice 19 on every CPU"
echo
echo "Machine: $(nproc) CPUs ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)),"
echo "$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), Linux $(uname -r);" \
  "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "Gateway: $commit, $GATEWAY_BENCH_WORKERS tokio worker(s); upstream: http_server /bare/json," \
  "$HTTP_BENCH_WORKERS worker(s); $pinning."

if [[ -s "$RESULTS" ]]; then
  echo
  echo "Fast tools/call (greet, JSON), wrk -t$HTTP_BENCH_THREADS, $GATEWAY_BENCH_RUNS runs of" \
    "${GATEWAY_BENCH_SECONDS}s (warm-up ${GATEWAY_BENCH_WARMUP}s), medians; latencies in µs;"
  echo "up CPU: % of its core the upstream used; CPU 1: % busy of the CPU of the load and the hop;"
  echo "gw CPU: the gateway's CPU time per request; relay: socat, a hop with no HTTP (when installed);"
  echo "metrics, console: the gateway with --metrics, and with the operator's console on too, none"
  echo "open (GATEWAY_BENCH_CONSOLE=1)."
  echo
  echo "| Load              | via     | direct req/s |   req/s | ratio  | ratio/run | direct p50 / p99 | p50 / p99     | added p50 / p99 | up CPU d / v | CPU 1 d / v | gw CPU µs/req |"
  echo "|-------------------|---------|-------------:|--------:|-------:|-----------|-----------------:|--------------:|----------------:|-------------:|------------:|--------------:|"
  for load in "${LOADS[@]}"; do
    connections="$GATEWAY_BENCH_THROUGHPUT_CONNECTIONS"
    [[ "$load" == latency ]] && connections="$GATEWAY_BENCH_LATENCY_CONNECTIONS"
    for mode in "${MODES[@]:1}"; do
      awk -v l="$load (-c$connections)" -v m="$mode" -v d="$(medians "$load" direct)" \
        -v v="$(medians "$load" "$mode")" -v r="$(ratio_range "$load" "$mode")" 'BEGIN {
        split(d, D, " "); split(v, V, " ")
        gw = ((m == "gateway" || m == "console" || m == "metrics") && V[1] > 0) ? sprintf("%.1f", V[5] / 100 / V[1] * 1e6) : "—"
        printf "| %-17s | %-7s | %12.0f | %7.0f | %5.3f× | %-9s | %7.0f / %-6.0f | %5.0f / %-6.0f | %+6.0f / %+-6.0f | %4.0f / %-5.0f | %3.0f / %-5.0f | %13s |\n",
          l, m, D[1], V[1], V[1] / D[1], r, D[2], D[3], V[2], V[3], V[2] - D[2], V[3] - D[3],
          D[4], V[4], D[6], V[6], gw
      }'
    done
  done
  echo
  # Direct, the upstream saturates its core at -c16, and wrk alone keeps
  # CPU 1 well under half busy at either load; a direct measurement
  # otherwise means that something else ran on the machine then.
  if [[ "$GATEWAY_BENCH_SPIN" != 1 ]]; then
    awk '$2 == "direct" && (($1 == "throughput" && $7 < 90) || $9 > 60) {n++; runs[$3]}
      END {if (n) {for (r in runs) list = list " " r
        printf "Warning: other work competed in %d direct measurement(s) (runs%s: upstream under 90%% of" \
          " CPU 0 at -c16, or CPU 1 over 60%% busy); those runs do not hold.\n\n", n, list}}' "$RESULTS"
  fi
  for load in "${LOADS[@]}"; do
    awk -v l="$load" -v d="$(medians "$load" direct)" -v g="$(medians "$load" gateway)" 'BEGIN {
      split(d, D, " "); split(g, G, " ")
      if (l == "throughput") {
        x = G[1] / D[1]
        printf "Target: gateway throughput ≥ 0.9× direct: %.3f× — %s\n", x, (x >= 0.9 ? "met" : "NOT met")
      } else {
        x = G[2] - D[2]
        printf "Target: gateway added p50 ≤ 50 µs (one connection): %+.0f µs — %s\n", x, (x <= 50 ? "met" : "NOT met")
      }
    }'
  done
  if [[ "$GATEWAY_BENCH_CONSOLE" == 1 ]]; then
    for load in "${LOADS[@]}"; do
      awk -v l="$load" -v g="$(medians "$load" metrics)" -v c="$(medians "$load" console)" 'BEGIN {
        split(g, G, " "); split(c, C, " ")
        printf "Console on (none open) against --metrics alone, %s: req/s %.3f×, p50 %+.0f µs, gateway CPU %+.1f µs/req\n", l,
          C[1] / G[1], C[2] - G[2], C[5] / 100 / C[1] * 1e6 - G[5] / 100 / G[1] * 1e6
      }'
    done
  fi
fi

if [[ -s "$MEMORY_RESULTS" ]]; then
  echo
  echo "Gateway memory with parked tasks (kB; per task in bytes: growth / tasks). Heap in use and RSS"
  echo "trimmed: after malloc_trim(0), through gdb (\"-\": not read)."
  echo
  echo "| Parked            |  tasks | VmRSS before | VmRSS after | VmHWM after | VmRSS / task | heap in use / task | RSS trimmed after | trimmed / task |"
  echo "|-------------------|-------:|-------------:|------------:|------------:|-------------:|-------------------:|------------------:|---------------:|"
  awk '{
    per_heap = ($7 == "-" || $8 == "-") ? "-" : sprintf("%.0f B", ($8 - $7) / $2)
    per_trim = ($9 == "-" || $10 == "-") ? "-" : sprintf("%.0f B", ($10 - $9) * 1024 / $2)
    printf "| %-17s | %6d | %12d | %11d | %11d | %10.0f B | %18s | %17s | %14s |\n",
      $1, $2, $3, $4, $6, ($4 - $3) * 1024 / $2, per_heap, $10, per_trim
  }' "$MEMORY_RESULTS"
fi
