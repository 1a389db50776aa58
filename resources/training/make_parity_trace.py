#!/usr/bin/env -S /usr/bin/python3
"""Writes the parity trace of one shipped (quantized) model: what the float64 reference computes on
the weights exactly as `cflow convert --quant Q` stores them.

    /usr/bin/python3 resources/training/make_parity_trace.py EXPORT_DIR --quant q8_0|q4_0 \\
        --model-file resources/models/ARCH.q4_0.cflow -o tests/parity/trained/ARCH.q4_0.json

EXPORT_DIR is the HF folder train.py exports (config.json, model.safetensors, tokenizer.json).
The F32 weights are not committed, only their quantized .cflow files; this trace is what lets
tests/parity/trained_parity_test.cpp check the engine on those files without the F32 weights.

The weights go through the converter's quantize-dequantize round trip (formats/src/converter_layout.cpp,
tile_codec.cpp), bit for bit:
  * quantized (--quant, blocks of 32 along the input dimension of each row, zero-padded at the row's
    end): q/k/v/o projections, dense gate/up/down, every expert's gate/up/down, the shared expert's
    gate/up/down; the token embedding and an untied lm_head with --embedding-quant (default --quant);
  * kept f32: every norm weight, the router (moe.gate), the shared expert's sigmoid gate.
Q8_0 (ggml quantize_row_q8_0_ref): d = amax / 127, q = roundf(x * (1/d)) (half away from zero);
Q4_0 (ggml quantize_row_q4_0_ref): d = max / -8 with max the signed element of largest magnitude
(the first one on ties), q = min(15, (int)(x * (1/d) + 8.5)); both in f32 arithmetic with the
unrounded d, then the scale is stored as f16 and the weight read back as f16(d) * q (resp. q - 8).

Then tests/reference/cflow_reference.py runs in float64: BOS + tokenizer(prompt) (bpe_tokenizer, as
evaluate.py), then greedy decoding (argmax, ties to the lowest id) for --tokens steps, stopping after
EOS is chosen (EOS is then the last entry of greedy_ids). The JSON keeps, per greedy step, the top-5
(id, logit) and the top1 - top2 margin; per teacher-forced position of prompt_ids + greedy_ids (the
first --positions), the top-5, the L2 norm of all logits and, per MoE application, the chosen experts
and the router margin (k-th minus (k+1)-th router logit); checks.min_router_margin covers every MoE
application of the run. A greedy margin below 1e-4 or a router margin below 1e-5 is warned about
(the engine might break such a tie the other way). Floats are Python's shortest repr of the
float64 values. Deterministic: the same export gives the same bytes.
"""
import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))
import bpe_tokenizer as bt  # noqa: E402
import cflow_reference as ref  # noqa: E402
from evaluate import GREEDY_PROMPT, GREEDY_TOKENS, read_safetensors  # noqa: E402

FORMAT = "cflow-parity-trace/1"
TOP_N = 5
QUANTS = ("f32", "f16", "q8_0", "q4_0")
# Below these margins the f32 engine (logits ~3e-7 relative off, a few 1e-6 absolute) might break a
# tie the other way and the parity test would fail on it: main() warns.
MIN_SAFE_GREEDY_MARGIN = 1e-4  # top1 - top2 logit
MIN_SAFE_ROUTER_MARGIN = 1e-5  # k-th - (k+1)-th router logit (router logits are O(1))

# HF tensor name suffix -> quantized with the weight type (True) or kept f32 (False); the embedding
# and lm_head use the embedding type. A name matching none of these is an error, so a new tensor
# kind cannot slip through unquantized (or quantized) by accident.
WEIGHT_SUFFIXES = {
    "self_attn.q_proj.weight": True, "self_attn.k_proj.weight": True, "self_attn.v_proj.weight": True,
    "self_attn.o_proj.weight": True,
    "mlp.gate_proj.weight": True, "mlp.up_proj.weight": True, "mlp.down_proj.weight": True,
    "gate_proj.weight": True, "up_proj.weight": True, "down_proj.weight": True,  # experts, shared expert
    "input_layernorm.weight": False, "post_attention_layernorm.weight": False, "pre_moe_layernorm.weight": False,
    "moe.gate.weight": False,                       # router: raw f32 segment
    "moe.shared_expert_gate.weight": False,         # shared expert's sigmoid gate: raw f32 segment
}
EMBEDDING_NAMES = ("model.embed_tokens.weight", "lm_head.weight")
F32_NAMES = ("model.norm.weight",)


# ----------------------------------------------------------------------------- quantization

def _blocks(w):
    """[rows x cols] f32 -> [rows x G x 32] f32, zero-padded past each row's end (tile_codec gather_group)."""
    rows, cols = w.shape
    groups = (cols + 31) // 32
    padded = np.zeros((rows, groups * 32), dtype=np.float32)
    padded[:, :cols] = w
    return padded.reshape(rows, groups, 32)


