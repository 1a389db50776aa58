"""An independent float64 forward pass of Hugging Face's LlamaForCausalLM, Qwen3ForCausalLM and
Qwen3MoeForCausalLM, in numpy.

Written from transformers v4.51: src/transformers/models/llama/modeling_llama.py (LlamaRMSNorm,
LlamaRotaryEmbedding, rotate_half, apply_rotary_pos_emb, repeat_kv, LlamaAttention with eager
attention and the causal mask, LlamaMLP with silu, the tied or separate lm_head),
src/transformers/modeling_rope_utils.py (_compute_default_rope_parameters,
_compute_llama3_parameters), src/transformers/models/qwen3/modeling_qwen3.py (Qwen3Attention:
RMSNorm of each query and key head over head_dim before RoPE; head_dim from the config, not
hidden_size / heads) and src/transformers/models/qwen3_moe/modeling_qwen3_moe.py
(Qwen3MoeSparseMoeBlock: softmax over all experts, top-k, renormalised when norm_topk_prob) and
src/transformers/models/smollm3/modeling_smollm3.py (SmolLM3Attention: RoPE only where
config.no_rope_layers[layer] is 1). It shares no code with cflow_reference.py (the PyTorch reference of
the engine's combine styles), so the engine is checked against the family's own definition.

Everything runs in float64 on the checkpoint's float32 weights: the logits are the exact result
of the checkpoint's math, and an f32 engine is compared against them with a tolerance.
"""
import math

import numpy as np

import greedy_decode


def default_inv_freq(config):
    """_compute_default_rope_parameters: 1 / base^(2i/dim) over the rotary dims."""
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    dim = int(head_dim * config.get("partial_rotary_factor", 1.0))
    return 1.0 / (config["rope_theta"] ** (np.arange(0, dim, 2, dtype=np.float64) / dim))


def llama3_inv_freq(config):
    """_compute_llama3_parameters: long wavelengths divided by factor, short ones kept, the band
    between original_max_position_embeddings / high_freq_factor and .. / low_freq_factor smoothed."""
    inv_freq = default_inv_freq(config)
    rs = config["rope_scaling"]
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old_context_len = rs["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low
    high_freq_wavelen = old_context_len / high
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low) / (high - low)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return np.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def inv_freq_of(config):
    rs = config.get("rope_scaling")
    rope_type = (rs or {}).get("rope_type", (rs or {}).get("type", "default"))
    if rope_type == "default":
        return default_inv_freq(config)
    if rope_type == "llama3":
        return llama3_inv_freq(config)
    raise ValueError("rope_scaling type %r is not in this reference" % rope_type)


