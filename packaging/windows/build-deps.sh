#!/usr/bin/env bash
# Cross-builds cflow studio's Windows dependencies with mingw-w64 from Debian source packages, into a
# cache outside the clone, one folder per part keyed by its versions (and the mingw-w64 GCC's), so a
# part is rebuilt only when one of them changes:
#   PCRE2 (the engine's BPE tokenizer), Qt 6.4 qtbase (Core, Gui, Widgets, Sql+SQLite, Concurrent,
#   with SQLite's amalgamation from Debian's sqlite3 source), Qt Charts (when its source can be
#   fetched), QCoro (header-only), spdlog on fmt, cpp-httplib (header-only, for `cflow serve`).
# Then writes mingw-deps.cmake beside them, which cmake/toolchain-mingw64.cmake reads, so the mingw
# presets find these parts and nothing of the Linux host.
#
#   packaging/windows/build-deps.sh [--without-qt | --print-cache]
#     --without-qt   only the parts the CLI needs (PCRE2, cpp-httplib) and the small ones (spdlog, fmt): minutes, not
#                    the Qt build's tens of minutes (.ci/run on a cold cache)
#     --print-cache  print the cache folder and whether every part is built (exit 1 when not), build nothing
#
# Cache: ${CFLOW_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cflow-ci}/windows/ (sources in src/).
# Needs the build dependencies (packaging/install-deps.sh: mingw-w64, qt6-base-dev-tools for the host
# tools, qcoro-qt6-dev for QCoro's headers, tcl) and root or sudo once, to add deb-src entries for
# `apt-get source` when the machine has none. Compiles run under `nice -n 19` with at most 2 jobs
# (CFLOW_BUILD_JOBS=1 for fewer): the cold build is long (README: Install on Windows), the machine is shared.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$repo_root/packaging/windows"
die() { echo "build-deps.sh: $*" >&2; exit 1; }
# shellcheck source=packaging/windows/deps/common.sh
source "$here/deps/common.sh"
for recipe in pcre2 qtbase qcoro spdlog-fmt cpp-httplib; do
  # shellcheck source=/dev/null
  source "$here/deps/$recipe.sh"
done

# The Debian source versions built (bookworm). Pinned, so the cache key is explicit; pcre2 is the
# release version because the mirror serves no source for the security update (10.42-1+deb12u2).
pcre2_version="10.42-1"
qtbase_version="6.4.2+dfsg-10"
qtcharts_version="6.4.2-3"
sqlite_version="3.40.1-2+deb12u2"
qcoro_version="0.8.0-1"
fmt_version="9.1.0+ds1-2"
spdlog_version="1:1.10.0+ds-0.4"
cpp_httplib_version="0.11.4+ds-1+deb12u1"  # the Linux build's libcpp-httplib-dev
# Recipe revisions: bump one when its part's build flags change (deps/*.sh), so the cache is rebuilt.
pcre2_recipe=1
qt_recipe=1
qcoro_recipe=1
spdlog_recipe=1
cpp_httplib_recipe=1

print_cache=0
with_qt=1
case "${1:-}" in
  --print-cache) print_cache=1 ;;
  --without-qt) with_qt=0 ;;
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
  "") ;;
  *) die "unknown argument '$1' (--without-qt, --print-cache)" ;;
esac

command -v x86_64-w64-mingw32-g++-posix >/dev/null 2>&1 ||
  die "x86_64-w64-mingw32-g++-posix is not installed (packaging/install-deps.sh)"
gcc_key="gcc$(mingw_gcc_version)"
cache="$(cflow_cache_root)/windows"
src_cache="$cache/src"
work_dir="$cache/work"
pcre2_prefix="$cache/pcre2-$pcre2_version-$gcc_key-r$pcre2_recipe"
qt_prefix="$cache/qt-$qtbase_version-charts-$qtcharts_version-sqlite-$sqlite_version-$gcc_key-r$qt_recipe"
qcoro_prefix="$cache/qcoro-$qcoro_version-r$qcoro_recipe"
spdlog_prefix="$cache/spdlog-${spdlog_version#*:}-fmt-$fmt_version-$gcc_key-r$spdlog_recipe"
cpp_httplib_prefix="$cache/cpp-httplib-$cpp_httplib_version-r$cpp_httplib_recipe"
deps_file="$cache/mingw-deps.cmake"

if [[ "$print_cache" -eq 1 ]]; then
  echo "$cache"
  missing=0
  for prefix in "$pcre2_prefix" "$qt_prefix" "$qcoro_prefix" "$spdlog_prefix" "$cpp_httplib_prefix"; do
    if part_done "$prefix"; then echo "  built:   $(basename "$prefix")"; else echo "  missing: $(basename "$prefix")"; missing=1; fi
  done
  exit "$missing"
fi

