"""An independent float64 forward pass of Hugging Face's GptOssForCausalLM (OpenAI gpt-oss-20b /
gpt-oss-120b), in numpy.

Written from transformers' own code:
- src/transformers/models/gpt_oss/modeling_gpt_oss.py (generated from modular_gpt_oss.py; stored
  snapshot 00d4b3d2): GptOssRMSNorm (x * rsqrt(mean(x^2) + eps) * w, the stored weight is w);
  GptOssAttention (q/k/v/o_proj nn.Linear with bias=config.attention_bias, True for gpt-oss; head_dim
  from config.head_dim, 64 by default, NOT hidden_size / num_attention_heads; scaling head_dim**-0.5;
  a learned per-head sink `sinks` [num_attention_heads]; sliding_window only on layers whose
  config.layer_types entry is "sliding_attention"); eager_attention_forward (scores * scaling + mask,
  then the head's sink logit appended as one extra column, softmax over keys + sink, the sink column
  dropped, the rest times V; the sink is not scaled and never masked); _apply_rotary_emb (NEOX
  split-half: first = x[:d/2] * cos - x[d/2:] * sin, second = x[d/2:] * cos + x[:d/2] * sin, over all
  of head_dim; cos / sin are multiplied by the rope's attention_scaling); GptOssTopKRouter (router
  logits = x W^T + b, top-k over the logits, softmax over the k selected logits only); GptOssExperts
  (gate_up = x @ gate_up_proj[e] + gate_up_proj_bias[e] with gate_up_proj [experts, hidden,
  2 * intermediate]; gate = gate_up[..., ::2], up = gate_up[..., 1::2] (interleaved columns);
  gate = gate.clamp(max=limit), up = up.clamp(-limit, limit), glu = gate * sigmoid(gate * alpha),
  out = ((up + 1) * glu) @ down_proj[e] + down_proj_bias[e] with down_proj [experts, intermediate,
  hidden]; alpha 1.702, limit 7.0; the routed outputs are summed with the router weights);
  GptOssDecoderLayer (x += attn(input_layernorm(x)); x += mlp(post_attention_layernorm(x)));
  GptOssModel (no embedding scale, final norm); GptOssForCausalLM (lm_head, untied, no bias).
- src/transformers/models/gpt_oss/configuration_gpt_oss.py: layer_types default
  ["sliding_attention" if (i + 1) % 2 else "full_attention"] (layer 0 sliding, layer 1 full, ...);
  rope default {"rope_type": "yarn", factor 32, beta_fast 32, beta_slow 1, truncate false,
  original_max_position_embeddings 4096}, rope_theta 150000; swiglu_alpha 1.702 / swiglu_limit 7.0
  (newer configs; the published config.json carries swiglu_limit).
- src/transformers/modeling_rope_utils.py, _compute_yarn_parameters (the version with `truncate`):
  dim = head_dim; pos_freqs = base^(2i/dim); inv_freq_extrapolation = 1/pos_freqs,
  inv_freq_interpolation = 1/(factor pos_freqs); low / high = find_correction_dim(beta_fast) /
  find_correction_dim(beta_slow) with find_correction_dim(r) = dim ln(orig / (r 2 pi)) / (2 ln base),
  orig = rope_scaling.original_max_position_embeddings; floor(low) / ceil(high) ONLY when
  rope_scaling.get("truncate", True); then max(low, 0), min(high, dim - 1); ramp(i) = clamp((i - low) /
  (high - low), 0, 1) over i < dim/2 (high += 0.001 when low == high); inv_freq =
  interpolation * ramp + extrapolation * (1 - ramp); attention_factor = rope_scaling.attention_factor
  or 0.1 ln(factor) + 1 (factor > 1), applied to cos and sin.
- masking_utils: the sliding window keeps kv_idx > q_idx - sliding_window, i.e. a query at p sees keys
  p - sliding_window + 1 .. p (sliding_window keys including itself); llama.cpp's LLAMA_SWA_TYPE_STANDARD
  masks p - k >= n_swa: the same set.
It shares no code with hf_llama_reference.py, hf_gemma_reference.py or cflow_reference.py.

Everything runs in float64 on the checkpoint's float32 weights.

Flags to compute what a wrong engine would give (for the fixture's sanity numbers): sinks=False (plain
softmax), sliding=False (every layer full causal), window=N, sliding_layers="odd" (the pattern shifted
by one), yarn=False (plain RoPE, attention factor 1), truncate=True/False (override rope_scaling.truncate;
True is what llama.cpp's ggml_rope_yarn_corr_dims always does), attention_factor=F (override the YaRN
cos/sin scale), limit=inf (no clamp), swiglu="plain" (silu(gate) * up), gate_up="halves" (gate = first
half of the gate_up columns, up = second half), attn_bias / router_bias / expert_bias=False, router=
"softmax_all" (softmax over all experts, top-k entries not renormalised).
"""
import math

import numpy as np

import greedy_decode

SLIDING, FULL = "sliding_attention", "full_attention"


