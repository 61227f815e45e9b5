#!/usr/bin/env bash
# Instructions per call of the fast path (issue #11), bare and behind the
# layer, counted by valgrind's cachegrind: a figure this noisy virtual
# machine cannot blur, for before/after comparisons that throughput cannot
# resolve to a few percent.
#
# Builds the `fast_path` bench (release, line tables) and runs its
# `--count CASE VARIANT CALLS` mode (the HTTP benchmark's requests over the
# real rmcp fixture, in process, nothing timed) under cachegrind, with N and
# with 2N calls; the difference divided by N is what one call costs, with
# the start-up (runtime, router, fixture) cancelled out. Cachegrind also
# simulates the caches: the first-level instruction and data misses per
# call come out the same way. Prints a Markdown table per case: bare,
# layered, what the layer adds, and bare/layered (what the throughput
# ratio would be if time followed instructions; it does not exactly, as
# cache misses and the memory copies valgrind counts by the byte weigh
# differently). Results: BENCHMARKS.md, "HTTP over loopback (issue #11)".
#
# With INSTRUCTIONS_HTTP=1 it counts over loopback HTTP instead: the HTTP
# benchmark's server (benches/http_server.rs, one worker, one task parked)
# runs under cachegrind and curl sends it N (then 2N) calls one after the
# other on one connection; every answer must hold a JSON-RPC result. What
# the kernel does for the sockets is not counted (cachegrind sees user
# space only), and the server's own timed work (its one parked task wakes
# every 0.2 s) adds a little per call, more the slower the machine runs
# the calls: compare counts taken one after the other on an idle machine.
#
# With INSTRUCTIONS_TOP=K it also lists, per case, the K functions whose
# first-level instruction-cache misses the layer adds most (layered minus
# bare, in the runs of 2N calls, per call; cg_annotate, which comes with
# valgrind, reads the counts by function), and the sums over the functions
# only the layered run executes: the code the layer brings into each call.
# Every line of it is cold again on the next call here, as over HTTP, so
# its lines missed rank a change as much as its instructions do.
#
# Usage:
#   scripts/instructions.sh                       # all cases, N = 1000
#   INSTRUCTIONS_TOP=15 INSTRUCTIONS_CASES=call_json scripts/instructions.sh
#   INSTRUCTIONS_CASES=call_json scripts/instructions.sh
#   FAST_PATH_BENCH=/tmp/fast_path-before scripts/instructions.sh
#   INSTRUCTIONS_HTTP=1 scripts/instructions.sh   # over HTTP
#
# Environment:
#   INSTRUCTIONS_CASES   cases (call_json call_sse list)
#   INSTRUCTIONS_CALLS   N (1000)
#   INSTRUCTIONS_HTTP    1: over loopback HTTP (0)
#   INSTRUCTIONS_TOP     K > 0: the functions with the most added I1
#                        misses per call, K of them, per case (0: none)
#   FAST_PATH_BENCH      a prebuilt fast_path bench executable (a build of
#                        another commit, for before/after) instead of
#                        building this tree's; it must have `--count`
#   HTTP_BENCH_SERVER    the same for the http_server bench (HTTP mode)
#   VALGRIND             the valgrind to use (valgrind on PATH; when missing
#                        and run as root, apt-get installs Debian's valgrind)
#   CARGO_TARGET_DIR     respected when building
#
# Exits 2 on a setup error.
set -euo pipefail
shopt -s inherit_errexit

INSTRUCTIONS_CASES="${INSTRUCTIONS_CASES:-call_json call_sse list}"
INSTRUCTIONS_CALLS="${INSTRUCTIONS_CALLS:-1000}"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/common.sh
source "$REPO/scripts/lib/common.sh"
# shellcheck source=lib/build-bench.sh
source "$REPO/scripts/lib/build-bench.sh"
# shellcheck source=lib/start-server.sh
source "$REPO/scripts/lib/start-server.sh"
help_if_asked "$@"
INSTRUCTIONS_HTTP="${INSTRUCTIONS_HTTP:-0}"
INSTRUCTIONS_TOP="${INSTRUCTIONS_TOP:-0}"
SERVER_START_TIMEOUT="${SERVER_START_TIMEOUT:-300}"

