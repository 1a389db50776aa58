"""An independent float64 forward pass of Hugging Face's Phi3ForCausalLM (Phi-3 / Phi-3.5-mini and
Phi-4-mini, which is the same class with partial_rotary_factor 0.75 and a tied head), in numpy.

Written from transformers' own code:
- src/transformers/models/phi3/modeling_phi3.py (stored snapshot 00d4b3d2, transformers v5 dev; the
  v4.4x file's Phi3LongRoPEScaledRotaryEmbedding picks the factors by the same rule): Phi3RMSNorm
  (x * rsqrt(mean(x^2) + eps) * w), Phi3Attention (one fused qkv_proj of (H + 2 Hkv) * head_dim rows:
  query rows first, then key rows, then value rows; head_dim = hidden_size // num_attention_heads;
  scaling head_dim**-0.5), apply_rotary_pos_emb (rotary_dim =
  cos.shape[-1]: the first rotary_dim dims of every head rotate with rotate_half, split-half / NEOX;
  the rest pass unchanged), repeat_kv, Phi3MLP (one fused gate_up_proj of 2 * intermediate_size rows,
  chunk(2): the first half is the gate, the second the up projection; down(up * silu(gate))),
  Phi3DecoderLayer (x += attn(input_layernorm(x)); x += mlp(post_attention_layernorm(x)); dropouts are
  0), Phi3Model (final norm), Phi3ForCausalLM (lm_head, tied to embed_tokens when
  tie_word_embeddings), Phi3RotaryEmbedding.forward (cos and sin of cat(freqs, freqs), each times
  attention_scaling), Phi3ForCausalLM.prepare_inputs_for_generation (drops the KV cache when the
  sequence first passes original_max_position_embeddings, so a generation never mixes factor sets).
- src/transformers/modeling_rope_utils.py (stored snapshot ef468064, v4.48-era):
  _compute_longrope_parameters: dim = int(head_dim * partial_rotary_factor); with
  original_max_position_embeddings in the config, factor = max_position_embeddings /
  original_max_position_embeddings and, unless rope_scaling has attention_factor, attention_factor =
  sqrt(1 + ln(factor) / ln(original_max_position_embeddings)) (1.0 when factor <= 1); ext_factors =
  long_factor if seq_len > original_max_position_embeddings else short_factor;
  inv_freq = 1 / (ext_factors * base^(arange(0, dim, 2) / dim)). dynamic_rope_update's
  longrope_frequency_update: seq_len = max(position_ids) + 1, long factors when seq_len >
  original_max_position_embeddings, else the init-time (short) ones. So one causal pass over T tokens
  uses the long factors at every position when T > original_max_position_embeddings, the short
  factors at every position otherwise; the attention factor is the same for both sets.
- configuration_phi3.py (stored snapshot 008e5743): rotary_ndims = hidden_size // num_attention_heads *
  partial_rotary_factor, short_factor / long_factor must have rotary_ndims // 2 entries, rope type
  "longrope" ("su" / "yarn" are old names of it).
It shares no code with hf_llama_reference.py, hf_gemma_reference.py or cflow_reference.py.

Everything runs in float64 on the checkpoint's float32 weights and float32 factors (the factors are
float32 values in both the HF config and the GGUF, so both readers see the same numbers).

Flags to compute what a wrong engine would give (for the fixture's sanity numbers): factor_set
("short" / "long" instead of the sequence-length rule), attn_factor (a number instead of the
config's), rot_dims (rotate another number of dims; missing factors are 1.0),
attn_factor_on_pass_dims (multiply the non-rotated dims of q and k by the attention factor too).
"""
import math

import numpy as np

import greedy_decode


def rms_norm(x, weight, eps):
    """Phi3RMSNorm: x * rsqrt(mean(x^2) + eps) * w."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def silu(x):
    return x / (1.0 + np.exp(-x))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def head_dim(config):
    """Phi3Attention: hidden_size // num_attention_heads (an explicit head_dim key wins)."""
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def rotary_dim(config):
    """int(head_dim * partial_rotary_factor): how many dims of each head rotate."""
    return int(head_dim(config) * config.get("partial_rotary_factor", 1.0))


def rope_type(config):
    rs = config.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    return "longrope" if kind in ("su", "yarn") else kind  # Phi3Config's backward-compatible names


def attention_factor(config):
    """_compute_longrope_parameters' attention_factor (1.0 without longrope scaling)."""
    if rope_type(config) != "longrope":
        return 1.0
    rs = config["rope_scaling"]
    if rs.get("attention_factor") is not None:
        return float(rs["attention_factor"])
    if "original_max_position_embeddings" in config:
        original = config["original_max_position_embeddings"]
        factor = config["max_position_embeddings"] / original
    else:
        original = config["max_position_embeddings"]
        factor = rs.get("factor", 1.0)
    return 1.0 if factor <= 1.0 else math.sqrt(1.0 + math.log(factor) / math.log(original))


def factor_set_for(config, seq_len):
    """longrope_frequency_update: "long" when seq_len > original_max_position_embeddings."""
    original = config.get("original_max_position_embeddings", config["max_position_embeddings"])
    return "long" if seq_len > original else "short"


