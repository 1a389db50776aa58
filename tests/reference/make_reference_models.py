#!/usr/bin/env -S /usr/bin/python3
"""Writes small random-initialised reference checkpoints (HF-style folders) and their traces.

    /usr/bin/python3 tests/reference/make_reference_models.py OUT_DIR [--only NAME]

For every case: OUT_DIR/<name>/{config.json, model.safetensors, tokenizer.json,
tokenizer_config.json, trace.json}. The output is byte-for-byte deterministic. See README.md
in this directory for the semantics, the trace format and what the C++ side must read.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cflow_reference as ref  # noqa: E402

VOCAB_SIZE = 320
TRACE_LEN = 24
PROMPT_LEN = 4
GREEDY_STEPS = 64
MAX_POSITIONS = 128
# Decisions the f32 engine must reproduce exactly need a gap the f32 rounding cannot close:
# the k-th vs (k+1)-th router logit and the top-1 vs top-2 logit of every greedy step.
MIN_ROUTER_MARGIN = 5e-4
MIN_GREEDY_MARGIN = 1e-3
MAX_SEED_TRIES = 64
VERBOSE = os.environ.get("CFLOW_REF_VERBOSE") == "1"
TRACE_TEXT = "Once upon a time, the little cat sat on the mat and it was happy in the sun."
TOKENIZER_CHECK_TEXTS = [
    "the cat sat on the mat", "Hello world", " on and on", "the the the", "in the end, it ended.",
    "Zebra \u00e9t\u00e9 \u4f60\u597d", "", " ", "  two  spaces", "thing",
]

# ----------------------------------------------------------------------------- tokenizer

SPACE = "\u2581"
SPECIALS = ["<unk>", "<s>", "</s>"]
# Merged pieces in priority order (earlier = merged first), each reachable from two vocabulary pieces.
MERGED_PIECES = [
    SPACE + "t", "er", "in", SPACE + "a", "en", "on", SPACE + "th", "es", SPACE + "s", SPACE + "d", "at", "or",
    "an", SPACE + "c", "is", "re", "it", SPACE + "the", "ar", "le", SPACE + "w", SPACE + "p", "ou", SPACE + "f",
    SPACE + "m", "ed", SPACE + "o", SPACE + "b", "ing", SPACE + "h", "nd", SPACE + "an", SPACE + "and", SPACE + "to",
    SPACE + "on", SPACE + "cat",
]
SINGLE_CHARS = [SPACE, "e", "t", "a", "o", "i", "n", "s", "h", "r", "d", "l", "u", "c", "m", "w", "f", "g", "y", "p",
                "b", ",", ".", "k", "v"]


def build_vocab():
    """<unk>=0, <s>=1, </s>=2, <0x00>..<0xFF>=3..258, merged pieces, then single characters (Llama's order)."""
    pieces = SPECIALS + ["<0x%02X>" % b for b in range(256)] + MERGED_PIECES + SINGLE_CHARS
    assert len(pieces) == VOCAB_SIZE and len(set(pieces)) == VOCAB_SIZE
    return {p: i for i, p in enumerate(pieces)}


def build_merges(vocab):
    """Every split of every merged piece into two vocabulary pieces, ordered by the piece's priority
    (as HF's Llama converter lists them), so HF-BPE by merge rank equals SentencePiece by score."""
    merges = []
    for piece in MERGED_PIECES:
        splits = [(piece[:i], piece[i:]) for i in range(1, len(piece)) if piece[:i] in vocab and piece[i:] in vocab]
        assert splits, "piece %r cannot be built by a merge" % piece
        splits.sort(key=lambda s: (vocab[s[0]], vocab[s[1]]))
        merges.extend("%s %s" % s for s in splits)
    return merges


def normalize(text):
    """Llama normalizer: Prepend('\u2581') (non-empty input only), then Replace(' ', '\u2581')."""
    return (SPACE + text).replace(" ", SPACE) if text else ""


def initial_symbols(text, vocab):
    """Characters; one not in the vocabulary becomes its UTF-8 bytes (byte_fallback)."""
    out = []
    for ch in normalize(text):
        if ch in vocab:
            out.append(ch)
        else:
            out.extend("<0x%02X>" % b for b in ch.encode("utf-8"))
    return out


def hf_bpe_encode(text, vocab, merges):
    """HF tokenizers BPE (no pre-tokenizer, so the whole text is one word): repeatedly merge the
    adjacent pair of lowest merge rank, leftmost first."""
    rank = {tuple(m.split(" ")): r for r, m in enumerate(merges)}
    syms = initial_symbols(text, vocab)
    while True:
        best = None
        for i in range(len(syms) - 1):
            r = rank.get((syms[i], syms[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        syms[i:i + 2] = [syms[i] + syms[i + 1]]
    return [vocab[s] for s in syms]


def spm_encode(text, vocab, merges):
    """SentencePiece-BPE as llama.cpp runs it from the scores formats/src/hf_tokenizer.cpp derives
    (score = -rank of the first merge that creates a piece): merge the adjacent pair whose
    concatenation is the highest-scoring vocabulary piece, leftmost first; leftovers -> bytes."""
    score = {}
    for r, m in enumerate(merges):
        score.setdefault(m.replace(" ", ""), -float(r))
    syms = list(normalize(text))
    while True:
        best = None
        for i in range(len(syms) - 1):
            cat = syms[i] + syms[i + 1]
            if cat in vocab and cat in score and (best is None or score[cat] > best[0]):
                best = (score[cat], i)
        if best is None:
            break
        i = best[1]
        syms[i:i + 2] = [syms[i] + syms[i + 1]]
    ids = []
    for s in syms:
        if s in vocab:
            ids.append(vocab[s])
        else:
            ids.extend(vocab["<0x%02X>" % b] for b in s.encode("utf-8"))
    return ids


def tokenizer_json(vocab, merges):
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False, "normalized": True,
              "special": True} for i, s in enumerate(SPECIALS)]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "vocab": vocab,
                  "merges": merges},
    }


