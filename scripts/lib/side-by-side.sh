# Sourced by scripts/http-bench.sh: its side-by-side mode. A case's measured
# variant and its baseline run at the same time, one on each runtime of the
# server (`http_server --paired`: threads `serve-a` and `serve-b`, both
# pinned to CPU 0 with HTTP_BENCH_PIN=1), each driven by a wrk of its own
# (on CPU 1). Whatever changes the machine's speed during a run (this
# virtual machine's speed moves by 10-20% from one second to the next) then
# changes both alike, and each run's own ratio is what is kept. Pinned, the
# two runtimes share the core, so each gets about half of it; what is
# compared is the requests each served per second of CPU its own threads
# used (the scheduler's count), the throughput a core given to it alone
# would have. Odd runs put the measured
# variant on `serve-a`, even runs on `serve-b`; each two runs make a pair
# whose geometric mean cancels the two runtimes' differences out.
#
# Needs lib/common.sh (log, die), lib/http-load.sh (start_wrk, check_wrk,
# thread_cpu_ns), `median` (numbers on stdin, from scripts/http-bench.sh),
# URL and PAIRED_URL from start_bench_server --paired, WORK, and
# HTTP_BENCH_PIN.

# steal_ticks: "stolen total" clock ticks of all CPUs so far (/proc/stat's
# `cpu` line: the time the hypervisor ran something else while this
# machine's CPUs wanted to run, and all the time); "0 0" where unreadable.
steal_ticks() {
  awk '$1 == "cpu" {t = 0; for (i = 2; i <= NF; i++) t += $i; print $9, t; found = 1}
       END {if (!found) print 0, 0}' /proc/stat 2>/dev/null || echo 0 0
}

# measure_pair RUN KEY CASE VARIANT BASE_CASE BASE_VARIANT: one run of
# CASE VARIANT against BASE_CASE BASE_VARIANT, at once (after a warm-up of
# HTTP_BENCH_WARMUP seconds, the same way), appended to WORK/pairs as
# `KEY RUN req/s req/s-baseline CPU-ns CPU-ns-baseline steal-%` (steal: the
# share of all CPU time the hypervisor took during the run).
measure_pair() {
  local run="$1" key="$2" case="$3" variant="$4" base_case="$5" base_variant="$6"
  local url="$URL" base_url="$PAIRED_URL" threads=serve-a base_threads=serve-b
  if ((run % 2 == 0)); then
    url="$PAIRED_URL" base_url="$URL" threads=serve-b base_threads=serve-a
  fi
  if [[ "$HTTP_BENCH_WARMUP" != 0 ]]; then
    both_wrk "$HTTP_BENCH_WARMUP" "$case" "$variant" "$url" "$base_case" "$base_variant" "$base_url"
  fi
  local cpu base_cpu steal
  cpu="$(thread_cpu_ns "$threads")"
  base_cpu="$(thread_cpu_ns "$base_threads")"
  steal="$(steal_ticks)"
  both_wrk "$HTTP_BENCH_SECONDS" "$case" "$variant" "$url" "$base_case" "$base_variant" "$base_url"
  cpu="$(($(thread_cpu_ns "$threads") - cpu))"
  base_cpu="$(($(thread_cpu_ns "$base_threads") - base_cpu))"
  steal="$(awk -v a="$steal" -v b="$(steal_ticks)" 'BEGIN {
    split(a, x, " "); split(b, y, " "); t = y[2] - x[2]
    printf "%.1f", (t > 0 ? 100 * (y[1] - x[1]) / t : 0) }')"
  ((cpu > 0 && base_cpu > 0)) || die "no CPU time counted for the server's threads"
  printf '%s %s %s %s %s %s %s\n' "$key" "$run" "$PAIR_RPS" "$PAIR_BASE_RPS" "$cpu" "$base_cpu" \
    "$steal" >>"$WORK/pairs"
  log "side by side, run $run/$HTTP_BENCH_RUNS $case $variant vs $base_case $base_variant: $PAIR_RPS vs $PAIR_BASE_RPS req/s" \
    "on $threads vs $base_threads, CPU $((cpu / 1000000)) vs $((base_cpu / 1000000)) ms, steal $steal%"
}

# both_wrk SECONDS CASE VARIANT URL BASE_CASE BASE_VARIANT BASE_URL: the two
# wrk runs at once; sets PAIR_RPS and PAIR_BASE_RPS. Dies when either fails
# or sees a wrong answer.
both_wrk() {
  local seconds="$1" case="$2" variant="$3" url="$4" base_case="$5" base_variant="$6" base_url="$7"
  local pid base_pid
  start_wrk "$seconds" "$case" "$variant" "$url" "$WORK/wrk-m.out"
  pid="$WRK_PID"
  start_wrk "$seconds" "$base_case" "$base_variant" "$base_url" "$WORK/wrk-b.out"
  base_pid="$WRK_PID"
  local failed=0
  wait "$pid" || failed=1
  wait "$base_pid" || failed=1
  if ((failed)); then
    cat "$WORK/wrk-m.out" "$WORK/wrk-b.out" >&2
    die "wrk failed on $case $variant against $base_case $base_variant"
  fi
  check_wrk "$WORK/wrk-m.out" "$case" "$variant"
  PAIR_RPS="$RPS"
  check_wrk "$WORK/wrk-b.out" "$base_case" "$base_variant"
  PAIR_BASE_RPS="$RPS"
}

