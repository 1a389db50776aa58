#!/usr/bin/env bash
# The Windows CLI under wine on the bundled default model: `cflow.exe --version`, then a greedy
# `cflow.exe generate` without MODEL (so the bundled model is found from the executable's folder, as a
# user's first run finds it) with the best kernels this CPU has and with CFLOW_ISA=scalar (the portable
# fallback a CPU without AVX2/AVX-512 gets). The model's byte-level BPE tokenizer needs PCRE2, so this
# also shows that the build found the Windows PCRE2 (packaging/windows/build-deps.sh). Given a Linux
# `cflow`, each story must be byte for byte the one it tells.
# Then `cflow.exe serve` on 127.0.0.1 (a free port: --port 0, the URL read from its log): /v1/models
# and a streamed /v1/chat/completions from Linux (python3's urllib: the SSE shape, the text, [DONE]),
# and the official `openai` npm client's checks (tests/server/openai-node/openai_client_test.mjs,
# its server started under wine through a wrapper) where node and that package are installed
# (packaging/install-deps.sh --tests); else that part says it did not run.
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
serve_pid=""
stop_serve() {
  # The wine process of this script's own `cflow.exe serve` only (never wineserver -k: the
  # prefix may be shared); SIGINT is its Ctrl-C, which lets it finish what it serves.
  if [[ -n "$serve_pid" ]] && kill -0 "$serve_pid" 2>/dev/null; then
    kill -INT "$serve_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  serve_pid=""
}
trap 'stop_serve; rm -rf "$scratch"' EXIT

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

# The local server: the same code as Linux's `cflow serve`, on Winsock.
serve_t0=$SECONDS
wine "$cflow_exe" serve --host 127.0.0.1 --port 0 --threads 2 >"$scratch/serve.out" 2>"$scratch/serve.err" &
serve_pid=$!
serve_url=""
for _ in $(seq 120); do
  serve_url="$(tr -d '\r' <"$scratch/serve.err" | grep -o 'on http://127\.0\.0\.1:[0-9]*/v1' | head -1 | sed 's/^on //')" || true
  [[ -n "$serve_url" ]] && break
  kill -0 "$serve_pid" 2>/dev/null ||
    { cat "$scratch/serve.err" >&2; die "cflow.exe serve exited before listening (above: its log)"; }
  sleep 0.5
done
[[ -n "$serve_url" ]] || { cat "$scratch/serve.err" >&2; die "cflow.exe serve did not say where it listens within 60 s"; }
echo "    cflow.exe serve listening on $serve_url"
python3 - "$serve_url" <<'CHECK' || { cat "$scratch/serve.err" >&2; die "cflow.exe serve answered wrongly (above: the check, then the server's log)"; }
# /v1/models, then one streamed chat completion: every event a `data: ` line of one
# chat.completion.chunk, the role first, some text, a finish_reason, and `data: [DONE]` last.
import json, sys, time, urllib.request
url = sys.argv[1]
def fail(what):
    sys.exit("test-cli.sh: cflow.exe serve: " + what)
for attempt in range(40):
    try:
        with urllib.request.urlopen(url + "/models", timeout=10) as reply:
            models = json.load(reply)
        break
    except OSError as error:
        if attempt == 39: fail(f"GET {url}/models failed: {error}")
        time.sleep(0.5)
if models.get("object") != "list" or len(models.get("data", [])) != 1 or models["data"][0].get("object") != "model":
    fail(f"GET /v1/models is not a list of one model: {models}")
model_id = models["data"][0]["id"]
body = json.dumps({"model": model_id, "stream": True, "max_tokens": 24, "temperature": 0,
                   "messages": [{"role": "user", "content": "Tell me a story."}]}).encode()
request = urllib.request.Request(url + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=120) as reply:
        kind = reply.headers.get("Content-Type", "")
        stream = reply.read().decode()
except OSError as error:
    fail(f"POST {url}/chat/completions (stream: true) failed: {error}")
if not kind.startswith("text/event-stream"):
    fail(f"the streamed reply's Content-Type is '{kind}', not text/event-stream")
events = [block for block in stream.split("\n\n") if block.strip()]
if not events or events[-1] != "data: [DONE]":
    fail("the stream does not end with 'data: [DONE]': ..." + repr(stream[-200:]))
text, finish, roles = "", None, 0
for event in events[:-1]:
    if not event.startswith("data: ") or "\n" in event:
        fail(f"not one 'data: ' line per event: {event!r}")
    chunk = json.loads(event[len("data: "):])
    if chunk.get("object") != "chat.completion.chunk" or chunk.get("model") != model_id:
        fail(f"not a chat.completion.chunk of {model_id}: {chunk}")
    for choice in chunk["choices"]:
        delta = choice.get("delta", {})
        roles += delta.get("role") == "assistant"
        text += delta.get("content") or ""
        finish = choice.get("finish_reason") or finish
if roles != 1 or not text.strip() or finish not in ("stop", "length"):
    fail(f"{len(events) - 1} chunks, role chunks {roles}, text {text!r}, finish_reason {finish!r}")
print(f"    /v1/models: '{model_id}'; streamed chat: {len(events) - 1} chunks, finish_reason {finish}, then [DONE]: {text.strip()!r}")
CHECK
stop_serve
echo "    cflow.exe serve: started, answered and stopped in $((SECONDS - serve_t0)) s"

# The official openai npm client (the issue's held-back client) against `cflow.exe serve` under
# wine: its test starts `--cflow` with `serve ... --port 0` and stops it with SIGINT (Ctrl-C).
openai_test="$repo_root/tests/server/openai-node/openai_client_test.mjs"
if ! command -v node >/dev/null 2>&1; then
  echo "    openai npm client: NOT RUN (node is not installed; packaging/install-deps.sh --tests)"
elif [[ ! -d "$repo_root/tests/server/openai-node/node_modules/openai" ]]; then
  echo "    openai npm client: NOT RUN (the package is not installed: npm ci --prefix tests/server/openai-node)"
else
  printf '#!/bin/sh\nexec wine %q "$@"\n' "$cflow_exe" >"$scratch/cflow-under-wine"
  chmod +x "$scratch/cflow-under-wine"
  client_t0=$SECONDS
  timeout 300 node "$openai_test" --cflow "$scratch/cflow-under-wine" >"$scratch/openai.log" 2>&1 ||
    { cat "$scratch/openai.log" >&2; die "the openai npm client's checks failed against cflow.exe serve (above)"; }
  echo "    openai npm client: $(tail -1 "$scratch/openai.log") against cflow.exe serve in $((SECONDS - client_t0)) s"
fi
