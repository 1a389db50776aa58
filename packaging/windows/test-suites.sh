#!/usr/bin/env bash
# The base, formats, engine and (when the build has the server) server GoogleTest suites
# cross-built for Windows (preset mingw) and run under wine: the Windows code paths (mapped files,
# FILE_FLAG_NO_BUFFERING reads, overlapped I/O, the thread pool's WaitOnAddress hand-over, the
# kernels' run-time dispatch, the server on Winsock with loopback clients) exercised by the same
# tests as on Linux. Tests that need what Windows does not offer (symlinks under wine, shrinking
# or deleting an open file, the Linux host's python3) skip with their reason.
#   packaging/windows/test-suites.sh [--no-build]
# Runs in a fresh wine prefix of its own; ../shared beside the clone as for the Linux suites.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo_root"
die() { echo "test-suites.sh: $*" >&2; exit 1; }

build=1
[[ "${1:-}" == "--no-build" ]] && build=0
for tool in wine wineserver; do command -v "$tool" >/dev/null || die "$tool not found (apt-get install wine64)"; done

if [[ "$build" -eq 1 ]]; then
  cmake --preset mingw >/dev/null
  cmake --build --preset mingw -j2
fi

scratch="$(mktemp -d)"
export WINEPREFIX="$scratch/prefix" WINEARCH=win64 WINEDEBUG=-all
cleanup() { wineserver -k >/dev/null 2>&1 || true; rm -rf "$scratch"; }
trap cleanup EXIT
wineboot -i >/dev/null 2>&1 || true
wineserver -w

suites=(base formats engine)
# The server is in the build when packaging/windows/build-deps.sh put cpp-httplib in the cache.
[[ -d build/mingw/server ]] && suites+=(server)
failed=0
for suite in "${suites[@]}"; do
  exe="build/mingw/tests/cflow_${suite}_tests.exe"
  [[ -f "$exe" ]] || die "$exe is missing (build the mingw preset)"
  t0=$SECONDS
  rc=0
  timeout 1200 wine "$exe" --gtest_brief=1 >"$scratch/$suite.log" 2>&1 || rc=$?
  # A suite that dies before its summary (a crash under wine) leaves none: that is reported below
  # with the log's tail, not ended here by pipefail on grep's empty result.
  summary="$(grep -E '^\[  PASSED  \]|^\[  SKIPPED \] [0-9]|^\[  FAILED  \] [0-9]' "$scratch/$suite.log" | tr -d '\r' | tr '\n' ' ' || true)"
  if [[ -z "$summary" && "$rc" -eq 0 ]]; then rc=99; fi  # exited 0 without running to its end
  echo "::: cflow_${suite}_tests.exe under wine: ${summary:-no summary} ($((SECONDS - t0)) s, exit $rc)"
  if [[ "$rc" -ne 0 ]]; then
    if grep -q -E '^\[  FAILED  \]' "$scratch/$suite.log"; then
      grep -E -B20 '^\[  FAILED  \]' "$scratch/$suite.log" | tr -d '\r' | tail -80 >&2
    else
      echo "::: cflow_${suite}_tests.exe ended without a summary; the last lines it wrote:" >&2
      tr -d '\r' < "$scratch/$suite.log" | grep -v -E 'wine32|multiarch|i386' | tail -40 >&2
    fi
    failed=1
  fi
done
[[ "$failed" -eq 0 ]] || die "a suite failed under wine (its failures are above)"
echo "::: the Windows suites passed under wine"
