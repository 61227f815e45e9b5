#!/usr/bin/env bash
# The fault run: the gateway's durable setups under a steady mixed load
# while processes are killed, then a check of every task handle given.
#
# Usage:
#   scripts/chaos.sh [sqlite|redis|cluster|all]   # default: all, 180 s each
#   scripts/chaos.sh --short [SETUP]              # CI: 45 s each, faults every 5-9 s
#
# Environment:
#   CHAOS_SECONDS   load time per setup (default 180; 45 with --short)
#   CHAOS_CLIENTS   concurrent clients (default 8)
#   CHAOS_SEED      the seed of the fault schedule and the load (default:
#                   random, printed at the start)
#   CHAOS_KEEP=1    keep the run's folder (every process's log) after exit
#   CHAOS_GATEWAY_ARGS  more options for every gateway; e.g. "--retry
#                   slow_plain" (a wrong setting: the plain tool then runs
#                   twice after a gateway kill) shows that the check bites
#   CHAOS_EXTRA_FAULTS  faults added to every setup's list, comma-separated:
#                   gateway-stop15 (SIGSTOP of a gateway for 15 s, past its
#                   10 s Redis lease, while its calls run on: the others
#                   take its tasks over; SIGCONT then)
#   GATEWAY_BIN     the mcp-tasks-gateway to run (default: built now with
#                   cargo, CARGO_TARGET_DIR honoured)
#   CHAOS_PROFILE   release or debug: the build when GATEWAY_BIN is unset
#                   (default release; debug with --short, which CI's
#                   `cargo test -p mcp-tasks-gateway` has built already)
#   MCP_TASKS_CACHE where the Python SDK is installed (default <repo>/.cache)
#
# Setups (scripts/chaos/setups.py):
#   sqlite   1 gateway --sqlite FILE; faults: gateway kill -9, gateway
#            SIGTERM (drain), upstream kill -9; each followed by a restart
#   redis    2 gateways on one redis-server (AOF, appendfsync always);
#            the same faults, and kill -9 of redis-server
#   cluster  3 gateways --redis-cluster --redis-wait-replicas 1
#            --redis-lease 20s (longer than a failover here) on a 3+3
#            Redis Cluster; the same faults as sqlite, kill -9 of a primary
#            (its replica takes over), SIGSTOP of a primary for 15 s
# The upstream (tests/upstreams/chaos/server.py, Python SDK 1.30, stateless)
# has `fast`, `slow_plain` (not safe to run twice) and `slow_idem`
# (idempotentHint: true) and logs every run's start and end. The clients
# speak 2026-07-28 with the tasks extension through the generation bridge;
# a call still running after 500 ms becomes a task, then it is polled
# with tasks/get until terminal, and terminal tasks are re-read at random.
# After the load, every open handle gets --max-runtime (60 s) + 40 s to end.
#
# Prints per setup the faults done, details, then one summary line:
#   calls / sync / handles  calls made, answered at once, task handles given
#   lost                  handles whose last tasks/get says "not found"
#   stuck                 handles not terminal (or unreadable) after the wait
#   run_twice             fast/slow_plain calls the upstream ran more than once
#   flips                 handles read terminal, later read with another status
#   idem_not_completed    slow_idem handles not `completed` with their result,
#                         of all slow_idem handles; "+N spent their runs" are
#                         those cut (by gateway or upstream kills) as many
#                         times as the gateway runs a call (3): shown, not
#                         failed
#   wrong                 handles completed (or calls answered at once)
#                         with a result not their call's
#   thrown_away           plain handles failed although their run finished
#                         upstream: shown, not failed (a gateway killed
#                         between the run's end and its write loses it too)
#   overlaps              calls with two runs at the same time on the upstream
#                         (reported, not failed: re-runs of slow_idem may)
# Exits 1 when any of lost, stuck, run_twice, flips, idem_not_completed or
# wrong is non-zero in any setup; 2 on a setup error. Needs python3 (venv),
# redis-server and redis-cli (installed with apt-get when missing, as root).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
SDK_VERSION="1.30.0"
VENV="$CACHE/python-client-$SDK_VERSION"

