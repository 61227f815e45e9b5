#!/usr/bin/env bash
# HTTP benchmark (issue #11): the rmcp fixture bare and behind TasksLayer,
# in one process, over loopback HTTP, driven by wrk.
#
# Builds the `http_server` and `sse_timing` benches (release), starts the
# server (benches/http_server.rs: one tokio worker, 10,000 tasks parked
# first) pinned to CPU 0, and drives it from CPU 1 with wrk (installed into
# the git-ignored .cache/wrk when it is not on PATH: scripts/lib/wrk.sh).
# Two modes, both run by default (HTTP_BENCH_MODES):
#
# - side-by-side: each run measures a case and its baseline at the same
#   time, one on each of the server's two runtimes (both on CPU 0, each
#   loaded by a wrk of its own), which runtime serves which flipping every
#   run; a run's ratio is that of the requests per second of each
#   runtime's own CPU time, two runs with the runtimes swapped make a pair
#   (the geometric mean of their ratios; an odd last run is left out), and
#   the verdict is the median over the pairs (scripts/lib/side-by-side.sh
#   says why: the machine's speed changes between runs, not within one).
#   A server built before --paired existed (HTTP_BENCH_SERVER) runs the
#   alternate mode alone.
# - alternate: each run measures every case, bare and layered one after the
#   other (the order flips every run), each after a warm-up, with the whole
#   core; the ratio is that of the runs' median req/s.
#
# Every answer is checked (HTTP 200, the expected content type, a JSON-RPC
# result). Then it prints the medians of the runs and the ratios. Results:
# BENCHMARKS.md, "HTTP over loopback (issue #11)".
#
# | Case       | Request (a client declaring the tasks extension) | Routes                      | Target          |
# |------------|--------------------------------------------------|-----------------------------|-----------------|
# | call-json  | fast tools/call (greet)                          | /bare/json, /layered/json   | layered ≥ 0.99× (#52) |
# | call-sse   | the same, SSE answers                            | /bare/sse, /layered/sse     | layered ≥ 0.99× (#52) |
# | list       | tools/list (passes through)                      | /bare/json, /layered/json   | layered ≥ 0.98× |
# | tasks-get  | tasks/get of a working task among 10,000         | /layered/json               | ≥ 3× layered call-json |
# | sse-timing | slow_compute 0.45 s with progress (benches/sse_timing.rs) | /bare/sse, /layered/sse | each event ≤ 5 ms later |
# | control    | call-json bare against itself, side by side only | /bare/json on both runtimes | none: it shows what "no difference" reads |
# | twin       | call-json, side by side only, not run by default | /adapted/json measured against /bare/json | none: a diagnostic (below) |
# | twin-sse   | the same, SSE answers                            | /adapted/sse measured against /bare/sse | none |
#
# `/adapted` is the fixture with the layer's body types, given by two maps
# that do nothing else (benches/support/adapted.rs): it runs the same
# compiled copy of the inner server as the layered route, while the bare
# route runs one of its own. Side by side, both copies share one core's
# caches, which no server built with the layer has; twin reads what that
# (and the two maps) costs the measure.
#
# Usage:
#   scripts/http-bench.sh                                   # 6 runs of 5 s
#   HTTP_BENCH_RUNS=1 HTTP_BENCH_SECONDS=3 scripts/http-bench.sh
#   HTTP_BENCH_CASES="call-json tasks-get" scripts/http-bench.sh
#   HTTP_BENCH_SERVER=/tmp/http_server-before scripts/http-bench.sh
#
# Environment:
#   HTTP_BENCH_RUNS         runs of every case (6; side by side takes them in twos)
#   HTTP_BENCH_SECONDS      seconds of one measurement (5)
#   HTTP_BENCH_WARMUP       seconds of the warm-up before each one; 0: none (1)
#   HTTP_BENCH_CONNECTIONS  wrk connections (16)
#   HTTP_BENCH_THREADS      wrk threads (1)
#   HTTP_BENCH_CASES        the cases to run, in order, except that the
#                           side-by-side-only ones (control, twin, twin-sse)
#                           come last and sse-timing after all modes
#                           ("call-json call-sse list tasks-get control sse-timing")
#   HTTP_BENCH_MODES        the modes to run, side by side first
#                           ("side-by-side alternate")
#   HTTP_BENCH_SSE_REPEATS  sse-timing calls per route (20)
#   HTTP_BENCH_WORKERS      the server's tokio worker threads (1)
#   HTTP_BENCH_PARK         tasks parked before serving (10000)
#   HTTP_BENCH_SERVER       run this prebuilt http_server bench executable
#                           (e.g. a copy built at another commit) instead of
#                           building this tree's; sse_timing is still built
#   HTTP_BENCH_PIN          1: server on CPU 0, wrk on CPU 1; 0: no pinning
#                           (1 when taskset exists and there are 2+ CPUs)
#   WRK                     the wrk to use (default: PATH, then .cache/wrk)
#   SERVER_START_TIMEOUT    seconds to wait for the server's URL (120)
#   CARGO_TARGET_DIR        respected when building
#
# A bench executable of another commit: build it there with
# `cargo bench --bench http_server --no-run` and copy the executable it
# names. Exits 1 when a check fails, 2 on a setup error.
set -euo pipefail

