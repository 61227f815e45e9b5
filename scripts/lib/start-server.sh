# Sourced by scripts that start an example server and wait for its URL.
# Needs `log`, `die` and SERVER_START_TIMEOUT from the sourcing script.
#
# start_server BIN LOG: starts `BIN 127.0.0.1:0` with its output in LOG,
# then waits (bounded) for the line announcing http://127.0.0.1:PORT/mcp.
# Sets SERVER_PID and URL; dies with the log's tail if the server exits or
# stays silent.
start_server() {
  local bin="$1" server_log="$2"
  "$bin" 127.0.0.1:0 >"$server_log" 2>&1 </dev/null &
  SERVER_PID=$!
  URL=""
  local deadline=$((SECONDS + SERVER_START_TIMEOUT))
  while [[ -z "$URL" ]]; do
    URL="$(grep -oE 'http://127\.0\.0\.1:[0-9]+/mcp' "$server_log" | head -n 1 || true)"
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