VALGRIND="${VALGRIND:-$(command -v valgrind || true)}"
if [[ -z "$VALGRIND" ]]; then
  [[ "$(id -u)" == 0 ]] || die "valgrind is missing; install it (Debian: valgrind) or set VALGRIND"
  log "installing valgrind (apt-get)"
  apt-get install -y valgrind >&2 || die "apt-get install valgrind failed"
  VALGRIND="$(command -v valgrind)" || die "valgrind is still missing after installing it"
fi

# cg_annotate comes with valgrind, next to it.
CG_ANNOTATE=("$(dirname "$VALGRIND")/cg_annotate")
[[ -x "${CG_ANNOTATE[0]}" ]] || CG_ANNOTATE=(cg_annotate)

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-instructions.XXXXXX")"
# A count that fails leaves no server running.
trap 'stop_server; rm -rf "$WORK"' EXIT

if ((INSTRUCTIONS_HTTP)); then
  NAME=http_server PREBUILT="${HTTP_BENCH_SERVER:-}"
  command -v curl >/dev/null || die "curl is missing (Debian: curl)"
else
  NAME=fast_path PREBUILT="${FAST_PATH_BENCH:-}"
fi
if [[ -n "$PREBUILT" ]]; then
  [[ -x "$PREBUILT" ]] || die "not an executable: $PREBUILT"
  BENCH="$PREBUILT"
else
  build_benches "$WORK" "$NAME"
  BENCH="$WORK/$NAME"
fi

# totals LOG: "instructions I1-misses D1-misses" from cachegrind's summary.
totals() {
  awk '/ I *refs:/ {i = $4} / I1 *misses:/ {i1 = $4} / D1 *misses:/ {d1 = $4}
       END {gsub(",", "", i); gsub(",", "", i1); gsub(",", "", d1); print i, i1, d1}' "$1"
}

# http_calls CASE VARIANT CALLS: CALLS calls of CASE on the server at URL,
# one after the other on one connection; dies unless each got a result.
http_calls() {
  local answers=json request=call
  [[ "$1" == call_sse ]] && answers=sse
  [[ "$1" == list ]] && request=list
  local config="$WORK/curl.config" i
  : >"$config"
  for ((i = 0; i < $3; i++)); do
    ((i == 0)) || echo next >>"$config"
    printf 'url = "%s/%s/%s"\ndata-binary = "@%s"\nheader = "@%s"\n' \
      "$URL" "$2" "$answers" "$WORK/requests/$request.body" "$WORK/requests/$request.headers" \
      >>"$config"
  done
  curl -sS --config "$config" >"$WORK/answers" \
    || die "curl failed on $1 $2 at $URL; the server's log ends: $(tail -n 5 "$WORK/cachegrind.txt")"
  local results
  results="$(grep -o '"result":' "$WORK/answers" | wc -l)"
  ((results == $3)) || die "$1 $2: $results of $3 answers held a result"
}

# counts CASE VARIANT CALLS: "instructions I1-misses D1-misses" of one run.
counts() {
  local out="$WORK/cachegrind.txt"
  local kept=/dev/null
  ((INSTRUCTIONS_TOP > 0)) && kept="$WORK/cachegrind.$1.$2.$3.out"
  local valgrind=("$VALGRIND" --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$kept")
  if ((INSTRUCTIONS_HTTP)); then
    start_command "$out" "${valgrind[@]}" "$BENCH" 127.0.0.1:0 --park 1 --requests "$WORK/requests"
    http_calls "$@"
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || die "the server failed under valgrind: $(tail -n 5 "$out")"
    SERVER_PID=""
  else
    "${valgrind[@]}" "$BENCH" --count "$1" "$2" "$3" >/dev/null 2>"$out" \
      || die "the bench failed under valgrind ($1 $2 $3): $(tail -n 5 "$out")"
  fi
  totals "$out"
}

# per_call CASE VARIANT: "instructions I1-misses D1-misses" of one call.
per_call() {
  local n="$INSTRUCTIONS_CALLS" once twice
  once="$(counts "$1" "$2" "$n")"
  twice="$(counts "$1" "$2" $((2 * n)))"
  awk -v a="$once" -v b="$twice" -v n="$n" 'BEGIN {
    split(a, x, " "); split(b, y, " ");
    printf "%.0f %.0f %.0f\n", (y[1] - x[1]) / n, (y[2] - x[2]) / n, (y[3] - x[3]) / n }'
}

