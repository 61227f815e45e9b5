#!/usr/bin/env bash
# Where the layer's cost goes (issue #11): one perf recording of the bench
# server while both variants of a case run side by side, split by runtime,
# then per request: what the layered runtime spends beyond the bare one, by
# function and by crate.
#
# Starts the server as scripts/http-bench.sh's side-by-side mode does
# (benches/http_server.rs --paired: runtimes `serve-a` and `serve-b`, both
# pinned to CPU 0, each loaded by a wrk of its own on CPU 1), the layered
# variant on `serve-a` and the bare one on `serve-b`, warms both up, then
# records the server with `perf record` (no call graphs: self time only)
# while both run. Each runtime's samples are divided by the requests it
# served, so a function's figure is its self time per request; the
# difference, as a percentage of the bare runtime's time per request, is
# what the layer adds there. Functions only the layer runs show their whole
# cost; shared ones (malloc, the inner server, the kernel) show what the
# layered requests spend there beyond the bare ones, with the noise of
# sampling: run `control` first to see how large that is.
#
# Usage:
#   scripts/profile-pair.sh                    # call-json, 20 s
#   scripts/profile-pair.sh call-sse
#   scripts/profile-pair.sh control            # bare on both runtimes
#   PROFILE_SECONDS=40 PROFILE_TOP=60 scripts/profile-pair.sh
#
# Cases: call-json, call-sse, list (layered against bare), and control
# (call-json bare against bare).
#
# Environment:
#   PROFILE_SECONDS     seconds recorded (20)
#   PROFILE_FREQUENCY   samples a second (2999)
#   PROFILE_TOP         functions listed (40)
#   PROFILE_OUT         folder for perf.data and the listings (a new
#                       temporary folder)
#   PERF                the perf to use (perf on PATH; when missing and run
#                       as root, apt-get installs linux-perf)
#   HTTP_BENCH_SERVER, HTTP_BENCH_PARK, HTTP_BENCH_CONNECTIONS,
#   HTTP_BENCH_THREADS, HTTP_BENCH_PIN, WRK
#                       as for scripts/http-bench.sh (HTTP_BENCH_PARK
#                       defaults to 1000 here)
#   CARGO_TARGET_DIR    respected when building
#
# Exits 1 when a check of the answers fails, 2 on a setup error.
set -euo pipefail

PROFILE_SECONDS="${PROFILE_SECONDS:-20}"
PROFILE_FREQUENCY="${PROFILE_FREQUENCY:-2999}"
PROFILE_TOP="${PROFILE_TOP:-40}"
HTTP_BENCH_PARK="${HTTP_BENCH_PARK:-1000}"
CASE="${1:-call-json}"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/http-load.sh
source "$REPO/scripts/lib/http-load.sh"
# shellcheck source=lib/side-by-side.sh
source "$REPO/scripts/lib/side-by-side.sh"
# shellcheck source=lib/perf.sh
source "$REPO/scripts/lib/perf.sh"
help_if_asked "$@"

MEASURED_CASE="$CASE" MEASURED=layered
case "$CASE" in
  call-json | call-sse | list) ;;
  control) MEASURED_CASE=call-json MEASURED=bare ;;
  *) die "unknown case $CASE (call-json, call-sse, list, control)" ;;
esac

find_perf
OUT="${PROFILE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-profile-pair.XXXXXX")}"
mkdir -p "$OUT"

use_work_dir profile-pair
find_wrk
prepare_server
start_bench_server --paired

# both SECONDS: the measured variant on serve-a (URL), bare on serve-b
# (PAIRED_URL), at once (lib/side-by-side.sh); sets RPS_MEASURED and
# RPS_BARE.
both() {
  both_wrk "$1" "$MEASURED_CASE" "$MEASURED" "$URL" "$MEASURED_CASE" bare "$PAIRED_URL"
  RPS_MEASURED="$PAIR_RPS" RPS_BARE="$PAIR_BASE_RPS"
}

