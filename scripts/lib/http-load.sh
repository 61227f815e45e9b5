# Sourced by scripts/http-bench.sh and scripts/profile.sh: the bench server
# of issue #11 (benches/http_server.rs), its cases, and one wrk run of a
# case. Needs REPO from the sourcing script, and WORK (use_work_dir)
# before its functions run. Sources the helpers it builds on (lib/common.sh,
# lib/start-server.sh, lib/build-bench.sh, lib/wrk.sh).
#
# Settings read from the environment (defaults in brackets):
#   HTTP_BENCH_SERVER       a prebuilt http_server bench executable to run
#                           instead of building this tree's (a build of
#                           another commit, for before/after) []
#   HTTP_BENCH_WORKERS      the server's tokio worker threads [1]
#   HTTP_BENCH_PARK         tasks parked before serving [10000]
#   HTTP_BENCH_CONNECTIONS  wrk connections [16]
#   HTTP_BENCH_THREADS      wrk threads [1]
#   HTTP_BENCH_PIN          1: server on CPU 0, load on CPU 1 (taskset);
#                           0: no pinning [1 when taskset and 2+ CPUs]

# shellcheck source=common.sh
source "$REPO/scripts/lib/common.sh"
# shellcheck source=start-server.sh
source "$REPO/scripts/lib/start-server.sh"
# shellcheck source=build-bench.sh
source "$REPO/scripts/lib/build-bench.sh"
# shellcheck source=wrk.sh
source "$REPO/scripts/lib/wrk.sh"

HTTP_BENCH_SERVER="${HTTP_BENCH_SERVER:-}"
HTTP_BENCH_WORKERS="${HTTP_BENCH_WORKERS:-1}"
HTTP_BENCH_PARK="${HTTP_BENCH_PARK:-10000}"
HTTP_BENCH_CONNECTIONS="${HTTP_BENCH_CONNECTIONS:-16}"
HTTP_BENCH_THREADS="${HTTP_BENCH_THREADS:-1}"
SERVER_START_TIMEOUT="${SERVER_START_TIMEOUT:-120}"
HTTP_LOAD_LUA="$REPO/scripts/lib/http-bench.lua"

if [[ -z "${HTTP_BENCH_PIN:-}" ]]; then
  HTTP_BENCH_PIN=0
  if command -v taskset >/dev/null 2>&1 && (($(nproc) >= 2)); then
    HTTP_BENCH_PIN=1
  fi
fi
# The prefix that puts a load process on CPU 1 (empty without pinning).
LOAD_ON_CPU=()
if [[ "$HTTP_BENCH_PIN" == 1 ]]; then
  LOAD_ON_CPU=(taskset -c 1)
fi

# prepare_server [BENCH...]: puts the server executable at WORK/http_server
# (built here, or copied from HTTP_BENCH_SERVER) and builds the other named
# benches of this tree into WORK.
prepare_server() {
  if [[ -n "$HTTP_BENCH_SERVER" ]]; then
    [[ -x "$HTTP_BENCH_SERVER" ]] || die "HTTP_BENCH_SERVER=$HTTP_BENCH_SERVER is not executable"
    cp "$HTTP_BENCH_SERVER" "$WORK/http_server"
    if (($# > 0)); then
      build_benches "$WORK" "$@"
    fi
  else
    build_benches "$WORK" http_server "$@"
  fi
}

# start_bench_server [--paired]: starts WORK/http_server (it parks its
# tasks first), pins it to CPU 0 and sets SERVER_PID, URL
# (http://127.0.0.1:PORT) and REQUESTS (the folder of the requests it
# wrote). With --paired the server's second runtime serves the same routes
# too, and PAIRED_URL is its address.
start_bench_server() {
  REQUESTS="$WORK/requests"
  log "starting http_server (parks $HTTP_BENCH_PARK tasks first)"
  start_server "$WORK/http_server" "$WORK/server.log" \
    --workers "$HTTP_BENCH_WORKERS" --park "$HTTP_BENCH_PARK" --requests "$REQUESTS" "$@"
  if [[ "${1:-}" == --paired ]]; then
    # Written together with the first address.
    PAIRED_URL="$(grep -oE 'paired listener on http://127\.0\.0\.1:[0-9]+' "$WORK/server.log" \
      | grep -oE 'http://.*' || true)"
    [[ -n "$PAIRED_URL" ]] || die "http_server announced no paired listener"
  fi
  if [[ "$HTTP_BENCH_PIN" == 1 ]]; then
    taskset -a -p -c 0 "$SERVER_PID" >/dev/null
  fi
  log "http_server (PID $SERVER_PID) listening at $URL; $(grep -m1 'tasks/get target' "$WORK/server.log")"
}

# case_route CASE VARIANT: sets ROUTE_PATH, ROUTE_REQUEST (a request name the
# server wrote) and ROUTE_TYPE (the content type every answer must have).
# Cases: call-json, call-sse, list (variants bare, layered and adapted) and
# tasks-get (layered only).
case_route() {
  local case="$1" variant="$2"
  [[ "$variant" =~ ^(bare|layered|adapted)$ ]] || die "unknown variant $variant"
  case "$case" in
    call-json) ROUTE_PATH="/$variant/json" ROUTE_REQUEST=call ROUTE_TYPE=application/json ;;
    call-sse) ROUTE_PATH="/$variant/sse" ROUTE_REQUEST=call ROUTE_TYPE=text/event-stream ;;
    list) ROUTE_PATH="/$variant/json" ROUTE_REQUEST=list ROUTE_TYPE=application/json ;;
    tasks-get)
      [[ "$variant" == layered ]] || die "tasks-get runs on the layered route only"
      ROUTE_PATH="/layered/json" ROUTE_REQUEST=tasks-get ROUTE_TYPE=application/json
      ;;
    *) die "unknown case $case (call-json, call-sse, list, tasks-get; and control, twin, twin-sse, sse-timing)" ;;
  esac
}