def _f16_scale(d):
    """The f16 the converter stores (f32_to_f16: nearest, ties to even; numpy rounds the same way), read back as f32."""
    return d.astype(np.float16).astype(np.float32)


def roundtrip_q8_0(w):
    b = _blocks(w)
    amax = np.max(np.abs(b), axis=-1, keepdims=True)                       # [rows x G x 1] f32
    d = amax / np.float32(127.0)                                             # f32 division, as C
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    scaled = b * inv                                                         # f32 products
    # roundf: half away from zero. In float64 |scaled| + 0.5 is exact, so floor() cannot be fooled
    # by an f32 sum rounding up (0.49999997 + 0.5 == 1.0 in f32).
    mag = np.floor(np.abs(scaled).astype(np.float64) + 0.5)
    q = np.clip(np.sign(scaled) * mag, -127, 127).astype(np.int32).astype(np.float32)  # via int: no -0.0, as C
    return (_f16_scale(d) * q).reshape(w.shape[0], -1)[:, :w.shape[1]]     # f16 d * q: exact in f32


def roundtrip_q4_0(w):
    b = _blocks(w)
    first_max = np.argmax(np.abs(b), axis=-1)[..., None]                    # first index of the largest |x|
    signed_max = np.take_along_axis(b, first_max, axis=-1)                  # [rows x G x 1] f32
    d = signed_max / np.float32(-8.0)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    v = (b * inv).astype(np.float32) + np.float32(8.5)                      # two f32 roundings, as C (no FMA)
    q = np.minimum(np.float32(15.0), np.trunc(np.clip(v, 0.0, None))).astype(np.float32)
    return (_f16_scale(d) * (q - np.float32(8.0))).reshape(w.shape[0], -1)[:, :w.shape[1]]


def roundtrip(w, quant):
    """One weight matrix [out x in] f32 through `quant` and back to f32."""
    w = np.ascontiguousarray(w, dtype=np.float32)
    if not np.all(np.isfinite(w)):
        raise ValueError("non-finite weights (ggml's rounding of them is undefined)")
    if quant == "f32":
        return w
    if quant == "f16":
        return w.astype(np.float16).astype(np.float32)
    if quant == "q8_0":
        return roundtrip_q8_0(w)
    if quant == "q4_0":
        return roundtrip_q4_0(w)
    raise ValueError("quant %r" % quant)


def tensor_quant(name, weight_quant, embedding_quant):
    """The type `cflow convert` stores HF tensor `name` as."""
    if name in EMBEDDING_NAMES:
        return embedding_quant
    if name in F32_NAMES:
        return "f32"
    hits = [s for s in WEIGHT_SUFFIXES if name.endswith("." + s)]
    if not hits:
        raise ValueError("tensor %s: not a tensor the converter is known to store (update WEIGHT_SUFFIXES)" % name)
    return weight_quant if WEIGHT_SUFFIXES[max(hits, key=len)] else "f32"


def quantized_tensors(tensors, weight_quant, embedding_quant):
    out = {}
    for name, t in tensors.items():
        q = tensor_quant(name, weight_quant, embedding_quant)
        if q != "f32" and t.dim() != 2:
            raise ValueError("tensor %s: expected a matrix, got shape %s" % (name, list(t.shape)))
        out[name] = torch.from_numpy(roundtrip(t.numpy(), q)) if q != "f32" else t
    return out


# ----------------------------------------------------------------------------- trace

def top_n(row, n=TOP_N):
    """[(id, logit)] of the n largest logits, ties to the lowest id (as argmax_lowest)."""
    vals = row.tolist()
    order = sorted(range(len(vals)), key=lambda i: (-vals[i], i))[:n]
    return [[i, vals[i]] for i in order]