both 2
log "warm-up: $RPS_MEASURED ($MEASURED) and $RPS_BARE (bare) req/s"
log "recording for ${PROFILE_SECONDS}s (cpu-clock, $PROFILE_FREQUENCY Hz, self time)"
(
  sleep 0.5
  exec "$PERF" record -e cpu-clock -F "$PROFILE_FREQUENCY" -p "$SERVER_PID" \
    -o "$OUT/perf.data" -- sleep "$PROFILE_SECONDS"
) >"$OUT/record.log" 2>&1 &
perf_pid=$!
both "$((PROFILE_SECONDS + 1))"
wait "$perf_pid" || { cat "$OUT/record.log" >&2; die "perf record failed"; }
log "while recording: $RPS_MEASURED ($MEASURED) and $RPS_BARE (bare) req/s"

"$PERF" report -i "$OUT/perf.data" --no-children --sort comm,dso,sym \
  -F sample,comm,dso,sym --stdio -t $'\t' 2>/dev/null | grep -v '^#' | grep -v '^$' \
  >"$OUT/samples.tsv" || die "perf report gave nothing"

# Per request, as a percentage of the bare runtime's time per request:
# what the measured runtime spends beyond the bare one, its own time and the
# bare one's, by crate (C) and by function (F). Samples share the
# recording time, so req/s stands in for requests.
awk -F'\t' -v a="$RPS_MEASURED" -v b="$RPS_BARE" '
  function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
  function crate(dso, sym) {
    if (dso ~ /kernel/) return "[kernel]"
    if (dso ~ /^lib/) return "[" dso "]"
    sub(/^</, "", sym); sub(/ as .*/, "", sym); sub(/::.*/, "", sym)
    return sym
  }
  {
    n = trim($1) + 0; comm = trim($2); dso = trim($3); sym = trim($4)
    sub(/^\[[.k]\] +/, "", sym)
    if (comm == "serve-a") { A[sym] += n; CA[crate(dso, sym)] += n; ta += n }
    else if (comm == "serve-b") { B[sym] += n; CB[crate(dso, sym)] += n; tb += n }
    all[sym] = 1; crates[crate(dso, sym)] = 1
  }
  function row(kind, x, y, name) {
    d = 100 * (x / a - y / b) / base
    printf "%s\t%.3f\t%+.2f%%\t%.2f%%\t%.2f%%\t%s\n", kind, (d < 0 ? -d : d), d,
      100 * x / a / base, 100 * y / b / base, substr(name, 1, 110)
  }
  END {
    if (ta == 0 || tb == 0) exit 2
    base = tb / b
    printf "T\t%d\t%d\t%+.2f%%\n", ta, tb, 100 * (ta / a - base) / base
    for (c in crates) row("C", CA[c], CB[c], c)
    for (s in all) row("F", A[s], B[s], s)
  }' "$OUT/samples.tsv" >"$OUT/rows.tsv" || die "no samples of both runtimes"

# table KIND COUNT HEADING: the COUNT rows of KIND that differ most.
table() {
  echo "| Added per request | $MEASURED | bare | $3 |"
  echo "|------------------:|---------:|-----:|------|"
  awk -F'\t' -v k="$1" '$1 == k' "$OUT/rows.tsv" | sort -t$'\t' -k2,2gr | head -n "$2" \
    | awk -F'\t' '{printf "| %s | %s | %s | %s |\n", $3, $4, $5, $6}'
}
IFS=$'\t' read -r _ samples_a samples_b added < <(grep '^T' "$OUT/rows.tsv")
echo
echo "$CASE: $MEASURED on serve-a $RPS_MEASURED req/s, bare on serve-b $RPS_BARE req/s;"
echo "samples $samples_a and $samples_b. Per request the $MEASURED runtime spends $added"
echo "of the bare one's time (time in % of the bare runtime's time per request)."
echo
table C 12 crate
echo
table F "$PROFILE_TOP" function
echo
echo "Kept in $OUT: perf.data, samples.tsv, rows.tsv"