# thread_cpu_ns NAME: the CPU time the server's threads named NAME used so
# far, in nanoseconds (the scheduler's own count, /proc/PID/task/*/schedstat;
# where that is missing or reads 0, user + system ticks of
# /proc/PID/task/*/stat). A thread that exits between two readings would
# take its time out of the difference: tokio gives its blocking pool the
# same name, but nothing the bench server serves uses that pool.
thread_cpu_ns() {
  local name="$1" task comm total=0 ns
  for task in /proc/"$SERVER_PID"/task/*; do
    comm="$(cat "$task/comm" 2>/dev/null || true)"
    [[ "$comm" == "$name" ]] || continue
    ns=""
    if [[ -r "$task/schedstat" ]]; then
      ns="$(cut -d' ' -f1 "$task/schedstat")"
    fi
    if [[ -z "$ns" || "$ns" == 0 ]]; then
      ns="$(awk -v hz="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); printf "%.0f", ($12 + $13) * 1e9 / hz}' "$task/stat")"
    fi
    total=$((total + ns))
  done
  echo "$total"
}

# server_ticks: the CPU time the server used so far (user + system, every
# thread), in clock ticks.
server_ticks() {
  awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"
}

# run_wrk SECONDS CASE VARIANT: drives the case for SECONDS with wrk and
# sets RPS (requests/s), P50_US (median latency, µs) and SERVER_CPU (the
# server's CPU use meanwhile, % of one core: below 100 with one worker,
# something else took CPU 0 from it). Fails the run when any answer was
# wrong or any socket error occurred.
run_wrk() {
  local seconds="$1" case="$2" variant="$3"
  local out="$WORK/wrk.out" ticks start
  ticks="$(server_ticks)"
  start="$(date +%s.%N)"
  start_wrk "$seconds" "$case" "$variant" "$URL" "$out"
  wait "$WRK_PID" || { cat "$out" >&2; die "wrk failed on $case $variant"; }
  SERVER_CPU="$(awk -v used="$(($(server_ticks) - ticks))" -v hz="$(getconf CLK_TCK)" \
    -v start="$start" -v end="$(date +%s.%N)" 'BEGIN {printf "%.0f", 100 * used / hz / (end - start)}')"
  check_wrk "$out" "$case" "$variant"
}

# start_wrk SECONDS CASE VARIANT BASE OUT: starts wrk in the background on
# the case's route under BASE (http://127.0.0.1:PORT) for SECONDS, its
# output into OUT; sets WRK_PID.
start_wrk() {
  local seconds="$1" case="$2" variant="$3" base="$4" out="$5"
  case_route "$case" "$variant"
  "${LOAD_ON_CPU[@]}" "$WRK" -t "$HTTP_BENCH_THREADS" -c "$HTTP_BENCH_CONNECTIONS" \
    -d "${seconds}s" -s "$HTTP_LOAD_LUA" "$base$ROUTE_PATH" -- \
    "$REQUESTS/$ROUTE_REQUEST.body" "$REQUESTS/$ROUTE_REQUEST.headers" "$ROUTE_TYPE" \
    >"$out" 2>&1 &
  WRK_PID=$!
}

# check_wrk OUT CASE VARIANT: reads a finished wrk run's OUT into RPS and
# P50_US; dies when any answer was wrong or any socket error occurred.
check_wrk() {
  local out="$1" case="$2" variant="$3"
  local checked wrong socket
  checked="$(awk '$1 == "checked" {print $2}' "$out")"
  wrong="$(awk '$1 == "wrong" {print $2}' "$out")"
  socket="$(grep -o 'Socket errors:.*' "$out" || true)"
  RPS="$(awk '$1 == "Requests/sec:" {print $2}' "$out")"
  P50_US="$(awk '$1 == "p50_us" {print $2}' "$out")"
  [[ -n "$checked" && -n "$RPS" ]] || { cat "$out" >&2; die "no figures from wrk on $case $variant"; }
  if [[ "$wrong" != 0 || -n "$socket" || "$checked" == 0 ]]; then
    cat "$out" >&2
    die "$case $variant: $wrong of $checked answers wrong${socket:+, $socket}"
  fi
}