# pair_row KEY LABEL TARGET: one line of the side-by-side table, from the
# runs of KEY in WORK/pairs: medians of req/s, then the median and range
# (lowest to highest) of the swapped pairs' ratios per CPU-second (runs 1
# and 2, 3 and 4, ...: the geometric mean of the two runs' own ratios, so that a
# difference between the two runtimes cancels out; an odd last run is left
# out), the median of the runs' plain req/s ratios, the measured variant's
# share of the two's CPU, and whether the median per CPU-second ratio
# reaches TARGET (no TARGET: a control, no verdict).
pair_row() {
  local key="$1" label="$2" target="${3:-}"
  awk -v k="$key" '$1 == k {
      print $3, $4, ($3 / $5) / ($4 / $6), $3 / $4, $5 / ($5 + $6), $7 + 0
    }' "$WORK/pairs" >"$WORK/pair-rows"
  [[ -s "$WORK/pair-rows" ]] || return 0
  awk 'NR % 2 == 1 {r = $3} NR % 2 == 0 {print sqrt(r * $3)}' "$WORK/pair-rows" >"$WORK/pair-swapped"
  [[ -s "$WORK/pair-swapped" ]] || { log "side by side: $key needs two runs"; return 0; }
  local m b r lo hi t share steal
  m="$(cut -d' ' -f1 "$WORK/pair-rows" | median)"
  b="$(cut -d' ' -f2 "$WORK/pair-rows" | median)"
  r="$(median <"$WORK/pair-swapped")"
  lo="$(sort -g "$WORK/pair-swapped" | head -n 1)"
  hi="$(sort -g "$WORK/pair-swapped" | tail -n 1)"
  t="$(cut -d' ' -f4 "$WORK/pair-rows" | median)"
  share="$(cut -d' ' -f5 "$WORK/pair-rows" | median)"
  steal="$(cut -d' ' -f6 "$WORK/pair-rows" | median)"
  awk -v l="$label" -v m="$m" -v b="$b" -v r="$r" -v lo="$lo" -v hi="$hi" -v t="$t" \
    -v s="$share" -v st="$steal" -v target="$target" -v n="$(wc -l <"$WORK/pair-swapped")" 'BEGIN {
    verdict = (target == "" ? "—" : (r >= target ? "yes" : "no"))
    printf "| %-30s | %8.0f | %8.0f | %8.3f× | %.3f–%.3f | %3d | %6.3f× | %4.1f%% | %4.0f%% | %-7s | %-3s |\n",
      l, b, m, r, lo, hi, n, t, 100 * s, st, (target == "" ? "—" : "≥ " target "×"), verdict
  }'
}

# report_pairs CASE...: the side-by-side table for the cases measured.
report_pairs() {
  [[ -s "$WORK/pairs" ]] || return 0
  echo
  local where="both on CPU 0, each with a wrk -t$HTTP_BENCH_THREADS -c$HTTP_BENCH_CONNECTIONS of its own on CPU 1"
  [[ "$HTTP_BENCH_PIN" == 1 ]] || where="not pinned, each with a wrk -t$HTTP_BENCH_THREADS -c$HTTP_BENCH_CONNECTIONS of its own"
  echo "Side by side: each run measures the case and its baseline at once, one on each of the"
  echo "server's two runtimes ($where), which"
  echo "runtime serves which flipping every run; $HTTP_BENCH_RUNS runs of ${HTTP_BENCH_SECONDS}s. req/s: medians (pinned,"
  echo "each runtime has about half of the core). per CPU-s (the verdict): the ratio of requests per"
  echo "second of each runtime's own CPU time, each pair of runs (one with each runtime serving the"
  echo "measured variant) as the geometric mean of its two runs' ratios; the median and range"
  echo "(lowest to highest) over the n pairs. req/s: the median of the runs' ratios of plain"
  echo "req/s; CPU: the measured variant's share of the CPU the two used. control: bare against"
  echo "bare, what the measure reads when there is no difference. twin: the fixture with the"
  echo "layer's body types but no layer (/adapted) against bare, what the bare route's second"
  echo "compiled copy of the inner server costs the measure. steal: the median share of all"
  echo "CPU time the hypervisor gave to others during the runs (/proc/stat), how busy this"
  echo "machine's neighbours were. Other work on the machine takes CPU from the two runtimes"
  echo "unevenly: measure on a quiet one."
  echo
  echo "| Measured vs baseline           | baseline | measured | per CPU-s | range       |   n | req/s   | CPU   | steal | target  | met |"
  echo "|--------------------------------|----------|----------|-----------|-------------|-----|---------|-------|-------|---------|-----|"
  local case
  for case in "$@"; do
    case "$case" in
      call-json) pair_row "$case" "call-json: layered vs bare" 0.99 ;;
      call-sse) pair_row "$case" "call-sse: layered vs bare" 0.99 ;;
      list) pair_row "$case" "list: layered vs bare" 0.98 ;;
      twin) pair_row "$case" "twin: adapted vs bare" ;;
      twin-sse) pair_row "$case" "twin-sse: adapted vs bare" ;;
      tasks-get) pair_row "$case" "tasks-get vs layered call-json" 3.00 ;;
      control) pair_row "$case" "control: bare vs bare" ;;
    esac
  done
}

# measure_pairs RUN CASE...: one side-by-side run of every case.
measure_pairs() {
  local run="$1" case
  shift
  for case in "$@"; do
    case "$case" in
      tasks-get) measure_pair "$run" "$case" tasks-get layered call-json layered ;;
      control) measure_pair "$run" "$case" call-json bare call-json bare ;;
      twin) measure_pair "$run" "$case" call-json adapted call-json bare ;;
      twin-sse) measure_pair "$run" "$case" call-sse adapted call-sse bare ;;
      *) measure_pair "$run" "$case" "$case" layered "$case" bare ;;
    esac
  done
}