def layer_types(config):
    n = config["num_hidden_layers"]
    if config.get("layer_types"):
        types = list(config["layer_types"])
        assert len(types) == n and set(types) <= {SLIDING, FULL}, types
        return types
    return [SLIDING if (i + 1) % 2 else FULL for i in range(n)]


def head_dim(config):
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def rope_scaling(config):
    rs = config.get("rope_scaling") or config.get("rope_parameters") or {}
    return rs


def yarn_params(config, truncate=None):
    """(inv_freq [dim/2], attention_factor, (low, high)) of _compute_yarn_parameters."""
    rs = rope_scaling(config)
    dim = head_dim(config)
    base = config.get("rope_theta", rs.get("rope_theta", 150000.0))
    factor = rs["factor"]
    orig = rs.get("original_max_position_embeddings") or config["max_position_embeddings"]
    attention_factor = rs.get("attention_factor")
    if attention_factor is None:
        mscale, mscale_all_dim = rs.get("mscale"), rs.get("mscale_all_dim")

        def get_mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        if mscale and mscale_all_dim:
            attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
        else:
            attention_factor = get_mscale(factor)
    beta_fast = rs.get("beta_fast") or 32
    beta_slow = rs.get("beta_slow") or 1

    def correction_dim(rotations):
        return dim * math.log(orig / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if rs.get("truncate", True) if truncate is None else truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    pos_freqs = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    hi = high + 0.001 if low == high else high
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (hi - low), 0.0, 1.0)
    extrapolation_factor = 1.0 - ramp
    inv_freq = interpolation * (1.0 - extrapolation_factor) + extrapolation * extrapolation_factor
    return inv_freq, float(attention_factor), (low, high)


