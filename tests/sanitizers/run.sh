#!/usr/bin/env bash
# Builds the headless tree twice more and runs its tests under the sanitizers:
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer (presets `asan`, build/asan): the base,
#         formats, engine, app (the `cflow` CLI, itself instrumented) and server suites;
#   tsan: ThreadSanitizer (preset `tsan`, build/tsan): the suites that run threads (thread pool,
#         expert fetcher, prefill and generation on 2 threads, chat sessions, the server's slots).
# Any report fails the run (halt_on_error / abort_on_error); a leak fails the asan run.
#   tests/sanitizers/run.sh [asan|tsan|all]       (default all)
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo_root"
which="${1:-all}"
jobs="${CFLOW_SANITIZER_JOBS:-2}"

run_asan() {
  echo "::: asan: configure and build (ASan+UBSan, -O1)"
  local t0=$SECONDS
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j"$jobs"
  echo "::: asan: built in $((SECONDS - t0)) s; running the headless suites"
  t0=$SECONDS
  ctest --preset asan
  echo "::: asan: tests passed in $((SECONDS - t0)) s"
}

run_tsan() {
  echo "::: tsan: configure and build the threaded suites (ThreadSanitizer, -O1)"
  local t0=$SECONDS
  cmake --preset tsan >/dev/null
  # Only the executables the tsan test preset runs (engine, server; the CLI for the server tests).
  cmake --build --preset tsan -j"$jobs" --target cflow_engine_tests cflow_server_tests cflow
  echo "::: tsan: built in $((SECONDS - t0)) s; running the threaded suites"
  t0=$SECONDS
  ctest --preset tsan
  echo "::: tsan: tests passed in $((SECONDS - t0)) s"
}

case "$which" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all) run_asan; run_tsan ;;
  *) echo "usage: tests/sanitizers/run.sh [asan|tsan|all]" >&2; exit 2 ;;
esac
