#!/usr/bin/env -S /usr/bin/python3
"""Fixtures for the GGUF block-type import (tests/parity/ggml/):

    /usr/bin/python3 tests/reference/make_ggml_fixtures.py OUT_DIR

OUT_DIR/blocks/: per ggml block type and edge case, random but valid block bytes (<case>.bin)
and the float64 values ggml_blocks_reference.decode gives them (<case>.f64, little-endian),
listed in index.json.

OUT_DIR/llama_kquant/: model.gguf, a tiny GGUF v3 "llama" (d 256, 2 layers, 4 query / 2 KV
heads, d_ff 512, the 320-token tokenizer of make_reference_models.py) quantised like
llama.cpp's Q4_K_M (Q4_K matrices, Q6_K attn_v / ffn_down / output, F32 norms), with Q/K rows in
the interleaved RoPE order of llama.cpp's converter; reference.json holds the token sequence
and the logits of a float64 forward pass (cflow_reference.py) over the dequantised weights.

OUT_DIR/llama3_rope/: a Llama 3.1-shaped model with rope_scaling type llama3 (d 128, 2 layers,
4 query / 2 KV heads of 32, F32 weights), as llama.cpp's converter writes it (model.gguf: Q/K
rows interleaved, the scaling as the rope_freqs.weight tensor) and as a Hugging Face folder
(hf/: config.json with rope_scaling, model.safetensors, tokenizer files); reference.json holds
an 80-token sequence (past original_max_position_embeddings 64), the logits of a float64 numpy
forward written from transformers' modeling_llama.py (hf_llama_reference.py) at every position,
a 32-token greedy continuation of its first 40 tokens, and how far plain RoPE would be.

OUT_DIR/qwen3/ and OUT_DIR/qwen3moe/: Qwen3 (per-head Q/K RMSNorm, head_dim 64 != d / heads,
NEOX RoPE) and Qwen3-MoE (16 experts, top-4, normalised top-k weights, no shared expert) with F32
weights, each as the GGUF llama.cpp's converter writes (model.gguf, architecture qwen3 /
qwen3moe, Q/K rows in HF order, stacked expert tensors) and as a Hugging Face folder (hf/);
reference.json holds a 48-token sequence, the float64 numpy logits of hf_llama_reference.py at
every position and a 32-token greedy continuation of its first 16 tokens.

OUT_DIR/smollm3/: SmolLM3 (llama's block without RoPE on every fourth layer, tied embeddings;
4 layers, F32) as GGUF (architecture smollm3: Q/K interleaved, no key for the NoPE step, which
llama.cpp fixes at 4) and as a Hugging Face folder (no_rope_layers in config.json);
reference.json as for qwen3.

OUT_DIR/gemma2/ and OUT_DIR/gemma3/: Gemma 2 (4 layers, sliding window 8 on layers 0 and 2, attention
soft-cap 5, final soft-cap 2) and Gemma 3 text (6 layers, layers 0-4 sliding with window 8 and RoPE
base 10000, layer 5 global with base 1e6 and linear scaling 8, per-head Q/K norms), both d 128, 4
query / 2 KV heads of 32, d_ff 256, GELU-tanh gated MLP, four norms per block, embeddings scaled by
sqrt(d), tied head, F32. model.gguf as llama.cpp's converter writes it (architecture gemma2 /
gemma3, every norm stored as 1 + w, Q/K rows in HF order, no output.weight), hf/ as a Hugging Face
folder; reference.json holds a 96-token sequence, the float64 numpy logits of hf_gemma_reference.py
(written from transformers' modeling_gemma2.py / modeling_gemma3.py) at every position, a 32-token
greedy continuation of its first 16 tokens, and how far an engine that breaks one Gemma rule would be
(*_rel_l2, each asserted > 1e-2). gemma2/hf_qscale/ is the same checkpoint with
query_pre_attn_scalar 48 != head_dim (HF only: llama.cpp scales by 1/sqrt(head_dim)), with its
reference in gemma2/reference_qscale.json.

OUT_DIR/phi3/ and OUT_DIR/phi4mini/: Phi-3.5-mini- and Phi-4-mini-shaped Phi3ForCausalLM (d 128, 2 layers,
4 query / 2 KV heads of 32, d_ff 256, fused qkv_proj and gate_up_proj, LongRoPE with random float32
short / long factors, max_position_embeddings 128, original_max_position_embeddings 64, F32; phi3 rotates
all 32 dims and has its own lm_head, phi4mini rotates 24 (partial_rotary_factor 0.75) and ties the head).
model.gguf as llama.cpp's converter writes it (architecture phi3: attn_qkv, ffn_up = gate|up, rows in HF
order, rope_factors_long / rope_factors_short tensors, rope.scaling.attn_factor), hf/ as a Hugging Face
folder; reference.json holds the float64 numpy logits of hf_phi3_reference.py (written from transformers'
modeling_phi3.py / modeling_rope_utils.py) at every position of a 48-token sequence (short factors) and of
a 96-token one (tokens_long / logits_long, long factors), a 32-token greedy continuation of the first 16
tokens (short factors), and how far an engine that breaks one Phi rule would be (*_rel_l2, each > 1e-2).

OUT_DIR/gpt_oss/: an OpenAI gpt-oss-shaped GptOssForCausalLM (d 160, 4 layers alternating sliding window 8 /
full, 4 query / 2 KV heads of head_dim 64 != d / heads, q/k/v/o biases, per-head attention sinks, YaRN factor 4
over original_max_position_embeddings 32 (truncate false) with context 128, 8 experts top-2 of intermediate 96
with biases, interleaved gate_up and the clamped SwiGLU, untied head). Every expert matrix is MXFP4-exact (random,
quantised with ggml's quantize_row_mxfp4_ref, dequantised). model.gguf as llama.cpp's converter writes it
(architecture gpt-oss, experts MXFP4 split into ffn_gate_exps / ffn_up_exps / ffn_down_exps, other tensors F32),
model_f32.gguf the same with F32 experts, hf/ the Hugging Face folder (plain F32 expert parameters), hf_mxfp4/
the published checkpoints' layout (experts as *_blocks / *_scales); reference.json holds the float64 numpy
logits of hf_gpt_oss_reference.py (written from transformers' modeling_gpt_oss.py) at every position of a
48-token sequence, a 32-token greedy continuation of its first 16 tokens, the same two under llama.cpp's YaRN
rule (the correction range floored / ceiled, *_truncated_yarn), and how far an engine that breaks one gpt-oss
rule would be (*_rel_l2, each asserted > 1e-2). See README.md, "gpt-oss".

OUT_DIR/chat_llama3/, chat_qwen3/, chat_smollm3/, chat_gemma3/, chat_phi4mini/, chat_gpt_oss/: a conversation
end to end with each chat family (Llama 3.1, Qwen3, SmolLM3, Gemma 3, Phi-4-mini, gpt-oss). model.gguf: a tiny F32 model of the
family's architecture (the shapes and writers above, 2 layers, SmolLM3 4, context 512) whose vocabulary is
the 320 toy tokens plus the family's control tokens (CONTROL; Qwen3 / SmolLM3's <think> and </think>
USER_DEFINED, as llama.cpp types them), with the family's bos / eos / eot ids, add_bos_token, no dummy space
prefix, and its real chat template in tokenizer.chat_template, read from ../shared (CFLOW_SHARED_DIR) when
this runs, never stored in the repository; without ../shared/assets these folders are not written (a note
is printed). The weights are random but for an output path: a residual dimension no block writes carries a
marker on the single-character toy tokens, and the end-of-turn token's head row reads only it, so every
greedy reply is a few ordinary tokens and then the end-of-turn token (CHAT_MARK...). expected.json: the ids
a reply must stop on, the stop reason, and for two user turns the jinja2 rendering of the conversation
(tests/engine/chat/render_family_templates.py's environment), its token ids (every special piece one id),
and the float64 greedy reply up to the end-of-turn token. See README.md, "Family chat".

Deterministic: the same bytes on every run.
"""
import itertools
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ggml_blocks_reference as blocks  # noqa: E402
import ggml_quantize_reference as quant  # noqa: E402

SEED = 20240517


# ----------------------------------------------------------------------------- block cases

def _random_f16(rng, n, lo_exp=-10.0, hi_exp=3.0):
    """Finite f16 values of both signs with magnitudes 2^[lo_exp, hi_exp)."""
    mag = 2.0 ** rng.uniform(lo_exp, hi_exp, size=n)
    return (np.where(rng.random(n) < 0.5, -1.0, 1.0) * mag).astype(np.float16)


def _fill_random(rng, b):
    """Random bytes in every integer field; scales random f16 (f32 for Q8_K); Q8_K bsums consistent."""
    for name in b.dtype.names:
        field = b[name]
        if field.dtype.kind == "f":
            continue
        info = np.iinfo(field.dtype)
        b[name] = rng.integers(info.min, info.max, size=field.shape, endpoint=True, dtype=np.int64)
    for name in b.dtype.names:
        if b[name].dtype == np.float16:
            b[name] = _random_f16(rng, len(b))
        elif b[name].dtype == np.float32:
            b[name] = (_random_f16(rng, len(b)).astype(np.float64) * rng.uniform(0.5, 1.0, len(b)) / 64).astype(np.float32)


def _fix_bsums(type_name, b):
    if type_name == "Q8_K":  # bsums[i] = sum of quants 16i..16i+15 (what ggml's quantiser writes)
        b["bsums"] = b["qs"].astype(np.int64).reshape(len(b), 16, 16).sum(axis=2)


MXFP4_MAX_E = 252  # 12 * 2^(252 - 128) = 1.5 * 2^127: the largest E8M0 byte whose every value is a finite f32


def _fix_mxfp4(case, b):
    """MXFP4's E8M0 byte: random bytes above MXFP4_MAX_E would overflow f32 (ggml does not guard them)
    and are clipped to it; max_scale takes MXFP4_MAX_E, min_scale 0 and 1 (the half scales 2^-128 and
    2^-127, f32 subnormals)."""
    if case == "max_scale":
        b["e"] = MXFP4_MAX_E
    elif case == "min_scale":
        b["e"] = np.array([0, 1], dtype=np.uint8)
    else:
        b["e"] = np.minimum(b["e"], MXFP4_MAX_E)


def _quant_fields(b):
    return [n for n in b.dtype.names if b[n].dtype.kind != "f" and n != "bsums"]


def block_cases(type_name, rng):
    """[(case name, rows, blocks per row, structured block array)]."""
    _, elems, _ = blocks.TYPES[type_name]
    dt = np.dtype(blocks.LAYOUTS[type_name])
    per_row = 3 if elems == blocks.QK_K else 5
    cases = []

    def new(n):
        b = np.zeros(n, dtype=dt)
        _fill_random(rng, b)
        return b

    cases.append(("one_block", 1, 1, new(1)))
    cases.append(("many_rows", 7, per_row, new(7 * per_row)))

    big = new(2)  # largest super-scales, every sub-scale / min byte at its maximum
    for n in big.dtype.names:
        if big[n].dtype == np.float16:
            big[n] = np.array([65504.0, -65504.0], dtype=np.float16)
        elif big[n].dtype == np.float32:
            big[n] = np.array([1e36, -1e36], dtype=np.float32)  # * 127 stays finite in f32
        elif n == "scales":
            big[n] = np.iinfo(big[n].dtype).max if type_name != "Q6_K" else np.where(np.arange(16) % 2, 127, -128)
    cases.append(("max_scale", 1, 2, big))

    small = new(2)  # smallest positive / negative scales: f16 subnormal 2^-24 (Q8_K: f32 subnormal 2^-149)
    for n in small.dtype.names:
        if small[n].dtype == np.float16:
            small[n] = np.array([2.0 ** -24, -(2.0 ** -24)], dtype=np.float16)
        elif small[n].dtype == np.float32:
            small[n] = np.array([2.0 ** -149, -(2.0 ** -149)], dtype=np.float32)
    cases.append(("min_scale", 1, 2, small))

    cases.append(("all_zero", 1, 2, np.zeros(2, dtype=dt)))

    ext = new(4)  # quant bytes 0x00 / 0xFF / 0x0F / 0xF0 (every nibble and bit at 0 and at its top)
    pattern = np.array([0x00, 0xFF, 0x0F, 0xF0], dtype=np.int64)
    for n in _quant_fields(ext):
        width = ext[n].shape[1] if ext[n].ndim > 1 else 1
        vals = pattern[(np.arange(4)[:, None] + np.arange(width)[None, :]) % 4]
        if ext[n].dtype.kind == "i":
            vals = np.where(vals > 127, vals - 256, vals) if ext[n].dtype.itemsize == 1 else vals
        ext[n] = vals if ext[n].ndim > 1 else vals[:, 0]
    cases.append(("nibble_extremes", 2, 2, ext))

    for case, _, _, b in cases:
        _fix_bsums(type_name, b)
        if type_name == "MXFP4":
            _fix_mxfp4(case, b)
    return cases