# by_function OUT: "instructions I1-misses name" per function of one
# cachegrind output (a function's lines from several source files summed).
by_function() {
  "${CG_ANNOTATE[@]}" --show=Ir,I1mr --sort=I1mr --threshold=0 --auto=no "$1" \
    | sed -E 's/\( *[0-9.]+%\)//g' \
    | awk '/file:function/ {table = 1; next}
      table && /^ *[0-9,]+ +[0-9,]+ +[^ ]+:/ {
        ir = $1; i1 = $2; gsub(",", "", ir); gsub(",", "", i1)
        name = $0; sub(/^ *[0-9,]+ +[0-9,]+ +/, "", name); sub(/^[^:]*:/, "", name)
        irs[name] += ir; i1s[name] += i1 }
      END {for (name in irs) printf "%d %d %s\n", irs[name], i1s[name], name}'
}

# top_functions CASE: the functions with the most I1 misses the layer adds
# per call, and the sums over those only the layered run executes.
top_functions() {
  local calls=$((2 * INSTRUCTIONS_CALLS))
  by_function "$WORK/cachegrind.$1.bare.$calls.out" >"$WORK/bare.functions"
  by_function "$WORK/cachegrind.$1.layered.$calls.out" >"$WORK/layered.functions"
  echo
  echo "$1: the $INSTRUCTIONS_TOP functions with the most I1 misses added per call (layered − bare)"
  echo
  echo "| Added I1 misses | Added instructions | Function |"
  echo "|----------------:|-------------------:|----------|"
  awk -v n="$calls" '
    FNR == NR {name = $0; sub(/^[0-9]+ [0-9]+ /, "", name); bir[name] = $1; bi1[name] = $2; next}
    {name = $0; sub(/^[0-9]+ [0-9]+ /, "", name); lir[name] = $1; li1[name] = $2}
    END {
      for (name in lir) if (!(name in bir)) {own_ir += lir[name]; own_i1 += li1[name]}
      for (name in bir) if (!(name in lir)) {lir[name] = 0; li1[name] = 0}
      for (name in lir) printf "%.1f\t%.0f\t%s\n", (li1[name] - bi1[name]) / n, (lir[name] - bir[name]) / n, name
      printf "own\t%.0f\t%.0f\n", own_i1 / n, own_ir / n > "/dev/stderr"
    }' "$WORK/bare.functions" "$WORK/layered.functions" 2>"$WORK/own" \
    | sort -t$'\t' -k1,1 -g -r \
    | awk -F'\t' -v top="$INSTRUCTIONS_TOP" \
      'NR <= top {printf "| %+.1f | %+d | `%s` |\n", $1, $2, substr($3, 1, 110)}'
  awk -F'\t' '{printf "\nThe functions only the layered run executes: %d I1 misses and %d instructions per call.\n", $2, $3}' "$WORK/own"
}

where="in process"
((INSTRUCTIONS_HTTP)) && where="over loopback HTTP"
log "counting $where with $BENCH, N = $INSTRUCTIONS_CALLS (each case runs 4 times under valgrind)"
echo "| Case | Per call | Bare | Layered | Added | Bare / layered |"
echo "|------|----------|-----:|--------:|------:|---------------:|"
for case in $INSTRUCTIONS_CASES; do
  [[ "$case" =~ ^(call_json|call_sse|list)$ ]] || die "unknown case $case (call_json, call_sse, list)"
  bare="$(per_call "$case" bare)"
  layered="$(per_call "$case" layered)"
  awk -v c="$case" -v b="$bare" -v l="$layered" 'BEGIN {
    split(b, x, " "); split(l, y, " ");
    split("instructions,I1 misses,D1 misses", names, ",");
    for (k = 1; k <= 3; k++)
      printf "| %s | %s | %d | %d | %+d | %.3f× |\n", c, names[k], x[k], y[k], y[k] - x[k], x[k] / y[k] }'
done
if ((INSTRUCTIONS_TOP > 0)); then
  for case in $INSTRUCTIONS_CASES; do
    top_functions "$case"
  done
fi