def run(model, prompt_ids, n_tokens, eos_id, n_positions):
    """Feeds BOS + prompt, then greedy-decodes n_tokens (or up to and including EOS), one token per
    forward with the KV cache. -> greedy ids, stopped at EOS?, per greedy step top-5 + margin, per
    position (the first n_positions of prompt + greedy) top-5, logits L2 and routing, and the router
    margin of every MoE application of the whole run."""
    cache = model.new_cache()
    has_moe = model.cfg["num_experts"] > 0
    seq = list(prompt_ids)
    greedy, steps, positions, router_margins = [], [], [], []
    done = False
    pos = 0
    while pos < len(seq) and (not done or pos < n_positions):
        logits, rec = model.forward([seq[pos]], pos, cache)
        row = logits[0]  # [vocab] f64: logits after seq[0..pos]
        router_margins.extend(float(m) for m in rec.router_margins)
        if pos < n_positions:
            positions.append({
                "top5": top_n(row),
                "logits_l2": float(torch.linalg.vector_norm(row)),
                "experts": rec.experts[0],
                "router_margins": [float(m) for m in rec.router_margins] if has_moe else [],
            })
        if pos == len(seq) - 1 and not done:
            best = top_n(row)
            nxt = ref.argmax_lowest(row)
            assert nxt == best[0][0]
            steps.append({"top5": best, "margin": best[0][1] - best[1][1]})
            greedy.append(nxt)
            seq.append(nxt)
            done = nxt == eos_id or len(greedy) == n_tokens
        pos += 1
    return greedy, bool(greedy) and greedy[-1] == eos_id, steps, positions, router_margins


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_model_file(path):
    if os.path.isabs(path) or ".." in path.replace("\\", "/").split("/") or not path.endswith((".cflow", ".vflow")):
        raise SystemExit("--model-file must be a repository-relative .cflow/.vflow path without '..' (got %r)" % path)
    return path.replace("\\", "/")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export_dir", help="HF folder: config.json, model.safetensors (F32), tokenizer.json")
    p.add_argument("--quant", required=True, choices=QUANTS, help="as `cflow convert --quant`")
    p.add_argument("--embedding-quant", choices=QUANTS, help="as `cflow convert --embedding-quant` (default: --quant)")
    p.add_argument("--model-file", required=True, help="the shipped file, relative to the repository root")
    p.add_argument("--arch", help="name recorded in the trace (default: the export folder's name)")
    p.add_argument("--prompt", default=GREEDY_PROMPT)
    p.add_argument("--tokens", type=int, default=GREEDY_TOKENS, help="greedy steps (stops early at EOS)")
    p.add_argument("--positions", type=int, default=8, help="teacher-forced positions with logits and routing")
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    model_file = check_model_file(args.model_file)
    embedding_quant = args.embedding_quant or args.quant
    torch.set_num_threads(1)  # the same float64 reductions, hence the same bytes, every run

    start = time.monotonic()
    with open(os.path.join(args.export_dir, "config.json"), "r", encoding="utf-8") as f:
        cfg = json.load(f)
    st_path = os.path.join(args.export_dir, "model.safetensors")
    tensors = quantized_tensors(read_safetensors(st_path), args.quant, embedding_quant)
    model = ref.CflowModel(cfg, tensors)
    tok = bt.Tokenizer.load(os.path.join(args.export_dir, "tokenizer.json"))
    prompt_ids = [tok.bos_id] + tok.encode(args.prompt)
    greedy, stopped, steps, positions, router = run(model, prompt_ids, args.tokens, tok.eos_id, args.positions)
    margins = [s["margin"] for s in steps]
    trace = {
        "format": FORMAT,
        "arch": args.arch or os.path.basename(os.path.normpath(args.export_dir)),
        "quant": args.quant,
        "embedding_quant": embedding_quant,
        "model_file": model_file,
        "combine_style": cfg["combine_style"],
        "vocab_size": cfg["vocab_size"],
        "source_sha256": sha256_file(st_path),
        "prompt": args.prompt,
        "prompt_ids": prompt_ids,
        "eos_id": tok.eos_id,
        "greedy_ids": greedy,
        "stopped_at_eos": stopped,
        "greedy_steps": steps,
        "teacher_forced": {"tokens": (prompt_ids + greedy)[:len(positions)], "positions": positions},
        "checks": {
            "min_greedy_margin": min(margins) if margins else None,
            "min_router_margin": min(router) if router else None,
            "greedy_text": tok.decode(greedy),
        },
    }
    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    with open(args.output, "w", encoding="utf-8", newline="\n") as f:
        json.dump(trace, f, separators=(",", ":"), ensure_ascii=False)
        f.write("\n")
    print("%s: %s %s, %d prompt + %d greedy tokens%s, min greedy margin %.3g, min router margin %s, %d bytes, %.1f s" % (
        args.output, trace["arch"], args.quant, len(prompt_ids), len(greedy), " (EOS)" if stopped else "",
        trace["checks"]["min_greedy_margin"] if margins else float("nan"),
        "%.3g" % min(router) if router else "-", os.path.getsize(args.output), time.monotonic() - start))
    if margins and min(margins) < MIN_SAFE_GREEDY_MARGIN:
        print("warning: a greedy step has top1 - top2 = %.2e < %g: the engine may break the tie the other way; "
              "consider another --prompt" % (min(margins), MIN_SAFE_GREEDY_MARGIN))
    if router and min(router) < MIN_SAFE_ROUTER_MARGIN:
        print("warning: a routing decision has a router margin of %.2e < %g: the engine may choose the other "
              "expert; consider another --prompt" % (min(router), MIN_SAFE_ROUTER_MARGIN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
