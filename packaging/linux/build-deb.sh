#!/usr/bin/env bash
# Builds the Debian package of cflow studio, build/linux/cflow-studio.deb, and checks it: the files it
# must carry, the .desktop entry (desktop-file-validate), the AppStream metainfo (appstreamcli validate
# --no-net), its Depends; lintian's findings go to build/linux/lintian.txt (errors fail, see below).
#
#   packaging/linux/build-deb.sh                   configures and builds a Release tree in build/linux/tree
#                                                  (desktop app on, tests off), then packages it
#   packaging/linux/build-deb.sh --build-dir DIR   packages an already configured tree instead, building
#                                                  only the packaged targets (CI passes build/ci, built
#                                                  moments before, so nothing compiles twice)
#
# Needs the build dependencies (packaging/install-deps.sh: dpkg-dev for shlibdeps, librsvg2-bin for the
# icons, desktop-file-utils, appstream, lintian). Runs as any user; never needs root.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out_dir="$repo_root/build/linux"
deb="$out_dir/cflow-studio.deb"

usage() { awk 'NR > 1 && /^#/ && !/^# shellcheck/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2; }
die() { echo "build-deb.sh: $*" >&2; exit 1; }

build_dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir)
      [[ $# -ge 2 && -n "$2" ]] || die "--build-dir needs a folder"
      build_dir="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage; die "unknown argument '$1'" ;;
  esac
done

for tool in cmake cpack dpkg-deb dpkg-shlibdeps desktop-file-validate appstreamcli rsvg-convert; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "'$tool' is not installed (packaging/install-deps.sh installs packaging/debian-build-deps.txt)"
done

cd "$repo_root"
jobs="${CFLOW_BUILD_JOBS:-$(nproc)}"
if [[ -z "$build_dir" ]]; then
  build_dir="$out_dir/tree"
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  echo "::: configuring a Release tree in $build_dir"
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCFLOW_BUILD_GUI=ON \
    -DCFLOW_BUILD_TESTS=OFF -DCFLOW_WARNINGS_AS_ERRORS=OFF "${launcher[@]}" >/dev/null
else
  build_dir="$(cd "$build_dir" 2>/dev/null && pwd)" || die "--build-dir: no such folder"
  [[ -f "$build_dir/CPackConfig.cmake" ]] || die "$build_dir is not a configured build tree (no CPackConfig.cmake)"
  grep -q '^CFLOW_BUILD_GUI:BOOL=ON' "$build_dir/CMakeCache.txt" ||
    die "$build_dir was configured without the desktop app (CFLOW_BUILD_GUI=OFF): the package needs both binaries"
fi
if [[ "$build_dir" == "$out_dir/tree" ]]; then
  echo "::: building $build_dir (-j$jobs)"
  nice cmake --build "$build_dir" -j "$jobs"
else
  # Only what the package installs (a no-op in CI, which built the whole tree before).
  echo "::: bringing the packaged targets of $build_dir up to date (-j$jobs)"
  nice cmake --build "$build_dir" -j "$jobs" --target cflow cflow-studio cflow_studio_icons ||
    die "building cflow, cflow-studio and the icons in $build_dir failed (cflow_studio_icons needs rsvg-convert at configure time)"
fi

# CPack writes its staging tree and the package into a scratch folder; only the .deb is kept.
stage="$out_dir/cpack"
rm -rf "$stage"
mkdir -p "$stage"
trap 'rm -rf "$stage"' EXIT
echo "::: packaging (cpack -G DEB)"
cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$stage" >"$stage.log" 2>&1 ||
  { cat "$stage.log" >&2; die "cpack failed"; }
shopt -s nullglob
made=("$stage"/*.deb)
shopt -u nullglob
[[ ${#made[@]} -eq 1 ]] || { cat "$stage.log" >&2; die "cpack made ${#made[@]} .deb files, expected one"; }
mv -f "${made[0]}" "$deb"
rm -f "$stage.log"

# --- what the package must carry -------------------------------------------------------------------
app_id="io.github.cflowstudio.CflowStudio"
contents="$(dpkg-deb -c "$deb" | awk '{ sub(/^\.\//, "/", $6); print $6 }')"
required=(
  /usr/bin/cflow
  /usr/bin/cflow-studio
  /usr/share/cflow-studio/default-model.cflow
  /usr/share/cflow-studio/default-model.md
  /usr/share/cflow-studio/models/models.json
  /usr/share/cflow-studio/training/RESULTS.md
  "/usr/share/applications/$app_id.desktop"
  "/usr/share/metainfo/$app_id.metainfo.xml"
  /usr/share/icons/hicolor/scalable/apps/cflow-studio.svg
  /usr/share/doc/cflow-studio/copyright
)
for size in 16 22 24 32 48 64 128 256; do
  required+=("/usr/share/icons/hicolor/${size}x${size}/apps/cflow-studio.png")
done
for model in resources/models/*.cflow; do
  required+=("/usr/share/cflow-studio/models/$(basename "$model")")
done
missing=0
for path in "${required[@]}"; do
  if ! grep -qxF "$path" <<<"$contents"; then
    echo "build-deb.sh: the package lacks $path" >&2
    missing=1
  fi
done
[[ "$missing" -eq 0 ]] || die "$deb is incomplete (dpkg-deb -c $deb lists what it has)"

depends="$(dpkg-deb -f "$deb" Depends)"
depends_names="$(tr ',|' '\n' <<<"$depends" | awk 'NF { print $1 }')"
# libqt6keychain1 (from dpkg-shlibdeps): endpoint API keys go to the OS keychain (issue 34).
for dep in libc6 libstdc++6 libqt6widgets6 qt6-qpa-plugins libqt6sql6-sqlite libqt6keychain1; do
  grep -qxF "$dep" <<<"$depends_names" || die "Depends lacks $dep: $depends"
done

# --- the desktop entry and the metainfo, as installed --------------------------------------------
check_dir="$(mktemp -d)"
trap 'rm -rf "$stage" "$check_dir"' EXIT
dpkg-deb -x "$deb" "$check_dir"
desktop-file-validate "$check_dir/usr/share/applications/$app_id.desktop" ||
  die "desktop-file-validate rejects $app_id.desktop"
appstreamcli validate --no-net "$check_dir/usr/share/metainfo/$app_id.metainfo.xml" >"$check_dir/appstream.txt" 2>&1 ||
  { cat "$check_dir/appstream.txt" >&2; die "appstreamcli rejects $app_id.metainfo.xml"; }
for size in 16 256; do
  file -b "$check_dir/usr/share/icons/hicolor/${size}x${size}/apps/cflow-studio.png" | grep -q "PNG image data, $size x $size" ||
    die "the ${size}x${size} icon is not a $size x $size PNG"
done

# --- lintian: findings to build/linux/lintian.txt; errors fail unless listed in lintian-accepted.txt ---
if command -v lintian >/dev/null 2>&1; then
  # lintian exits non-zero on findings; what counts is decided below.
  lintian --no-tag-display-limit --display-info "$deb" >"$out_dir/lintian.txt" 2>&1 || true
  accepted="$repo_root/packaging/linux/lintian-accepted.txt"
  unexpected="$(grep '^E: ' "$out_dir/lintian.txt" | awk '{ print $3 }' | sort -u |
                grep -vxF -f <(grep -v '^#' "$accepted" | awk 'NF { print $1 }') || true)"
  if [[ -n "$unexpected" ]]; then
    cat "$out_dir/lintian.txt" >&2
    die "lintian errors not accepted in packaging/linux/lintian-accepted.txt: $(tr '\n' ' ' <<<"$unexpected")"
  fi
  echo "::: lintian: $(grep -c '^E: ' "$out_dir/lintian.txt" || true) errors (all accepted), $(grep -c '^W: ' "$out_dir/lintian.txt" || true) warnings, $(grep -c '^I: ' "$out_dir/lintian.txt" || true) infos (build/linux/lintian.txt)"
else
  echo "::: lintian is not installed: package not linted"
fi

echo "::: $deb ($(stat -c %s "$deb") bytes, $(grep -c . <<<"$contents") entries); Depends: $depends"
