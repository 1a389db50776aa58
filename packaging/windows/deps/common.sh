# Shared by packaging/windows/build-deps.sh and its part recipes (deps/*.sh): where the cache is, how
# a Debian source package is fetched, and how a part is marked complete. Sourced, never run.

# One cache for every CI helper, outside the clone so `git clean` and fresh clones keep it
# (packaging/linux/test-install.sh keeps its Debian root there too).
cflow_cache_root() {
  local home="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
  echo "${CFLOW_CI_CACHE:-${XDG_CACHE_HOME:-$home/.cache}/cflow-ci}"
}

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# Compiles yield to everything else on the machine (benchmarks share its 2 cores); at most -j2.
build_jobs() { local n="${CFLOW_BUILD_JOBS:-2}"; ((n > 2)) && n=2; echo "$n"; }
nice_build() { nice -n 19 "$@"; }

# The mingw-w64 compiler's version is part of every key: a new GCC may change the C++ ABI of the DLLs.
mingw_gcc_version() { x86_64-w64-mingw32-g++-posix -dumpfullversion; }

# deb-src entries for bookworm, so `apt-get source` works on a machine set up with binary sources
# only. Added once, as a file of its own, so the host's own sources files stay as they were.
ensure_deb_src() {
  if apt-get source --print-uris -qq sqlite3 >/dev/null 2>&1; then return; fi
  local list=/etc/apt/sources.list.d/cflow-deb-src.sources
  echo "::: adding bookworm deb-src entries ($list) and running apt-get update"
  as_root tee "$list" >/dev/null <<'SOURCES'
# Added by cflow studio's packaging/windows/build-deps.sh: the Debian sources it cross-builds for
# Windows with mingw-w64 (pcre2, qt6-base, sqlite3, spdlog, fmtlib).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  as_root apt-get update -q >/dev/null
}

# fetch_source PACKAGE VERSION: the unpacked, Debian-patched source tree, downloaded once into
# $src_cache/PACKAGE_VERSION/ (kept, so a rebuild of one part downloads nothing). Prints its path.
fetch_source() {
  local package="$1" version="$2"
  local dir="$src_cache/${package}_${version#*:}"
  if [[ ! -f "$dir/.unpacked" ]]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    # apt's _apt user cannot write into root's home; it downloads unsandboxed then, which is fine here.
    (cd "$dir" && apt-get source -q "$package=$version" >"$dir/apt-get-source.log" 2>&1) || {
      tail -5 "$dir/apt-get-source.log" >&2
      return 1
    }
    touch "$dir/.unpacked"
  fi
  local tree
  tree="$(find "$dir" -mindepth 1 -maxdepth 1 -type d | head -1)"
  [[ -n "$tree" ]] || return 1
  echo "$tree"
}

# A part's prefix is complete only once its recipe finished: the stamp is written last, so an
# interrupted build is redone instead of being taken for a cached one.
part_done() { [[ -f "$1/.complete" ]]; }
mark_done() { date -u +%FT%TZ >"$1/.complete"; }

# Seconds since $2 as "N min S s", for the timing lines.
elapsed() { local s=$((SECONDS - $1)); printf '%d min %02d s' $((s / 60)) $((s % 60)); }
