"""An independent float64 forward pass of Hugging Face's Gemma2ForCausalLM and Gemma3ForCausalLM
(the text model), in numpy.

Written from transformers' own code:
- src/transformers/models/gemma2/modeling_gemma2.py (transformers v4.47, commit 006e8693):
  Gemma2RMSNorm (x / sqrt(mean(x^2) + eps) * (1 + w), the stored weight is w), Gemma2MLP
  (down(act(gate) * up), act = hidden_activation "gelu_pytorch_tanh"), Gemma2RotaryEmbedding +
  rotate_half (split-half RoPE over all head_dim), repeat_kv, eager_attention_forward (scores *
  query_pre_attn_scalar**-0.5, then tanh soft-capping by attn_logit_softcapping, then the mask),
  Gemma2Attention / Gemma2DecoderLayer (sliding window on layers with layer_idx % 2 == 0; the
  sliding mask tril(ones, diagonal=-sliding_window) hides keys with q_pos - k_pos >= sliding_window;
  post_attention_layernorm on the attention output and post_feedforward_layernorm on the MLP
  output, each before its residual add; pre_feedforward_layernorm before the MLP), Gemma2Model
  (embeddings * hidden_size**0.5 in the activation dtype, final norm), Gemma2ForCausalLM (tied
  lm_head, final_logit_softcapping: tanh(logits / c) * c).
- src/transformers/models/gemma3/modeling_gemma3.py (stored snapshot 0018aa64, transformers v5 dev)
  and configuration_gemma3.py (v4.50, commit 008f5c8c): Gemma3TextScaledWordEmbedding (embed_scale
  hidden_size**0.5 cast to the weight dtype), Gemma3Attention (q_norm / k_norm, Gemma RMSNorms over
  head_dim, on every query / key head before RoPE; scaling query_pre_attn_scalar**-0.5), layer
  types: config.layer_types, else "sliding_attention" where (i + 1) % sliding_window_pattern != 0;
  Gemma3RotaryEmbedding per layer type: sliding layers use rope_local_base_freq with the default
  (unscaled) inverse frequencies, full layers rope_theta with config.rope_scaling
  (modeling_rope_utils._compute_linear_scaling_rope_parameters: inv_freq / factor); masking_utils'
  sliding window keeps kv_idx > q_idx - sliding_window (the same set as Gemma 2).
It shares no code with hf_llama_reference.py or cflow_reference.py.

Everything runs in float64 on the checkpoint's float32 weights; the embedding scale is
float32(sqrt(hidden_size)), as transformers (and llama.cpp's sqrtf) compute it for an F32 checkpoint.

Flags to compute what a wrong engine would give (for the fixture's sanity numbers):
sliding=False (every layer attends to the whole causal prefix), local_rope=False (sliding layers use
the global base and scaling), window=N (another sliding window), norm_offset=0.0 (w instead of
1 + w). Soft-caps, rope_scaling and query_pre_attn_scalar are changed through the config.
"""
import math

import numpy as np

import greedy_decode

SLIDING, FULL = "sliding_attention", "full_attention"


def gemma_rms_norm(x, weight, eps, offset=1.0):
    """Gemma{2,3}RMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w)."""
    variance = np.mean(x * x, axis=-1, keepdims=True)
    return (x / np.sqrt(variance + eps)) * (offset + weight)


