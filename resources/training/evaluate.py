#!/usr/bin/env -S /usr/bin/python3
"""Measures every trained model of the zoo; writes RUNS/results.json (make_results.py renders it).

    /usr/bin/python3 resources/training/evaluate.py --runs RUNS --corpus CORPUS_DIR --tokenizer BPE_DIR \\
        --cflow build/app/cflow [--archs a,b,..] [--max-eval-tokens 131072]

Per model (RUNS/<arch>/export/<arch>, the HF folder train.py wrote):
  * parameters: total and active per token (attention + dense FFN + top-k of the experts + router,
    per effective layer; the embedding counted once);
  * perplexity with the PyTorch model (model.py, f32) on our held-out stories (valid.txt, test.txt)
    and on the TinyStories text no model trained on (../shared/assets/corpora/tinystories:
    tinystories_sample.cs336.txt split at <|endoftext|>, tinystories_prefix.Niklas6-Mini_GPT.txt
    split at blank lines). Each document is <|bos|> text <|eos|>, documents are concatenated and
    scored in windows of --ctx tokens advanced by --stride (default: non-overlapping, like the
    training-time validation), at most --max-eval-tokens scored tokens per text (documented cap:
    pure-PyTorch evaluation on two shared cores is slow);
  * the same through the C++ engine on the q8_0 file: `cflow perplexity MODEL -f TEXT --ctx N --stride N
    --max-tokens N` (same documents, windows and cap);
  * `cflow convert` of the export to f32, q8_0, q4_0 (.cflow) and q8_0 .vflow: file sizes;
  * `cflow critical-path MODEL.q8_0.cflow --json`: B_naive / B_critical (ideal streams at 0.5
    byte/weight, and the actual bytes of the q8_0 file), MiB per token;
  * decode speed: `cflow bench MODEL.q8_0.cflow --threads T` (the "map (page cache)" line) at 1 and 2
    threads;
  * engine parity smoke test: greedy text of 64 tokens from "Once upon a time" by PyTorch and by the
    engine on the f32 file, and the top-1 agreement of q8_0 / q4_0 with f32 over those steps (until
    the texts first diverge);
  * teacher-forced top-1 agreement of the q8_0 / q4_0 round-tripped weights with f32 over the first
    4096 tokens of test.txt (the engine equals the round-tripped reference: tests/parity/trained);
  * the converter's own validation, `cflow convert EXPORT --quant q8_0|q4_0 --validate` (what the
    conversion wizard shows a user: tokenizer round trip, template, smoke generation, and over up to
    128 teacher-forced positions of its sample text the top-1 agreement and KL divergence of the
    converted file against the export in F32, with its pass / warn / fail verdict); the reports
    stay beside the files as RUNS/<arch>/<arch>.<quant>.validated.cflow.report.{json,md}.
Results are cached per model in RUNS/<arch>/eval.json (delete it to re-measure).
"""
import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import bpe_tokenizer as bt  # noqa: E402
import model as M  # noqa: E402

TINYSTORIES = os.path.join(os.path.dirname(M.REPO), "shared", "assets", "corpora", "tinystories")
GREEDY_PROMPT = "Once upon a time"
GREEDY_TOKENS = 64


# ----------------------------------------------------------------------------- loading