TOKENIZER_CONFIG = {
    "add_bos_token": True,
    "add_eos_token": False,
    "bos_token": "<s>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
    "pad_token": None,
    "clean_up_tokenization_spaces": False,
    "model_max_length": MAX_POSITIONS,
    "tokenizer_class": "LlamaTokenizer",
}


def trace_tokens(vocab, merges):
    ids = [vocab["<s>"]] + hf_bpe_encode(TRACE_TEXT, vocab, merges)
    assert len(ids) >= TRACE_LEN, len(ids)
    return ids[:TRACE_LEN]


# ----------------------------------------------------------------------------- cases

PAPER = dict(hidden_size=64, num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
             intermediate_size=128, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=64,
             ffn_activation="geglu_tanh", router_mode="softmax_topk", moe_norm=True)
ORDINARY = dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                ffn_activation="swiglu", combine_style=ref.SEQUENTIAL, moe_norm=False)

# embed_std 0.1 for the tied case: with a larger embedding the tied lm_head mostly echoes the input token.
CASES = [
    dict(PAPER, name="arch1_decoupled_streams", combine_style=ref.DECOUPLED_STREAMS, merge_interval=3),
    dict(PAPER, name="arch2_4_combined", combine_style=ref.DELAYED_SUM, dense_delay=1, expert_delay=2),
    dict(PAPER, name="arch2_4_sync", combine_style=ref.DELAYED_SUM, dense_delay=1, expert_delay=0),
    dict(PAPER, name="arch3_pipeline_registers", combine_style=ref.PIPELINE_REGISTERS),
    dict(PAPER, name="arch4_async_experts", combine_style=ref.ASYNC_EXPERTS, dense_delay=0, expert_delay=2),
    dict(PAPER, name="arch5_fixed_point", combine_style=ref.FIXED_POINT, num_hidden_layers=2, n_blocks=2, n_iter=3),
    dict(PAPER, name="gemma_parallel_sqrt2", combine_style=ref.PARALLEL_SQRT2),
    dict(ORDINARY, name="llama_dense", intermediate_size=128),
    dict(ORDINARY, name="mixtral_moe", intermediate_size=0, num_experts=8, num_experts_per_tok=2,
         moe_intermediate_size=64, router_mode="softmax_topk"),
    dict(ORDINARY, name="qwen2moe_shared", intermediate_size=0, num_experts=8, num_experts_per_tok=4,
         moe_intermediate_size=32, shared_expert_intermediate_size=96, router_mode="softmax_all_no_renorm",
         tie_word_embeddings=True, embed_std=0.1),
    dict(ORDINARY, name="olmoe_softmax_all", num_key_value_heads=4, intermediate_size=0, num_experts=8,
         num_experts_per_tok=2, moe_intermediate_size=64, router_mode="softmax_all_no_renorm"),
    dict(PAPER, name="delayed_dd0_de2_sum", combine_style=ref.DELAYED_SUM, dense_delay=0, expert_delay=2,
         moe_norm=False),
]
CASE_BY_NAME = {c["name"]: c for c in CASES}


