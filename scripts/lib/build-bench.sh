# Sourced by scripts that run bench executables outside `cargo bench`.
# Needs `log`, `die` and REPO from the sourcing script.
#
# build_benches DEST NAME...: builds the named `[[bench]]` targets (the
# `bench` profile: release, with line tables so that profiles show source
# functions; debug info does not change the generated code) and copies
# each executable to DEST/NAME, so that a later build in a shared target
# folder cannot replace it mid-run. CARGO_TARGET_DIR is respected.
build_benches() {
  local dest="$1"
  shift
  local args=() name
  for name in "$@"; do
    args+=(--bench "$name")
  done
  log "building bench $* (release, line tables)"
  local json
  json="$(cd "$REPO" && CARGO_PROFILE_BENCH_DEBUG=line-tables-only \
    cargo bench "${args[@]}" --no-run --message-format=json)" \
    || die "cargo bench --no-run failed"
  for name in "$@"; do
    local exe
    exe="$(grep -F "\"name\":\"$name\"" <<<"$json" \
      | grep -o '"executable":"[^"]*"' | tail -n 1 | cut -d'"' -f4 || true)"
    [[ -n "$exe" && -x "$exe" ]] || die "the build gave no executable for bench $name"
    cp "$exe" "$dest/$name"
  done
}