def default_inv_freq(config):
    rs = rope_scaling(config)
    dim = head_dim(config)
    base = config.get("rope_theta", rs.get("rope_theta", 150000.0))
    return 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class HfGptOss:
    """GptOssForCausalLM. tensors: HF names -> float64 arrays (model.embed_tokens.weight,
    model.layers.N.self_attn.q_proj.weight / .bias, ...sinks, ...mlp.router.weight / .bias,
    ...mlp.experts.gate_up_proj [E, d, 2 ff] / gate_up_proj_bias [E, 2 ff] / down_proj [E, ff, d] /
    down_proj_bias [E, d], model.norm.weight, lm_head.weight)."""

    def __init__(self, config, tensors, sinks=True, sliding=True, window=None, sliding_layers=None, yarn=True,
                 truncate=None, attention_factor=None, limit=None, swiglu="oai", gate_up="interleaved",
                 attn_bias=True, router_bias=True, expert_bias=True, router="topk_softmax"):
        self.c = config
        self.t = tensors
        self.dk = head_dim(config)
        types = layer_types(config)
        if sliding_layers == "odd":
            types = [SLIDING if i % 2 else FULL for i in range(len(types))]
        self.types = types
        self.sliding = sliding
        self.window = config["sliding_window"] if window is None else window
        self.use_sinks = sinks
        if yarn and rope_scaling(config).get("rope_type", rope_scaling(config).get("type")) == "yarn":
            self.inv_freq, self.attention_factor, self.yarn_range = yarn_params(config, truncate)
        else:
            self.inv_freq, self.attention_factor, self.yarn_range = default_inv_freq(config), 1.0, None
        if attention_factor is not None:
            self.attention_factor = attention_factor
        self.alpha = config.get("swiglu_alpha", 1.702)
        self.limit = config.get("swiglu_limit", 7.0) if limit is None else limit
        self.swiglu = swiglu
        self.gate_up = gate_up
        self.attn_bias, self.router_bias, self.expert_bias = attn_bias, router_bias, expert_bias
        self.router = router
        self.top_k = config["num_experts_per_tok"]
        self.last_router_logits = []
        self.last_pre_activations = []  # (gate, up) of every routed expert before the clamp, last pass

    def _linear(self, x, prefix, bias=True):
        y = x @ self.t[prefix + ".weight"].T
        if bias and self.attn_bias:
            y = y + self.t[prefix + ".bias"]
        return y

    def _rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        first, second = x[..., :half], x[..., half:]
        return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)

    def _moe(self, h, p):
        """h [T x d] -> [T x d]; records the router logits of this layer."""
        t = self.t
        logits = h @ t[p + "mlp.router.weight"].T
        if self.router_bias:
            logits = logits + t[p + "mlp.router.bias"]
        self.last_router_logits.append(logits)
        n_tok, n_exp = logits.shape
        weights = np.zeros_like(logits)
        for i in range(n_tok):
            order = sorted(range(n_exp), key=lambda e: (-logits[i, e], e))[: self.top_k]
            if self.router == "softmax_all":
                probs = np.exp(logits[i] - logits[i].max())
                probs /= probs.sum()
                weights[i, order] = probs[order]
            else:
                sel = logits[i, order]
                probs = np.exp(sel - sel.max())
                weights[i, order] = probs / probs.sum()
        gate_up_w = t[p + "mlp.experts.gate_up_proj"]  # [E x d x 2ff]
        down_w = t[p + "mlp.experts.down_proj"]  # [E x ff x d]
        out = np.zeros_like(h)
        for e in range(n_exp):
            rows = np.nonzero(weights[:, e])[0]
            if len(rows) == 0:
                continue
            gu = h[rows] @ gate_up_w[e]
            if self.expert_bias:
                gu = gu + t[p + "mlp.experts.gate_up_proj_bias"][e]
            if self.gate_up == "halves":
                ff = gu.shape[-1] // 2
                gate, up = gu[:, :ff], gu[:, ff:]
            else:
                gate, up = gu[:, ::2], gu[:, 1::2]
            self.last_pre_activations.append((gate, up))
            if self.swiglu == "plain":
                act = gate * sigmoid(gate) * up
            else:
                gate = np.minimum(gate, self.limit)
                up = np.clip(up, -self.limit, self.limit)
                act = (up + 1.0) * (gate * sigmoid(gate * self.alpha))
            y = act @ down_w[e]
            if self.expert_bias:
                y = y + t[p + "mlp.experts.down_proj_bias"][e]
            out[rows] += weights[rows, e][:, None] * y
        return out

    def logits(self, token_ids):
        """Logits [T x vocab] at every position of one causal pass over token_ids."""
        c, t, dk = self.c, self.t, self.dk
        hq, hkv = c["num_attention_heads"], c["num_key_value_heads"]
        eps = c["rms_norm_eps"]
        n = len(token_ids)
        self.last_router_logits = []
        self.last_pre_activations = []
        x = t["model.embed_tokens.weight"][np.asarray(token_ids)]  # [T x d]
        pos = np.arange(n, dtype=np.float64)
        rel = pos[:, None] - pos[None, :]  # q_pos - k_pos
        masks = {FULL: np.where(rel >= 0, 0.0, -np.inf)}
        masks[SLIDING] = np.where((rel >= 0) & (rel < self.window), 0.0, -np.inf) if self.sliding else masks[FULL]
        freqs = pos[:, None] * self.inv_freq[None, :]  # [T x dk/2]
        cos, sin = np.cos(freqs) * self.attention_factor, np.sin(freqs) * self.attention_factor
        scaling = dk ** -0.5
        for layer, lt in enumerate(self.types):
            p = "model.layers.%d." % layer
            h = rms_norm(x, t[p + "input_layernorm.weight"], eps)
            q = self._linear(h, p + "self_attn.q_proj").reshape(n, hq, dk).transpose(1, 0, 2)  # [Hq x T x dk]
            k = self._linear(h, p + "self_attn.k_proj").reshape(n, hkv, dk).transpose(1, 0, 2)
            v = self._linear(h, p + "self_attn.v_proj").reshape(n, hkv, dk).transpose(1, 0, 2)
            q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
            k = np.repeat(k, hq // hkv, axis=0)  # repeat_kv: query head h reads KV head h // (Hq / Hkv)
            v = np.repeat(v, hq // hkv, axis=0)
            scores = (q @ k.transpose(0, 2, 1)) * scaling + masks[lt]  # [Hq x T x T]
            if self.use_sinks:
                sink = np.broadcast_to(t[p + "self_attn.sinks"][:, None, None], (hq, n, 1))
                scores = np.concatenate([scores, sink], axis=-1)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            if self.use_sinks:
                probs = probs[..., :-1]  # the sink's share is dropped
            attn = (probs @ v).transpose(1, 0, 2).reshape(n, hq * dk)
            x = x + self._linear(attn, p + "self_attn.o_proj")
            h = rms_norm(x, t[p + "post_attention_layernorm.weight"], eps)
            x = x + self._moe(h, p)
        x = rms_norm(x, t["model.norm.weight"], eps)
        return x @ t["lm_head.weight"].T

    def router_margin(self, token_ids):
        """Smallest gap between the k-th and (k+1)-th router logit over every layer and position."""
        self.logits(token_ids)
        margin = np.inf
        for logits in self.last_router_logits:
            s = -np.sort(-logits, axis=-1)
            margin = min(margin, float(np.min(s[:, self.top_k - 1] - s[:, self.top_k])))
        return margin

    def clamped_share(self, token_ids):
        """Share of the routed experts' gate entries above the limit and up entries outside +-limit."""
        self.logits(token_ids)
        hits = sum(int(np.sum(g > self.limit) + np.sum(np.abs(u) > self.limit)) for g, u in self.last_pre_activations)
        return hits / sum(g.size + u.size for g, u in self.last_pre_activations)

    def routing(self, token_ids):
        """[[top-k expert ids, descending logit] per layer] per position of one pass."""
        self.logits(token_ids)
        out = []
        for i in range(len(token_ids)):
            out.append([sorted(range(l.shape[1]), key=lambda e: (-l[i, e], e))[: self.top_k]
                        for l in self.last_router_logits])
        return out

    def greedy(self, prompt, n_new):
        """Greedy continuation (ties to the lowest id) and the top-2 margin of each pick."""
        return greedy_decode.greedy(self.logits, prompt, n_new)
