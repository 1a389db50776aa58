#!/usr/bin/env bash
# What windeployqt does, for a cross build on Linux (Qt's windeployqt is a Windows program): puts the
# Qt plugins cflow studio loads at run time beside the executables, then every DLL the executables
# and those plugins import, transitively (Qt's DLLs, the mingw-w64 runtime: libstdc++-6,
# libgcc_s_seh-1, libwinpthread-1), read from their import tables with objdump. A DLL found in
# neither the Qt prefix nor the mingw-w64 runtime must be part of Windows (wine ships its own
# build of each of those, which is the list checked here); anything else fails, so a missing DLL is
# found at build time, not on a user's machine.
#
#   packaging/windows/deploy.sh BIN_DIR QT_PREFIX
set -euo pipefail

die() { echo "deploy.sh: $*" >&2; exit 1; }
[[ $# -eq 2 ]] || die "usage: deploy.sh BIN_DIR QT_PREFIX"
bin="$1"
qt="$2"
[[ -d "$bin" && -f "$qt/bin/Qt6Core.dll" ]] || die "$bin is no folder or $qt holds no Qt for Windows"
objdump=x86_64-w64-mingw32-objdump
wine_dlls=/usr/lib/x86_64-linux-gnu/wine/x86_64-windows

# The plugins the app loads by name (no import table leads to them): the Windows platform, the
# SQLite driver of the conversation and comparison stores, the native Windows style.
for plugin in platforms/qwindows sqldrivers/qsqlite styles/qwindowsvistastyle; do
  [[ -f "$qt/plugins/$plugin.dll" ]] || die "the Qt prefix has no plugins/$plugin.dll"
  mkdir -p "$bin/$(dirname "$plugin")"
  cp -f "$qt/plugins/$plugin.dll" "$bin/$plugin.dll"
done

runtime_dir() { dirname "$(x86_64-w64-mingw32-g++-posix -print-file-name="$1")"; }
search=("$qt/bin" "$(runtime_dir libstdc++-6.dll)" "$(runtime_dir libwinpthread-1.dll)" /usr/x86_64-w64-mingw32/lib)

mapfile -t queue < <(find "$bin" -type f \( -iname '*.exe' -o -iname '*.dll' \))
declare -A seen=()
system_dlls=()
while [[ ${#queue[@]} -gt 0 ]]; do
  file="${queue[0]}"
  queue=("${queue[@]:1}")
  while IFS= read -r dll; do
    key="${dll,,}"
    [[ -n "${seen[$key]:-}" ]] && continue
    seen[$key]=1
    [[ -f "$bin/$dll" ]] && continue
    found=""
    for dir in "${search[@]}"; do
      if [[ -f "$dir/$dll" ]]; then found="$dir/$dll"; break; fi
    done
    if [[ -n "$found" ]]; then
      cp -f "$found" "$bin/$dll"
      queue+=("$bin/$dll")
      echo "    $dll (needed by $(basename "$file"))"
    elif [[ -f "$wine_dlls/$key" || "$key" == api-ms-win-* ]]; then
      system_dlls+=("$dll")
    elif [[ ! -d "$wine_dlls" ]]; then
      die "$dll (needed by $(basename "$file")) is in no search folder, and without wine64 ($wine_dlls) it cannot be told apart from a Windows DLL"
    else
      die "$dll (needed by $(basename "$file")) is neither in the Qt prefix, nor in the mingw-w64 runtime, nor a Windows DLL"
    fi
  done < <("$objdump" -p "$file" | awk '/DLL Name:/ { print $3 }')
done
echo "    Windows' own: $(printf '%s\n' "${system_dlls[@]}" | sort -fu | tr '\n' ' ')"

# Symbols and debug sections serve no user (the mingw-w64 runtime's libstdc++-6.dll alone carries
# ~20 MB of them): everything in BIN_DIR is stripped of what relocation and linking do not need.
before_bytes="$(du -sb "$bin" | cut -f1)"
find "$bin" -type f \( -iname '*.exe' -o -iname '*.dll' \) -exec x86_64-w64-mingw32-strip --strip-unneeded {} +
echo "    stripped: $((before_bytes / 1048576)) MiB -> $(( $(du -sb "$bin" | cut -f1) / 1048576 )) MiB"