def write_blocks(out_dir):
    d = os.path.join(out_dir, "blocks")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(SEED)
    index = []
    for type_name in sorted(blocks.TYPES, key=lambda t: blocks.TYPES[t][0]):
        code, elems, nbytes = blocks.TYPES[type_name]
        for case, rows, per_row, b in block_cases(type_name, rng):
            raw = b.tobytes()
            assert len(raw) == rows * per_row * nbytes
            values = blocks.decode(type_name, raw)
            assert np.all(np.isfinite(values)), (type_name, case)
            stem = "%s_%s" % (type_name, case)
            with open(os.path.join(d, stem + ".bin"), "wb") as f:
                f.write(raw)
            with open(os.path.join(d, stem + ".f64"), "wb") as f:
                f.write(values.astype("<f8").tobytes())
            index.append({"type": type_name, "ggml_type": code, "case": case, "rows": rows,
                          "row_elements": per_row * elems, "blocks": stem + ".bin", "values": stem + ".f64"})
    with open(os.path.join(d, "index.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return len(index)


# ----------------------------------------------------------------------------- GGUF v3 writer

GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY = 4, 5, 6, 7, 8, 9
GGML_F32 = 0
ALIGNMENT = 32


def _gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _gguf_value(kind, value):
    if kind == GGUF_STRING:
        return _gguf_string(value)
    if kind == GGUF_ARRAY:
        elem_kind, items = value
        out = struct.pack("<IQ", elem_kind, len(items))
        return out + b"".join(_gguf_value(elem_kind, v) for v in items)
    return struct.pack({GGUF_U32: "<I", GGUF_I32: "<i", GGUF_F32: "<f", GGUF_BOOL: "<?"}[kind], value)


def gguf_bytes(metadata, tensors):
    """metadata [(key, kind, value)], tensors [(name, ggml type, ne innermost first, bytes)]; each
    tensor's data starts at a multiple of ALIGNMENT from the aligned start of the data section."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
    for key, kind, value in metadata:
        out += _gguf_string(key) + struct.pack("<I", kind) + _gguf_value(kind, value)
    data = bytearray()
    for name, ggml_type, ne, payload in tensors:
        data += b"\0" * (-len(data) % ALIGNMENT)
        out += _gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", ggml_type, len(data))
        data += payload
    out += b"\0" * (-len(out) % ALIGNMENT)
    return bytes(out + data)


# ----------------------------------------------------------------------------- tiny Q4_K_M llama

MODEL = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
             intermediate_size=512)
GGUF_TYPE_CODES = {"F32": GGML_F32, "Q4_K": blocks.TYPES["Q4_K"][0], "Q6_K": blocks.TYPES["Q6_K"][0]}
# Token types of gguf.md tokenizer.ggml.token_type.
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_BYTE = 1, 2, 3, 6


def rope_interleave(w, n_head):
    """HF split-half rows -> the adjacent-pair order llama.cpp's converter writes (its permute):
    within each head, GGUF row 2i + j is HF row j * dk/2 + i."""
    rows, cols = w.shape
    return w.reshape(n_head, 2, rows // n_head // 2, cols).swapaxes(1, 2).reshape(rows, cols)


def rope_deinterleave(w, n_head):
    """Inverse of rope_interleave."""
    rows, cols = w.shape
    return w.reshape(n_head, rows // n_head // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def tensor_plan(cfg):
    """[(GGUF name, HF name, shape [rows, cols] or [n], GGUF type, init, rope heads or 0)] in file order."""
    d, hq, hkv, dk, ff = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"],
                          cfg["intermediate_size"])
    v = cfg["vocab_size"]
    plan = [("token_embd.weight", "model.embed_tokens.weight", [v, d], "Q4_K", "embed", 0)]
    for l in range(cfg["num_hidden_layers"]):
        g, h = "blk.%d." % l, "model.layers.%d." % l
        plan += [
            (g + "attn_norm.weight", h + "input_layernorm.weight", [d], "F32", "norm", 0),
            (g + "attn_q.weight", h + "self_attn.q_proj.weight", [hq * dk, d], "Q4_K", "linear", hq),
            (g + "attn_k.weight", h + "self_attn.k_proj.weight", [hkv * dk, d], "Q4_K", "linear", hkv),
            (g + "attn_v.weight", h + "self_attn.v_proj.weight", [hkv * dk, d], "Q6_K", "linear", 0),
            (g + "attn_output.weight", h + "self_attn.o_proj.weight", [d, hq * dk], "Q4_K", "linear", 0),
            (g + "ffn_norm.weight", h + "post_attention_layernorm.weight", [d], "F32", "norm", 0),
            (g + "ffn_gate.weight", h + "mlp.gate_proj.weight", [ff, d], "Q4_K", "linear", 0),
            (g + "ffn_up.weight", h + "mlp.up_proj.weight", [ff, d], "Q4_K", "linear", 0),
            (g + "ffn_down.weight", h + "mlp.down_proj.weight", [d, ff], "Q6_K", "linear", 0),
        ]
    plan += [("output_norm.weight", "model.norm.weight", [d], "F32", "norm", 0),
             ("output.weight", "lm_head.weight", [v, d], "Q6_K", "output", 0)]
    return plan


def init_weight(rng, shape, init):
    """Linear N(0, 1/fan_in); embeddings N(0, 0.5^2); lm_head N(0, 4/d) (logits spread well beyond the
    quantisation noise, so a Q4_0 conversion can be held to top-1 agreement); norms 1 + N(0, 0.1^2)."""
    if init == "norm":
        return 1.0 + 0.1 * rng.standard_normal(shape)
    std = {"embed": 0.5, "linear": 1.0 / np.sqrt(shape[1]), "output": 2.0 / np.sqrt(shape[1])}[init]
    return std * rng.standard_normal(shape)


def tokenizer_metadata(vocab, merges):
    """The make_reference_models.py vocabulary as a SentencePiece ("llama") GGUF tokenizer: scores are
    minus the rank of the first merge that builds a piece (as formats/src/hf_tokenizer.cpp derives them)."""
    pieces = sorted(vocab, key=vocab.get)
    types = []
    for p in pieces:
        if p == "<unk>":
            types.append(TOKEN_UNKNOWN)
        elif p in ("<s>", "</s>"):
            types.append(TOKEN_CONTROL)
        elif p.startswith("<0x") and len(p) == 6:
            types.append(TOKEN_BYTE)
        else:
            types.append(TOKEN_NORMAL)
    scores = [0.0] * len(pieces)
    seen = set()
    for rank, m in enumerate(merges):
        piece = m.replace(" ", "")
        i = vocab.get(piece)
        if i is not None and i not in seen and types[i] == TOKEN_NORMAL:
            scores[i] = -float(rank)
            seen.add(i)
    return [
        ("tokenizer.ggml.model", GGUF_STRING, "llama"),
        ("tokenizer.ggml.pre", GGUF_STRING, "default"),
        ("tokenizer.ggml.tokens", GGUF_ARRAY, (GGUF_STRING, pieces)),
        ("tokenizer.ggml.scores", GGUF_ARRAY, (GGUF_F32, scores)),
        ("tokenizer.ggml.token_type", GGUF_ARRAY, (GGUF_I32, types)),
        ("tokenizer.ggml.bos_token_id", GGUF_U32, vocab["<s>"]),
        ("tokenizer.ggml.eos_token_id", GGUF_U32, vocab["</s>"]),
        ("tokenizer.ggml.unknown_token_id", GGUF_U32, vocab["<unk>"]),
        ("tokenizer.ggml.add_bos_token", GGUF_BOOL, True),
        ("tokenizer.ggml.add_eos_token", GGUF_BOOL, False),
        ("tokenizer.ggml.add_space_prefix", GGUF_BOOL, True),
    ]


def write_llama_kquant(out_dir):
    import torch  # only this part needs torch (cflow_reference.py)
    import cflow_reference as ref
    import make_reference_models as mrm

    torch.set_num_threads(1)  # the same float64 reductions, hence the same bytes, every run
    case = dict(mrm.ORDINARY, name="llama_kquant", **MODEL)
    cfg = mrm.make_config(case)
    vocab = mrm.build_vocab()
    merges = mrm.build_merges(vocab)
    rng = np.random.default_rng(SEED + 1)
    gguf_tensors, hf_tensors, types_used = [], {}, {}
    for name, hf_name, shape, type_name, init, rope_heads in tensor_plan(cfg):
        w = init_weight(rng, shape, init)
        if rope_heads:
            w = rope_interleave(w, rope_heads)  # as a real llama GGUF stores Q and K
        if type_name == "F32":
            payload = w.astype("<f4").tobytes()
            dequantised = np.frombuffer(payload, dtype="<f4").astype(np.float64).reshape(shape)
        else:
            payload = quant.QUANTIZERS[type_name](w)
            dequantised = blocks.decode(type_name, payload).reshape(shape)
        if rope_heads:
            dequantised = rope_deinterleave(dequantised, rope_heads)  # the reference runs split-half RoPE
        gguf_tensors.append((name, GGUF_TYPE_CODES[type_name], list(reversed(shape)), payload))
        hf_tensors[hf_name] = torch.from_numpy(np.ascontiguousarray(dequantised))
        types_used[name] = type_name

    c = cfg
    metadata = [
        ("general.architecture", GGUF_STRING, "llama"),
        ("general.name", GGUF_STRING, "cflow tiny llama (Q4_K_M-like test fixture)"),
        ("general.file_type", GGUF_U32, 15),  # llama.cpp LLAMA_FTYPE_MOSTLY_Q4_K_M
        ("llama.context_length", GGUF_U32, c["max_position_embeddings"]),
        ("llama.embedding_length", GGUF_U32, c["hidden_size"]),
        ("llama.block_count", GGUF_U32, c["num_hidden_layers"]),
        ("llama.feed_forward_length", GGUF_U32, c["intermediate_size"]),
        ("llama.attention.head_count", GGUF_U32, c["num_attention_heads"]),
        ("llama.attention.head_count_kv", GGUF_U32, c["num_key_value_heads"]),
        ("llama.rope.dimension_count", GGUF_U32, c["head_dim"]),
        ("llama.attention.layer_norm_rms_epsilon", GGUF_F32, c["rms_norm_eps"]),
        ("llama.rope.freq_base", GGUF_F32, c["rope_theta"]),
        ("llama.vocab_size", GGUF_U32, c["vocab_size"]),
    ] + tokenizer_metadata(vocab, merges)

    model = ref.CflowModel(cfg, hf_tensors)
    tokens = mrm.trace_tokens(vocab, merges)
    trace = ref.run_trace(model, tokens)
    d = os.path.join(out_dir, "llama_kquant")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.gguf"), "wb") as f:
        f.write(gguf_bytes(metadata, gguf_tensors))
    margins = [ref.top2_margin(torch.tensor(row)) for row in trace["logits"]]
    out = {"tokens": tokens, "logits": trace["logits"], "tensor_types": types_used,
           "min_top2_margin": min(margins), "config": {k: c[k] for k in sorted(MODEL)}}
    with open(os.path.join(d, "reference.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    return out


# ----------------------------------------------------------------------------- F32 family fixtures

def gguf_header(arch, model_name, c):
    """The general.* and ARCH.* hyperparameter keys llama.cpp's converter writes for an F32 model
    of HF config c (head_dim explicit: key_length, value_length and the rope dims)."""
    return [
        ("general.architecture", GGUF_STRING, arch),
        ("general.name", GGUF_STRING, model_name),
        ("general.file_type", GGUF_U32, 0),  # LLAMA_FTYPE_ALL_F32
        (arch + ".context_length", GGUF_U32, c["max_position_embeddings"]),
        (arch + ".embedding_length", GGUF_U32, c["hidden_size"]),
        (arch + ".block_count", GGUF_U32, c["num_hidden_layers"]),
        (arch + ".feed_forward_length", GGUF_U32, c["intermediate_size"]),
        (arch + ".attention.head_count", GGUF_U32, c["num_attention_heads"]),
        (arch + ".attention.head_count_kv", GGUF_U32, c["num_key_value_heads"]),
        (arch + ".attention.key_length", GGUF_U32, c["head_dim"]),
        (arch + ".attention.value_length", GGUF_U32, c["head_dim"]),
        (arch + ".rope.dimension_count", GGUF_U32, c["head_dim"]),
        (arch + ".rope.freq_base", GGUF_F32, c["rope_theta"]),
        (arch + ".attention.layer_norm_rms_epsilon", GGUF_F32, c["rms_norm_eps"]),
    ]


def llama_f32_weights(rng, plan, init_of=lambda init: init):
    """Random F32 weights for a llama-layout tensor_plan: the GGUF tensors (Q/K rows interleaved as
    llama.cpp's converter writes them), and the HF tensors as float64 arrays and torch tensors."""
    import torch

    gguf_tensors, hf_f64, hf_f32 = [], {}, {}
    for name, hf_name, shape, _, init, rope_heads in plan:
        w32 = init_weight(rng, shape, init_of(init)).astype("<f4")
        hf_f32[hf_name] = torch.from_numpy(w32.copy())
        hf_f64[hf_name] = w32.astype(np.float64)
        stored = rope_interleave(w32, rope_heads) if rope_heads else w32
        gguf_tensors.append((name, GGML_F32, list(reversed(shape)), np.ascontiguousarray(stored).tobytes()))
    return gguf_tensors, hf_f64, hf_f32


def write_family_fixture(out_dir, name, metadata, gguf_tensors, config, hf_tensors, reference):
    """OUT_DIR/name/: model.gguf, the same weights as a Hugging Face folder (hf/: config.json,
    model.safetensors, the make_reference_models.py tokenizer files) and reference.json."""
    import make_reference_models as mrm

    vocab = mrm.build_vocab()
    merges = mrm.build_merges(vocab)
    d = os.path.join(out_dir, name)
    os.makedirs(os.path.join(d, "hf"), exist_ok=True)
    with open(os.path.join(d, "model.gguf"), "wb") as f:
        f.write(gguf_bytes(metadata, gguf_tensors))
    mrm.dump_json(config, os.path.join(d, "hf", "config.json"), indent=2)
    with open(os.path.join(d, "hf", "model.safetensors"), "wb") as f:
        f.write(mrm.safetensors_bytes(hf_tensors))
    mrm.dump_json(mrm.tokenizer_json(vocab, merges), os.path.join(d, "hf", "tokenizer.json"), indent=2)
    mrm.dump_json(mrm.TOKENIZER_CONFIG, os.path.join(d, "hf", "tokenizer_config.json"), indent=2)
    with open(os.path.join(d, "reference.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(reference, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")


# ----------------------------------------------------------------------------- Llama 3 rope scaling

LLAMA3 = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
              intermediate_size=256)
LLAMA3_SCALING = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                      original_max_position_embeddings=64)
LLAMA3_TOKENS = 80
LLAMA3_GREEDY_PROMPT = 40
LLAMA3_GREEDY_STEPS = 32


def write_llama3_rope(out_dir):
    import torch  # safetensors_bytes takes torch tensors
    import hf_llama_reference as hf
    import make_reference_models as mrm

    vocab = mrm.build_vocab()
    merges = mrm.build_merges(vocab)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "float32",
        "hidden_act": "silu", "vocab_size": len(vocab), "bos_token_id": vocab["<s>"], "eos_token_id": vocab["</s>"],
        "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "rope_scaling": dict(LLAMA3_SCALING), "tie_word_embeddings": False, **LLAMA3,
    }
    # The first seed whose greedy continuation has no near tie (the engine's f32 argmax could
    # split one); deterministic, so the same seed every run.
    for seed in range(SEED + 3, SEED + 3 + 32):
        rng = np.random.default_rng(seed)
        gguf_tensors, hf_f64, hf_f32 = llama_f32_weights(rng, tensor_plan(config))
        tokens = [vocab["<s>"]] + [int(x) for x in rng.integers(3, len(vocab), LLAMA3_TOKENS - 1)]
        model = hf.HfLlama(config, hf_f64)
        greedy, margins = model.greedy(tokens[:LLAMA3_GREEDY_PROMPT], LLAMA3_GREEDY_STEPS)
        if min(margins) > 1e-3:
            break
    else:
        raise AssertionError("every seed tried has a near tie in the greedy continuation")
    logits = model.logits(tokens)
    plain = hf.HfLlama(dict(config, rope_scaling=None), hf_f64).logits(tokens)
    plain_rel_l2 = float(np.linalg.norm(plain[-1] - logits[-1]) / np.linalg.norm(logits[-1]))
    assert plain_rel_l2 > 1e-2, "plain RoPE would pass for llama3 scaling here (%g): the fixture proves nothing" % plain_rel_l2
    # llama.cpp stores the scaling as one divisor per rotary frequency: inv_freq / scaled inv_freq.
    divisors = (hf.default_inv_freq(config) / hf.llama3_inv_freq(config)).astype("<f4")
    gguf_tensors.insert(0, ("rope_freqs.weight", GGML_F32, [len(divisors)], divisors.tobytes()))

    c = config
    metadata = gguf_header("llama", "cflow tiny llama 3.1 (rope scaling test fixture)", c) + tokenizer_metadata(vocab, merges)

    out = {"tokens": tokens, "logits": logits.tolist(), "greedy_prompt": tokens[:LLAMA3_GREEDY_PROMPT],
           "greedy": greedy, "min_greedy_margin": min(margins), "plain_rope_rel_l2": plain_rel_l2,
           "rope_freq_divisors": divisors.astype(np.float64).tolist()}
    write_family_fixture(out_dir, "llama3_rope", metadata, gguf_tensors, config, hf_f32, out)
    return out


# ----------------------------------------------------------------------------- Qwen3, Qwen3-MoE

QWEN3 = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
             intermediate_size=256)
QWEN3_MOE = dict(QWEN3, intermediate_size=256, num_experts=16, num_experts_per_tok=4, moe_intermediate_size=64,
                 norm_topk_prob=True)