def read_safetensors(path):
    """{name: f32 tensor} of an F32-only safetensors file (what train.py writes)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError("%s: tensor %s has dtype %s, expected F32" % (path, name, info["dtype"]))
        a, b = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data, dtype="<f4", count=(b - a) // 4, offset=base + a).copy()
                                     ).reshape(info["shape"])
    return out


def load_export(export_dir):
    with open(os.path.join(export_dir, "config.json"), "r", encoding="utf-8") as f:
        cfg = json.load(f)
    model = M.CflowTrainModel(cfg)
    model.load_hf_tensors(read_safetensors(os.path.join(export_dir, "model.safetensors")))
    model.eval()
    return cfg, model


def parameter_counts(cfg):
    shapes = M.tensor_shapes(cfg)
    total = sum(int(np.prod(s)) for s in shapes.values())
    d = cfg["hidden_size"]
    per_layer_attn = sum(int(np.prod(s)) for n, s in shapes.items() if ".layers.0.self_attn." in n)
    dense = 3 * d * cfg["intermediate_size"]
    experts = cfg["num_experts_per_tok"] * 3 * d * cfg["moe_intermediate_size"] + cfg["num_experts"] * d
    passes = cfg["n_blocks"] * cfg["n_iter"] if cfg["combine_style"] == M.ref.FIXED_POINT else cfg["num_hidden_layers"]
    active = passes * (per_layer_attn + dense + experts) + cfg["vocab_size"] * d  # + embedding / lm_head once
    return total, active


# ----------------------------------------------------------------------------- texts

def documents(path):
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    parts = text.split("<|endoftext|>") if "<|endoftext|>" in text else re.split(r"\n\s*\n", text)
    return [p.strip() for p in parts if p.strip()]


def eval_texts(corpus_dir):
    texts = {"valid": os.path.join(corpus_dir, "valid.txt"), "test": os.path.join(corpus_dir, "test.txt"),
             "tinystories_sample": os.path.join(TINYSTORIES, "tinystories_sample.cs336.txt"),
             "tinystories_prefix": os.path.join(TINYSTORIES, "tinystories_prefix.Niklas6-Mini_GPT.txt")}
    return {k: v for k, v in texts.items() if os.path.exists(v)}


def token_stream(tok, path):
    ids = []
    for d in documents(path):
        ids.append(tok.bos_id)
        ids.extend(tok.encode(d))
        ids.append(tok.eos_id)
    return ids


@torch.no_grad()
def perplexity(model, ids, ctx, stride, max_tokens):
    """exp(mean NLL) over windows of ctx tokens advanced by stride; a window scores only the tokens
    the previous window did not (all of them for the first), so every token is scored once."""
    ids = torch.tensor(ids, dtype=torch.long)
    nll, count, scored_to = 0.0, 0, 0
    start = 0
    while start < ids.numel() - 1 and count < max_tokens:
        end = min(start + ctx + 1, ids.numel())
        window = ids[start:end]
        logits, _ = model(window[None, :-1])
        lp = torch.log_softmax(logits[0], dim=-1)
        targets = window[1:]
        first = max(scored_to - start, 0)  # targets at positions start+1+first.. are new
        pick = lp[first:].gather(1, targets[first:, None])[:, 0]
        nll -= float(pick.sum())
        count += pick.numel()
        scored_to = end - 1
        if end == ids.numel():
            break
        start += stride
    return math.exp(nll / max(count, 1)), count


@torch.no_grad()
def torch_greedy(model, tok, prompt, n):
    ids = [tok.bos_id] + tok.encode(prompt)
    out = []
    for _ in range(n):
        logits, _ = model(torch.tensor([ids]))
        nxt = int(torch.argmax(logits[0, -1]))
        if nxt == tok.eos_id:
            break
        ids.append(nxt)
        out.append(nxt)
    return prompt + tok.decode(out)


# ----------------------------------------------------------------------------- engine

def run(cmd, **kw):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False, **kw)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (rc %d): %s" % (" ".join(cmd[:3]), proc.returncode,
                                                     proc.stderr.decode("utf-8", "replace")[-400:]))
    return proc.stdout.decode("utf-8", "replace")


def convert_all(cflow, export_dir, out_dir, arch):
    files = {}
    for quant, ext in (("f32", "cflow"), ("q8_0", "cflow"), ("q4_0", "cflow"), ("q8_0", "vflow")):
        path = os.path.join(out_dir, "%s.%s.%s" % (arch, quant, ext))
        if not os.path.exists(path):
            run([cflow, "convert", export_dir, "-o", path, "--quant", quant, "--quiet"])
        files["%s.%s" % (quant, ext)] = {"path": path, "bytes": os.path.getsize(path)}
    return files


VALIDATION_KEYS = ("verdict", "verdict_reason", "top1_agreement", "mean_kl_nats", "max_kl_nats", "positions",
                   "tokenizer_round_trip", "tokenizer_matches_source", "template_renders", "smoke_ok")


def conversion_validation(cflow, export_dir, out_dir, arch):
    res = {}
    for quant in ("q8_0", "q4_0"):
        path = os.path.join(out_dir, "%s.%s.validated.cflow" % (arch, quant))
        cmd = [cflow, "convert", export_dir, "-o", path, "--quant", quant, "--validate", "--quiet"]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        if proc.returncode not in (0, 3):  # 3 = converted, but the verdict is "fail": still a result
            raise RuntimeError("%s failed (rc %d): %s" % (" ".join(cmd), proc.returncode,
                                                         proc.stderr.decode("utf-8", "replace")[-400:]))
        with open(path + ".report.json", "r", encoding="utf-8") as f:
            validation = json.load(f)["validation"]
        res[quant] = {k: validation.get(k) for k in VALIDATION_KEYS}
        print("evaluate: %s %s validation: %s" % (arch, quant, validation.get("verdict_reason")), flush=True)
    return res


def critical_path(cflow, path):
    j = json.loads(run([cflow, "critical-path", path, "--json"]))
    out = {"ideal_b_naive_mib": j["ideal"]["b_naive_mib"], "ideal_b_critical_mib": j["ideal"]["b_critical_mib"],
           "ideal_reduction": j["ideal"]["reduction"], "passes": j["schedule"]["passes"]}
    if "actual" in j:
        out.update({"actual_b_naive_mib": j["actual"]["b_naive_mib"],
                    "actual_b_critical_mib": j["actual"]["b_critical_mib"], "actual_reduction": j["actual"]["reduction"]})
    return out


def bench(cflow, path, threads, tokens=128):
    """Decode tok/s of the file mapped from the page cache (`cflow bench --json`, its "mapped" arm)."""
    text = run([cflow, "bench", path, "--threads", str(threads), "--tokens", str(tokens), "--json"])
    lines = [line for line in text.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError("cflow bench --json printed no JSON object: " + text[-300:])
    j = json.loads(lines[-1])
    return float(j["mapped"]["decode_tokens_per_second"])


def engine_greedy(cflow, path, prompt, n):
    return run([cflow, "generate", path, "-p", prompt, "-n", str(n), "--temp", "0", "--seed", "1", "--no-stats",
                "--threads", "1"])


def engine_perplexity(cflow, path, text_path, ctx, stride, max_tokens, threads=2):
    """`cflow perplexity MODEL -f TEXT --ctx N --stride N --max-tokens N --json`: the same documents,
    windows and token cap as perplexity() above, through the C++ engine and the model's own tokenizer."""
    j = json.loads(run([cflow, "perplexity", path, "-f", text_path, "--ctx", str(ctx), "--stride", str(stride),
                        "--max-tokens", str(max_tokens), "--threads", str(threads), "--json"]))
    return j["perplexity"]