HTTP_BENCH_RUNS="${HTTP_BENCH_RUNS:-6}"
HTTP_BENCH_SECONDS="${HTTP_BENCH_SECONDS:-5}"
HTTP_BENCH_WARMUP="${HTTP_BENCH_WARMUP:-1}"
HTTP_BENCH_CASES="${HTTP_BENCH_CASES:-call-json call-sse list tasks-get control sse-timing}"
HTTP_BENCH_SSE_REPEATS="${HTTP_BENCH_SSE_REPEATS:-20}"
HTTP_BENCH_MODES="${HTTP_BENCH_MODES:-side-by-side alternate}"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/http-load.sh
source "$REPO/scripts/lib/http-load.sh"
# shellcheck source=lib/side-by-side.sh
source "$REPO/scripts/lib/side-by-side.sh"
help_if_asked "$@"

use_work_dir http-bench

# --- Cases -------------------------------------------------------------------

THROUGHPUT=()
# Cases of the side-by-side mode alone.
PAIRED_ONLY=()
SSE_TIMING=0
for case in $HTTP_BENCH_CASES; do
  case "$case" in
    sse-timing) SSE_TIMING=1 ;;
    tasks-get) THROUGHPUT+=("$case") ;;
    control | twin | twin-sse) PAIRED_ONLY+=("$case") ;;
    *) case_route "$case" bare && THROUGHPUT+=("$case") ;;
  esac
done

# --- Build, install wrk, start (before measuring anything) -------------------

find_wrk
log "wrk: $WRK"
benches=()
((SSE_TIMING)) && benches+=(sse_timing)
SIDE_BY_SIDE=0
ALTERNATE=0
for mode in $HTTP_BENCH_MODES; do
  case "$mode" in
    side-by-side) SIDE_BY_SIDE=1 ;;
    alternate) ALTERNATE=1 ;;
    *) die "unknown mode $mode (side-by-side, alternate)" ;;
  esac
