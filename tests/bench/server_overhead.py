#!/usr/bin/env python3
"""What `cflow serve` costs against `cflow generate` on the same model, prompt, seed and threads.

Alternates, per round: `cflow generate` (its own decode tok/s and first-token time), then one
streamed /v1/completions request to a server started here (tok/s between the first and the last
streamed token as the client sees them, and the time from sending the request to the first
token's bytes). Then 8 concurrent streamed chat/completions clients, all of which must finish
with a finish_reason. Prints one JSON object per measurement and a summary line with the ratio.

  tests/bench/server_overhead.py --cflow build/ci/app/cflow --model dense-1b.cflow --tokens 64 --threads 2
"""
import argparse
import http.client
import json
import re
import statistics
import subprocess
import sys
import threading
import time


def generate_run(args):
    out = subprocess.run([args.cflow, "generate", args.model, "-p", args.prompt, "-n", str(args.tokens),
                          "--seed", str(args.seed), "--temp", "0.8", "--threads", str(args.threads)],
                         capture_output=True, text=True, check=True)
    decode = re.search(r"generated (\d+) tokens, ([\d.]+) tok/s", out.stderr)
    first = re.search(r"first token ([\d.]+) ms", out.stderr)
    return {"tokens": int(decode.group(1)), "decode_tokens_per_second": float(decode.group(2)),
            "first_token_ms": float(first.group(1))}


def stream_request(port, path, body):
    """Sends one streamed request; returns (first token time, per-token arrival times, finish)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    sent = time.perf_counter()
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    res = conn.getresponse()
    if res.status != 200:
        raise RuntimeError(f"{path}: HTTP {res.status}: {res.read()[:200]!r}")
    arrivals, finish = [], None
    for raw in res:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        for choice in chunk.get("choices", []):
            text = choice.get("text", choice.get("delta", {}).get("content", ""))
            if text:
                arrivals.append(time.perf_counter())
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    conn.close()
    return sent, arrivals, finish


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cflow", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompt", default="Once upon a time")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=18181)
    args = parser.parse_args()

    server = subprocess.Popen([args.cflow, "serve", args.model, "--port", str(args.port), "--threads", str(args.threads),
                               "--parallel", "1"], stderr=subprocess.PIPE, text=True)
    for line in server.stderr:
        if "Ctrl-C stops" in line:
            break
    log_lines = []
    threading.Thread(target=lambda: log_lines.extend(server.stderr), daemon=True).start()
    body = {"prompt": args.prompt, "max_tokens": args.tokens, "seed": args.seed, "temperature": 0.8,
            "stream": True, "stop": []}
    ratios, ttfb_server, ttfb_generate = [], [], []
    try:
        stream_request(args.port, "/v1/completions", dict(body, max_tokens=8))  # warm-up (page cache, slot)
        generate_run(args)
        for round_index in range(args.rounds):
            gen = generate_run(args)
            sent, arrivals, finish = stream_request(args.port, "/v1/completions", body)
            served_rate = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]) if len(arrivals) > 1 else 0
            row = {"round": round_index + 1, "generate_tok_s": gen["decode_tokens_per_second"],
                   "server_client_tok_s": round(served_rate, 2), "generate_first_token_ms": gen["first_token_ms"],
                   "server_first_byte_ms": round((arrivals[0] - sent) * 1000, 1), "streamed_tokens": len(arrivals),
                   "finish_reason": finish}
            print(json.dumps(row))
            ratios.append(served_rate / gen["decode_tokens_per_second"])
            ttfb_server.append(row["server_first_byte_ms"])
            ttfb_generate.append(gen["first_token_ms"])

        results = [None] * 8
        def client(i):
            chat = {"messages": [{"role": "user", "content": f"Tell me about the number {i}."}],
                    "max_tokens": 24, "seed": i, "stream": True}
            try:
                results[i] = stream_request(args.port, "/v1/chat/completions", chat)[2]
            except Exception as error:  # reported below
                results[i] = f"error: {error}"
        started = time.perf_counter()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        concurrent_s = time.perf_counter() - started
        print(json.dumps({"concurrent_clients": 8, "finish_reasons": results, "seconds": round(concurrent_s, 2)}))
        ok = all(r in ("stop", "length") for r in results)
    finally:
        server.terminate()
        server.wait()
    print(f"server/generate decode tok/s: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}); "
          f"first byte through the server {statistics.median(ttfb_server):.1f} ms vs generate's first token "
          f"{statistics.median(ttfb_generate):.1f} ms; 8 concurrent clients {'all finished' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