@torch.no_grad()
def teacher_forced_top1(cfg, model, ids, ctx, max_tokens):
    """Share of positions where the model with weights round-tripped through q8_0 / q4_0 (exactly as
    `cflow convert` stores them: make_parity_trace.py) predicts the same next token as the f32 model,
    over the first max_tokens of `ids` in non-overlapping windows of ctx. The engine equals that
    round-tripped reference (tests/parity/trained), so this is the quantization's own effect. Also the
    mean KL divergence KL(f32 || quantized) of the next-token distributions, in nats."""
    import make_parity_trace as mpt
    tensors = model.hf_tensors()  # the f32 weights load_export read
    ids = torch.tensor(ids[:max_tokens + 1], dtype=torch.long)

    def log_probs(m):  # [positions x vocab], float64
        out = []
        for start in range(0, ids.numel() - 1, ctx):
            window = ids[start:min(start + ctx, ids.numel() - 1)]
            logits, _ = m(window[None, :])
            out.append(torch.log_softmax(logits[0].double(), dim=-1))
        return torch.cat(out)

    ref = log_probs(model)
    res = {}
    for quant in ("q8_0", "q4_0"):
        qm = M.CflowTrainModel(cfg)
        qm.load_hf_tensors(mpt.quantized_tensors(tensors, quant, quant))
        qm.eval()
        got = log_probs(qm)
        res[quant] = float((torch.argmax(got, dim=-1) == torch.argmax(ref, dim=-1)).float().mean())
        res[quant + "_mean_kl"] = float((ref.exp() * (ref - got)).sum(dim=-1).mean())
    res["positions"] = int(ref.shape[0])
    return res


def top1_agreement(text_a, text_b, tok):
    """Share of the greedy tokens (after the prompt) that two engines' texts agree on, position by position."""
    a = tok.encode(text_a[len(GREEDY_PROMPT):])
    b = tok.encode(text_b[len(GREEDY_PROMPT):])
    n = max(len(a), len(b), 1)
    same = 0
    for x, y in zip(a, b):
        if x != y:
            break  # greedy texts diverge for good after the first different token
        same += 1
    return same / n


# ----------------------------------------------------------------------------- main

def save_json(path, obj):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")


