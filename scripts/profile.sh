#!/usr/bin/env bash
# Profile of the HTTP benchmark's server (issue #11): `perf record` of
# benches/http_server.rs while wrk drives one case, then the functions that
# took the most time.
#
# Builds and starts the server as scripts/http-bench.sh does for its
# alternate mode (one serving runtime of one tokio worker pinned to CPU 0,
# 10,000 tasks parked, wrk on CPU 1; no --paired runtime), warms
# the case up, records the server with call graphs while wrk drives the
# case, and prints three listings of perf report: self time by function
# (with its library), self time by library, and time with callees
# (--children) of the layer's own functions. The
# bench build carries line tables (scripts/lib/build-bench.sh), so the
# symbols are the crate's own functions. perf.data and a full report with
# call graphs stay in the output folder, printed at the end. Profiles
# taken with it: BENCHMARKS.md, "HTTP over loopback (issue #11)".
#
# Usage:
#   scripts/profile.sh                        # call-json, layered, 10 s
#   scripts/profile.sh call-json bare
#   scripts/profile.sh tasks-get layered
#   PROFILE_SECONDS=20 scripts/profile.sh call-sse layered
#
# Cases and variants: those of scripts/http-bench.sh (call-json, call-sse,
# list: bare or layered; tasks-get: layered).
#
# Environment:
#   PROFILE_SECONDS         seconds recorded (10)
#   PROFILE_FREQUENCY       samples a second (999)
#   PROFILE_CALL_GRAPH      perf's --call-graph method (dwarf)
#   PROFILE_EVENT           the sampled event (cpu-clock; cpu-clock:u, user
#                           space only, when perf_event_paranoid forbids
#                           kernel samples to a non-root user)
#   PROFILE_PERCENT_LIMIT   leave out entries below this percentage (0.5)
#   PROFILE_FOCUS           the third listing keeps the functions whose name
#                           holds this (mcp_tasks::, the layer's own)
#   PROFILE_OUT             folder for perf.data and the reports (a new
#                           temporary folder)
#   PERF                    the perf to use (perf on PATH; when missing and
#                           run as root, apt-get installs linux-perf)
#   HTTP_BENCH_SERVER, HTTP_BENCH_WORKERS, HTTP_BENCH_PARK,
#   HTTP_BENCH_CONNECTIONS, HTTP_BENCH_THREADS, HTTP_BENCH_PIN, WRK
#                           as for scripts/http-bench.sh
#   CARGO_TARGET_DIR        respected when building
#
# Exits 1 when a check of the answers fails, 2 on a setup error.
set -euo pipefail

PROFILE_SECONDS="${PROFILE_SECONDS:-10}"
PROFILE_FREQUENCY="${PROFILE_FREQUENCY:-999}"
PROFILE_CALL_GRAPH="${PROFILE_CALL_GRAPH:-dwarf}"
PROFILE_PERCENT_LIMIT="${PROFILE_PERCENT_LIMIT:-0.5}"
PROFILE_FOCUS="${PROFILE_FOCUS:-mcp_tasks::}"
CASE="${1:-call-json}"
VARIANT="${2:-layered}"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/http-load.sh
source "$REPO/scripts/lib/http-load.sh"
# shellcheck source=lib/perf.sh
source "$REPO/scripts/lib/perf.sh"
help_if_asked "$@"

case_route "$CASE" "$VARIANT"

# --- perf --------------------------------------------------------------------

find_perf
if [[ -z "${PROFILE_EVENT:-}" ]]; then
  PROFILE_EVENT=cpu-clock
  paranoid="$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)"
  if [[ "$(id -u)" != 0 ]] && ((paranoid > 1)); then
    PROFILE_EVENT=cpu-clock:u
  fi
fi

OUT="${PROFILE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-profile.XXXXXX")}"
mkdir -p "$OUT"

# --- Build, start, warm up -------------------------------------------------------

use_work_dir profile
find_wrk
prepare_server
start_bench_server
run_wrk 2 "$CASE" "$VARIANT"
log "warm-up: $RPS req/s"

# --- Record --------------------------------------------------------------------

# wrk runs a second longer than perf records, on both sides of the window.
log "recording $CASE $VARIANT for ${PROFILE_SECONDS}s ($PROFILE_EVENT, $PROFILE_FREQUENCY Hz, --call-graph $PROFILE_CALL_GRAPH)"
(
  sleep 0.5
  exec "$PERF" record -e "$PROFILE_EVENT" -F "$PROFILE_FREQUENCY" \
    --call-graph "$PROFILE_CALL_GRAPH" -p "$SERVER_PID" -o "$OUT/perf.data" \
    -- sleep "$PROFILE_SECONDS"
) >"$OUT/record.log" 2>&1 &
perf_pid=$!
run_wrk "$((PROFILE_SECONDS + 1))" "$CASE" "$VARIANT"
wait "$perf_pid" || { cat "$OUT/record.log" >&2; die "perf record failed"; }
log "while recording: $RPS req/s, p50 $P50_US µs, server CPU $SERVER_CPU%"

# --- Report --------------------------------------------------------------------

# report ARGS...: perf report's flat listing, its headers and padding cut.
report() {
  "$PERF" report -i "$OUT/perf.data" --no-inline --stdio \
    --percent-limit "$PROFILE_PERCENT_LIMIT" "$@" 2>/dev/null \
    | grep -v '^#' | grep -v '^$' | sed -E 's/[[:space:]]+(-[[:space:]]+)*$//'
}
log "writing the reports"
"$PERF" report -i "$OUT/perf.data" --no-children --stdio --sort dso,symbol \
  --percent-limit "$PROFILE_PERCENT_LIMIT" >"$OUT/report-calls.txt" 2>/dev/null
samples="$(grep -m1 '^# Samples' "$OUT/report-calls.txt" | sed 's/^# //' || true)"
echo
echo "== $CASE $VARIANT: self time by function (≥ $PROFILE_PERCENT_LIMIT%; $samples)"
report --no-children -g none --sort dso,symbol
echo
echo "== $CASE $VARIANT: self time by library"
report --no-children -g none --sort dso
echo
echo "== $CASE $VARIANT: time with callees of the functions matching '$PROFILE_FOCUS'"
echo "   (as far as DWARF unwinding reaches; async frames are often cut short)"
report --children -g none --sort symbol | grep -F -- "$PROFILE_FOCUS" || echo "    (none)"
echo
echo "Kept in $OUT: perf.data, report-calls.txt (with call graphs)"