def rms_norm(x, weight, eps):
    variance = np.mean(x * x, axis=-1, keepdims=True)
    return weight * (x / np.sqrt(variance + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rotary(x, cos, sin):
    """x [heads x T x dk], cos/sin [T x rot]: the first rot dims rotate (split-half), the rest pass."""
    rot = cos.shape[-1]
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    return np.concatenate([x_rot * cos + rotate_half(x_rot) * sin, x_pass], axis=-1)


def silu(x):
    return x / (1.0 + np.exp(-x))


class HfLlama:
    """LlamaForCausalLM, and Qwen3 / Qwen3-MoE (q_norm / k_norm tensors, num_experts in the config).
    tensors: HF names -> float64 arrays (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, ...)."""

    def __init__(self, config, tensors):
        self.c = config
        self.t = tensors
        self.head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        self.inv_freq = inv_freq_of(config)
        self._record = None

    def logits(self, token_ids):
        """Logits [T x vocab] at every position of one causal pass over token_ids."""
        c, t, dk = self.c, self.t, self.head_dim
        hq, hkv, eps = c["num_attention_heads"], c["num_key_value_heads"], c["rms_norm_eps"]
        n = len(token_ids)
        x = t["model.embed_tokens.weight"][np.asarray(token_ids)]  # [T x d]
        positions = np.arange(n, dtype=np.float64)
        freqs = positions[:, None] * self.inv_freq[None, :]  # [T x rot/2]
        emb = np.concatenate([freqs, freqs], axis=-1)  # [T x rot]
        cos, sin = np.cos(emb), np.sin(emb)
        mask = np.triu(np.full((n, n), -np.inf), k=1)  # [T x T]
        for layer in range(c["num_hidden_layers"]):
            p = "model.layers.%d." % layer
            h = rms_norm(x, t[p + "input_layernorm.weight"], eps)
            q = (h @ t[p + "self_attn.q_proj.weight"].T).reshape(n, hq, dk).transpose(1, 0, 2)  # [Hq x T x dk]
            k = (h @ t[p + "self_attn.k_proj.weight"].T).reshape(n, hkv, dk).transpose(1, 0, 2)  # [Hkv x T x dk]
            if p + "self_attn.q_norm.weight" in t:  # Qwen3: per-head RMSNorm before RoPE
                q = rms_norm(q, t[p + "self_attn.q_norm.weight"], eps)
                k = rms_norm(k, t[p + "self_attn.k_norm.weight"], eps)
            v = (h @ t[p + "self_attn.v_proj.weight"].T).reshape(n, hkv, dk).transpose(1, 0, 2)
            if c.get("no_rope_layers") is None or c["no_rope_layers"][layer]:
                q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
            k = np.repeat(k, hq // hkv, axis=0)  # repeat_kv
            v = np.repeat(v, hq // hkv, axis=0)
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(dk) + mask  # [Hq x T x T]
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            attn = (scores / scores.sum(axis=-1, keepdims=True)) @ v  # [Hq x T x dk]
            x = x + attn.transpose(1, 0, 2).reshape(n, hq * dk) @ t[p + "self_attn.o_proj.weight"].T
            h = rms_norm(x, t[p + "post_attention_layernorm.weight"], eps)
            if getattr(self, "_record", None) is not None and c.get("num_experts"):
                self._record.append((p, h))
            x = x + (self.moe(p, h) if c.get("num_experts") else self.mlp(p + "mlp.", h))
        x = rms_norm(x, t["model.norm.weight"], eps)
        head = t["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else t["lm_head.weight"]
        return x @ head.T

    def mlp(self, prefix, h):
        t = self.t
        gate = h @ t[prefix + "gate_proj.weight"].T
        up = h @ t[prefix + "up_proj.weight"].T
        return (silu(gate) * up) @ t[prefix + "down_proj.weight"].T

    def router_probs(self, p, h):
        """Qwen3MoeSparseMoeBlock's routing weights before top-k: softmax over every expert. [T x E]"""
        logits = h @ self.t[p + "mlp.gate.weight"].T
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def moe(self, p, h):
        c = self.c
        probs = self.router_probs(p, h)
        out = np.zeros_like(h)
        for row in range(h.shape[0]):
            top = np.argsort(-probs[row], kind="stable")[: c["num_experts_per_tok"]]
            w = probs[row][top]
            if c.get("norm_topk_prob"):
                w = w / w.sum()
            for weight, e in zip(w, top):
                out[row] += weight * self.mlp(p + "mlp.experts.%d." % e, h[row : row + 1])[0]
        return out

    def router_margin(self, token_ids):
        """The smallest gap, over every layer and position, between the k-th and (k+1)-th routing
        weight: where it is tiny an f32 engine could route to another expert."""
        k = self.c["num_experts_per_tok"]
        self._record = []  # logits() appends each MoE layer's input
        self.logits(token_ids)
        recorded, self._record = self._record, None
        margin = np.inf
        for p, h in recorded:
            probs = -np.sort(-self.router_probs(p, h), axis=-1)
            margin = min(margin, float(np.min(probs[:, k - 1] - probs[:, k])))
        return margin

    def greedy(self, prompt, n_new):
        """Greedy continuation (ties to the lowest id) and the top-2 margin of each pick."""
        return greedy_decode.greedy(self.logits, prompt, n_new)