def evaluate_one(arch, args, tok):
    run_dir = os.path.join(args.runs, arch)
    export_dir = os.path.join(run_dir, "export", arch)
    cache = os.path.join(run_dir, "eval.json")
    if os.path.exists(cache) and not args.force:
        with open(cache, "r", encoding="utf-8") as f:
            res = json.load(f)
        if args.rebench:  # decode speed only, with this --cflow (e.g. after an engine change)
            q8 = os.path.join(run_dir, "%s.q8_0.cflow" % arch)
            res["decode_tok_s"] = {str(t): bench(args.cflow, q8, t) for t in (1, 2)}
            save_json(cache, res)
        if "conversion_validation" not in res:  # added after the first evaluations: fill it in
            res["conversion_validation"] = conversion_validation(args.cflow, export_dir, run_dir, arch)
            save_json(cache, res)
        if "q8_0_mean_kl" not in res.get("teacher_forced_top1", {}):  # added after the first evaluations
            cfg, model = load_export(export_dir)
            res["teacher_forced_top1"] = teacher_forced_top1(cfg, model,
                                                             token_stream(tok, os.path.join(args.corpus, "test.txt")),
                                                             args.ctx, 4096)
            save_json(cache, res)
        return res
    if not os.path.exists(os.path.join(export_dir, "model.safetensors")):
        print("evaluate: %s has no export yet (train it first); skipped" % arch)
        return None
    start = time.monotonic()
    cfg, model = load_export(export_dir)
    total, active = parameter_counts(cfg)
    res = {"arch": arch, "combine_style": M.ref.STYLE_NAMES[cfg["combine_style"]], "dense_delay": cfg["dense_delay"],
           "expert_delay": cfg["expert_delay"], "parameters": total, "active_parameters": active,
           "ctx": args.ctx, "stride": args.stride or args.ctx, "max_eval_tokens": args.max_eval_tokens}
    final = os.path.join(run_dir, "final.json")
    if os.path.exists(final):
        with open(final, "r", encoding="utf-8") as f:
            fj = json.load(f)
        res["train_steps"] = fj.get("steps")
    res["ppl_torch"], res["ppl_tokens"], res["ppl_engine"] = {}, {}, {}
    files = convert_all(args.cflow, export_dir, run_dir, arch)
    res["files"] = {k: v["bytes"] for k, v in files.items()}
    for name, path in eval_texts(args.corpus).items():
        ppl, n = perplexity(model, token_stream(tok, path), args.ctx, args.stride or args.ctx, args.max_eval_tokens)
        res["ppl_torch"][name] = ppl
        res["ppl_tokens"][name] = n
        res["ppl_engine"][name] = engine_perplexity(args.cflow, files["q8_0.cflow"]["path"], path, args.ctx,
                                                    args.stride or args.ctx, args.max_eval_tokens)
        print("evaluate: %s %s perplexity %.3f (%d tokens)" % (arch, name, ppl, n), flush=True)
    res["critical_path"] = critical_path(args.cflow, files["q8_0.cflow"]["path"])
    res["decode_tok_s"] = {str(t): bench(args.cflow, files["q8_0.cflow"]["path"], t) for t in (1, 2)}
    want = torch_greedy(model, tok, GREEDY_PROMPT, GREEDY_TOKENS)
    got = {q: engine_greedy(args.cflow, files[q + ".cflow"]["path"], GREEDY_PROMPT, GREEDY_TOKENS)
           for q in ("f32", "q8_0", "q4_0")}
    res["greedy"] = {"torch": want, "engine_f32": got["f32"], "f32_identical": got["f32"] == want,
                     "q8_0_top1_agreement": top1_agreement(got["f32"], got["q8_0"], tok),
                     "q4_0_top1_agreement": top1_agreement(got["f32"], got["q4_0"], tok)}
    res["teacher_forced_top1"] = teacher_forced_top1(cfg, model,
                                                     token_stream(tok, os.path.join(args.corpus, "test.txt")),
                                                     args.ctx, 4096)
    res["conversion_validation"] = conversion_validation(args.cflow, export_dir, run_dir, arch)
    res["eval_seconds"] = round(time.monotonic() - start, 1)
    save_json(cache, res)
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", required=True, help="folder with one train.py run directory per arch")
    p.add_argument("--corpus", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--cflow", required=True)
    p.add_argument("--archs", default=",".join(M.ARCHS))
    p.add_argument("--ctx", type=int, default=256)
    p.add_argument("--stride", type=int, default=0, help="0 = --ctx (non-overlapping windows)")
    p.add_argument("--max-eval-tokens", type=int, default=131072)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--force", action="store_true", help="re-measure models that have an eval.json")
    p.add_argument("--rebench", action="store_true",
                   help="for models that have an eval.json, re-measure only the decode speed with --cflow")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    tok = bt.Tokenizer.load(os.path.join(args.tokenizer, "tokenizer.json"))
    results = []
    for arch in args.archs.split(","):
        r = evaluate_one(arch, args, tok)
        if r:
            results.append(r)
    with open(os.path.join(args.runs, "results.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump({"models": results, "corpus": os.path.abspath(args.corpus)}, f, indent=2, sort_keys=True,
                  ensure_ascii=False)
        f.write("\n")
    print("evaluate: %d models -> %s" % (len(results), os.path.join(args.runs, "results.json")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