# shellcheck source=lib/common.sh
source "$REPO/scripts/lib/common.sh"
help_if_asked "${1:-}"

SECONDS_EACH="${CHAOS_SECONDS:-180}"
GAPS=(--gap-min 8 --gap-max 16)
PROFILE="${CHAOS_PROFILE:-release}"
if [[ "${1:-}" == "--short" ]]; then
  shift
  SECONDS_EACH="${CHAOS_SECONDS:-45}"
  GAPS=(--gap-min 5 --gap-max 9)
  PROFILE="${CHAOS_PROFILE:-debug}"
fi
SETUP="${1:-all}"
case "$SETUP" in
  sqlite | redis | cluster | all) ;;
  *) die "unknown setup '$SETUP' (sqlite, redis, cluster or all; see --help)" ;;
esac

if [[ "$SETUP" != sqlite ]] &&
  { ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; }; then
  [[ "$(id -u)" == 0 ]] || die "redis-server and redis-cli are needed (Debian: apt-get install redis-server redis-tools)"
  log "installing redis-server and redis-tools"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi

python_venv "$VENV" "$CACHE/python-client.lock" \
  -c "$REPO/scripts/interop/python1-constraints.txt" "mcp==$SDK_VERSION"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-chaos.XXXXXX")"
DRIVER=""
cleanup() {
  if [[ -n "$DRIVER" ]] && kill -0 "$DRIVER" 2>/dev/null; then
    # The driver leads its own process group (it calls setsid first
    # thing): it and everything it started.
    kill -TERM -- "-$DRIVER" 2>/dev/null || kill -TERM "$DRIVER" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$DRIVER" 2>/dev/null || break
      sleep 0.2
    done
  fi
  [[ -n "$DRIVER" ]] && kill -KILL -- "-$DRIVER" 2>/dev/null || true
  if [[ "${CHAOS_KEEP:-0}" == 1 ]]; then
    log "kept $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A copy of the binary: a rebuild while it runs would fail ("Text file busy").
if [[ -n "${GATEWAY_BIN:-}" ]]; then
  [[ -x "$GATEWAY_BIN" ]] || die "GATEWAY_BIN=$GATEWAY_BIN is not an executable"
  cp "$GATEWAY_BIN" "$WORK/mcp-tasks-gateway"
else
  case "$PROFILE" in
    release) build=(--release) ;;
    debug) build=() ;;
    *) die "CHAOS_PROFILE=$PROFILE: release or debug" ;;
  esac
  log "building mcp-tasks-gateway ($PROFILE)"
  (cd "$REPO" && cargo build "${build[@]}" -p mcp-tasks-gateway --bin mcp-tasks-gateway >&2)
  target_dir="${CARGO_TARGET_DIR:-target}"
  [[ "$target_dir" == /* ]] || target_dir="$REPO/$target_dir"
  cp "$target_dir/$PROFILE/mcp-tasks-gateway" "$WORK/mcp-tasks-gateway"
fi

args=("$SETUP" --gateway "$WORK/mcp-tasks-gateway" --work "$WORK" --seconds "$SECONDS_EACH"
  --clients "${CHAOS_CLIENTS:-8}" "${GAPS[@]}")
[[ -n "${CHAOS_SEED:-}" ]] && args+=(--seed "$CHAOS_SEED")
[[ -n "${CHAOS_GATEWAY_ARGS:-}" ]] && args+=(--gateway-args "$CHAOS_GATEWAY_ARGS")
[[ -n "${CHAOS_EXTRA_FAULTS:-}" ]] && args+=(--extra-faults "$CHAOS_EXTRA_FAULTS")
"$VENV/bin/python" "$REPO/scripts/chaos/chaos.py" "${args[@]}" </dev/null &
DRIVER=$!
status=0
wait "$DRIVER" || status=$?
exit "$status"