def gelu_tanh(x):
    """ACT2FN["gelu_pytorch_tanh"]: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def softcap(x, cap):
    return np.tanh(x / cap) * cap


def is_gemma3(config):
    return config.get("model_type", "").startswith("gemma3")


def layer_types(config):
    """The attention type of every layer, as the modeling code decides it."""
    n = config["num_hidden_layers"]
    if config.get("layer_types"):
        types = list(config["layer_types"])
        assert len(types) == n and set(types) <= {SLIDING, FULL}, types
        return types
    if is_gemma3(config):
        pattern = config.get("sliding_window_pattern", 6)
        return [SLIDING if (i + 1) % pattern else FULL for i in range(n)]
    return [SLIDING if i % 2 == 0 else FULL for i in range(n)]  # Gemma 2: not bool(layer_idx % 2)


def default_inv_freq(base, dim):
    """_compute_default_rope_parameters: 1 / base^(2i/dim), i < dim/2."""
    return 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))


def scaled_inv_freq(base, dim, rope_scaling):
    rs = rope_scaling or {}
    rope_type = rs.get("rope_type", rs.get("type", "default"))
    inv_freq = default_inv_freq(base, dim)
    if rope_type == "default":
        return inv_freq
    if rope_type == "linear":
        return inv_freq / rs["factor"]
    raise ValueError("rope_scaling type %r is not in this reference" % rope_type)


def rope_params(config, layer_type):
    """(base, rope_scaling) of a layer type. Gemma 3: config.rope_parameters[layer_type] when the
    config has the per-type form, else sliding = (rope_local_base_freq, none), full = (rope_theta,
    rope_scaling). Gemma 2: (rope_theta, none) everywhere."""
    per_type = config.get("rope_parameters")
    if isinstance(per_type, dict) and layer_type in per_type:
        p = per_type[layer_type]
        return p["rope_theta"], p
    if is_gemma3(config):
        if layer_type == SLIDING:
            return config.get("rope_local_base_freq", 10000.0), None
        return config["rope_theta"], config.get("rope_scaling")
    return config.get("rope_theta", 10000.0), None


class HfGemma:
    """Gemma2ForCausalLM / Gemma3ForCausalLM. tensors: HF names -> float64 arrays
    (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, ...)."""

    def __init__(self, config, tensors, sliding=True, local_rope=True, window=None, norm_offset=1.0):
        self.c = config
        self.t = tensors
        self.head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        self.types = layer_types(config)
        self.sliding = sliding
        self.window = config["sliding_window"] if window is None else window
        self.norm_offset = norm_offset
        self.inv_freq = {}
        for lt in (SLIDING, FULL):
            base, scaling = rope_params(config, FULL if (lt == SLIDING and not local_rope) else lt)
            self.inv_freq[lt] = scaled_inv_freq(base, self.head_dim, scaling)
        self.scaling = config["query_pre_attn_scalar"] ** -0.5

    def norm(self, x, name):
        return gemma_rms_norm(x, self.t[name], self.c["rms_norm_eps"], self.norm_offset)

    def logits(self, token_ids):
        """Logits [T x vocab] at every position of one causal pass over token_ids."""
        c, t, dk = self.c, self.t, self.head_dim
        hq, hkv = c["num_attention_heads"], c["num_key_value_heads"]
        n = len(token_ids)
        embed = t["model.embed_tokens.weight"]
        x = embed[np.asarray(token_ids)] * float(np.float32(math.sqrt(c["hidden_size"])))  # [T x d]
        pos = np.arange(n, dtype=np.float64)
        rel = pos[:, None] - pos[None, :]  # q_pos - k_pos
        masks = {FULL: np.where(rel >= 0, 0.0, -np.inf)}
        masks[SLIDING] = np.where((rel >= 0) & (rel < self.window), 0.0, -np.inf) if self.sliding else masks[FULL]
        rope = {}
        for lt, inv_freq in self.inv_freq.items():
            freqs = pos[:, None] * inv_freq[None, :]
            emb = np.concatenate([freqs, freqs], axis=-1)  # [T x dk]
            rope[lt] = (np.cos(emb), np.sin(emb))
        attn_cap = c.get("attn_logit_softcapping")
        for layer, lt in enumerate(self.types):
            p = "model.layers.%d." % layer
            h = self.norm(x, p + "input_layernorm.weight")
            q = (h @ t[p + "self_attn.q_proj.weight"].T).reshape(n, hq, dk).transpose(1, 0, 2)  # [Hq x T x dk]
            k = (h @ t[p + "self_attn.k_proj.weight"].T).reshape(n, hkv, dk).transpose(1, 0, 2)
            v = (h @ t[p + "self_attn.v_proj.weight"].T).reshape(n, hkv, dk).transpose(1, 0, 2)
            if p + "self_attn.q_norm.weight" in t:  # Gemma 3
                q = self.norm(q, p + "self_attn.q_norm.weight")
                k = self.norm(k, p + "self_attn.k_norm.weight")
            cos, sin = rope[lt]
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = np.repeat(k, hq // hkv, axis=0)  # repeat_kv: query head h reads KV head h // (Hq / Hkv)
            v = np.repeat(v, hq // hkv, axis=0)
            scores = (q @ k.transpose(0, 2, 1)) * self.scaling  # [Hq x T x T]
            if attn_cap is not None:
                scores = softcap(scores, attn_cap)
            scores = scores + masks[lt]
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            attn = (scores / scores.sum(axis=-1, keepdims=True)) @ v  # [Hq x T x dk]
            attn = attn.transpose(1, 0, 2).reshape(n, hq * dk) @ t[p + "self_attn.o_proj.weight"].T
            x = x + self.norm(attn, p + "post_attention_layernorm.weight")
            h = self.norm(x, p + "pre_feedforward_layernorm.weight")
            mlp = (gelu_tanh(h @ t[p + "mlp.gate_proj.weight"].T) * (h @ t[p + "mlp.up_proj.weight"].T)) \
                @ t[p + "mlp.down_proj.weight"].T
            x = x + self.norm(mlp, p + "post_feedforward_layernorm.weight")
        x = self.norm(x, "model.norm.weight")
        head = embed if c.get("tie_word_embeddings", True) else t["lm_head.weight"]
        out = x @ head.T
        if c.get("final_logit_softcapping") is not None:
            out = softcap(out, c["final_logit_softcapping"])
        return out

    def greedy(self, prompt, n_new):
        """Greedy continuation (ties to the lowest id) and the top-2 margin of each pick."""
        return greedy_decode.greedy(self.logits, prompt, n_new)