QWEN3_TOKENS = 48
QWEN3_GREEDY_PROMPT = 16
QWEN3_GREEDY_STEPS = 32


def qwen3_tensor_plan(cfg):
    """[(GGUF name, HF names, shape outermost first, init)]: stacked GGUF expert tensors list one HF
    name per expert, in expert order."""
    d, hq, hkv, dk = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    v = cfg["vocab_size"]
    plan = [("token_embd.weight", ["model.embed_tokens.weight"], [v, d], "embed")]
    for l in range(cfg["num_hidden_layers"]):
        g, h = "blk.%d." % l, "model.layers.%d." % l
        plan += [
            (g + "attn_norm.weight", [h + "input_layernorm.weight"], [d], "norm"),
            (g + "attn_q.weight", [h + "self_attn.q_proj.weight"], [hq * dk, d], "linear"),
            (g + "attn_k.weight", [h + "self_attn.k_proj.weight"], [hkv * dk, d], "linear"),
            (g + "attn_v.weight", [h + "self_attn.v_proj.weight"], [hkv * dk, d], "linear"),
            (g + "attn_q_norm.weight", [h + "self_attn.q_norm.weight"], [dk], "norm"),
            (g + "attn_k_norm.weight", [h + "self_attn.k_norm.weight"], [dk], "norm"),
            (g + "attn_output.weight", [h + "self_attn.o_proj.weight"], [d, hq * dk], "linear"),
            (g + "ffn_norm.weight", [h + "post_attention_layernorm.weight"], [d], "norm"),
        ]
        if cfg.get("num_experts"):
            e, eff = cfg["num_experts"], cfg["moe_intermediate_size"]
            ex = h + "mlp.experts.%d."
            plan += [
                (g + "ffn_gate_inp.weight", [h + "mlp.gate.weight"], [e, d], "linear"),
                (g + "ffn_gate_exps.weight", [ex % i + "gate_proj.weight" for i in range(e)], [e, eff, d], "linear"),
                (g + "ffn_up_exps.weight", [ex % i + "up_proj.weight" for i in range(e)], [e, eff, d], "linear"),
                (g + "ffn_down_exps.weight", [ex % i + "down_proj.weight" for i in range(e)], [e, d, eff], "linear"),
            ]
        else:
            ff = cfg["intermediate_size"]
            plan += [
                (g + "ffn_gate.weight", [h + "mlp.gate_proj.weight"], [ff, d], "linear"),
                (g + "ffn_up.weight", [h + "mlp.up_proj.weight"], [ff, d], "linear"),
                (g + "ffn_down.weight", [h + "mlp.down_proj.weight"], [d, ff], "linear"),
            ]
    plan += [("output_norm.weight", ["model.norm.weight"], [d], "norm"),
             ("output.weight", ["lm_head.weight"], [v, d], "output")]
    return plan


def write_qwen3(out_dir, name, shape):
    import torch  # safetensors_bytes takes torch tensors
    import hf_llama_reference as hf
    import make_reference_models as mrm

    moe = bool(shape.get("num_experts"))
    vocab = mrm.build_vocab()
    merges = mrm.build_merges(vocab)
    config = {
        "architectures": ["Qwen3MoeForCausalLM" if moe else "Qwen3ForCausalLM"],
        "model_type": "qwen3_moe" if moe else "qwen3", "torch_dtype": "float32", "hidden_act": "silu",
        "vocab_size": len(vocab), "bos_token_id": vocab["<s>"], "eos_token_id": vocab["</s>"],
        "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "attention_bias": False,
        "tie_word_embeddings": False, "use_sliding_window": False, **shape,
    }
    arch = "qwen3moe" if moe else "qwen3"
    for seed in range(SEED + 11, SEED + 11 + 64):
        rng = np.random.default_rng(seed)
        gguf_tensors, hf_f64, hf_f32 = [], {}, {}
        for gguf_name, hf_names, dims, init in qwen3_tensor_plan(config):
            fan_shape = dims[-2:] if len(dims) > 1 else dims
            w32 = np.stack([init_weight(rng, fan_shape, init) for _ in hf_names]).astype("<f4") if len(hf_names) > 1 \
                else init_weight(rng, dims, init).astype("<f4")
            for i, hf_name in enumerate(hf_names):
                part = w32[i] if len(hf_names) > 1 else w32
                hf_f32[hf_name] = torch.from_numpy(np.ascontiguousarray(part))
                hf_f64[hf_name] = part.astype(np.float64)
            gguf_tensors.append((gguf_name, GGML_F32, list(reversed(dims)), np.ascontiguousarray(w32).tobytes()))
        tokens = [vocab["<s>"]] + [int(x) for x in rng.integers(3, len(vocab), QWEN3_TOKENS - 1)]
        model = hf.HfLlama(config, hf_f64)
        if moe and model.router_margin(tokens) < 1e-4:
            continue
        greedy, margins = model.greedy(tokens[:QWEN3_GREEDY_PROMPT], QWEN3_GREEDY_STEPS)
        if min(margins) < 1e-3:
            continue
        if moe and model.router_margin(tokens[:QWEN3_GREEDY_PROMPT] + greedy) < 1e-4:
            continue
        break
    else:
        raise AssertionError(name + ": every seed tried has a near tie")
    logits = model.logits(tokens)

    c = config
    metadata = gguf_header(arch, "cflow tiny %s (test fixture)" % arch, c)
    if moe:
        metadata += [
            (arch + ".expert_count", GGUF_U32, c["num_experts"]),
            (arch + ".expert_used_count", GGUF_U32, c["num_experts_per_tok"]),
            (arch + ".expert_feed_forward_length", GGUF_U32, c["moe_intermediate_size"]),
        ]
    metadata += tokenizer_metadata(vocab, merges)

    out = {"tokens": tokens, "logits": logits.tolist(), "greedy_prompt": tokens[:QWEN3_GREEDY_PROMPT],
           "greedy": greedy, "min_greedy_margin": min(margins), "seed": seed}
    write_family_fixture(out_dir, name, metadata, gguf_tensors, config, hf_f32, out)
    return out


# ----------------------------------------------------------------------------- SmolLM3

SMOLLM3 = dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
               intermediate_size=256)


def write_smollm3(out_dir):
    import torch  # safetensors_bytes takes torch tensors
    import hf_llama_reference as hf
    import make_reference_models as mrm

    vocab = mrm.build_vocab()
    merges = mrm.build_merges(vocab)
    n_layers = SMOLLM3["num_hidden_layers"]
    config = {
        "architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3", "torch_dtype": "float32",
        "hidden_act": "silu", "vocab_size": len(vocab), "bos_token_id": vocab["<s>"], "eos_token_id": vocab["</s>"],
        "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "rope_theta": 5000000.0, "tie_word_embeddings": True,
        "use_sliding_window": False, "no_rope_layer_interval": 4,
        "no_rope_layers": [int((l + 1) % 4 != 0) for l in range(n_layers)], **SMOLLM3,
    }
    plan = [entry for entry in tensor_plan(config) if entry[0] != "output.weight"]  # tied
    for seed in range(SEED + 21, SEED + 21 + 64):
        rng = np.random.default_rng(seed)
        # A tied LM head: the embedding's scale sets the logits' (N(0, 4/d), as an untied head).
        gguf_tensors, hf_f64, hf_f32 = llama_f32_weights(rng, plan, lambda init: "output" if init == "embed" else init)
        tokens = [vocab["<s>"]] + [int(x) for x in rng.integers(3, len(vocab), QWEN3_TOKENS - 1)]
        model = hf.HfLlama(config, hf_f64)
        greedy, margins = model.greedy(tokens[:QWEN3_GREEDY_PROMPT], QWEN3_GREEDY_STEPS)
        if min(margins) > 1e-3:
            break
    else:
        raise AssertionError("smollm3: every seed tried has a near tie")
    logits = model.logits(tokens)
    roped = hf.HfLlama(dict(config, no_rope_layers=None), hf_f64).logits(tokens)
    all_rope_rel_l2 = float(np.linalg.norm(roped - logits) / np.linalg.norm(logits))
    assert all_rope_rel_l2 > 1e-2, "RoPE on every layer would pass here (%g): the fixture proves nothing" % all_rope_rel_l2

    c = config
    metadata = gguf_header("smollm3", "cflow tiny smollm3 (test fixture)", c) + tokenizer_metadata(vocab, merges)

    out = {"tokens": tokens, "logits": logits.tolist(), "greedy_prompt": tokens[:QWEN3_GREEDY_PROMPT],
           "greedy": greedy, "min_greedy_margin": min(margins), "seed": seed, "all_rope_rel_l2": all_rope_rel_l2}
    write_family_fixture(out_dir, "smollm3", metadata, gguf_tensors, config, hf_f32, out)
    return out


# ----------------------------------------------------------------------------- Gemma 2, Gemma 3

GEMMA = dict(hidden_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=32, intermediate_size=256)
GEMMA_TOKENS = 96  # past the 71-position KV rings of the sliding layers (window 8 + a 64-token prefill chunk - 1)
GEMMA_GREEDY_PROMPT = 16
GEMMA_GREEDY_STEPS = 32
GEMMA_SLIDING_WINDOW = 8  # far below the 96 tokens: every sliding layer drops keys
# A tied head reads the embedding the input scales by sqrt(d): N(0, (k/sqrt(d))^2) gives logits of std
# about k and keeps the input token's echo below the other logits' spread (at k = 1 the greedy
# continuation repeats one token). Gemma 2 has fewer layers to dilute the echo, so a smaller k.
GEMMA_EMBED_STD = {"gemma2": 0.3 / np.sqrt(GEMMA["hidden_size"]), "gemma3": 0.4 / np.sqrt(GEMMA["hidden_size"])}
GEMMA_NORM_STD = 0.1  # HF stores w, the norm multiplies by 1 + w
GEMMA2_ATTN_SOFTCAP = 5.0  # small enough to change the logits measurably (see the sanity numbers)
GEMMA2_FINAL_SOFTCAP = 2.0
GEMMA2_QSCALE = 48  # the hf_qscale/ variant's query_pre_attn_scalar (!= head_dim 32)
GEMMA_MIN_DISTINCT_GREEDY = 6
GEMMA_MIN_SANITY = 1e-2


def gemma_tensor_plan(cfg):
    """[(GGUF name, HF name, shape outermost first, init)] in file order, as llama.cpp's converter
    maps Gemma 2 / Gemma 3 (gguf-py tensor_mapping: post_attention_layernorm -> post_attention_norm,
    pre_feedforward_layernorm -> ffn_norm, post_feedforward_layernorm -> post_ffw_norm); no output.weight
    (the head is tied to token_embd)."""
    d, hq, hkv, dk, ff = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"],
                          cfg["intermediate_size"])
    qk_norm = cfg["model_type"].startswith("gemma3")
    plan = [("token_embd.weight", "model.embed_tokens.weight", [cfg["vocab_size"], d], "embed")]
    for l in range(cfg["num_hidden_layers"]):
        g, h = "blk.%d." % l, "model.layers.%d." % l
        plan += [
            (g + "attn_norm.weight", h + "input_layernorm.weight", [d], "norm"),
            (g + "attn_q.weight", h + "self_attn.q_proj.weight", [hq * dk, d], "linear"),
            (g + "attn_k.weight", h + "self_attn.k_proj.weight", [hkv * dk, d], "linear"),
            (g + "attn_v.weight", h + "self_attn.v_proj.weight", [hkv * dk, d], "linear"),
        ]
        if qk_norm:
            plan += [
                (g + "attn_q_norm.weight", h + "self_attn.q_norm.weight", [dk], "norm"),
                (g + "attn_k_norm.weight", h + "self_attn.k_norm.weight", [dk], "norm"),
            ]
        plan += [
            (g + "attn_output.weight", h + "self_attn.o_proj.weight", [d, hq * dk], "linear"),
            (g + "post_attention_norm.weight", h + "post_attention_layernorm.weight", [d], "norm"),
            (g + "ffn_norm.weight", h + "pre_feedforward_layernorm.weight", [d], "norm"),
            (g + "ffn_gate.weight", h + "mlp.gate_proj.weight", [ff, d], "linear"),
            (g + "ffn_up.weight", h + "mlp.up_proj.weight", [ff, d], "linear"),
            (g + "ffn_down.weight", h + "mlp.down_proj.weight", [d, ff], "linear"),
            (g + "post_ffw_norm.weight", h + "post_feedforward_layernorm.weight", [d], "norm"),
        ]
    plan.append(("output_norm.weight", "model.norm.weight", [d], "norm"))
    return plan


def gemma_f32_weights(rng, plan, embed_std):
    """Random F32 weights: linear N(0, 1/fan_in), embeddings N(0, embed_std^2), norm weights
    w ~ N(0, GEMMA_NORM_STD^2) as HF stores them. The GGUF holds every norm as float32(1 + w) (the
    converter's data_torch + 1 on an F32 tensor) and Q/K rows in HF order (Gemma is NEOX RoPE in
    llama.cpp: no permute). Returns the GGUF tensors and the HF tensors as float64 arrays and torch
    tensors."""
    import torch

    gguf_tensors, hf_f64, hf_f32 = [], {}, {}
    for name, hf_name, shape, init in plan:
        if init == "norm":
            w32 = (GEMMA_NORM_STD * rng.standard_normal(shape)).astype("<f4")
            stored = (w32 + np.float32(1.0)).astype("<f4")
        else:
            std = embed_std if init == "embed" else 1.0 / np.sqrt(shape[1])
            w32 = stored = (std * rng.standard_normal(shape)).astype("<f4")
        hf_f32[hf_name] = torch.from_numpy(w32.copy())
        hf_f64[hf_name] = w32.astype(np.float64)
        gguf_tensors.append((name, GGML_F32, list(reversed(shape)), np.ascontiguousarray(stored).tobytes()))
    return gguf_tensors, hf_f64, hf_f32


def gemma_config(arch, vocab):
    """config.json of the tiny Gemma 2 / Gemma 3 text model (the keys of the published checkpoints)."""
    common = {
        "torch_dtype": "float32", "vocab_size": len(vocab), "bos_token_id": vocab["<s>"], "eos_token_id": vocab["</s>"],
        "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "attention_bias": False,
        "attention_dropout": 0.0, "hidden_activation": "gelu_pytorch_tanh", "initializer_range": 0.02,
        "sliding_window": GEMMA_SLIDING_WINDOW, "query_pre_attn_scalar": GEMMA["head_dim"], **GEMMA,
    }
    if arch == "gemma2":
        return dict(common, architectures=["Gemma2ForCausalLM"], model_type="gemma2", num_hidden_layers=4,
                    hidden_act="gelu_pytorch_tanh", rope_theta=10000.0, attn_logit_softcapping=GEMMA2_ATTN_SOFTCAP,
                    final_logit_softcapping=GEMMA2_FINAL_SOFTCAP)
    return dict(common, architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", num_hidden_layers=6,
                rope_theta=1000000.0, rope_local_base_freq=10000.0, rope_scaling={"rope_type": "linear", "factor": 8.0},
                sliding_window_pattern=6, attn_logit_softcapping=None, final_logit_softcapping=None)


