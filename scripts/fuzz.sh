#!/usr/bin/env bash
# Fuzzes the layer with libFuzzer (cargo-fuzz): the targets in fuzz/, each
# for FUZZ_SECONDS, one after the other, from their seeds (fuzz/seeds/) and
# the corpus earlier runs grew (.cache/fuzz/corpus/, git-ignored). Exits 1
# when a target failed; its input is in .cache/fuzz/artifacts/.
#
# | Target  | Feeds the layer                               | Checks |
# |---------|-----------------------------------------------|--------|
# | request | any body, under the headers of either generation | an answer within an hour of paused time; a JSON answer is JSON; no 2026-07-28 tools/call reaches the inner server with related task ids; a body the layer changed differs only by its documented edits |
# | answer  | any answer to a fast call, JSON or SSE, cut into any frames | the client's bytes and the call's recorded outcome do not depend on the cuts; a JSON answer passes byte for byte; its outcome is the documented one |
# | bridge  | any answer of a 2025-11-25 upstream, through the layer and the gateway's GenerationBridge | the client's answer does not depend on the cuts; a 200 JSON answer is JSON under the client's id |
#
# A failure it finds becomes a test of the crate's own (`cargo test`), so
# CI need not run this: cargo-fuzz needs a nightly toolchain, which a fresh
# machine may not have.
#
# Usage:
#   scripts/fuzz.sh                      # every target, 300 s each
#   FUZZ_SECONDS=60 scripts/fuzz.sh answer bridge
#   scripts/fuzz.sh request -- -jobs=2   # more libFuzzer flags after --
#
# Environment:
#   FUZZ_SECONDS   seconds per target (300)
#   FUZZ_TOOLCHAIN the nightly toolchain to build with (nightly)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
help_if_asked "${1:-}"

SECONDS_EACH="${FUZZ_SECONDS:-300}"
TOOLCHAIN="${FUZZ_TOOLCHAIN:-nightly}"
TARGETS=()
while [[ $# -gt 0 && "$1" != "--" ]]; do
  TARGETS+=("$1")
  shift
done
[[ "${1:-}" == "--" ]] && shift
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=(request answer bridge)

cargo "+$TOOLCHAIN" --version >/dev/null 2>&1 \
  || die "cargo-fuzz needs the $TOOLCHAIN toolchain (rustup toolchain list shows what is here)"
if ! cargo fuzz --version >/dev/null 2>&1; then
  log "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

WORK="$PWD/.cache/fuzz"
mkdir -p "$WORK/artifacts"
export CARGO_TARGET_DIR="$WORK/target"
failed=0
for target in "${TARGETS[@]}"; do
  [[ -d "fuzz/seeds/$target" ]] || die "no target $target (fuzz/fuzz_targets/)"
  corpus="$WORK/corpus/$target"
  mkdir -p "$corpus"
  log "$target: ${SECONDS_EACH}s"
  if ! (cd fuzz && cargo "+$TOOLCHAIN" fuzz run "$target" "$corpus" "$PWD/seeds/$target" -- \
    -dict="$PWD/mcp.dict" -max_len=4096 -max_total_time="$SECONDS_EACH" \
    -artifact_prefix="$WORK/artifacts/$target-" "$@"); then
    log "$target: FAILED (its input: $WORK/artifacts/)"
    failed=1
  fi
done
exit "$failed"
