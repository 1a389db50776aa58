#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (the `fuzz` preset, build/fuzz) and runs each for
# SECONDS (default 30) on a scratch copy of its seed corpus (tests/fuzz/corpus/<target>), so the
# repository is never written. A crash, a leak, an invariant broken (abort) or a hang fails.
#   tests/fuzz/run.sh [SECONDS]
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seconds="${1:-30}"
cd "$repo_root"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target cflow_fuzzers
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# Targets run side by side, CFLOW_FUZZ_JOBS at a time (default: one per core, at most 2): each
# is one process, so one at a time left the second core idle for half of CI's fuzz step.
jobs="${CFLOW_FUZZ_JOBS:-$(( $(nproc) < 2 ? 1 : 2 ))}"
fuzz_one() {
  local target="$1"
  mkdir -p "$scratch/$target"
  cp -r "tests/fuzz/corpus/$target/." "$scratch/$target/" 2>/dev/null || true
  "build/fuzz/tests/fuzz/cflow_fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 "$scratch/$target" 2>"$scratch/$target.log"
}
report_one() {
  local target="$1" status="$2"
  if [[ "$status" -ne 0 ]]; then
    tail -40 "$scratch/$target.log" >&2
    echo "tests/fuzz/run.sh: cflow_fuzz_$target failed (input saved by libFuzzer in $PWD: crash-*/timeout-*)" >&2
    return 1
  fi
  echo "::: fuzzed $target for ${seconds} s: $(grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$scratch/$target.log" | tr '\n' ' ')"
}
targets=(openai_request sse request_head gguf cflow_file safetensors llama2c jinja tokenizer grammar)
failed=0
for ((first = 0; first < ${#targets[@]}; first += jobs)); do
  batch=("${targets[@]:first:jobs}")
  pids=()
  for target in "${batch[@]}"; do
    echo "::: fuzzing $target for ${seconds} s"
    fuzz_one "$target" &
    pids+=($!)
  done
  for index in "${!batch[@]}"; do
    status=0
    wait "${pids[$index]}" || status=$?
    report_one "${batch[$index]}" "$status" || failed=1
  done
  [[ "$failed" -eq 0 ]] || exit 1
done