def gemma_gguf_header(arch, model_name, c):
    """The general.* and ARCH.* keys llama.cpp's convert_hf_to_gguf.py writes for an F32 Gemma 2
    (Gemma2Model.set_gguf_parameters: no rope keys at all, llama.cpp defaults the base to 10000 and the
    rotary dims to key_length) or Gemma 3 (TextModel.set_gguf_parameters + Gemma3Model: the global base,
    the linear scaling of the global layers, the local base as rope.freq_base_swa, the window; no
    pattern key, llama.cpp fixes it at 6; no rope.dimension_count)."""
    md = [
        ("general.architecture", GGUF_STRING, arch),
        ("general.name", GGUF_STRING, model_name),
        ("general.file_type", GGUF_U32, 0),  # LLAMA_FTYPE_ALL_F32
        (arch + ".context_length", GGUF_U32, c["max_position_embeddings"]),
        (arch + ".embedding_length", GGUF_U32, c["hidden_size"]),
        (arch + ".block_count", GGUF_U32, c["num_hidden_layers"]),
        (arch + ".feed_forward_length", GGUF_U32, c["intermediate_size"]),
        (arch + ".attention.head_count", GGUF_U32, c["num_attention_heads"]),
        (arch + ".attention.head_count_kv", GGUF_U32, c["num_key_value_heads"]),
    ]
    if arch == "gemma3":
        rs = c["rope_scaling"]
        md += [
            (arch + ".rope.scaling.type", GGUF_STRING, rs["rope_type"]),
            (arch + ".rope.scaling.factor", GGUF_F32, rs["factor"]),
            (arch + ".rope.freq_base", GGUF_F32, c["rope_theta"]),
            (arch + ".rope.freq_base_swa", GGUF_F32, c["rope_local_base_freq"]),
        ]
    md += [
        (arch + ".attention.layer_norm_rms_epsilon", GGUF_F32, c["rms_norm_eps"]),
        (arch + ".attention.key_length", GGUF_U32, c["head_dim"]),
        (arch + ".attention.value_length", GGUF_U32, c["head_dim"]),
    ]
    if arch == "gemma2":
        md += [
            (arch + ".attn_logit_softcapping", GGUF_F32, c["attn_logit_softcapping"]),
            (arch + ".final_logit_softcapping", GGUF_F32, c["final_logit_softcapping"]),
        ]
    md.append((arch + ".attention.sliding_window", GGUF_U32, c["sliding_window"]))
    return md


def _rel_l2(other, logits):
    return float(np.linalg.norm(other - logits) / np.linalg.norm(logits))


# Gemma3TextConfig's defaults (transformers' configuration_gemma3.py): a Gemma3ForConditionalGeneration
# config.json lists only the text_config keys that differ from them (google/gemma-3-4b-it's: six).
GEMMA3_TEXT_DEFAULTS = {
    "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "rope_theta": 1000000.0,
    "query_pre_attn_scalar": 256, "sliding_window": 4096, "rope_local_base_freq": 10000.0,
    "sliding_window_pattern": 6, "attention_bias": False, "attention_dropout": 0.0, "initializer_range": 0.02,
    "attn_logit_softcapping": None, "final_logit_softcapping": None, "rope_scaling": None,
}


def write_gemma3_multimodal(d, config, hf_f32, vocab, merges):
    """gemma3/hf_multimodal/: the gemma3 text model as a Gemma3ForConditionalGeneration checkpoint (Gemma 3
    4B/12B/27B): config.json with text_config holding only the keys that differ from Gemma3TextConfig's
    defaults (the others are the defaults: rope_theta, rope_local_base_freq, sliding_window_pattern,
    rms_norm_eps, ...) and a vision_config; the text tensors under language_model.model.*, beside a small
    random vision tower and projector (vision_tower.*, multi_modal_projector.*) a text engine leaves out."""
    import torch
    import make_reference_models as mrm

    text = {k: v for k, v in config.items()
            if k not in ("architectures", "torch_dtype", "bos_token_id", "eos_token_id")
            and (k not in GEMMA3_TEXT_DEFAULTS or GEMMA3_TEXT_DEFAULTS[k] != v)}
    text["model_type"] = "gemma3_text"
    for k in ("rope_theta", "rope_local_base_freq", "sliding_window_pattern", "rms_norm_eps"):
        assert k not in text and config[k] == GEMMA3_TEXT_DEFAULTS[k], k  # the defaults are exercised
    mm = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "torch_dtype": "float32",
          "text_config": text, "boi_token_index": 255999, "eoi_token_index": 256000, "image_token_index": 262144,
          "mm_tokens_per_image": 4, "initializer_range": 0.02,
          "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 8, "image_size": 4, "patch_size": 2,
                            "intermediate_size": 16, "num_attention_heads": 2, "num_hidden_layers": 1}}
    rng = np.random.default_rng(SEED + 43)
    d_model = config["hidden_size"]
    tensors = {"language_model." + k: v for k, v in hf_f32.items()}  # torch tensors already
    for name, shape in (("vision_tower.vision_model.embeddings.patch_embedding.weight", (8, 3, 2, 2)),
                        ("vision_tower.vision_model.post_layernorm.weight", (8,)),
                        ("multi_modal_projector.mm_input_projection_weight", (8, d_model)),
                        ("multi_modal_projector.mm_soft_emb_norm.weight", (8,))):
        tensors[name] = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    os.makedirs(d, exist_ok=True)
    mrm.dump_json(mm, os.path.join(d, "config.json"), indent=2)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(mrm.safetensors_bytes(tensors))
    mrm.dump_json(mrm.tokenizer_json(vocab, merges), os.path.join(d, "tokenizer.json"), indent=2)
    mrm.dump_json(mrm.TOKENIZER_CONFIG, os.path.join(d, "tokenizer_config.json"), indent=2)


def write_gemma(out_dir, arch):
    """OUT_DIR/gemma2/ or OUT_DIR/gemma3/ (and, for gemma2, the HF-only hf_qscale/ variant and
    reference_qscale.json)."""
    import hf_gemma_reference as hg
    import make_reference_models as mrm

    vocab = mrm.build_vocab()
    merges = mrm.build_merges(vocab)
    config = gemma_config(arch, vocab)
    qscale_config = dict(config, query_pre_attn_scalar=GEMMA2_QSCALE) if arch == "gemma2" else None
    plan = gemma_tensor_plan(config)
    prompt_len, steps = GEMMA_GREEDY_PROMPT, GEMMA_GREEDY_STEPS
    first = SEED + (31 if arch == "gemma2" else 41)
    for seed in range(first, first + 64):
        rng = np.random.default_rng(seed)
        gguf_tensors, hf_f64, hf_f32 = gemma_f32_weights(rng, plan, GEMMA_EMBED_STD[arch])
        tokens = [vocab["<s>"]] + [int(x) for x in rng.integers(3, len(vocab), GEMMA_TOKENS - 1)]
        model = hg.HfGemma(config, hf_f64)
        greedy, margins = model.greedy(tokens[:prompt_len], steps)
        if min(margins) < 1e-3 or len(set(greedy)) < GEMMA_MIN_DISTINCT_GREEDY:
            continue
        if qscale_config is not None:
            q_greedy, q_margins = hg.HfGemma(qscale_config, hf_f64).greedy(tokens[:prompt_len], steps)
            if min(q_margins) < 1e-3 or len(set(q_greedy)) < GEMMA_MIN_DISTINCT_GREEDY:
                continue
        break
    else:
        raise AssertionError(arch + ": every seed tried has a near tie or a repetitive greedy continuation")
    logits = model.logits(tokens)

    # What an engine that gets one Gemma rule wrong would give: each must be far outside the 1e-4
    # tolerance, or the fixture proves nothing.
    sanity = {
        "no_sliding_rel_l2": _rel_l2(hg.HfGemma(config, hf_f64, sliding=False).logits(tokens), logits),
        "window_plus_one_rel_l2": _rel_l2(
            hg.HfGemma(config, hf_f64, window=GEMMA_SLIDING_WINDOW + 1).logits(tokens), logits),
        "norm_without_one_rel_l2": _rel_l2(hg.HfGemma(config, hf_f64, norm_offset=0.0).logits(tokens), logits),
    }
    if arch == "gemma2":
        sanity["no_softcap_rel_l2"] = _rel_l2(hg.HfGemma(
            dict(config, attn_logit_softcapping=None, final_logit_softcapping=None), hf_f64).logits(tokens), logits)
        sanity["no_attn_softcap_rel_l2"] = _rel_l2(
            hg.HfGemma(dict(config, attn_logit_softcapping=None), hf_f64).logits(tokens), logits)
        sanity["no_final_softcap_rel_l2"] = _rel_l2(
            hg.HfGemma(dict(config, final_logit_softcapping=None), hf_f64).logits(tokens), logits)
    else:
        sanity["global_rope_everywhere_rel_l2"] = _rel_l2(
            hg.HfGemma(config, hf_f64, local_rope=False).logits(tokens), logits)
        sanity["no_linear_scaling_rel_l2"] = _rel_l2(
            hg.HfGemma(dict(config, rope_scaling=None), hf_f64).logits(tokens), logits)
    for key, value in sanity.items():
        assert value > GEMMA_MIN_SANITY, "%s: %s = %g, the fixture proves nothing" % (arch, key, value)

    c = config
    metadata = gemma_gguf_header(arch, "cflow tiny %s (test fixture)" % arch, c) + tokenizer_metadata(vocab, merges)
    out = {"tokens": tokens, "logits": logits.tolist(), "greedy_prompt": tokens[:prompt_len], "greedy": greedy,
           "min_greedy_margin": min(margins), "seed": seed, "layer_types": hg.layer_types(c), **sanity}
    write_family_fixture(out_dir, arch, metadata, gguf_tensors, config, hf_f32, out)

    if arch == "gemma3":
        write_gemma3_multimodal(os.path.join(out_dir, arch, "hf_multimodal"), config, hf_f32, vocab, merges)

    if qscale_config is not None:
        # The same weights and tokenizer with query_pre_attn_scalar != head_dim: only the HF reader can
        # see it (llama.cpp scales by 1/sqrt(head_dim) except for the 27B), so no GGUF here.
        d = os.path.join(out_dir, arch, "hf_qscale")
        os.makedirs(d, exist_ok=True)
        mrm.dump_json(qscale_config, os.path.join(d, "config.json"), indent=2)
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(mrm.safetensors_bytes(hf_f32))
        mrm.dump_json(mrm.tokenizer_json(vocab, merges), os.path.join(d, "tokenizer.json"), indent=2)
        mrm.dump_json(mrm.TOKENIZER_CONFIG, os.path.join(d, "tokenizer_config.json"), indent=2)
        q_logits = hg.HfGemma(qscale_config, hf_f64).logits(tokens)
        head_dim_scale = _rel_l2(logits, q_logits)  # what scaling by 1/sqrt(head_dim) would give
        assert head_dim_scale > GEMMA_MIN_SANITY, "hf_qscale: head_dim scaling would pass (%g)" % head_dim_scale
        q_out = {"tokens": tokens, "logits": q_logits.tolist(), "greedy_prompt": tokens[:prompt_len],
                 "greedy": q_greedy, "min_greedy_margin": min(q_margins), "seed": seed,
                 "query_pre_attn_scalar": GEMMA2_QSCALE, "head_dim_scale_rel_l2": head_dim_scale}
        with open(os.path.join(out_dir, arch, "reference_qscale.json"), "w", encoding="utf-8", newline="\n") as f:
            json.dump(q_out, f, separators=(",", ":"), sort_keys=True)
            f.write("\n")
        out["qscale"] = q_out
    return out


# ----------------------------------------------------------------------------- Phi-3.5-mini, Phi-4-mini

PHI3 = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=256)
# name -> (architectures' model, partial_rotary_factor, tie_word_embeddings, first seed offset)
PHI3_VARIANTS = {"phi3": ("Phi-3.5-mini", 1.0, False, 51), "phi4mini": ("Phi-4-mini", 0.75, True, 61)}
PHI3_MAX_POSITIONS = 128
PHI3_ORIGINAL_MAX_POSITIONS = 64  # attention factor sqrt(1 + ln(128 / 64) / ln 64)
PHI3_SLIDING_WINDOW = 262144  # the published configs' value: longer than any sequence here, no effect
PHI3_TOKENS = 48  # <= original_max_position_embeddings: short factors
PHI3_TOKENS_LONG = 96  # > original_max_position_embeddings: long factors
PHI3_GREEDY_PROMPT = 16
PHI3_GREEDY_STEPS = 32  # 16 + 32 = 48 <= 64: the whole greedy run is on the short factors
PHI3_SHORT_FACTOR_RANGE = (1.0, 1.5)
PHI3_LONG_FACTOR_RANGE = (1.0, 8.0)
PHI3_MIN_DISTINCT_GREEDY = 6
PHI3_MAX_GREEDY_RUN = 4  # no token picked more than 4 times in a row
PHI3_MIN_SANITY = 1e-2


def phi3_tensor_plan(cfg):
    """[(GGUF name, HF name, shape outermost first, init)] in file order, as llama.cpp's converter maps
    Phi3ForCausalLM (gguf-py tensor_mapping: self_attn.qkv_proj -> attn_qkv, mlp.gate_up_proj -> ffn_up,
    post_attention_layernorm -> ffn_norm); rows unpermuted (llama.cpp runs phi3 with NEOX RoPE); no
    output.weight when the head is tied."""
    d, hq, hkv, ff, v = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                         cfg["intermediate_size"], cfg["vocab_size"])
    dk = d // hq
    # A tied head reads the input embedding: N(0, 1/d) ("linear") keeps the input token's echo below the
    # other logits' spread (at N(0, 4/d) most greedy runs repeat one token); untied N(0, 0.5^2).
    embed_init = "linear" if cfg["tie_word_embeddings"] else "embed"
    plan = [("token_embd.weight", "model.embed_tokens.weight", [v, d], embed_init)]
    for l in range(cfg["num_hidden_layers"]):
        g, h = "blk.%d." % l, "model.layers.%d." % l
        plan += [
            (g + "attn_norm.weight", h + "input_layernorm.weight", [d], "norm"),
            (g + "attn_qkv.weight", h + "self_attn.qkv_proj.weight", [(hq + 2 * hkv) * dk, d], "linear"),
            (g + "attn_output.weight", h + "self_attn.o_proj.weight", [d, hq * dk], "linear"),
            (g + "ffn_norm.weight", h + "post_attention_layernorm.weight", [d], "norm"),
            (g + "ffn_up.weight", h + "mlp.gate_up_proj.weight", [2 * ff, d], "linear"),
            (g + "ffn_down.weight", h + "mlp.down_proj.weight", [d, ff], "linear"),
        ]
    plan.append(("output_norm.weight", "model.norm.weight", [d], "norm"))
    if not cfg["tie_word_embeddings"]:
        plan.append(("output.weight", "lm_head.weight", [v, d], "output"))
    return plan


def phi3_factors(rng, n):
    """LongRoPE rescale factors, float32 values (both files hold float32): short ones in [1, 1.5], long
    ones in [1, 8], each increasing with the frequency index as in the published checkpoints."""
    short = np.sort(rng.uniform(*PHI3_SHORT_FACTOR_RANGE, n)).astype(np.float32)
    long = np.sort(rng.uniform(*PHI3_LONG_FACTOR_RANGE, n)).astype(np.float32)
    return [float(x) for x in short], [float(x) for x in long]