mkdir -p "$src_cache" "$work_dir"
# The deps' own CMake builds use a copy of the project's toolchain (so Qt's installed
# qt.toolchain.cmake names a file that outlives this clone), told not to read mingw-deps.cmake.
cp "$repo_root/cmake/toolchain-mingw64.cmake" "$cache/toolchain-mingw64.cmake"
cross_cmake_args=(-DCMAKE_TOOLCHAIN_FILE="$cache/toolchain-mingw64.cmake" -DCFLOW_MINGW_NO_DEPS=ON
                  -DCMAKE_BUILD_TYPE=Release)
t_all=$SECONDS
need_sources=0
for prefix in "$pcre2_prefix" "$spdlog_prefix" "$cpp_httplib_prefix"; do part_done "$prefix" || need_sources=1; done
[[ "$with_qt" -eq 0 ]] || part_done "$qt_prefix" || need_sources=1
[[ "$need_sources" -eq 0 ]] || ensure_deb_src

# build_part NAME PREFIX FUNCTION ARGS...: runs the recipe into a fresh PREFIX unless it is complete.
build_part() {
  local name="$1" prefix="$2" fn="$3" t0=$SECONDS
  shift 3
  if part_done "$prefix"; then
    echo "::: $name: cached ($(basename "$prefix"))"
    return
  fi
  echo "::: $name: building into $prefix"
  rm -rf "$prefix"
  mkdir -p "$prefix"
  "$fn" "$prefix" "$@"
  mark_done "$prefix"
  echo "::: $name: built in $(elapsed "$t0")"
}

build_part "PCRE2 $pcre2_version" "$pcre2_prefix" build_pcre2 "$pcre2_version"
build_part "spdlog ${spdlog_version#*:} + fmt $fmt_version" "$spdlog_prefix" build_spdlog_fmt "$fmt_version" "$spdlog_version"
build_part "cpp-httplib $cpp_httplib_version (header-only)" "$cpp_httplib_prefix" build_cpp_httplib "$cpp_httplib_version"
qt_with_charts() {
  build_qtbase "$1" "$qtbase_version" "$sqlite_version"
  if build_qtcharts "$1" "$qtcharts_version"; then
    echo "charts=ON" >"$1/.charts"
  else
    echo "::: Qt Charts: apt-get source qt6-charts=$qtcharts_version failed (the mirror serves no such source):" \
         "the Windows app draws the comparison wizard's charts with its own QPainter renderer"
    echo "charts=OFF" >"$1/.charts"
  fi
}
if [[ "$with_qt" -eq 1 ]]; then
  build_part "Qt qtbase $qtbase_version (+ Qt Charts $qtcharts_version)" "$qt_prefix" qt_with_charts
  build_part "QCoro $qcoro_version (header-only)" "$qcoro_prefix" build_qcoro "$qcoro_version"
else
  echo "::: Qt and QCoro: not built (--without-qt)$(part_done "$qt_prefix" && echo ', cached from before')"
fi
rm -rf "$work_dir"

# What the mingw toolchain reads (cmake/toolchain-mingw64.cmake). Written last: it names only
# complete parts.
done_or_empty() { if part_done "$1"; then echo "$1"; fi; }
charts=OFF
if part_done "$qt_prefix" && grep -q 'charts=ON' "$qt_prefix/.charts"; then charts=ON; fi
cat >"$deps_file.partial" <<DEPS
# Written by packaging/windows/build-deps.sh: the Windows dependencies of the mingw-w64 build,
# read by cmake/toolchain-mingw64.cmake. Regenerate with that script, do not edit. An empty
# prefix: that part is not built (--without-qt).
set(CFLOW_MINGW_PCRE2_PREFIX "$(done_or_empty "$pcre2_prefix")")
set(CFLOW_MINGW_QT_PREFIX "$(done_or_empty "$qt_prefix")")
set(CFLOW_MINGW_QCORO_PREFIX "$(done_or_empty "$qcoro_prefix")")
set(CFLOW_MINGW_SPDLOG_PREFIX "$(done_or_empty "$spdlog_prefix")")
set(CFLOW_MINGW_HTTPLIB_PREFIX "$(done_or_empty "$cpp_httplib_prefix")")
set(CFLOW_MINGW_QT_CHARTS $charts)
DEPS
mv -f "$deps_file.partial" "$deps_file"

# Parts of older keys are not needed any more (a part of the current keys is kept even when
# --without-qt did not ask for it).
for old in "$cache"/pcre2-* "$cache"/qt-* "$cache"/qcoro-* "$cache"/spdlog-* "$cache"/cpp-httplib-*; do
  [[ -d "$old" ]] || continue
  case "$old" in
    "$pcre2_prefix"|"$qt_prefix"|"$qcoro_prefix"|"$spdlog_prefix"|"$cpp_httplib_prefix") ;;
    *) echo "::: removing the outdated $(basename "$old")"; rm -rf "$old" ;;
  esac
done
echo "::: Windows dependencies ready in $(elapsed "$t_all"): $deps_file"
