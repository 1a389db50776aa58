#!/usr/bin/env bash
# The Windows installer's install test, under wine (Debian's wine64) in a fresh wine prefix: runs
# build/windows/cflow-studio-setup.exe silently (/S), checks the Add/Remove Programs entry and the
# Start-menu shortcuts, that bin\ is on the user's PATH (the optional component /S selects) and that a
# new command prompt finds cflow.exe there, then from the installed folder runs `cflow.exe --version`, `cflow.exe generate`
# on the bundled default model (greedy; the same story as the Linux build's when one is given),
# the same with CFLOW_ISA=scalar (the kernels' portable fallback), and `cflow-studio.exe --self-test`
# on an Xvfb display, keeping its screenshot, and `cflow-studio.exe --self-test compare` (the comparison
# wizard's chart PNGs); then uninstalls silently and checks that the install folder, the shortcuts
# and the registry entries are gone and the user's PATH is what it was before the install.
#
#   packaging/windows/test-install.sh [--setup FILE] [--linux-cflow FILE]
#     --setup FILE        the installer to test (default: build it with packaging/windows/build.sh)
#     --linux-cflow FILE  a Linux `cflow` whose greedy stories the Windows ones must equal
#                         (default: build/ci/app/cflow when it exists; else the stories are not compared)
#
# The screenshot: ${CFLOW_CI_ARTIFACTS:-artifacts}/screenshots/windows-install/studio-1366x768.png.
# Needs wine64, xvfb (Xvfb) and, to build the installer, what build.sh needs.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
die() { echo "test-install.sh: $*" >&2; exit 1; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2; }

