#!/usr/bin/env bash
# The Windows CLI under wine on the bundled default model: `cflow.exe --version`, then a greedy
# `cflow.exe generate` without MODEL (so the bundled model is found from the executable's folder, as a
# user's first run finds it) with the best kernels this CPU has and with CFLOW_ISA=scalar (the portable
# fallback a CPU without AVX2/AVX-512 gets). The model's byte-level BPE tokenizer needs PCRE2, so this
# also shows that the build found the Windows PCRE2 (packaging/windows/build-deps.sh). Given a Linux
# `cflow`, each story must be byte for byte the one it tells.
#
#   packaging/windows/test-cli.sh CFLOW_EXE [--linux-cflow FILE]
#
# Runs in the caller's wine prefix (WINEPREFIX; test-install.sh passes a fresh one).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
die() { echo "test-cli.sh: $*" >&2; exit 1; }
[[ $# -ge 1 && -f "$1" ]] || die "usage: test-cli.sh CFLOW_EXE [--linux-cflow FILE]"
cflow_exe="$(realpath "$1")"
shift
linux_cflow=""
if [[ "${1:-}" == --linux-cflow ]]; then
  [[ $# -ge 2 && -x "$2" ]] || die "--linux-cflow needs an executable"
  linux_cflow="$(realpath "$2")"
fi
export WINEDEBUG="${WINEDEBUG:--all}"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/cflow-wine-cli.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

version="$(wine "$cflow_exe" --version | tr -d '\r')" || die "cflow.exe --version failed"
echo "    $version"
project_version="$(sed -n 's/^project(cflow_studio VERSION \([0-9.]*\).*/\1/p' "$repo_root/CMakeLists.txt")"
grep -qF "$project_version" <<<"$version" || die "cflow.exe --version says '$version', the project is $project_version"

prompt="Once upon a time"
gen_args=(-p "$prompt" -n 48 --temp 0 --threads 2)
for isa in best scalar; do
  isa_env=()
  [[ "$isa" == scalar ]] && isa_env=(CFLOW_ISA=scalar)
  env "${isa_env[@]}" timeout 300 wine "$cflow_exe" generate "${gen_args[@]}" >"$scratch/wine.txt" 2>"$scratch/wine.err" ||
    { cat "$scratch/wine.err" >&2; die "cflow.exe generate ($isa kernels) failed or hung"; }
  # Windows' console writes CR LF; the story is compared without the CRs.
  tr -d '\r' <"$scratch/wine.txt" >"$scratch/wine.lf"
  story="$(cat "$scratch/wine.lf")"
  [[ "$story" == "$prompt"* && ${#story} -gt $((${#prompt} + 40)) ]] ||
    die "cflow.exe generate ($isa kernels) printed no story after the prompt: '$story'"
  echo "    $isa kernels: ${story//$'\n'/ }"
  if [[ -n "$linux_cflow" ]]; then
    env "${isa_env[@]}" "$linux_cflow" generate "$repo_root/resources/default-model.cflow" "${gen_args[@]}" \
      2>/dev/null >"$scratch/linux.txt" || die "$linux_cflow generate failed"
    cmp -s "$scratch/wine.lf" "$scratch/linux.txt" ||
      { diff "$scratch/linux.txt" "$scratch/wine.lf" >&2 || true
        die "cflow.exe ($isa kernels) told a different greedy story than $linux_cflow"; }
    echo "    $isa kernels: the same story as the Linux build"
  fi
done