def phi3_config(name, vocab, short_factor, long_factor):
    """config.json of the tiny Phi-3.5-mini / Phi-4-mini (the keys of the published checkpoints; no
    head_dim key: Phi-3 derives it as hidden_size / num_attention_heads)."""
    _, rot_pct, tied, _ = PHI3_VARIANTS[name]
    config = {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "torch_dtype": "float32", "hidden_act": "silu",
        "vocab_size": len(vocab), "bos_token_id": vocab["<s>"], "eos_token_id": vocab["</s>"],
        "pad_token_id": vocab["</s>"], "max_position_embeddings": PHI3_MAX_POSITIONS,
        "original_max_position_embeddings": PHI3_ORIGINAL_MAX_POSITIONS, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "rope_scaling": {"type": "longrope", "short_factor": short_factor, "long_factor": long_factor},
        "sliding_window": PHI3_SLIDING_WINDOW, "tie_word_embeddings": tied, "attention_bias": False,
        "attention_dropout": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0, "initializer_range": 0.02,
        "use_cache": True, **PHI3,
    }
    if rot_pct != 1.0:
        config["partial_rotary_factor"] = rot_pct
    return config


def phi3_gguf_header(model_name, c, attn_factor):
    """The general.* and phi3.* keys of llama.cpp's convert_hf_to_gguf.py (Phi3MiniModel.set_gguf_parameters,
    in its order, then generate_extra_tensors' attn_factor): no key_length / value_length (llama.cpp
    takes n_embd / n_head), rope.dimension_count = int(partial_rotary_factor * n_embd) // n_head,
    attention.sliding_window from the config (0 when absent; llama.cpp disables Phi's window anyway),
    rope.scaling.attn_factor = the longrope attention factor; no rope.scaling.type / factor keys."""
    arch = "phi3"
    rot_dims = int(c.get("partial_rotary_factor", 1.0) * c["hidden_size"]) // c["num_attention_heads"]
    return [
        ("general.architecture", GGUF_STRING, arch),
        ("general.name", GGUF_STRING, model_name),
        ("general.file_type", GGUF_U32, 0),  # LLAMA_FTYPE_ALL_F32
        (arch + ".context_length", GGUF_U32, c["max_position_embeddings"]),
        (arch + ".rope.scaling.original_context_length", GGUF_U32, c["original_max_position_embeddings"]),
        (arch + ".embedding_length", GGUF_U32, c["hidden_size"]),
        (arch + ".feed_forward_length", GGUF_U32, c["intermediate_size"]),
        (arch + ".block_count", GGUF_U32, c["num_hidden_layers"]),
        (arch + ".attention.head_count", GGUF_U32, c["num_attention_heads"]),
        (arch + ".attention.head_count_kv", GGUF_U32, c["num_key_value_heads"]),
        (arch + ".attention.layer_norm_rms_epsilon", GGUF_F32, c["rms_norm_eps"]),
        (arch + ".rope.dimension_count", GGUF_U32, rot_dims),
        (arch + ".rope.freq_base", GGUF_F32, c["rope_theta"]),
        (arch + ".attention.sliding_window", GGUF_U32, c.get("sliding_window") or 0),
        (arch + ".rope.scaling.attn_factor", GGUF_F32, attn_factor),
    ]


def write_phi3(out_dir, name):
    """OUT_DIR/phi3/ (Phi-3.5-mini-shaped) or OUT_DIR/phi4mini/ (Phi-4-mini-shaped)."""
    import torch  # safetensors_bytes takes torch tensors
    import hf_phi3_reference as hp
    import make_reference_models as mrm

    model_name, _, _, seed_offset = PHI3_VARIANTS[name]
    vocab = mrm.build_vocab()
    merges = mrm.build_merges(vocab)
    n_factors = hp.rotary_dim(dict(PHI3, partial_rotary_factor=PHI3_VARIANTS[name][1])) // 2
    prompt_len, steps = PHI3_GREEDY_PROMPT, PHI3_GREEDY_STEPS
    assert prompt_len + steps <= PHI3_ORIGINAL_MAX_POSITIONS < PHI3_TOKENS_LONG <= PHI3_MAX_POSITIONS
    assert PHI3_TOKENS <= PHI3_ORIGINAL_MAX_POSITIONS
    first = SEED + seed_offset
    for seed in range(first, first + 64):
        rng = np.random.default_rng(seed)
        short_factor, long_factor = phi3_factors(rng, n_factors)
        config = phi3_config(name, vocab, short_factor, long_factor)
        plan = phi3_tensor_plan(config)
        gguf_tensors, hf_f64, hf_f32 = [], {}, {}
        for gguf_name, hf_name, shape, init in plan:
            w32 = init_weight(rng, shape, init).astype("<f4")
            hf_f32[hf_name] = torch.from_numpy(w32.copy())
            hf_f64[hf_name] = w32.astype(np.float64)
            gguf_tensors.append((gguf_name, GGML_F32, list(reversed(shape)), np.ascontiguousarray(w32).tobytes()))
        tokens_long = [vocab["<s>"]] + [int(x) for x in rng.integers(3, len(vocab), PHI3_TOKENS_LONG - 1)]
        tokens = tokens_long[:PHI3_TOKENS]  # the long sequence starts with the short one
        model = hp.HfPhi3(config, hf_f64)
        greedy, margins = model.greedy(tokens[:prompt_len], steps)
        longest_run = max(len(list(run)) for _, run in itertools.groupby(greedy))
        if (min(margins) > 1e-3 and len(set(greedy)) >= PHI3_MIN_DISTINCT_GREEDY
                and longest_run <= PHI3_MAX_GREEDY_RUN):
            break
    else:
        raise AssertionError(name + ": every seed tried has a near tie or a repetitive greedy continuation")
    assert hp.factor_set_for(config, len(tokens)) == "short"
    assert hp.factor_set_for(config, len(tokens_long)) == "long"
    logits = model.logits(tokens)
    logits_long = model.logits(tokens_long)
    attn_factor = hp.attention_factor(config)

    # What an engine that gets one Phi rule wrong would give: each must be far outside the 1e-4
    # tolerance, or the fixture proves nothing.
    sanity = {
        "no_attention_factor_rel_l2": _rel_l2(hp.HfPhi3(config, hf_f64, attn_factor=1.0).logits(tokens), logits),
        "no_attention_factor_long_rel_l2": _rel_l2(
            hp.HfPhi3(config, hf_f64, attn_factor=1.0).logits(tokens_long), logits_long),
        "long_vs_short_rel_l2": _rel_l2(
            hp.HfPhi3(config, hf_f64, factor_set="short").logits(tokens_long), logits_long),
        "short_vs_long_rel_l2": _rel_l2(hp.HfPhi3(config, hf_f64, factor_set="long").logits(tokens), logits),
        "no_factors_rel_l2": _rel_l2(hp.HfPhi3(dict(config, rope_scaling=None), hf_f64).logits(tokens), logits),
    }
    if config.get("partial_rotary_factor", 1.0) != 1.0:
        sanity["full_rotary_rel_l2"] = _rel_l2(
            hp.HfPhi3(config, hf_f64, rot_dims=hp.head_dim(config)).logits(tokens), logits)
        sanity["attn_factor_on_pass_dims_rel_l2"] = _rel_l2(
            hp.HfPhi3(config, hf_f64, attn_factor_on_pass_dims=True).logits(tokens), logits)
    for key, value in sanity.items():
        assert value > PHI3_MIN_SANITY, "%s: %s = %g, the fixture proves nothing" % (name, key, value)

    # rope_factors_long / rope_factors_short come first, as the converter yields them
    # (generate_extra_tensors before the checkpoint's tensors).
    gguf_tensors = [
        ("rope_factors_long.weight", GGML_F32, [n_factors], np.asarray(long_factor, dtype="<f4").tobytes()),
        ("rope_factors_short.weight", GGML_F32, [n_factors], np.asarray(short_factor, dtype="<f4").tobytes()),
    ] + gguf_tensors
    metadata = phi3_gguf_header("cflow tiny %s (test fixture)" % model_name, config, attn_factor) + \
        tokenizer_metadata(vocab, merges)
    out = {"tokens": tokens, "logits": logits.tolist(), "tokens_long": tokens_long,
           "logits_long": logits_long.tolist(), "greedy_prompt": tokens[:prompt_len], "greedy": greedy,
           "min_greedy_margin": min(margins), "seed": seed, "factor_set": "short", "factor_set_long": "long",
           "attention_factor": attn_factor, "rotary_dim": hp.rotary_dim(config), "short_factor": short_factor,
           "long_factor": long_factor, **sanity}
    write_family_fixture(out_dir, name, metadata, gguf_tensors, config, hf_f32, out)
    return out

# ----------------------------------------------------------------------------- gpt-oss (MXFP4 experts)

GPT_OSS = dict(hidden_size=160, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
               intermediate_size=96, num_local_experts=8, num_experts_per_tok=2)
GPT_OSS_SLIDING_WINDOW = 8
GPT_OSS_ROPE_SCALING = {"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                        "original_max_position_embeddings": 32}
GPT_OSS_MAX_POSITIONS = 128
GPT_OSS_TOKENS = 48  # past original_max_position_embeddings 32 and six windows of 8
GPT_OSS_GREEDY_PROMPT = 16
GPT_OSS_GREEDY_STEPS = 32
GPT_OSS_MIN_DISTINCT_GREEDY = 6
GPT_OSS_MAX_GREEDY_RUN = 4
GPT_OSS_MIN_SANITY = 1e-2
# Weight scales (see README "gpt-oss"): the expert gate_up N(0, (3/sqrt(d))^2) puts the gate / up
# pre-activations at std ~3 so the clamp at 7 is hit; large per-head sinks (N(1, 1.5^2)) take a visible
# share of the softmax; biases large enough that dropping any group moves the logits.
GPT_OSS_STD = {"gate_up": 3.0, "down": 0.5, "attn_bias": 0.3, "sinks": 1.5, "sinks_mean": 1.0, "router_bias": 0.5,
               "gate_up_bias": 0.5, "down_bias": 0.3}
GGML_MXFP4 = blocks.TYPES["MXFP4"][0]


def gpt_oss_config(vocab):
    """config.json of the tiny gpt-oss (the keys of openai/gpt-oss-20b's, without quantization_config:
    the experts are plain F32 parameters here)."""
    n = GPT_OSS["num_hidden_layers"]
    return {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "torch_dtype": "float32",
        "vocab_size": len(vocab), "bos_token_id": vocab["<s>"], "eos_token_id": vocab["</s>"],
        "max_position_embeddings": GPT_OSS_MAX_POSITIONS, "rms_norm_eps": 1e-5, "rope_theta": 150000.0,
        "rope_scaling": dict(GPT_OSS_ROPE_SCALING), "sliding_window": GPT_OSS_SLIDING_WINDOW,
        "layer_types": ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)],
        "attention_bias": True, "attention_dropout": 0.0, "hidden_act": "silu", "initializer_range": 0.02,
        "swiglu_limit": 7.0, "tie_word_embeddings": False, "output_router_logits": False,
        "router_aux_loss_coef": 0.9, "use_cache": True, **GPT_OSS,
    }


def gpt_oss_weights(rng, c):
    """Random weights: HF tensors (float32, HF layout) and the expert matrices as GGUF stores them
    ({layer: {"gate" / "up": [E, ff, d], "down": [E, d, ff]}}, float32) with their MXFP4 blocks. Every
    expert matrix is quantised to MXFP4 (quantize_row_mxfp4_ref, blocks of 32 along the input dimension)
    and dequantised first, so the F32 values are exactly the MXFP4 ones."""
    d, hq, hkv, dk = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    ff, e, v = c["intermediate_size"], c["num_local_experts"], c["vocab_size"]
    s = GPT_OSS_STD
    f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731
    hf = {"model.embed_tokens.weight": f32(init_weight(rng, [v, d], "embed"))}
    experts = {}
    for l in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % l
        hf[p + "input_layernorm.weight"] = f32(init_weight(rng, [d], "norm"))
        for name, rows in (("q_proj", hq * dk), ("k_proj", hkv * dk), ("v_proj", hkv * dk)):
            hf[p + "self_attn.%s.weight" % name] = f32(init_weight(rng, [rows, d], "linear"))
            hf[p + "self_attn.%s.bias" % name] = f32(s["attn_bias"] * rng.standard_normal(rows))
        hf[p + "self_attn.o_proj.weight"] = f32(init_weight(rng, [d, hq * dk], "linear"))
        hf[p + "self_attn.o_proj.bias"] = f32(s["attn_bias"] * rng.standard_normal(d))
        hf[p + "self_attn.sinks"] = f32(s["sinks_mean"] + s["sinks"] * rng.standard_normal(hq))
        hf[p + "post_attention_layernorm.weight"] = f32(init_weight(rng, [d], "norm"))
        hf[p + "mlp.router.weight"] = f32(init_weight(rng, [e, d], "linear"))
        hf[p + "mlp.router.bias"] = f32(s["router_bias"] * rng.standard_normal(e))
        mats, packed = {}, {}
        for name, rows, cols, std in (("gate", ff, d, s["gate_up"]), ("up", ff, d, s["gate_up"]),
                                      ("down", d, ff, s["down"])):
            w = f32(std / np.sqrt(cols) * rng.standard_normal((e, rows, cols)))
            packed[name] = blocks.quantize_mxfp4(w)
            mats[name] = f32(blocks.decode("MXFP4", packed[name]).reshape(e, rows, cols))
        experts[l] = (mats, packed)
        gate_up = np.empty((e, d, 2 * ff), dtype=np.float32)  # HF: [E, hidden, 2 ff], gate / up interleaved
        gate_up[:, :, 0::2] = mats["gate"].transpose(0, 2, 1)
        gate_up[:, :, 1::2] = mats["up"].transpose(0, 2, 1)
        hf[p + "mlp.experts.gate_up_proj"] = gate_up
        hf[p + "mlp.experts.gate_up_proj_bias"] = f32(s["gate_up_bias"] * rng.standard_normal((e, 2 * ff)))
        hf[p + "mlp.experts.down_proj"] = np.ascontiguousarray(mats["down"].transpose(0, 2, 1))  # [E, ff, hidden]
        hf[p + "mlp.experts.down_proj_bias"] = f32(s["down_bias"] * rng.standard_normal((e, d)))
    hf["model.norm.weight"] = f32(init_weight(rng, [d], "norm"))
    hf["lm_head.weight"] = f32(init_weight(rng, [v, d], "output"))
    return hf, experts