done
# check_plan: drops the side-by-side-only cases when that mode is off (with
# a word), and dies when nothing is left to run.
check_plan() {
  if ((!SIDE_BY_SIDE && ${#PAIRED_ONLY[@]} > 0)); then
    log "skipping ${PAIRED_ONLY[*]}: side by side only"
    PAIRED_ONLY=()
  fi
  # The alternate mode runs the throughput cases only.
  ((${#THROUGHPUT[@]} > 0)) || ALTERNATE=0
  local paired=0
  ((!SIDE_BY_SIDE)) || paired=$((${#THROUGHPUT[@]} + ${#PAIRED_ONLY[@]}))
  if ((!SSE_TIMING && !ALTERNATE && paired == 0)); then
    die "nothing to run: cases \"$HTTP_BENCH_CASES\" in modes \"$HTTP_BENCH_MODES\""
  fi
}
check_plan
prepare_server "${benches[@]}"
# A server with the option announces its second port with these words.
if ((SIDE_BY_SIDE)) && ! grep -aq 'paired listener on' "$WORK/http_server"; then
  log "this http_server has no --paired (built before it existed): alternate mode only"
  SIDE_BY_SIDE=0
  ALTERNATE=1
  check_plan
fi
# The twin cases need the /adapted routes (benches/support/adapted.rs).
if ((SIDE_BY_SIDE)) && [[ " ${PAIRED_ONLY[*]} " == *" twin"* ]] \
  && ! grep -aq '/adapted/json' "$WORK/http_server"; then
  die "this http_server has no /adapted routes (built before they existed): no twin cases"
fi
if ((SIDE_BY_SIDE)); then
  start_bench_server --paired
  log "paired runtime at $PAIRED_URL"
else
  start_bench_server
fi

# --- Measure -----------------------------------------------------------------

RESULTS="$WORK/results"
: >"$RESULTS"

# measure RUN CASE VARIANT: warm-up, then one measurement into RESULTS.
measure() {
  local run="$1" case="$2" variant="$3"
  if [[ "$HTTP_BENCH_WARMUP" != 0 ]]; then
    run_wrk "$HTTP_BENCH_WARMUP" "$case" "$variant"
  fi
  run_wrk "$HTTP_BENCH_SECONDS" "$case" "$variant"
  # Fields: case variant run req/s p50-µs server-CPU-% req-per-CPU-second.
  local per_cpu
  per_cpu="$(awk -v r="$RPS" -v c="$SERVER_CPU" 'BEGIN {printf "%.0f", (c > 0 ? r * 100 / c : 0)}')"
  printf '%s %s %s %s %s %s %s\n' "$case" "$variant" "$run" "$RPS" "$P50_US" "$SERVER_CPU" "$per_cpu" \
    >>"$RESULTS"
  log "run $run/$HTTP_BENCH_RUNS $case $variant: $RPS req/s, p50 $P50_US µs, server CPU $SERVER_CPU%"
}

PAIRED=("${THROUGHPUT[@]}" "${PAIRED_ONLY[@]}")
if ((SIDE_BY_SIDE && ${#PAIRED[@]} > 0)); then
  : >"$WORK/pairs"
  for run in $(seq 1 "$HTTP_BENCH_RUNS"); do
    measure_pairs "$run" "${PAIRED[@]}"
  done
fi

if ((ALTERNATE && ${#THROUGHPUT[@]} > 0)); then
  for run in $(seq 1 "$HTTP_BENCH_RUNS"); do
    for case in "${THROUGHPUT[@]}"; do
      if [[ "$case" == tasks-get ]]; then
        measure "$run" "$case" layered
      elif ((run % 2)); then
        measure "$run" "$case" bare
        measure "$run" "$case" layered
      else
        measure "$run" "$case" layered
        measure "$run" "$case" bare
      fi
    done
  done
fi

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  tail -n 40 "$WORK/server.log" >&2 || true
  log "error: http_server is no longer running"
  exit 1
fi

# --- Report ------------------------------------------------------------------

# column CASE VARIANT FIELD: that field of every run (4: req/s, 5: p50 µs,
# 6: server CPU %, 7: requests per server CPU-second).
column() {
  awk -v c="$1" -v v="$2" -v f="$3" '$1 == c && $2 == v {print $f}' "$RESULTS"
}

median() {
  sort -g | awk '{a[NR] = $1} END {if (NR == 0) print ""; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

# ratio_range CASE_A VARIANT_A CASE_B VARIANT_B: min–max over the runs of
# A/B in req/s, each run with its own pair.
ratio_range() {
  join <(awk -v c="$1" -v v="$2" '$1 == c && $2 == v {print $3, $4}' "$RESULTS" | sort) \
    <(awk -v c="$3" -v v="$4" '$1 == c && $2 == v {print $3, $4}' "$RESULTS" | sort) \
    | awk 'NR == 1 {lo = hi = $2 / $3} {r = $2 / $3; if (r < lo) lo = r; if (r > hi) hi = r}
           END {if (NR) printf "%.3f–%.3f", lo, hi}'
}

# row LABEL CASE VARIANT BASE_CASE BASE_VARIANT TARGET: one line of the
# table: the median req/s of CASE VARIANT against that of the baseline
# (the ratio must be at least TARGET), with the per-run ratios' range, the
# server's CPU use, the same ratio per server CPU-second, and the median
# latencies.
row() {
  local label="$1" case="$2" variant="$3" base_case="$4" base_variant="$5" target="$6"
  local f m=() b=()
  for f in 4 5 6 7; do
    m+=("$(column "$case" "$variant" "$f" | median)")
    b+=("$(column "$base_case" "$base_variant" "$f" | median)")
  done
  [[ -n "${m[0]}" && -n "${b[0]}" ]] || return 0
  awk -v l="$label" -v m="${m[*]}" -v b="${b[*]}" -v t="$target" \
    -v r="$(ratio_range "$case" "$variant" "$base_case" "$base_variant")" 'BEGIN {
    split(m, M, " "); split(b, B, " ")
    ratio = M[1] / B[1]
    printf "| %-30s | %8.0f | %8.0f | %6.3f× | %-11s | %3.0f / %-3.0f | %8.3f× | %5.0f / %-5.0f | ≥ %-5s | %-3s |\n",
      l, B[1], M[1], ratio, r, B[3], M[3], M[4] / B[4], B[2], M[2], t "×", (ratio >= t ? "yes" : "no")
  }'
}

if [[ -s "$RESULTS" ]]; then
  load="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
  commit="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')"
  server="this tree ($commit)"
  [[ -n "$HTTP_BENCH_SERVER" ]] && server="$HTTP_BENCH_SERVER"
  pinning="server on CPU 0, wrk on CPU 1"
  [[ "$HTTP_BENCH_PIN" == 1 ]] || pinning="no CPU pinning"
  echo
  echo "HTTP over loopback: server $server, $HTTP_BENCH_WORKERS tokio worker(s), $HTTP_BENCH_PARK tasks parked;"
  echo "wrk -t$HTTP_BENCH_THREADS -c$HTTP_BENCH_CONNECTIONS, $HTTP_BENCH_RUNS runs of ${HTTP_BENCH_SECONDS}s (warm-up ${HTTP_BENCH_WARMUP}s), $pinning;"
  echo "medians of the runs; load average at the end: $load. Throughput in req/s; ratio/run: the"
  echo "range of the runs' own ratios; CPU: % of one core the server used (below 100: other work"
  echo "took CPU 0 from it); per CPU-s: the ratio of requests per server CPU-second."
  echo
  echo "| Measured vs baseline           | baseline | measured |  ratio  | ratio/run   | CPU b / m | per CPU-s | p50 µs b / m  | target  | met |"
  echo "|--------------------------------|----------|----------|---------|-------------|-----------|-----------|---------------|---------|-----|"
  for case in "${THROUGHPUT[@]}"; do
    case "$case" in
      call-json) row "call-json: layered vs bare" call-json layered call-json bare 0.99 ;;
      call-sse) row "call-sse: layered vs bare" call-sse layered call-sse bare 0.99 ;;
      list) row "list: layered vs bare" list layered list bare 0.98 ;;
      tasks-get) row "tasks-get vs layered call-json" tasks-get layered call-json layered 3.00 ;;
    esac
  done
fi

if ((SIDE_BY_SIDE)); then
  report_pairs "${PAIRED[@]}"
fi

# --- SSE timing ----------------------------------------------------------------

if ((SSE_TIMING)); then
  echo
  "${LOAD_ON_CPU[@]}" "$WORK/sse_timing" "$URL" --repeats "$HTTP_BENCH_SSE_REPEATS" \
    || { log "error: sse_timing failed"; exit 1; }
fi