def make_config(case):
    """config.json contents. ffn_activation / router_mode are authoritative; hidden_act and
    norm_topk_prob repeat them in the HF spelling."""
    n_experts = case.get("num_experts", 0)
    router_mode = case.get("router_mode", "softmax_topk")
    return {
        "architectures": ["CflowForCausalLM"],
        "model_type": "cflow",
        "torch_dtype": "float32",
        "vocab_size": VOCAB_SIZE,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_size": case["hidden_size"],
        "num_hidden_layers": case["num_hidden_layers"],
        "num_attention_heads": case["num_attention_heads"],
        "num_key_value_heads": case["num_key_value_heads"],
        "head_dim": case["head_dim"],
        "intermediate_size": case.get("intermediate_size", 0),
        "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "tie_word_embeddings": case.get("tie_word_embeddings", False),
        "combine_style": case["combine_style"],
        "dense_delay": case.get("dense_delay", 0),
        "expert_delay": case.get("expert_delay", 0),
        "merge_interval": case.get("merge_interval", 3),
        "n_blocks": case.get("n_blocks", 0),
        "n_iter": case.get("n_iter", 0),
        "ffn_activation": case["ffn_activation"],
        "hidden_act": {"swiglu": "silu", "geglu_tanh": "gelu_pytorch_tanh"}[case["ffn_activation"]],
        "router_mode": router_mode if n_experts else "softmax_topk",
        "norm_topk_prob": router_mode == "softmax_topk",
        "num_experts": n_experts,
        "num_experts_per_tok": case.get("num_experts_per_tok", 0),
        "moe_intermediate_size": case.get("moe_intermediate_size", 0),
        "shared_expert_intermediate_size": case.get("shared_expert_intermediate_size", 0),
        "final_logit_softcap": 0.0,
    }


def init_tensors(cfg, has_moe_norm, embed_std, seed):
    """Deterministic random weights, in a fixed generation order. Linear weights N(0, 1/fan_in)
    (std 0.09..0.18 at these sizes: every sub-layer changes the residual about as much as the
    embedding carries), embeddings N(0, embed_std^2), norm weights 1 + N(0, 0.1^2)."""
    gen = torch.Generator().manual_seed(seed)
    d, hq, hkv, dk = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    out = {}

    def lin(name, rows, cols):
        out[name] = torch.randn(rows, cols, generator=gen, dtype=torch.float32) / math.sqrt(cols)

    def norm(name):
        out[name] = 1.0 + 0.1 * torch.randn(d, generator=gen, dtype=torch.float32)

    out["model.embed_tokens.weight"] = embed_std * torch.randn(VOCAB_SIZE, d, generator=gen, dtype=torch.float32)
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        norm(p + "input_layernorm.weight")
        lin(p + "self_attn.q_proj.weight", hq * dk, d)
        lin(p + "self_attn.k_proj.weight", hkv * dk, d)
        lin(p + "self_attn.v_proj.weight", hkv * dk, d)
        lin(p + "self_attn.o_proj.weight", d, hq * dk)
        norm(p + "post_attention_layernorm.weight")
        ff = cfg["intermediate_size"]
        if ff:
            lin(p + "mlp.gate_proj.weight", ff, d)
            lin(p + "mlp.up_proj.weight", ff, d)
            lin(p + "mlp.down_proj.weight", d, ff)
        if cfg["num_experts"]:
            if has_moe_norm:
                norm(p + "pre_moe_layernorm.weight")
            lin(p + "moe.gate.weight", cfg["num_experts"], d)
            eff = cfg["moe_intermediate_size"]
            for e in range(cfg["num_experts"]):
                lin(p + "moe.experts.%d.gate_proj.weight" % e, eff, d)
                lin(p + "moe.experts.%d.up_proj.weight" % e, eff, d)
                lin(p + "moe.experts.%d.down_proj.weight" % e, d, eff)
            sff = cfg["shared_expert_intermediate_size"]
            if sff:
                lin(p + "moe.shared_expert.gate_proj.weight", sff, d)
                lin(p + "moe.shared_expert.up_proj.weight", sff, d)
                lin(p + "moe.shared_expert.down_proj.weight", d, sff)
                lin(p + "moe.shared_expert_gate.weight", 1, d)
    norm("model.norm.weight")
    if not cfg["tie_word_embeddings"]:
        lin("lm_head.weight", VOCAB_SIZE, d)
    return out


def safetensors_bytes(tensors):
    """safetensors: u64 LE header length, JSON header (names sorted, space-padded to 8 bytes), raw LE data."""
    header = {"__metadata__": {"format": "pt"}}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name].numpy(), dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


# ----------------------------------------------------------------------------- traces

def trace_problems(cfg, trace):
    """Why these random weights would make a weak test, judged on the forced trace (empty: fine)."""
    problems = []
    if trace["router_margins"] and min(trace["router_margins"]) < MIN_ROUTER_MARGIN:
        problems.append("router margin %.2e" % min(trace["router_margins"]))
    spread = min(float(torch.tensor(row).std()) for row in trace["logits"])
    if spread < 0.25:
        problems.append("flat logits (std %.3f)" % spread)
    if cfg["num_experts"]:
        per_pos = trace["experts"]
        n_apps = len(per_pos[0])
        used = {e for pos in per_pos for app in pos for e in app}
        if len(used) < min(cfg["num_experts"], 6):
            problems.append("only experts %s used" % sorted(used))
        for a in range(n_apps):
            if len({tuple(pos[a]) for pos in per_pos}) < 3:
                problems.append("MoE application %d routes almost every position alike" % a)
        if n_apps > 1 and all(len({tuple(app) for app in pos}) == 1 for pos in per_pos):
            problems.append("every layer routes alike")
    return problems


