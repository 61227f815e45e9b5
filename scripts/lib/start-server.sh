# Sourced by scripts that start a server and wait for its URL.
# Needs `log`, `die` and SERVER_START_TIMEOUT from the sourcing script.
#
# start_server BIN LOG [ARG...]: starts `BIN 127.0.0.1:0 ARG...` with its
# output in LOG, then waits (bounded) for the line announcing
# `listening on http://127.0.0.1:PORT` (with `/mcp` when the server prints
# it). Sets SERVER_PID and URL (the URL as announced); dies with the log's
# tail if the server exits or stays silent.
start_server() {
  local bin="$1" server_log="$2"
  shift 2
  start_command "$server_log" "$bin" 127.0.0.1:0 "$@"
}

# cargo_binary OVERRIDE PATH CARGO_ARGS...: sets BUILT to the executable
# that the environment variable named OVERRIDE names, when it is set; else
# runs `cargo build CARGO_ARGS` in REPO and sets BUILT to PATH under the
# target folder's debug/ (CARGO_TARGET_DIR, default <repo>/target).
cargo_binary() {
  local override="$1" path="$2"
  shift 2
  if [[ -n "${!override:-}" ]]; then
    BUILT="${!override}"
    [[ -x "$BUILT" ]] || die "$override=$BUILT is not an executable"
    log "using $override=$BUILT (no build)"
    return
  fi
  local target_dir="${CARGO_TARGET_DIR:-target}"
  [[ "$target_dir" == /* ]] || target_dir="$REPO/$target_dir"
  log "building $path"
  (cd "$REPO" && cargo build "$@" >&2)
  BUILT="$target_dir/debug/$path"
  [[ -x "$BUILT" ]] || die "built $path not found at $BUILT"
}

# gateway_binary: sets GATEWAY, the mcp-tasks-gateway to run: GATEWAY_BIN
# when set, else one built now.
gateway_binary() {
  cargo_binary GATEWAY_BIN mcp-tasks-gateway -p mcp-tasks-gateway --bin mcp-tasks-gateway
  GATEWAY="$BUILT"
}

# start_command LOG CMD [ARG...]: like start_server for any command line
# (the command chooses its own address and announces it).
start_command() {
  local server_log="$1" bin="$2"
  shift 1
  # Emptied here, not by the background command's redirection: that runs
  # later, and the loop below could read the URL a previous server wrote.
  : >"$server_log"
  "$@" >>"$server_log" 2>&1 </dev/null &
  SERVER_PID=$!
  URL=""
  local deadline=$((SECONDS + SERVER_START_TIMEOUT))
  while [[ -z "$URL" ]]; do
    # The announcement itself: a server may log other URLs first (the
    # gateway names its upstream).
    URL="$(grep -oE 'listening on http://127\.0\.0\.1:[0-9]+(/mcp)?' "$server_log" |
      head -n 1 | sed 's/^listening on //' || true)"
    [[ -n "$URL" ]] && break
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      tail -n 40 "$server_log" >&2 || true
      die "$(basename "$bin") exited before announcing its URL (log: $server_log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 40 "$server_log" >&2 || true
      die "$(basename "$bin") printed no URL within ${SERVER_START_TIMEOUT}s"
    fi
    sleep 0.2
  done
}

# stop_server: stops SERVER_PID (when set and running): SIGTERM, up to 5 s
# to exit, then SIGKILL.
stop_server() {
  if [[ -n "${SERVER_PID:-}" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
}

# use_work_dir NAME: WORK becomes a fresh temporary folder
# (mcp-tasks-NAME.XXXXXX); on exit the server is stopped and WORK removed.
# INT and TERM exit with 130 and 143 (through the exit trap).
use_work_dir() {
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-$1.XXXXXX")"
  SERVER_PID=""
  trap 'stop_server; rm -rf "$WORK"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}