def gpt_oss_gguf_tensors(hf, experts, mxfp4):
    """The tensors llama.cpp's convert_hf_to_gguf.py (GptOssModel) writes, in its order: with MXFP4
    experts (converted from *_blocks / *_scales) generate_extra_tensors writes every layer's
    ffn_down_exps, ffn_gate_exps, ffn_up_exps first; then the checkpoint's tensors in name order, where
    gate_up_proj (F32 path only) is transposed and split into ffn_gate_exps = rows ::2 and ffn_up_exps =
    rows 1::2, gate_up_proj_bias into ffn_gate_exps.bias = [..., ::2] and ffn_up_exps.bias = [..., 1::2],
    down_proj transposed to ffn_down_exps, sinks named attn_sinks.weight. [(name, type, ne, bytes)]."""
    def f32(name, a):
        a = np.ascontiguousarray(a, dtype="<f4")
        return (name, GGML_F32, list(reversed(a.shape)), a.tobytes())

    def exps(name, w, packed):
        if mxfp4:
            return (name, GGML_MXFP4, list(reversed(w.shape)), packed)
        return f32(name, w)

    simple = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
              "lm_head.weight": "output.weight"}
    per_layer = {"input_layernorm.weight": "attn_norm.weight",
                 "post_attention_layernorm.weight": "post_attention_norm.weight",
                 "self_attn.sinks": "attn_sinks.weight", "mlp.router.weight": "ffn_gate_inp.weight",
                 "mlp.router.bias": "ffn_gate_inp.bias"}
    for proj, short in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"), ("o_proj", "attn_output")):
        per_layer["self_attn.%s.weight" % proj] = short + ".weight"
        per_layer["self_attn.%s.bias" % proj] = short + ".bias"
    out = []
    if mxfp4:
        for l in sorted(experts):
            mats, packed = experts[l]
            g = "blk.%d." % l
            out += [exps(g + "ffn_down_exps.weight", mats["down"], packed["down"]),
                    exps(g + "ffn_gate_exps.weight", mats["gate"], packed["gate"]),
                    exps(g + "ffn_up_exps.weight", mats["up"], packed["up"])]
    for name in sorted(hf):
        if name in simple:
            out.append(f32(simple[name], hf[name]))
            continue
        l = int(name.split(".")[2])
        g, rest = "blk.%d." % l, name.split(".", 3)[3]
        mats, packed = experts[l]
        if rest in per_layer:
            out.append(f32(g + per_layer[rest], hf[name]))
        elif rest == "mlp.experts.gate_up_proj":
            if not mxfp4:
                t = hf[name].transpose(0, 2, 1)  # [E, 2 ff, hidden]
                out += [exps(g + "ffn_gate_exps.weight", t[:, 0::2, :], None),
                        exps(g + "ffn_up_exps.weight", t[:, 1::2, :], None)]
        elif rest == "mlp.experts.gate_up_proj_bias":
            out += [f32(g + "ffn_gate_exps.bias", hf[name][..., 0::2]),
                    f32(g + "ffn_up_exps.bias", hf[name][..., 1::2])]
        elif rest == "mlp.experts.down_proj":
            if not mxfp4:
                out.append(exps(g + "ffn_down_exps.weight", hf[name].transpose(0, 2, 1), None))
        elif rest == "mlp.experts.down_proj_bias":
            out.append(f32(g + "ffn_down_exps.bias", hf[name]))
        else:
            raise AssertionError("no GGUF name for " + name)
    return out


def gpt_oss_gguf_header(model_name, c):
    """The general.* and gpt-oss.* keys of llama.cpp's convert_hf_to_gguf.py (TextModel.set_gguf_parameters
    in its order, then GptOssModel's sliding_window and expert_feed_forward_length): rope.scaling.* from
    rope_scaling (type yarn: factor, original_context_length, yarn_beta_fast, yarn_beta_slow; truncate has no
    key), key_length / value_length from head_dim; no rope.dimension_count (llama.cpp takes key_length), no
    sliding_window_pattern (llama.cpp fixes the period at 2: layers 0, 2, ... sliding)."""
    arch = "gpt-oss"
    rs = c["rope_scaling"]
    return [
        ("general.architecture", GGUF_STRING, arch),
        ("general.name", GGUF_STRING, model_name),
        ("general.file_type", GGUF_U32, 0),  # LLAMA_FTYPE_ALL_F32 (--outtype f32; MXFP4 experts are copied as is)
        (arch + ".block_count", GGUF_U32, c["num_hidden_layers"]),
        (arch + ".context_length", GGUF_U32, c["max_position_embeddings"]),
        (arch + ".embedding_length", GGUF_U32, c["hidden_size"]),
        (arch + ".feed_forward_length", GGUF_U32, c["intermediate_size"]),
        (arch + ".attention.head_count", GGUF_U32, c["num_attention_heads"]),
        (arch + ".attention.head_count_kv", GGUF_U32, c["num_key_value_heads"]),
        (arch + ".rope.scaling.type", GGUF_STRING, "yarn"),
        (arch + ".rope.scaling.factor", GGUF_F32, rs["factor"]),
        (arch + ".rope.scaling.original_context_length", GGUF_U32, rs["original_max_position_embeddings"]),
        (arch + ".rope.scaling.yarn_beta_fast", GGUF_F32, rs["beta_fast"]),
        (arch + ".rope.scaling.yarn_beta_slow", GGUF_F32, rs["beta_slow"]),
        (arch + ".rope.freq_base", GGUF_F32, c["rope_theta"]),
        (arch + ".attention.layer_norm_rms_epsilon", GGUF_F32, c["rms_norm_eps"]),
        (arch + ".expert_count", GGUF_U32, c["num_local_experts"]),
        (arch + ".expert_used_count", GGUF_U32, c["num_experts_per_tok"]),
        (arch + ".attention.key_length", GGUF_U32, c["head_dim"]),
        (arch + ".attention.value_length", GGUF_U32, c["head_dim"]),
        (arch + ".attention.sliding_window", GGUF_U32, c["sliding_window"]),
        (arch + ".expert_feed_forward_length", GGUF_U32, c["intermediate_size"]),
    ]


def hf_mxfp4_blocks(mats, packed):
    """A real gpt-oss checkpoint's expert layout (transformers' integrations/mxfp4.py reads it): *_blocks
    uint8 [E, rows, cols / 32, 16] with element 2i in the low nibble of byte i and 2i + 1 in the high one
    (nibble = index into FP4_VALUES = kvalues_mxfp4 / 2), *_scales uint8 [E, rows, cols / 32] = the E8M0
    byte (value = FP4 * 2^(scale - 127)); rows are the output features (gate_up: 2 ff rows, gate / up
    interleaved; down: hidden rows)."""
    def split(name):
        b = np.frombuffer(packed[name], dtype=np.dtype(blocks.LAYOUTS["MXFP4"]))
        e_count, rows = mats[name].shape[:2]
        q = b["qs"].astype(np.uint8)
        codes = np.concatenate([q & 0xF, q >> 4], axis=1)  # [blocks x 32]: ggml order (j, j + 16)
        pairs = codes[:, 0::2] | (codes[:, 1::2] << 4)  # HF order: 2i low, 2i + 1 high
        return pairs.reshape(e_count, rows, -1, 16), b["e"].astype(np.uint8).reshape(e_count, rows, -1)

    gb, gs = split("gate")
    ub, us = split("up")
    db, ds = split("down")
    gate_up_blocks = np.empty((gb.shape[0], 2 * gb.shape[1]) + gb.shape[2:], dtype=np.uint8)
    gate_up_blocks[:, 0::2], gate_up_blocks[:, 1::2] = gb, ub
    gate_up_scales = np.empty((gs.shape[0], 2 * gs.shape[1], gs.shape[2]), dtype=np.uint8)
    gate_up_scales[:, 0::2], gate_up_scales[:, 1::2] = gs, us
    return gate_up_blocks, gate_up_scales, db, ds


def hf_mxfp4_dequantize(blocks_u8, scales_u8):
    """transformers' convert_moe_packed_tensors, in float64: FP4_VALUES[nibble] * 2^(scale - 127), then
    [E, rows, cols] transposed to the parameter's [E, cols, rows]."""
    fp4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
    lo, hi = fp4[blocks_u8 & 0xF], fp4[blocks_u8 >> 4]
    vals = np.stack([lo, hi], axis=-1).reshape(blocks_u8.shape[:-1] + (32,))
    vals = vals * np.ldexp(1.0, scales_u8.astype(np.int64) - 127)[..., None]
    return vals.reshape(vals.shape[0], vals.shape[1], -1).transpose(0, 2, 1)