def greedy_problems(greedy_tokens, greedy_margins, router_margins):
    problems = []
    if router_margins and min(router_margins) < MIN_ROUTER_MARGIN:
        problems.append("greedy-run router margin %.2e" % min(router_margins))
    if min(greedy_margins) < MIN_GREEDY_MARGIN:
        problems.append("greedy margin %.2e" % min(greedy_margins))
    if len(set(greedy_tokens)) < 4:
        problems.append("greedy output has %d distinct tokens" % len(set(greedy_tokens)))
    return problems


def build_case(case, vocab, merges):
    """-> (config, tensors, trace): the first seed whose model is non-degenerate with safe margins."""
    cfg = make_config(case)
    tokens = trace_tokens(vocab, merges)
    base_seed = 1000 + CASES.index(case) * 100
    problems = []
    for attempt in range(MAX_SEED_TRIES):
        seed = base_seed + attempt
        tensors = init_tensors(cfg, case.get("moe_norm", False), case.get("embed_std", 0.5), seed)
        model = ref.CflowModel(cfg, tensors)
        trace = ref.run_trace(model, tokens)
        problems = trace_problems(cfg, trace)
        if not problems:
            greedy, greedy_margins, greedy_router = ref.run_greedy(model, tokens[:PROMPT_LEN], GREEDY_STEPS)
            problems = greedy_problems(greedy, greedy_margins, greedy_router)
        if VERBOSE and problems:
            print("  %s seed %d: %s" % (case["name"], seed, "; ".join(problems)))
        if problems:
            continue
        router_margins = trace["router_margins"] + greedy_router
        out = {
            "name": case["name"],
            "combine_style": cfg["combine_style"],
            "combine_style_name": ref.STYLE_NAMES[cfg["combine_style"]],
            "dense_delay": cfg["dense_delay"],
            "expert_delay": cfg["expert_delay"],
            "tokens": tokens,
            "logits": trace["logits"],
            "residual_norms": trace["residual_norms"],
            "experts": trace["experts"],
            "expert_weights": trace["expert_weights"],
            "greedy": {"prompt": tokens[:PROMPT_LEN], "tokens": greedy},
            "checks": {
                "seed": seed,
                "min_router_margin": min(router_margins) if router_margins else None,
                "min_greedy_margin": min(greedy_margins),
            },
            "tokenizer_checks": [{"text": t, "ids": hf_bpe_encode(t, vocab, merges)} for t in TOKENIZER_CHECK_TEXTS],
        }
        return cfg, tensors, out
    raise RuntimeError("%s: no seed in %d tries gives a usable model: %s" % (case["name"], MAX_SEED_TRIES, problems))


def dump_json(obj, path, indent=None):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        if indent:
            json.dump(obj, f, indent=indent, sort_keys=True, ensure_ascii=False)
        else:
            json.dump(obj, f, separators=(",", ":"), ensure_ascii=False)
        f.write("\n")


def write_case(case, out_dir, vocab, merges):
    cfg, tensors, trace = build_case(case, vocab, merges)
    d = os.path.join(out_dir, case["name"])
    os.makedirs(d, exist_ok=True)
    dump_json(cfg, os.path.join(d, "config.json"), indent=2)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(tensors))
    dump_json(tokenizer_json(vocab, merges), os.path.join(d, "tokenizer.json"), indent=2)
    dump_json(TOKENIZER_CONFIG, os.path.join(d, "tokenizer_config.json"), indent=2)
    dump_json(trace, os.path.join(d, "trace.json"))
    return trace


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--only", action="append", metavar="NAME", choices=sorted(CASE_BY_NAME),
                        help="write only this case (repeatable)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # one thread: the same float64 reductions, hence the same bytes, every run
    vocab = build_vocab()
    merges = build_merges(vocab)
    cases = [CASE_BY_NAME[n] for n in args.only] if args.only else CASES
    for case in cases:
        start = time.monotonic()
        trace = write_case(case, args.out_dir, vocab, merges)
        print("%-26s style %d  seed %d  router margin %-9s greedy margin %.2e  %.2fs" % (
            case["name"], trace["combine_style"], trace["checks"]["seed"],
            "-" if trace["checks"]["min_router_margin"] is None else "%.2e" % trace["checks"]["min_router_margin"],
            trace["checks"]["min_greedy_margin"], time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
