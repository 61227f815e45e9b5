# Sourced by scripts that record with perf (scripts/profile.sh,
# scripts/profile-pair.sh). Needs `log` and `die` (lib/common.sh).

# find_perf: sets PERF (the environment's, else perf on PATH; when missing
# and run as root, apt-get installs Debian's linux-perf).
find_perf() {
  PERF="${PERF:-$(command -v perf || true)}"
  [[ -n "$PERF" ]] && return
  [[ "$(id -u)" == 0 ]] || die "perf is missing; install linux-perf (Debian) or set PERF"
  log "installing linux-perf (apt-get)"
  apt-get install -y linux-perf >&2 || die "apt-get install linux-perf failed"
  PERF="$(command -v perf)" || die "perf is still missing after installing linux-perf"
}