def safetensors_mixed_bytes(tensors):
    """safetensors of numpy arrays (F32 or U8), names sorted, as make_reference_models.safetensors_bytes."""
    header = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name in sorted(tensors):
        a = tensors[name]
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.uint8): "U8"}[a.dtype]
        data = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write_gpt_oss(out_dir):
    """OUT_DIR/gpt_oss/: model.gguf (MXFP4 experts), model_f32.gguf (F32 experts), hf/ (F32 experts),
    hf_mxfp4/ (experts as *_blocks / *_scales, the published checkpoints' layout), reference.json."""
    import torch  # safetensors_bytes takes torch tensors
    import hf_gpt_oss_reference as hg
    import make_reference_models as mrm

    vocab = mrm.build_vocab()
    merges = mrm.build_merges(vocab)
    config = gpt_oss_config(vocab)
    prompt_len, steps = GPT_OSS_GREEDY_PROMPT, GPT_OSS_GREEDY_STEPS
    assert prompt_len + steps <= GPT_OSS_MAX_POSITIONS and GPT_OSS_TOKENS <= GPT_OSS_MAX_POSITIONS
    assert GPT_OSS_TOKENS > config["rope_scaling"]["original_max_position_embeddings"]
    first = SEED + 71
    for seed in range(first, first + 64):
        rng = np.random.default_rng(seed)
        hf32, experts = gpt_oss_weights(rng, config)
        hf64 = {k: v.astype(np.float64) for k, v in hf32.items()}
        tokens = [vocab["<s>"]] + [int(x) for x in rng.integers(3, len(vocab), GPT_OSS_TOKENS - 1)]
        model = hg.HfGptOss(config, hf64)
        if model.router_margin(tokens) < 1e-4:
            continue
        greedy, margins = model.greedy(tokens[:prompt_len], steps)
        longest_run = max(len(list(run)) for _, run in itertools.groupby(greedy))
        if (min(margins) < 1e-3 or len(set(greedy)) < GPT_OSS_MIN_DISTINCT_GREEDY
                or longest_run > GPT_OSS_MAX_GREEDY_RUN):
            continue
        if model.router_margin(tokens[:prompt_len] + greedy) < 1e-4:
            continue
        # The same for llama.cpp's YaRN rule (truncated correction range), which the reference also holds.
        trunc_model = hg.HfGptOss(config, hf64, truncate=True)
        if trunc_model.router_margin(tokens) < 1e-4:
            continue
        greedy_trunc, margins_trunc = trunc_model.greedy(tokens[:prompt_len], steps)
        if min(margins_trunc) < 1e-3 or trunc_model.router_margin(tokens[:prompt_len] + greedy_trunc) < 1e-4:
            continue
        break
    else:
        raise AssertionError("gpt_oss: every seed tried has a near tie or a repetitive greedy continuation")
    logits = model.logits(tokens)
    router_margin = min(model.router_margin(tokens), model.router_margin(tokens[:prompt_len] + greedy))
    routing = model.routing(tokens)
    expert_sets = {tuple(sorted(r[l])) for r in routing for l in range(len(r))}

    # What an engine that gets one gpt-oss rule wrong would give: each must be far outside the 1e-4
    # tolerance, or the fixture proves nothing.
    def rel(**flags):
        cfg = flags.pop("config", config)
        return _rel_l2(hg.HfGptOss(cfg, hf64, **flags).logits(tokens), logits)

    no_bias = dict(attn_bias=False, router_bias=False, expert_bias=False)
    sanity = {
        "no_sinks_rel_l2": rel(sinks=False),
        "no_sliding_rel_l2": rel(sliding=False),
        "window_plus_one_rel_l2": rel(window=GPT_OSS_SLIDING_WINDOW + 1),
        "window_minus_one_rel_l2": rel(window=GPT_OSS_SLIDING_WINDOW - 1),
        "sliding_on_odd_layers_rel_l2": rel(sliding_layers="odd"),
        "plain_rope_rel_l2": rel(yarn=False),
        "no_yarn_attention_factor_rel_l2": rel(attention_factor=1.0),
        "no_clamp_rel_l2": rel(limit=np.inf),
        "plain_swiglu_rel_l2": rel(swiglu="plain"),
        "gate_up_halves_rel_l2": rel(gate_up="halves"),
        "no_biases_rel_l2": rel(**no_bias),
        "no_attn_bias_rel_l2": rel(attn_bias=False),
        "no_router_bias_rel_l2": rel(router_bias=False),
        "no_expert_bias_rel_l2": rel(expert_bias=False),
        "softmax_all_experts_rel_l2": rel(router="softmax_all"),
    }
    for key, value in sanity.items():
        assert value > GPT_OSS_MIN_SANITY, "gpt_oss: %s = %g, the fixture proves nothing" % (key, value)
    # llama.cpp has no key for rope_scaling.truncate: ggml_rope_yarn_corr_dims always floors / ceils the
    # correction range (truncate true). Informational, with the logits and greedy run of that rule.
    logits_trunc = trunc_model.logits(tokens)
    truncated_yarn_rel_l2 = _rel_l2(logits_trunc, logits)
    router_margin_trunc = min(trunc_model.router_margin(tokens),
                              trunc_model.router_margin(tokens[:prompt_len] + greedy_trunc))
    # Activations the clamp changes (share of the selected experts' gate / up entries past the limit).
    clamp_hits = model.clamped_share(tokens)

    # The MXFP4 repacking agrees with the published layout: the HF *_blocks / *_scales dequantise (as
    # transformers does) to the very F32 parameters of hf/.
    hf_mx = {k: v for k, v in hf32.items() if not k.endswith(("experts.gate_up_proj", "experts.down_proj"))}
    for l, (mats, packed) in experts.items():
        p = "model.layers.%d.mlp.experts." % l
        gub, gus, db, ds = hf_mxfp4_blocks(mats, packed)
        assert np.array_equal(hf_mxfp4_dequantize(gub, gus), hf64[p + "gate_up_proj"])
        assert np.array_equal(hf_mxfp4_dequantize(db, ds), hf64[p + "down_proj"])
        hf_mx.update({p + "gate_up_proj_blocks": gub, p + "gate_up_proj_scales": gus,
                      p + "down_proj_blocks": db, p + "down_proj_scales": ds})

    metadata = gpt_oss_gguf_header("cflow tiny gpt-oss (test fixture)", config) + tokenizer_metadata(vocab, merges)
    inv_freq, attention_factor, (low, high) = hg.yarn_params(config)
    out = {"tokens": tokens, "logits": logits.tolist(), "greedy_prompt": tokens[:prompt_len], "greedy": greedy,
           "min_greedy_margin": min(margins), "min_router_margin": router_margin, "seed": seed,
           "layer_types": hg.layer_types(config), "sliding_window": GPT_OSS_SLIDING_WINDOW,
           "experts": routing, "distinct_expert_sets": len(expert_sets), "clamped_share": clamp_hits,
           "yarn": {"inv_freq": inv_freq.tolist(), "attention_factor": attention_factor, "low": low, "high": high,
                    "truncate": False},
           "logits_truncated_yarn": logits_trunc.tolist(), "greedy_truncated_yarn": greedy_trunc,
           "min_greedy_margin_truncated_yarn": min(margins_trunc),
           "min_router_margin_truncated_yarn": router_margin_trunc,
           "truncated_yarn_rel_l2": truncated_yarn_rel_l2,
           **sanity}
    hf_torch = {k: torch.from_numpy(v.copy()) for k, v in hf32.items()}
    write_family_fixture(out_dir, "gpt_oss", metadata, gpt_oss_gguf_tensors(hf32, experts, mxfp4=True), config,
                         hf_torch, out)
    d = os.path.join(out_dir, "gpt_oss")
    with open(os.path.join(d, "model_f32.gguf"), "wb") as f:
        f.write(gguf_bytes(metadata, gpt_oss_gguf_tensors(hf32, experts, mxfp4=False)))
    mx_dir = os.path.join(d, "hf_mxfp4")
    os.makedirs(mx_dir, exist_ok=True)
    mx_config = dict(config, quantization_config={"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]})
    mrm.dump_json(mx_config, os.path.join(mx_dir, "config.json"), indent=2)
    with open(os.path.join(mx_dir, "model.safetensors"), "wb") as f:
        f.write(safetensors_mixed_bytes(hf_mx))
    mrm.dump_json(mrm.tokenizer_json(vocab, merges), os.path.join(mx_dir, "tokenizer.json"), indent=2)
    mrm.dump_json(mrm.TOKENIZER_CONFIG, os.path.join(mx_dir, "tokenizer_config.json"), indent=2)
    return out


# ----------------------------------------------------------------------------- family chat fixtures

# OUT_DIR/chat_<family>/: a conversation end to end. Each family's tiny random-weight model with the
# toy vocabulary plus the family's own control tokens and its real chat template (read from
# ../shared at generation time, never copied into the repository), and an output path that ends
# every reply with the family's end-of-turn token after a few ordinary tokens.
CHAT_TEMPLATE_DIR = "assets/chat-templates/llama.cpp-models-templates/"
CHAT_CONFIG_DIR = "assets/tokenizers/configs-only/"
TOKEN_USER_DEFINED = 4
# name -> family, architecture, template (path under ../shared, JSON key or None), appended tokens
# [(piece, token type)] as llama.cpp's converter types them (special added tokens CONTROL, the others
# USER_DEFINED), bos / eos / eot pieces (tokenizer.ggml.*_token_id; eos as the instruct model's
# tokenizer_config.json or config.json gives it), add_bos_token, and the pieces a reply must stop on.
CHAT_FAMILIES = {
    "llama3": dict(
        family="Llama 3.1", arch="llama", template=(CHAT_TEMPLATE_DIR + "meta-llama-Llama-3.1-8B-Instruct.jinja", None),
        tokens=[("<|begin_of_text|>", TOKEN_CONTROL), ("<|end_of_text|>", TOKEN_CONTROL),
                ("<|start_header_id|>", TOKEN_CONTROL), ("<|end_header_id|>", TOKEN_CONTROL),
                ("<|eom_id|>", TOKEN_CONTROL), ("<|eot_id|>", TOKEN_CONTROL), ("<|python_tag|>", TOKEN_CONTROL)],
        bos="<|begin_of_text|>", eos="<|eot_id|>", eot="<|eot_id|>", add_bos=True,
        end_of_turn=["<|eot_id|>", "<|eom_id|>"],
        # <|python_tag|> opens a tool call: the engine prints it (USER_DEFINED) so the call parser sees it.
        engine_types={"<|python_tag|>": TOKEN_USER_DEFINED}),
    "qwen3": dict(
        family="Qwen3", arch="qwen3", template=(CHAT_TEMPLATE_DIR + "Qwen-Qwen3-0.6B.jinja", None),
        tokens=[("<|endoftext|>", TOKEN_CONTROL), ("<|im_start|>", TOKEN_CONTROL), ("<|im_end|>", TOKEN_CONTROL),
                ("<think>", TOKEN_USER_DEFINED), ("</think>", TOKEN_USER_DEFINED)],
        bos="<|endoftext|>", eos="<|im_end|>", eot="<|im_end|>", add_bos=False, end_of_turn=["<|im_end|>"]),
    "smollm3": dict(
        family="SmolLM3", arch="smollm3", template=(CHAT_TEMPLATE_DIR + "HuggingFaceTB-SmolLM3-3B.jinja", None),
        tokens=[("<|begin_of_text|>", TOKEN_CONTROL), ("<|end_of_text|>", TOKEN_CONTROL),
                ("<think>", TOKEN_USER_DEFINED), ("</think>", TOKEN_USER_DEFINED),
                ("<|im_start|>", TOKEN_CONTROL), ("<|im_end|>", TOKEN_CONTROL)],
        bos="<|begin_of_text|>", eos="<|im_end|>", eot="<|im_end|>", add_bos=False, end_of_turn=["<|im_end|>"]),
    "gemma3": dict(
        family="Gemma 3", arch="gemma3", template=(CHAT_CONFIG_DIR + "gemma-3/chat_template.json", "chat_template"),
        tokens=[("<eos>", TOKEN_CONTROL), ("<bos>", TOKEN_CONTROL), ("<start_of_turn>", TOKEN_CONTROL),
                ("<end_of_turn>", TOKEN_CONTROL)],
        bos="<bos>", eos="<eos>", eot="<end_of_turn>", add_bos=True, end_of_turn=["<end_of_turn>"]),
    "phi4mini": dict(
        family="Phi-4-mini", arch="phi3", template=(CHAT_CONFIG_DIR + "phi-4-mini/tokenizer_config.json", "chat_template"),
        tokens=[("<|endoftext|>", TOKEN_CONTROL), ("<|assistant|>", TOKEN_CONTROL), ("<|end|>", TOKEN_CONTROL),
                ("<|user|>", TOKEN_CONTROL), ("<|system|>", TOKEN_CONTROL)],
        bos="<|endoftext|>", eos="<|endoftext|>", eot="<|end|>", add_bos=False, end_of_turn=["<|end|>"]),
    # gpt-oss's harmony tokens, all special (CONTROL) in the GGUF as llama.cpp's converter writes them;
    # the engine retypes the four framing ones USER_DEFINED (engine_types): a reply's channel headers
    # are text the chat view splits, and <|end|> ends an analysis message, not the turn.
    "gpt_oss": dict(
        family="gpt-oss", arch="gpt-oss", template=(CHAT_TEMPLATE_DIR + "openai-gpt-oss-120b.jinja", None),
        tokens=[("<|startoftext|>", TOKEN_CONTROL), ("<|endoftext|>", TOKEN_CONTROL), ("<|return|>", TOKEN_CONTROL),
                ("<|constrain|>", TOKEN_CONTROL), ("<|channel|>", TOKEN_CONTROL), ("<|start|>", TOKEN_CONTROL),
                ("<|end|>", TOKEN_CONTROL), ("<|message|>", TOKEN_CONTROL), ("<|call|>", TOKEN_CONTROL)],
        bos="<|startoftext|>", eos="<|return|>", eot="<|return|>", add_bos=False, end_of_turn=["<|return|>", "<|call|>"],
        engine_types={"<|constrain|>": TOKEN_USER_DEFINED, "<|channel|>": TOKEN_USER_DEFINED,
                      "<|start|>": TOKEN_USER_DEFINED, "<|message|>": TOKEN_USER_DEFINED},
        not_triggers=["t"]),
}
CHAT_CONTEXT = 512
CHAT_SYSTEM = "You are a cat."
CHAT_USER_TURNS = ["the cat sat on the mat", "and then?"]
CHAT_FIXED_NOW = (2025, 3, 7, 14, 5, 9)  # strftime_now (gpt-oss writes the date; the tests fix the same clock)
CHAT_MAX_REPLY = 8  # ordinary tokens before the end-of-turn token, at most
CHAT_MIN_REPLY_TOKENS = 3  # over both turns: at least one reply decodes a few tokens before it ends
CHAT_MIN_MARGIN = 0.05  # top-1 minus top-2 logit of every greedy pick (the CLI's run decodes them too)
CHAT_MIN_EOT_MARGIN = 1.0
# The output path. Residual dimension CHAT_MARK_DIM is a marker: the embedding of every single-character
# toy token (the "trigger" set) holds CHAT_MARK (in residual units), every other token 0 there, and no
# block writes it (row CHAT_MARK_DIM of every o_proj and down_proj is 0), so after the final norm it is
# large exactly when the input token is a trigger. The end-of-turn token's head row reads only that
# dimension (CHAT_EOT_HEAD): it wins right after a trigger and is out of reach anywhere else. Byte,
# control and the other special tokens' head rows are scaled by CHAT_SUPPRESS, so replies are made of
# the toy vocabulary's merged pieces (ordinary text) until a trigger ends the turn. A tied head echoes
# its input token (logit E_t . E_t) and would repeat a merged piece for ever: there, dimension
# CHAT_MARK_DIM - 1 (never written either) holds CHAT_MARK for merged pieces and CHAT_ANTI_ECHO for
# triggers, so after a merged piece a trigger wins. Gemma scales its input embedding by sqrt(d): its
# stored marker values are these over sqrt(d).
CHAT_MARK_DIM = -1
CHAT_MARK = 4.0
CHAT_EOT_HEAD = {"tied": 80.0, "untied": 6.0}
CHAT_ANTI_ECHO = 12.0
CHAT_SUPPRESS = 0.1


def shared_dir():
    """../shared beside the checkout, or CFLOW_SHARED_DIR (as tests/support/test_support.cpp)."""
    env = os.environ.get("CFLOW_SHARED_DIR")
    if env:
        return env
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(os.path.dirname(repo), "shared")


def chat_vocab(spec):
    """The 320 toy pieces, then the family's tokens: (vocab dict, token types by id)."""
    import make_reference_models as mrm

    vocab = mrm.build_vocab()
    pieces = sorted(vocab, key=vocab.get)
    types = [TOKEN_UNKNOWN if p == "<unk>" else TOKEN_CONTROL if p in ("<s>", "</s>")
             else TOKEN_BYTE if p.startswith("<0x") and len(p) == 6 else TOKEN_NORMAL for p in pieces]
    for piece, kind in spec["tokens"]:
        assert piece not in vocab, piece
        vocab[piece] = len(vocab)
        types.append(kind)
    return vocab, types


def chat_tokenizer_metadata(spec, vocab, types, merges, template):
    """tokenizer_metadata's SentencePiece tokenizer over the chat vocabulary: the appended tokens
    typed, score 0; the family's bos / eos / eot ids; no dummy space prefix (the families' byte-level
    BPE and Gemma's SentencePiece both tokenize a rendered prompt without one); the template."""
    import make_reference_models as mrm

    md = []
    for key, kind, value in tokenizer_metadata(mrm.build_vocab(), merges):
        if key == "tokenizer.ggml.tokens":
            value = (GGUF_STRING, sorted(vocab, key=vocab.get))
        elif key == "tokenizer.ggml.scores":
            value = (GGUF_F32, list(value[1]) + [0.0] * (len(vocab) - len(value[1])))
        elif key == "tokenizer.ggml.token_type":
            value = (GGUF_I32, types)
        elif key == "tokenizer.ggml.bos_token_id":
            value = vocab[spec["bos"]]
        elif key == "tokenizer.ggml.eos_token_id":
            value = vocab[spec["eos"]]
        elif key == "tokenizer.ggml.add_bos_token":
            value = spec["add_bos"]
        elif key == "tokenizer.ggml.add_space_prefix":
            value = False
        md.append((key, kind, value))
        if key == "tokenizer.ggml.eos_token_id":
            md.append(("tokenizer.ggml.eot_token_id", GGUF_U32, vocab[spec["eot"]]))
    md.append(("tokenizer.chat_template", GGUF_STRING, template))
    return md


def chat_special_pieces(vocab, types):
    """Pieces the engine (and llama.cpp) splits a prompt at: control, user-defined and unknown."""
    return [p for p in sorted(vocab, key=vocab.get)
            if types[vocab[p]] in (TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNKNOWN)]


def chat_encode(text, spec, vocab, types, merges):
    """The engine's encode_chat_prompt: the text split at special pieces (longest first, each at its
    non-overlapping occurrences left to right, as llama.cpp's tokenizer_st_partition), every piece one
    id, the text between SentencePiece-BPE without a dummy prefix (spaces as U+2581, merges by score,
    leftmost first, leftovers as bytes); BOS first when add_bos_token and the text did not write it."""
    import make_reference_models as mrm

    fragments = [(None, text)]
    for piece in sorted(chat_special_pieces(vocab, types), key=len, reverse=True):  # stable: equal lengths by id
        split = []
        for token, s in fragments:
            if token is not None:
                split.append((token, s))
                continue
            for i, part in enumerate(s.split(piece)):
                if i:
                    split.append((vocab[piece], piece))
                if part:
                    split.append((None, part))
        fragments = split
    score = {}
    for rank, m in enumerate(merges):
        score.setdefault(m.replace(" ", ""), -float(rank))
    ids = []
    for token, s in fragments:
        if token is not None:
            ids.append(token)
            continue
        syms = list(s.replace(" ", mrm.SPACE))
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
        for sym in syms:
            ids.extend([vocab[sym]] if sym in vocab else [vocab["<0x%02X>" % b] for b in sym.encode("utf-8")])
    bos = vocab[spec["bos"]]
    if spec["add_bos"] and (not ids or ids[0] != bos):
        ids.insert(0, bos)
    return ids


def chat_decode(ids, vocab):
    """What the engine streams for ordinary toy pieces: U+2581 as a space (no dummy prefix to strip)."""
    import make_reference_models as mrm

    pieces = sorted(vocab, key=vocab.get)
    return "".join(pieces[i].replace(mrm.SPACE, " ") for i in ids)


def chat_read_template(shared, spec):
    path, key = spec["template"]
    with open(os.path.join(shared, path), encoding="utf-8") as f:
        text = f.read()
    return json.loads(text)[key] if key else text


def chat_render(template, spec, messages):
    """jinja2 as transformers' apply_chat_template sets it up (tests/engine/chat/render_family_templates.py),
    with the variables ChatSession passes: bos_token / eos_token (the vocabulary's pieces) and
    add_generation_prompt."""
    import datetime

    chat_tests = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "engine", "chat")
    if chat_tests not in sys.path:
        sys.path.insert(0, chat_tests)
    import render_family_templates as rft

    env = rft.make_environment(datetime.datetime(*CHAT_FIXED_NOW))
    return env.from_string(template).render(messages=messages, tools=None, documents=None, add_generation_prompt=True,
                                            bos_token=spec["bos"], eos_token=spec["eos"])


def chat_entries(name, config):
    """[(GGUF name, HF name, shape outermost first, init)] and the HF float32 -> GGUF float32 transform
    of each architecture's F32 fixture above (interleaved Q/K rows for llama / smollm3, 1 + w norms for
    Gemma), plus a sampler for its init names."""
    if name in ("llama3", "smollm3"):
        plan = tensor_plan(config)
        if config["tie_word_embeddings"]:
            plan = [e for e in plan if e[0] != "output.weight"]
        entries = [(g, h, shape, ("output" if init == "embed" and config["tie_word_embeddings"] else init), heads)
                   for g, h, shape, _, init, heads in plan]
        return entries, (lambda w, heads: rope_interleave(w, heads) if heads else w)
    if name == "qwen3":
        return [(g, hs[0], dims, init, 0) for g, hs, dims, init in qwen3_tensor_plan(config)], (lambda w, heads: w)
    if name == "gemma3":
        entries = [(g, h, shape, "gemma_" + init, 0) for g, h, shape, init in gemma_tensor_plan(config)]
        return entries, None  # norms: float32(1 + w), see chat_weights
    return [(g, h, shape, init, 0) for g, h, shape, init in phi3_tensor_plan(config)], (lambda w, heads: w)


def chat_init(rng, shape, init):
    if init == "gemma_norm":
        return GEMMA_NORM_STD * rng.standard_normal(shape)
    if init == "gemma_embed":
        return GEMMA_EMBED_STD["gemma3"] * rng.standard_normal(shape)
    if init == "gemma_linear":
        return rng.standard_normal(shape) / np.sqrt(shape[1])
    return init_weight(rng, shape, init)


def chat_config(name, vocab):
    n = len(vocab)
    if name == "llama3":
        return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu", "vocab_size": n,
                "max_position_embeddings": CHAT_CONTEXT, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
                "rope_scaling": dict(LLAMA3_SCALING, original_max_position_embeddings=8192),
                "tie_word_embeddings": False, **LLAMA3}
    if name == "qwen3":
        return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_act": "silu", "vocab_size": n,
                "max_position_embeddings": CHAT_CONTEXT, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
                "tie_word_embeddings": False, **QWEN3}
    if name == "smollm3":
        layers = SMOLLM3["num_hidden_layers"]
        return {"architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3", "hidden_act": "silu",
                "vocab_size": n, "max_position_embeddings": CHAT_CONTEXT, "rms_norm_eps": 1e-6,
                "rope_theta": 5000000.0, "tie_word_embeddings": True, "no_rope_layer_interval": 4,
                "no_rope_layers": [int((l + 1) % 4 != 0) for l in range(layers)], **SMOLLM3}
    if name == "gemma3":
        c = gemma_config("gemma3", vocab)
        return dict(c, vocab_size=n, num_hidden_layers=2, max_position_embeddings=CHAT_CONTEXT,
                    sliding_window=CHAT_CONTEXT)  # both layers sliding (pattern 6), the window the whole context
    if name == "gpt_oss":
        return dict(gpt_oss_config(vocab), vocab_size=n, max_position_embeddings=CHAT_CONTEXT)
    c = phi3_config("phi4mini", vocab, None, None)
    return dict(c, vocab_size=n, max_position_embeddings=CHAT_CONTEXT, original_max_position_embeddings=CHAT_CONTEXT)


