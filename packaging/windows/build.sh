#!/usr/bin/env bash
# Builds the Windows installer of cflow studio, build/windows/cflow-studio-setup.exe, from a clone on
# Debian 12 in one command:
#   1. the Windows dependencies (build-deps.sh: PCRE2, Qt, QCoro, spdlog; cached outside the clone,
#      so this is long once and seconds after),
#   2. cflow-studio.exe and cflow.exe (preset mingw-gui, ccache),
#   3. the install tree: `cmake --install` (executables, bundled models) and deploy.sh (Qt's DLLs
#      and plugins, the mingw-w64 runtime DLLs), in build/windows/stage,
#   4. the NSIS installer (make-installer.sh, installer.nsi): Start-menu entries, uninstaller, the
#      Add/Remove Programs entry.
#
#   packaging/windows/build.sh
#
# Needs the build dependencies (packaging/install-deps.sh: mingw-w64, nsis, ccache, wine64, tcl,
# qt6-base-dev-tools, qcoro-qt6-dev) and, the first time, root or sudo (build-deps.sh adds deb-src
# entries). The installer is tested by packaging/windows/test-install.sh.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$repo_root/packaging/windows"
out_dir="$repo_root/build/windows"
setup="$out_dir/cflow-studio-setup.exe"
die() { echo "build.sh: $*" >&2; exit 1; }
# shellcheck source=packaging/windows/deps/common.sh
source "$here/deps/common.sh"

case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
  "") ;;
  *) die "unknown argument '$1'" ;;
esac
for tool in cmake ninja makensis ccache x86_64-w64-mingw32-g++-posix x86_64-w64-mingw32-objdump; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not installed (packaging/install-deps.sh)"
done
cd "$repo_root"
mkdir -p "$out_dir"
t_start=$SECONDS

echo "::: [1/4] Windows dependencies (packaging/windows/build-deps.sh)"
t0=$SECONDS
"$here/build-deps.sh"
deps_file="$(cflow_cache_root)/windows/mingw-deps.cmake"
qt_prefix="$(sed -n 's/^set(CFLOW_MINGW_QT_PREFIX "\(.*\)")$/\1/p' "$deps_file")"
[[ -f "$qt_prefix/bin/Qt6Core.dll" ]] || die "$deps_file names no Qt for Windows"
echo "    ($(elapsed "$t0"))"

echo "::: [2/4] cross build (preset mingw-gui, -j$(build_jobs))"
t0=$SECONDS
cmake --preset mingw-gui >"$out_dir/configure.log" 2>&1 ||
  { tail -40 "$out_dir/configure.log" >&2; die "configuring the mingw-gui preset failed"; }
grep -qF "Qt6_DIR:PATH=$qt_prefix/" build/mingw-gui/CMakeCache.txt ||
  die "build/mingw-gui did not find the cached Qt ($qt_prefix): remove build/mingw-gui and rerun"
nice_build cmake --build --preset mingw-gui -j "$(build_jobs)"
for exe in build/mingw-gui/app/cflow.exe build/mingw-gui/app/studio/cflow-studio.exe; do
  [[ -f "$exe" ]] || die "$exe was not built"
done
rm -f "$out_dir/configure.log"
echo "    ($(elapsed "$t0"))"

echo "::: [3/4] install tree build/windows/stage (cmake --install, then Qt's and the runtime's DLLs)"
t0=$SECONDS
stage="$out_dir/stage"
rm -rf "$stage"
mkdir -p "$out_dir"
cmake --install build/mingw-gui --prefix "$stage" --strip >/dev/null
for path in bin/cflow.exe bin/cflow-studio.exe share/cflow-studio/default-model.cflow \
            share/cflow-studio/default-model.md share/cflow-studio/models/models.json \
            share/cflow-studio/training/RESULTS.md; do
  [[ -f "$stage/$path" ]] || die "the install tree lacks $path"
done
"$here/deploy.sh" "$stage/bin" "$qt_prefix"
echo "    $(find "$stage" -type f | wc -l) files, $(du -sh "$stage" | cut -f1) ($(elapsed "$t0"))"

echo "::: [4/4] NSIS installer (makensis)"
t0=$SECONDS
icon=()
[[ -f build/mingw-gui/app/studio/cflow-studio.ico ]] && icon=(build/mingw-gui/app/studio/cflow-studio.ico)
"$here/make-installer.sh" "$stage" "$setup" "${icon[@]}"
echo "    ($(elapsed "$t0"))"
echo "::: $setup ($(stat -c %s "$setup") bytes) in $(elapsed "$t_start")"
