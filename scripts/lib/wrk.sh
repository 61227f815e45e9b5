# Sourced by scripts that drive a server with the `wrk` load generator.
# Needs `log`, `die` and REPO from the sourcing script.
#
# find_wrk: sets WRK to a runnable wrk, in this order:
#   1. $WRK if the caller set it;
#   2. `wrk` on PATH;
#   3. the copy in the git-ignored cache, REPO/.cache/wrk;
#   4. otherwise installs that copy: `apt-get download` of Debian's `wrk`
#      and the LuaJIT library it links, unpacked with `dpkg-deb -x` (no root
#      needed, nothing installed system-wide). A wrapper script,
#      .cache/wrk/wrk, sets LD_LIBRARY_PATH for the bundled library.
# Dies when none of these works (on a machine without apt, install wrk and
# put it on PATH, or set WRK).
find_wrk() {
  if [[ -n "${WRK:-}" ]]; then
    return
  fi
  if command -v wrk >/dev/null 2>&1; then
    WRK="$(command -v wrk)"
    return
  fi
  local cache="$REPO/.cache/wrk"
  if [[ ! -x "$cache/wrk" ]]; then
    install_wrk "$cache"
  fi
  WRK="$cache/wrk"
  # `wrk -v` prints its version and exits 1.
  local version
  version="$("$WRK" -v 2>&1 || true)"
  [[ "$version" == wrk* ]] || die "the cached wrk in $cache does not run; remove it to reinstall"
}

# install_wrk DIR: unpacks Debian's wrk and libluajit into DIR.
install_wrk() {
  local cache="$1"
  command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 \
    || die "wrk is not on PATH and apt-get/dpkg-deb are missing to fetch it; install wrk or set WRK"
  log "installing wrk into $cache (apt-get download, dpkg-deb -x)"
  local debs
  debs="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-wrk.XXXXXX")"
  # The library package's name differs between releases; take the first
  # one apt knows.
  local lua=""
  for name in libluajit-5.1-2 libluajit2-5.1-2; do
    if apt-cache show "$name" >/dev/null 2>&1; then
      lua="$name"
      break
    fi
  done
  [[ -n "$lua" ]] || die "apt knows no LuaJIT library package (run apt-get update?)"
  (cd "$debs" && apt-get download wrk "$lua" >&2) \
    || die "apt-get download wrk $lua failed (run apt-get update?)"
  rm -rf "$cache"
  mkdir -p "$cache/root"
  for deb in "$debs"/*.deb; do
    dpkg-deb -x "$deb" "$cache/root"
  done
  rm -rf "$debs"
  local lib
  lib="$(find "$cache/root" -name 'libluajit*.so*' | head -n 1)"
  [[ -x "$cache/root/usr/bin/wrk" && -n "$lib" ]] || die "the unpacked packages hold no wrk"
  # Paths relative to the wrapper, so the cache survives moving the repo.
  local libdir="${lib%/*}"
  libdir="${libdir#"$cache"/}"
  cat >"$cache/wrk" <<EOF
#!/bin/sh
# Written by scripts/lib/wrk.sh: Debian's wrk with its bundled LuaJIT.
here="\$(cd "\$(dirname "\$0")" && pwd)"
LD_LIBRARY_PATH="\$here/$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$here/root/usr/bin/wrk" "\$@"
EOF
  chmod +x "$cache/wrk"
}