def chat_weights(name, spec, config, vocab, types, rng):
    """Random F32 weights with the output path (CHAT_MARK...): the HF tensors as float64 arrays
    (float32 values) and the GGUF tensors."""
    import make_reference_models as mrm

    entries, transform = chat_entries(name, config)
    hf = {}
    for _, hf_name, shape, init, _ in entries:
        hf[hf_name] = chat_init(rng, shape, init).astype(np.float32).astype(np.float64)
    d = config["hidden_size"]
    j = CHAT_MARK_DIM % d
    tied = config["tie_word_embeddings"]
    embed = hf["model.embed_tokens.weight"]
    head = embed if tied else hf["lm_head.weight"]
    embed_scale = float(np.float32(np.sqrt(d))) if name == "gemma3" else 1.0
    triggers = [vocab[p] for p in mrm.SINGLE_CHARS]
    ordinary = set(vocab[p] for p in mrm.MERGED_PIECES) | set(triggers)
    eot = vocab[spec["eot"]]
    for i in range(len(vocab)):
        if i not in ordinary:
            head[i] *= CHAT_SUPPRESS
    embed[:, j] = 0.0
    embed[triggers, j] = CHAT_MARK / embed_scale
    if tied:
        # The second marker, against a tied head's echo: it reads a merged-piece input and favours a trigger.
        j2 = (CHAT_MARK_DIM - 1) % d
        merged = [vocab[p] for p in mrm.MERGED_PIECES]
        embed[:, j2] = 0.0
        embed[merged, j2] = CHAT_MARK / embed_scale
        embed[triggers, j2] = CHAT_ANTI_ECHO / embed_scale
    if not tied:
        head[eot] = 0.0
    head[eot, j] = CHAT_EOT_HEAD["tied" if tied else "untied"]
    for key, w in hf.items():
        if key.endswith("self_attn.o_proj.weight") or key.endswith("mlp.down_proj.weight"):
            w[j] = 0.0
            if tied:
                w[j2] = 0.0
    for key in hf:
        hf[key] = hf[key].astype(np.float32).astype(np.float64)
    gguf_tensors = []
    for gguf_name, hf_name, shape, init, heads in entries:
        w32 = hf[hf_name].astype("<f4")
        if name == "gemma3":
            stored = (w32 + np.float32(1.0)).astype("<f4") if init == "gemma_norm" else w32
        else:
            stored = transform(w32, heads)
        gguf_tensors.append((gguf_name, GGML_F32, list(reversed(shape)), np.ascontiguousarray(stored).tobytes()))
    return hf, gguf_tensors, triggers, ordinary


def chat_gpt_oss_weights(spec, config, vocab, rng):
    """gpt_oss_weights with chat_weights' output path (untied head): the marker dimension zero in every
    embedding but the triggers', in every o_proj row and bias, every expert's down row and down bias.
    (HF tensors as float64, the F32 GGUF tensors, triggers, ordinary ids.)"""
    import make_reference_models as mrm

    hf32, experts = gpt_oss_weights(rng, config)
    j = CHAT_MARK_DIM % config["hidden_size"]
    # The generation prompt ends in "<|start|>assistant", whose last toy piece "t" would end the turn
    # before it starts: not a trigger here.
    triggers = [vocab[p] for p in mrm.SINGLE_CHARS if p not in spec["not_triggers"]]
    ordinary = set(vocab[p] for p in mrm.MERGED_PIECES) | set(triggers)
    eot = vocab[spec["eot"]]
    embed, head = hf32["model.embed_tokens.weight"], hf32["lm_head.weight"]
    for i in range(len(vocab)):
        if i not in ordinary:
            head[i] *= CHAT_SUPPRESS
    embed[:, j] = 0.0
    embed[triggers, j] = CHAT_MARK
    head[eot] = 0.0
    head[eot, j] = CHAT_EOT_HEAD["untied"]
    for key, w in hf32.items():
        if key.endswith(("self_attn.o_proj.weight", "self_attn.o_proj.bias")):
            w[j] = 0.0
        elif key.endswith("mlp.experts.down_proj"):  # [E, ff, hidden]
            w[:, :, j] = 0.0
        elif key.endswith("mlp.experts.down_proj_bias"):  # [E, hidden]
            w[:, j] = 0.0
    hf = {k: v.astype(np.float64) for k, v in hf32.items()}
    return hf, gpt_oss_gguf_tensors(hf32, experts, mxfp4=False), triggers, ordinary


def chat_reference(name, config, hf):
    if name == "gpt_oss":  # the GGUF runs with llama.cpp's YaRN rule (the correction range rounded outward)
        import hf_gpt_oss_reference as ref
        return ref.HfGptOss(config, hf, truncate=True)
    if name in ("llama3", "qwen3", "smollm3"):
        import hf_llama_reference as ref
        return ref.HfLlama(config, hf)
    if name == "gemma3":
        import hf_gemma_reference as ref
        return ref.HfGemma(config, hf)
    import hf_phi3_reference as ref
    return ref.HfPhi3(config, hf)


def chat_greedy(model, prompt, eot, max_new):
    """Greedy picks until the end-of-turn token (excluded) or max_new: (ids, margins, ended)."""
    ids, out, margins = list(prompt), [], []
    for _ in range(max_new + 1):
        row = model.logits(ids)[-1]
        best = int(np.argmax(row))
        margins.append(float(row[best] - np.partition(row, -2)[-2]))
        if best == eot:
            return out, margins, True
        out.append(best)
        ids.append(best)
    return out, margins, False


def write_family_chat(out_dir, name, shared):
    """OUT_DIR/chat_<name>/: model.gguf and expected.json."""
    import make_reference_models as mrm

    spec = CHAT_FAMILIES[name]
    template = chat_read_template(shared, spec)
    vocab, types = chat_vocab(spec)
    merges = mrm.build_merges(mrm.build_vocab())
    config = chat_config(name, vocab)
    eot = vocab[spec["eot"]]
    first = SEED + 101 + 10 * list(CHAT_FAMILIES).index(name)
    for seed in range(first, first + 64):
        rng = np.random.default_rng(seed)
        extra = None
        if name == "phi4mini":
            n_factors = int(config["hidden_size"] // config["num_attention_heads"] *
                            config["partial_rotary_factor"]) // 2
            short, long = phi3_factors(rng, n_factors)
            config["rope_scaling"] = {"type": "longrope", "short_factor": short, "long_factor": long}
            extra = [("rope_factors_long.weight", GGML_F32, [n_factors], np.asarray(long, dtype="<f4").tobytes()),
                     ("rope_factors_short.weight", GGML_F32, [n_factors], np.asarray(short, dtype="<f4").tobytes())]
        if name == "gpt_oss":
            hf, gguf_tensors, triggers, ordinary = chat_gpt_oss_weights(spec, config, vocab, rng)
        else:
            hf, gguf_tensors, triggers, ordinary = chat_weights(name, spec, config, vocab, types, rng)
        model = chat_reference(name, config, hf)
        messages = [{"role": "system", "content": CHAT_SYSTEM}]
        turns, ok = [], True
        for user in CHAT_USER_TURNS:
            messages = messages + [{"role": "user", "content": user}]
            text = chat_render(template, spec, messages)
            ids = chat_encode(text, spec, vocab, types, merges)
            reply, margins, ended = chat_greedy(model, ids, eot, CHAT_MAX_REPLY)
            ok = (ended and 1 <= len(reply) and all(t in ordinary for t in reply) and reply[-1] in triggers
                  and min(margins[:-1]) >= CHAT_MIN_MARGIN and margins[-1] >= CHAT_MIN_EOT_MARGIN)
            if not ok:
                break
            reply_text = chat_decode(reply, vocab)
            turns.append({"messages": messages, "prompt_text": text, "prompt_ids": ids, "reply_ids": reply,
                          "reply_text": reply_text, "margins": margins})
            messages = messages + [{"role": "assistant", "content": reply_text}]
        if ok and sum(len(t["reply_ids"]) for t in turns) >= CHAT_MIN_REPLY_TOKENS:
            break
    else:
        raise AssertionError("chat_%s: no seed gives replies that end on the end-of-turn token" % name)

    if name == "llama3":
        import hf_llama_reference as hl
        divisors = (hl.default_inv_freq(config) / hl.llama3_inv_freq(config)).astype("<f4")
        extra = [("rope_freqs.weight", GGML_F32, [len(divisors)], divisors.tobytes())]
    if name == "gemma3":
        metadata = gemma_gguf_header("gemma3", "cflow tiny Gemma 3 chat (test fixture)", config)
    elif name == "gpt_oss":
        metadata = gpt_oss_gguf_header("cflow tiny gpt-oss chat (test fixture)", config)
    elif name == "phi4mini":
        import hf_phi3_reference as hp
        metadata = phi3_gguf_header("cflow tiny Phi-4-mini chat (test fixture)", config, hp.attention_factor(config))
    else:
        metadata = gguf_header(spec["arch"], "cflow tiny %s chat (test fixture)" % spec["family"], config)
    metadata += chat_tokenizer_metadata(spec, vocab, types, merges, template)
    d = os.path.join(out_dir, "chat_" + name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.gguf"), "wb") as f:
        f.write(gguf_bytes(metadata, (extra or []) + gguf_tensors))
    engine_types = spec.get("engine_types", {})
    specials = {p: {"id": vocab[p], "type": types[vocab[p]], "engine_type": engine_types.get(p, types[vocab[p]])}
                for p, _ in spec["tokens"]}
    out = {"family": spec["family"], "architecture": spec["arch"], "template": spec["template"][0],
           "template_key": spec["template"][1], "bos_id": vocab[spec["bos"]], "eos_id": vocab[spec["eos"]],
           "eot_id": eot, "end_of_turn_ids": [vocab[p] for p in spec["end_of_turn"]],
           "stop_reason": "end_of_generation" if spec["eot"] == spec["eos"] else "stop_token",
           "special_tokens": specials, "trigger_ids": triggers, "system": CHAT_SYSTEM, "users": CHAT_USER_TURNS,
           "context_length": CHAT_CONTEXT, "turns": turns, "seed": seed,
           "template_time": "%04d-%02d-%02d %02d:%02d:%02d" % CHAT_FIXED_NOW}
    with open(os.path.join(d, "expected.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(out, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    return out


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = args[0]
    n = write_blocks(out_dir)
    print("blocks: %d cases in %s" % (n, os.path.join(out_dir, "blocks")))
    ref = write_llama_kquant(out_dir)
    print("llama_kquant: %d tokens, min top-2 logit margin %.3g" % (len(ref["tokens"]), ref["min_top2_margin"]))
    for name, shape in (("qwen3", QWEN3), ("qwen3moe", QWEN3_MOE)):
        q = write_qwen3(out_dir, name, shape)
        print("%s: %d tokens, greedy margin %.3g (seed %d)" % (name, len(q["tokens"]), q["min_greedy_margin"], q["seed"]))
    sm = write_smollm3(out_dir)
    print("smollm3: %d tokens, RoPE on every layer would be %.3g off, greedy margin %.3g (seed %d)" %
          (len(sm["tokens"]), sm["all_rope_rel_l2"], sm["min_greedy_margin"], sm["seed"]))
    l3 = write_llama3_rope(out_dir)
    print("llama3_rope: %d tokens, plain RoPE would be %.3g off (rel L2), greedy margin %.3g" %
          (len(l3["tokens"]), l3["plain_rope_rel_l2"], l3["min_greedy_margin"]))
    for arch in ("gemma2", "gemma3"):
        g = write_gemma(out_dir, arch)
        checks = ", ".join("%s %.3g" % (k[:-len("_rel_l2")], v) for k, v in sorted(g.items()) if k.endswith("_rel_l2"))
        print("%s: %d tokens, greedy margin %.3g (seed %d); wrong-rule rel L2: %s" %
              (arch, len(g["tokens"]), g["min_greedy_margin"], g["seed"], checks))
        if "qscale" in g:
            q = g["qscale"]
            print("%s/hf_qscale: query_pre_attn_scalar %d, 1/sqrt(head_dim) would be %.3g off, greedy margin %.3g" %
                  (arch, q["query_pre_attn_scalar"], q["head_dim_scale_rel_l2"], q["min_greedy_margin"]))
    for name in PHI3_VARIANTS:
        p = write_phi3(out_dir, name)
        checks = ", ".join("%s %.3g" % (k[:-len("_rel_l2")], v) for k, v in sorted(p.items()) if k.endswith("_rel_l2"))
        print("%s: %d + %d tokens, rotary dims %d, attention factor %.6f, greedy margin %.3g (seed %d); "
              "wrong-rule rel L2: %s" % (name, len(p["tokens"]), len(p["tokens_long"]), p["rotary_dim"],
                                         p["attention_factor"], p["min_greedy_margin"], p["seed"], checks))
    g = write_gpt_oss(out_dir)
    checks = ", ".join("%s %.3g" % (k[:-len("_rel_l2")], v) for k, v in sorted(g.items()) if k.endswith("_rel_l2"))
    print("gpt_oss: %d tokens, greedy margin %.3g, router margin %.3g, clamped %.2g%% (seed %d); "
          "wrong-rule rel L2: %s" % (len(g["tokens"]), g["min_greedy_margin"], g["min_router_margin"],
                                     100 * g["clamped_share"], g["seed"], checks))
    shared = shared_dir()
    if not os.path.isdir(os.path.join(shared, "assets")):
        print("chat_*: %s/assets not found, the family chat fixtures are not written (their tests skip)" % shared)
        return 0
    for name in CHAT_FAMILIES:
        c = write_family_chat(out_dir, name, shared)
        print("chat_%s: %s, prompts of %s tokens, replies of %s tokens then %s (seed %d)" % (
            name, c["family"], "/".join(str(len(t["prompt_ids"])) for t in c["turns"]),
            "/".join(str(len(t["reply_ids"])) for t in c["turns"]), c["stop_reason"], c["seed"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