setup=""
linux_cflow=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --setup) [[ $# -ge 2 ]] || die "--setup needs a file"; setup="$(realpath -e "$2")" || die "no such file '$2'"; shift 2 ;;
    --linux-cflow) [[ $# -ge 2 ]] || die "--linux-cflow needs a file"; linux_cflow="$(realpath -e "$2")" || die "no such file '$2'"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage; die "unknown argument '$1'" ;;
  esac
done
cd "$repo_root"
for tool in wine wineserver winepath Xvfb; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not installed (packaging/install-deps.sh: wine64, xvfb)"
done
if [[ -z "$linux_cflow" && -x build/ci/app/cflow ]]; then linux_cflow="$repo_root/build/ci/app/cflow"; fi

t_start=$SECONDS
phase_t0=$SECONDS
phase() { echo "::: [$((SECONDS - t_start)) s] $*"; phase_t0=$SECONDS; }
took() { echo "    ($((SECONDS - phase_t0)) s)"; }

if [[ -z "$setup" ]]; then
  phase "building the installer (packaging/windows/build.sh)"
  "$repo_root/packaging/windows/build.sh"
  setup="$repo_root/build/windows/cflow-studio-setup.exe"
  took
fi

# A fresh prefix and X display per run: nothing of an earlier run or of the user's ~/.wine is seen.
scratch="$(mktemp -d "${TMPDIR:-/tmp}/cflow-wine-test.XXXXXX")"
export WINEPREFIX="$scratch/prefix" WINEARCH=win64 WINEDEBUG=-all
# No Mono/Gecko download dialogs while the prefix is created: the programs need neither.
export WINEDLLOVERRIDES="mscoree,mshtml="
xvfb_pid=""
cleanup() {
  local rc=$?
  set +e
  wineserver -k >/dev/null 2>&1
  [[ -n "$xvfb_pid" ]] && kill "$xvfb_pid" 2>/dev/null && wait "$xvfb_pid" 2>/dev/null
  rm -rf "$scratch"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

display=99
while [[ -e "/tmp/.X$display-lock" ]] || grep -q "/tmp/\.X11-unix/X$display\$" /proc/net/unix; do
  display=$((display + 1))
done
Xvfb ":$display" -screen 0 1600x1000x24 -nolisten tcp >"$scratch/xvfb.log" 2>&1 &
xvfb_pid=$!
export DISPLAY=":$display"
for _ in $(seq 50); do [[ -e "/tmp/.X11-unix/X$display" ]] && break; sleep 0.1; done
[[ -e "/tmp/.X11-unix/X$display" ]] || { cat "$scratch/xvfb.log" >&2; die "Xvfb did not start on :$display"; }

phase "a fresh wine prefix ($(wine --version))"
wineboot --init >/dev/null 2>&1
wineserver -w
took

# --- install -------------------------------------------------------------------------------------
phase "$(basename "$setup") /S"
# A user PATH of their own, which the install must extend and the uninstall give back unchanged.
path_before='C:\cflow-test-own-tools;%USERPROFILE%\bin'
wine reg add 'HKCU\Environment' /v PATH /t REG_EXPAND_SZ /d "$path_before" /f >/dev/null 2>&1 ||
  die "cannot set the test user's PATH"
user_path() { wine reg query 'HKCU\Environment' /v PATH 2>/dev/null | tr -d '\r' | sed -n 's/^ *PATH *REG_[A-Z_]*SZ *//p'; }
cp "$setup" "$scratch/cflow-studio-setup.exe"
wine "$scratch/cflow-studio-setup.exe" /S
wineserver -w
install_dir="$WINEPREFIX/drive_c/Program Files/cflow studio"
for path in bin/cflow.exe bin/cflow-studio.exe bin/Qt6Core.dll bin/platforms/qwindows.dll \
            bin/sqldrivers/qsqlite.dll share/cflow-studio/default-model.cflow uninstall.exe; do
  [[ -f "$install_dir/$path" ]] || die "the installer did not put $path into C:\\Program Files\\cflow studio"
done
uninstall_key='HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\cflow-studio'
wine reg query "$uninstall_key" /v UninstallString >/dev/null 2>&1 ||
  die "no Add/Remove Programs entry ($uninstall_key)"
shortcut="$WINEPREFIX/drive_c/ProgramData/Microsoft/Windows/Start Menu/Programs/cflow studio/cflow studio.lnk"
[[ -f "$shortcut" ]] || die "no Start-menu shortcut ($shortcut)"
prompt="$(dirname "$shortcut")/cflow command prompt.lnk"
[[ -f "$prompt" && -f "$install_dir/bin/cflow-prompt.cmd" ]] || die "no Start-menu cflow command prompt ($prompt)"
bin_win='C:\Program Files\cflow studio\bin'
[[ "$(user_path)" == "$path_before;$bin_win" ]] ||
  die "the user's PATH after the install is '$(user_path)', not '$path_before;$bin_win'"
# A new process reads the user's PATH from the registry: cflow.exe by name alone, from elsewhere.
path_version="$(cd "$scratch" && wine cmd /c cflow.exe --version 2>&1 | tr -d '\r')" || true
[[ "$path_version" == cflow\ * ]] || die "a new command prompt does not find cflow.exe on the PATH: '$path_version'"
echo "    PATH: $(user_path); a new prompt runs $path_version"
echo "    $(find "$install_dir" -type f | wc -l) files installed, $(du -sh "$install_dir" | cut -f1)"
took

# --- the CLI -------------------------------------------------------------------------------------
phase "cflow.exe --version, cflow.exe generate (bundled model, greedy), CFLOW_ISA=scalar (test-cli.sh)"
"$repo_root/packaging/windows/test-cli.sh" "$install_dir/bin/cflow.exe" ${linux_cflow:+--linux-cflow "$linux_cflow"}
took

# --- the desktop app -----------------------------------------------------------------------------
phase "cflow-studio.exe --self-test (bundled model, one chat turn, screenshot) on Xvfb"
shot_dir="${CFLOW_CI_ARTIFACTS:-$repo_root/artifacts}/screenshots/windows-install"
mkdir -p "$shot_dir"
shot="$shot_dir/studio-1366x768.png"
rm -f "$shot"
model_win="$(winepath -w "$install_dir/share/cflow-studio/default-model.cflow")"
# The app must exit by itself: under wine 8 it used to block in a DLL's detach code after passing
# (app/studio/process_exit.h has the story), so a run that does not end within 120 s fails.
studio_rc=0
CFLOW_STUDIO_DB="$(winepath -w "$scratch/studio.sqlite")" timeout 120 \
  wine "$install_dir/bin/cflow-studio.exe" --self-test "$model_win" --size 1366x768 \
  --screenshot "$(winepath -w "$shot")" >"$scratch/studio.log" 2>&1 || studio_rc=$?
if [[ "$studio_rc" -ne 0 ]]; then
  cat "$scratch/studio.log" >&2
  [[ "$studio_rc" -eq 124 ]] && die "cflow-studio.exe --self-test did not exit within 120 s under wine"
  die "cflow-studio.exe --self-test failed under wine (exit status $studio_rc)"
fi
[[ -f "$shot" ]] || { cat "$scratch/studio.log" >&2; die "cflow-studio.exe --self-test wrote no screenshot"; }
shot_bytes="$(stat -c %s "$shot")"
if [[ "$(head -c 8 "$shot" | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" || "$shot_bytes" -lt 8192 ]]; then
  die "the installed app's self-test screenshot is not a non-trivial PNG ($shot_bytes bytes)"
fi
echo "    screenshot $shot ($shot_bytes bytes)"
took

phase "cflow-studio.exe --self-test compare (default model vs two zoo models: chart PNGs) on Xvfb"
compare_dir="$shot_dir/compare-wizard"
rm -rf "$compare_dir"
compare_rc=0
CFLOW_STUDIO_DB="$(winepath -w "$scratch/compare.sqlite")" timeout 300 \
  wine "$install_dir/bin/cflow-studio.exe" --self-test compare --screenshot-dir "$(winepath -w "$compare_dir")" \
  "$model_win" "$(winepath -w "$repo_root/resources/models/arch2_4_sync.q4_0.cflow")" \
  "$(winepath -w "$repo_root/resources/models/arch4_async_experts.q4_0.cflow")" >"$scratch/compare.log" 2>&1 || compare_rc=$?
if [[ "$compare_rc" -ne 0 ]]; then
  cat "$scratch/compare.log" >&2
  die "cflow-studio.exe --self-test compare failed under wine (exit status $compare_rc)"
fi
# The charts .ci/run checks on Linux, from the Qt Charts or the painter renderer (whichever the
# Windows Qt allowed): each a PNG of at least 8192 bytes.
for png in charts/pareto-perplexity-vs-bytes charts/decode_tok_per_s charts/perplexity charts/bytes_per_token; do
  png_path="$compare_dir/$png.png"
  if [[ ! -f "$png_path" || "$(head -c 8 "$png_path" | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" || "$(stat -c %s "$png_path")" -lt 8192 ]]; then
    cat "$scratch/compare.log" >&2
    die "the installed app's comparison chart $png.png is missing or not a non-trivial PNG"
  fi
done
echo "    $(find "$compare_dir/charts" -name '*.png' | wc -l) chart PNGs in $compare_dir/charts"
took

# --- uninstall -----------------------------------------------------------------------------------
phase "uninstall.exe /S"
# The uninstaller copies itself to %TEMP% and runs from there, so wait for the prefix's processes.
wine "$install_dir/uninstall.exe" /S
wineserver -w
if [[ -e "$install_dir" ]]; then
  find "$install_dir" >&2
  die "the install folder is still there after uninstalling"
fi
[[ ! -e "$shortcut" && ! -e "$(dirname "$shortcut")" ]] || die "the Start-menu entries are still there after uninstalling"
if wine reg query "$uninstall_key" >/dev/null 2>&1; then die "the Add/Remove Programs entry is still there after uninstalling"; fi
[[ "$(user_path)" == "$path_before" ]] || die "the user's PATH after uninstalling is '$(user_path)', not '$path_before' as before"
took

echo "::: Windows install test passed in $((SECONDS - t_start)) s ($(basename "$setup"): $(stat -c %s "$setup") bytes)"
