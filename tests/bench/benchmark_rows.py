#!/usr/bin/env python3
"""cflow's rows of BENCHMARKS.md, regenerated: synthesises the dense-1b and moe-1b models (once,
into --models), runs `cflow bench --json` for every thread count and kernel path asked for, and
prints one Markdown table row per run with the machine, the kernel path and the read bandwidth
probed in the same run. Peers (llama.cpp) are measured by hand, never by this script.

  tests/bench/benchmark_rows.py --cflow build/release/app/cflow --models /tmp/cflow-bench \
      [--threads 1 2] [--isa avx512vnni avx2int8 avx2] [--tokens 64] [--prompt-tokens 64]
"""
import argparse
import json
import os
import platform
import subprocess
import sys


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def ensure_model(cflow, models, preset):
    path = os.path.join(models, preset + ".cflow")
    if not os.path.exists(path):
        os.makedirs(models, exist_ok=True)
        subprocess.run([cflow, "synth", "--preset", preset, "-o", path,
                        "--gguf", os.path.join(models, preset + ".gguf")], check=True)
    return path


def bench(cflow, model, threads, isa, tokens, prompt_tokens):
    env = dict(os.environ)
    if isa:
        env["CFLOW_ISA"] = isa
    out = subprocess.run([cflow, "bench", model, "--threads", str(threads), "--tokens", str(tokens),
                          "--prompt-tokens", str(prompt_tokens), "--json"],
                         check=True, stdout=subprocess.PIPE, env=env, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cflow", required=True)
    ap.add_argument("--models", required=True, help="folder for the synthesised models")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--isa", nargs="+", default=[""], help="CFLOW_ISA values; '' = the best path")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--presets", nargs="+", default=["dense-1b", "moe-1b"])
    args = ap.parse_args()

    machine = cpu_name()
    print("| machine | model | kernel path | threads | probed read GB/s | prefill tok/s (P=%d) | decode tok/s "
          "| decode GB/s | decode / probe | peak RSS MiB |" % args.prompt_tokens)
    print("|---|---|---|---|---|---|---|---|---|---|")
    for preset in args.presets:
        model = ensure_model(args.cflow, args.models, preset)
        for isa in args.isa:
            for threads in args.threads:
                r = bench(args.cflow, model, threads, isa, args.tokens, args.prompt_tokens)
                achieved = r["decode_tokens_per_second"] * r["decode_bytes_per_token"]
                print("| %s | %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.2f | %.0f |" % (
                    machine, preset, r["isa"], r["threads"], r["read_bandwidth_bytes_per_second"] / 1e9,
                    r["prefill_tokens_per_second"], r["decode_tokens_per_second"], achieved / 1e9,
                    r["decode_bandwidth_ratio"], r["peak_rss_bytes"] / 2**20))
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
