# Sourced by scripts: `log` and `die` named after the running script, and
# the -h/--help text taken from its header comment.

# log MESSAGE...: one line on stderr, prefixed with the script's name.
log() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }
# die MESSAGE...: logs an error and exits 2 (a setup error).
die() {
  log "error: $*"
  exit 2
}

# help_if_asked ARG: for -h or --help, prints the script's header comment
# (up to its `set -euo` line) and exits 0.
help_if_asked() {
  if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
  fi
}
