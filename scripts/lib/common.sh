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

# python_venv VENV LOCK PIP_ARGS...: makes the Python venv VENV with
# `pip install PIP_ARGS` once, holding the lock file LOCK so tests that
# start several scripts at once install one at a time. The marker file is
# written last, so an install that broke off is redone.
python_venv() {
  local venv="$1" lock="$2"
  shift 2
  mkdir -p "$(dirname "$lock")"
  exec 9>"$lock"
  flock 9
  if [[ ! -f "$venv/.installed" ]]; then
    command -v python3 >/dev/null || die "python3 not found"
    log "installing $* into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" ||
      die "pip install $* failed"
    touch "$venv/.installed"
  fi
  exec 9>&-
}