def inv_freq(config, factor_set, dim=None):
    """1 / (ext_factor_i * base^(2i / dim)), i < dim / 2 (no factors without longrope scaling). With
    dim larger than the factor lists, the missing factors are 1.0 (only for the sanity numbers)."""
    dim = rotary_dim(config) if dim is None else dim
    base = config["rope_theta"]
    exponents = np.arange(0, dim, 2, dtype=np.float64) / dim
    factors = np.ones(dim // 2)
    if rope_type(config) == "longrope":
        given = np.asarray(config["rope_scaling"][factor_set + "_factor"], dtype=np.float64)
        n = min(len(given), dim // 2)
        factors[:n] = given[:n]
    return 1.0 / (factors * base ** exponents)


class HfPhi3:
    """Phi3ForCausalLM. tensors: HF names -> float64 arrays (model.embed_tokens.weight,
    model.layers.N.self_attn.qkv_proj.weight, model.layers.N.mlp.gate_up_proj.weight, ...)."""

    def __init__(self, config, tensors, factor_set=None, attn_factor=None, rot_dims=None,
                 attn_factor_on_pass_dims=False):
        self.c = config
        self.t = tensors
        self.head_dim = head_dim(config)
        self.rotary_dim = rotary_dim(config) if rot_dims is None else rot_dims
        self.factor_set = factor_set  # None: the sequence-length rule of transformers
        self.attention_factor = attention_factor(config) if attn_factor is None else attn_factor
        self.attn_factor_on_pass_dims = attn_factor_on_pass_dims

    def rope(self, n):
        """cos, sin [T x rotary_dim] for positions 0..n-1 of one pass over n tokens."""
        which = self.factor_set or factor_set_for(self.c, n)
        freqs = np.arange(n, dtype=np.float64)[:, None] * inv_freq(self.c, which, self.rotary_dim)[None, :]
        emb = np.concatenate([freqs, freqs], axis=-1)
        return np.cos(emb) * self.attention_factor, np.sin(emb) * self.attention_factor

    def apply_rope(self, x, cos, sin):
        """x [heads x T x dk]: the first rotary_dim dims rotate (split-half), the rest pass."""
        rot = cos.shape[-1]
        x_rot, x_pass = x[..., :rot], x[..., rot:]
        if self.attn_factor_on_pass_dims:
            x_pass = x_pass * self.attention_factor
        return np.concatenate([x_rot * cos + rotate_half(x_rot) * sin, x_pass], axis=-1)

    def logits(self, token_ids):
        """Logits [T x vocab] at every position of one causal pass over token_ids."""
        c, t, dk = self.c, self.t, self.head_dim
        hq, hkv, eps, ff = c["num_attention_heads"], c["num_key_value_heads"], c["rms_norm_eps"], c["intermediate_size"]
        n = len(token_ids)
        embed = t["model.embed_tokens.weight"]
        x = embed[np.asarray(token_ids)]  # [T x d]; Phi-3 does not scale the embedding
        cos, sin = self.rope(n)
        mask = np.triu(np.full((n, n), -np.inf), k=1)
        for layer in range(c["num_hidden_layers"]):
            p = "model.layers.%d." % layer
            h = rms_norm(x, t[p + "input_layernorm.weight"], eps)
            qkv = h @ t[p + "self_attn.qkv_proj.weight"].T  # [T x (Hq + 2 Hkv) dk]
            q = qkv[:, : hq * dk].reshape(n, hq, dk).transpose(1, 0, 2)  # [Hq x T x dk]
            k = qkv[:, hq * dk : (hq + hkv) * dk].reshape(n, hkv, dk).transpose(1, 0, 2)
            v = qkv[:, (hq + hkv) * dk :].reshape(n, hkv, dk).transpose(1, 0, 2)
            q, k = self.apply_rope(q, cos, sin), self.apply_rope(k, cos, sin)
            k = np.repeat(k, hq // hkv, axis=0)  # repeat_kv: query head h reads KV head h // (Hq / Hkv)
            v = np.repeat(v, hq // hkv, axis=0)
            scores = q @ k.transpose(0, 2, 1) * dk ** -0.5 + mask  # [Hq x T x T]
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            attn = (scores / scores.sum(axis=-1, keepdims=True)) @ v
            x = x + attn.transpose(1, 0, 2).reshape(n, hq * dk) @ t[p + "self_attn.o_proj.weight"].T
            h = rms_norm(x, t[p + "post_attention_layernorm.weight"], eps)
            gate_up = h @ t[p + "mlp.gate_up_proj.weight"].T  # [T x 2 ff]: gate, then up
            gate, up = gate_up[:, :ff], gate_up[:, ff:]
            x = x + (up * silu(gate)) @ t[p + "mlp.down_proj.weight"].T
        x = rms_norm(x, t["model.norm.weight"], eps)
        head = embed if c.get("tie_word_embeddings") else t["lm_head.weight"]
        return x @ head.T

    def greedy(self, prompt, n_new):
        """Greedy continuation (ties to the lowest id) and the top-2 margin of each pick; every step
        is a fresh pass over the whole prefix (what transformers' generate computes, its KV cache
        being dropped when the prefix first passes original_max_position_embeddings)."""
        return greedy_decode.greedy(self.logits, prompt, n_new)
