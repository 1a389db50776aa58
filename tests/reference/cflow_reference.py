"""PyTorch reference forward pass for every combine style of spec/model-semantics.md.

One function per combine style (forward_parallel_sqrt2 ... forward_fixed_point), all built
from the same helpers (rms_norm, rope, attention with a KV cache, gated FFN, MoE).
The math runs in float64 on the float32 weights of the checkpoint, so a trace is the exact
result of the checkpoint's math and an f32 engine is compared against it with a tolerance.

A forward call takes a block of T new tokens at positions pos0..pos0+T-1 and appends their
keys/values to the cache: T = 1 is one decode step, T > 1 a causal prefill. Both give the same
numbers (test_reference_selfcheck checks it), which is why one code path serves both.

Delayed schedules (DelayedSum, AsyncExperts) are over LAYERS within one token: the expert
output routed at layer l of token p is added at layer min(l + expert_delay, L - 1) of the same
token p; the dense FFN of layer l reads the residual of layer l - dense_delay of the same token.
Nothing is carried from one token to the next except the KV caches.

Run only with Debian's /usr/bin/python3 (the one that has torch).
"""
import math

import torch

PARALLEL_SQRT2, DELAYED_SUM, ASYNC_EXPERTS, SEQUENTIAL, DECOUPLED_STREAMS, PIPELINE_REGISTERS, FIXED_POINT = range(7)
STYLE_NAMES = ["ParallelSqrt2", "DelayedSum", "AsyncExperts", "Sequential", "DecoupledStreams", "PipelineRegisters",
               "FixedPoint"]
DTYPE = torch.float64


# ----------------------------------------------------------------------------- helpers

def rms_norm(x, w, eps):
    """x [T x d], w [d] -> x / sqrt(mean(x^2) + eps) * w."""
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


_ROPE_TABLES = {}


def rope(x, positions, theta):
    """Split-half (HF rotate_half) RoPE over the full head dim: pair (i, i + dk/2) rotates by
    pos * theta^(-2i/dk). x [T x H x dk], positions [T] (consecutive)."""
    dk = x.shape[-1]
    half = dk // 2
    end = int(positions[-1]) + 1
    key = (theta, dk)
    if key not in _ROPE_TABLES or _ROPE_TABLES[key][0].shape[0] < end:
        inv_freq = 1.0 / (theta ** (torch.arange(0, half, dtype=DTYPE) * 2.0 / dk))  # [dk/2]
        ang = torch.arange(max(end, 256), dtype=DTYPE)[:, None] * inv_freq[None, :]  # [P x dk/2]
        _ROPE_TABLES[key] = (torch.cos(ang), torch.sin(ang))
    cos_t, sin_t = _ROPE_TABLES[key]
    cos = cos_t[positions][:, None, :]  # [T x 1 x dk/2]
    sin = sin_t[positions][:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def silu(x):
    return x * torch.sigmoid(x)


ACTIVATIONS = {"swiglu": silu, "geglu_tanh": gelu_tanh}


def gated_ffn(r, gate, up, down, act):
    """down(act(gate r) * up r). r [T x d], gate/up [ff x d], down [d x ff]."""
    return (act(r @ gate.T) * (r @ up.T)) @ down.T


class KVCache:
    """One slot per effective layer; slot s holds keys [Hkv x T x dk] (after RoPE) and values."""

    def __init__(self, n_slots):
        self.k = [None] * n_slots
        self.v = [None] * n_slots

    def append(self, slot, k, v):
        self.k[slot] = k if self.k[slot] is None else torch.cat([self.k[slot], k], dim=1)
        self.v[slot] = v if self.v[slot] is None else torch.cat([self.v[slot], v], dim=1)
        return self.k[slot], self.v[slot]


def attention(lw, xn, pos0, cache, slot, cfg):
    """GQA self-attention of T new rows xn [T x d] at positions pos0.. against the cached ones."""
    t_new = xn.shape[0]
    hq, hkv, dk = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    positions = torch.arange(pos0, pos0 + t_new)
    q = rope((xn @ lw["q"].T).view(t_new, hq, dk), positions, cfg["rope_theta"])  # [T x Hq x dk]
    k = rope((xn @ lw["k"].T).view(t_new, hkv, dk), positions, cfg["rope_theta"])  # [T x Hkv x dk]
    v = (xn @ lw["v"].T).view(t_new, hkv, dk)
    keys, values = cache.append(slot, k.transpose(0, 1), v.transpose(0, 1))  # [Hkv x S x dk], S = pos0 + T
    s_len = keys.shape[1]
    kv_of_head = [h * hkv // hq for h in range(hq)]  # query head h uses kv head floor(h * Hkv / Hq)
    keys = keys[kv_of_head]  # [Hq x S x dk]
    values = values[kv_of_head]
    scores = torch.einsum("thd,hsd->hts", q, keys) / math.sqrt(dk)  # [Hq x T x S]
    key_pos = torch.arange(s_len)[None, :]
    query_pos = positions[:, None]
    scores = scores.masked_fill(key_pos > query_pos, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("hts,hsd->thd", probs, values).reshape(t_new, hq * dk)  # [T x Hq*dk]
    return out @ lw["o"].T  # [T x d]


def top_k_experts(logits_row, k):
    """Deterministic top-k: sort by (-logit, index), so ties go to the lower expert index."""
    vals = logits_row.tolist()
    return sorted(range(len(vals)), key=lambda e: (-vals[e], e))[:k]


def moe(lw, r, cfg):
    """MoE(r) for r [T x d] -> (out [T x d], ids [T][k], weights [T][k]).

    router_mode softmax_topk: weights = softmax over the k selected logits (Mixtral);
    softmax_all_no_renorm: softmax over all E, take the selected entries, no renormalisation
    (OLMoE, Qwen2-MoE norm_topk_prob=false). Optional shared expert (Qwen2-MoE):
    sigmoid(w_shared_gate . r) * SharedExpert(r), added to the routed sum.
    """
    act = ACTIVATIONS[cfg["ffn_activation"]]
    k = cfg["num_experts_per_tok"]
    logits = r @ lw["router"].T  # [T x E]
    out = torch.zeros_like(r)
    all_ids, all_w = [], []
    for t in range(r.shape[0]):
        ids = top_k_experts(logits[t], k)
        sel = logits[t, ids]
        if cfg["router_mode"] == "softmax_topk":
            w = torch.softmax(sel, dim=0)
        elif cfg["router_mode"] == "softmax_all_no_renorm":
            w = torch.softmax(logits[t], dim=0)[ids]
        else:
            raise ValueError("router_mode %r" % cfg["router_mode"])
        row = r[t:t + 1]
        for j, e in enumerate(ids):
            g, u, d = lw["experts"][e]
            out[t] += w[j] * gated_ffn(row, g, u, d, act)[0]
        all_ids.append(ids)
        all_w.append(w.tolist())
    if lw.get("shared") is not None:
        g, u, d = lw["shared"]
        gate = torch.sigmoid(r @ lw["shared_gate"].T)  # [T x 1]
        out = out + gate * gated_ffn(r, g, u, d, act)
    return out, all_ids, all_w


def router_margins(lw, r, cfg):
    """Gap between the k-th and (k+1)-th largest router logit per row (how robust the choice is)."""
    logits = r @ lw["router"].T
    k = cfg["num_experts_per_tok"]
    s = torch.sort(logits, dim=-1, descending=True).values
    if k >= logits.shape[1]:
        return [float("inf")] * r.shape[0]
    return (s[:, k - 1] - s[:, k]).tolist()


# ----------------------------------------------------------------------------- model

class Recorder:
    """Collects, per forward call, the residual norms (one per layer / effective layer) and the
    routing (one entry per MoE application) of each of the T rows."""

    def __init__(self, t_new):
        self.norms = [[] for _ in range(t_new)]
        self.experts = [[] for _ in range(t_new)]
        self.weights = [[] for _ in range(t_new)]
        self.router_margins = []

    def norm(self, x):
        for t, n in enumerate(torch.linalg.vector_norm(x, dim=-1).tolist()):
            self.norms[t].append(n)

    def routing(self, ids, w, margins):
        for t in range(len(ids)):
            self.experts[t].append(ids[t])
            self.weights[t].append(w[t])
        self.router_margins.extend(margins)


class _TrackingDict(dict):
    """Remembers which tensors the model read, so a checkpoint with unused tensors is rejected."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        if key in self:
            return self[key]
        return default


class CflowModel:
    """A checkpoint (config dict + {HF tensor name: f32 tensor}) and its forward pass."""

    def __init__(self, cfg, tensors):
        self.cfg = cfg
        self.eps = cfg["rms_norm_eps"]
        self.has_ffn = cfg["intermediate_size"] > 0
        self.has_moe = cfg["num_experts"] > 0
        self._validate()
        t = _TrackingDict({name: v.to(DTYPE) for name, v in tensors.items()})
        self.embed = t["model.embed_tokens.weight"]  # [V x d]
        self.final_norm = t["model.norm.weight"]
        self.lm_head = self.embed if cfg["tie_word_embeddings"] else t["lm_head.weight"]  # [V x d]
        self.layers = [self._layer(t, i) for i in range(cfg["num_hidden_layers"])]
        if cfg["combine_style"] == SEQUENTIAL and self.has_moe:
            # Sequential's MoE reads Norm_ffn: a pre_moe_layernorm would be silently ignored, so reject it
            t.read -= {n for n in t.read if n.endswith("pre_moe_layernorm.weight")}
        unused = set(t) - t.read
        if unused:
            raise ValueError("tensors not used by the model: %s" % sorted(unused))

    def _validate(self):
        c = self.cfg
        style = c["combine_style"]
        if not 0 <= style <= 6:
            raise ValueError("combine_style %r" % style)
        dd, de = c["dense_delay"], c["expert_delay"]
        if style == ASYNC_EXPERTS and dd != 0:
            raise ValueError("AsyncExperts: the dense FFN reads Norm_ffn(x_in); dense_delay must be 0")
        if style not in (DELAYED_SUM, ASYNC_EXPERTS) and (dd or de):
            raise ValueError("%s takes no delays" % STYLE_NAMES[style])
        if style == FIXED_POINT and (c["n_blocks"] != c["num_hidden_layers"] or c["n_iter"] < 1):
            raise ValueError("FixedPoint: n_blocks must equal num_hidden_layers and n_iter >= 1")
        if style == DECOUPLED_STREAMS and c["merge_interval"] < 1:
            raise ValueError("DecoupledStreams: merge_interval >= 1")
        if c["num_attention_heads"] % c["num_key_value_heads"]:
            raise ValueError("num_key_value_heads must divide num_attention_heads")
        if c.get("final_logit_softcap", 0) < 0:
            raise ValueError("final_logit_softcap >= 0")

    def _layer(self, t, i):
        p = "model.layers.%d." % i
        lw = {
            "attn_norm": t[p + "input_layernorm.weight"],
            "q": t[p + "self_attn.q_proj.weight"], "k": t[p + "self_attn.k_proj.weight"],
            "v": t[p + "self_attn.v_proj.weight"], "o": t[p + "self_attn.o_proj.weight"],
            "ffn_norm": t[p + "post_attention_layernorm.weight"],
        }
        if self.has_ffn:
            lw["ffn"] = tuple(t[p + "mlp.%s_proj.weight" % m] for m in ("gate", "up", "down"))
        if self.has_moe:
            # Norm_moe falls back to Norm_ffn when the checkpoint has no pre_moe_layernorm.
            lw["moe_norm"] = t.get(p + "pre_moe_layernorm.weight", lw["ffn_norm"])
            lw["router"] = t[p + "moe.gate.weight"]  # [E x d]
            lw["experts"] = [tuple(t[p + "moe.experts.%d.%s_proj.weight" % (e, m)] for m in ("gate", "up", "down"))
                             for e in range(self.cfg["num_experts"])]
            if self.cfg["shared_expert_intermediate_size"] > 0:
                lw["shared"] = tuple(t[p + "moe.shared_expert.%s_proj.weight" % m] for m in ("gate", "up", "down"))
                lw["shared_gate"] = t[p + "moe.shared_expert_gate.weight"]  # [1 x d]
        return lw

    # -- sub-operations shared by every style
    def n_slots(self):
        c = self.cfg
        return c["n_blocks"] * c["n_iter"] if c["combine_style"] == FIXED_POINT else c["num_hidden_layers"]

    def attn(self, lw, x, pos0, cache, slot):
        return attention(lw, rms_norm(x, lw["attn_norm"], self.eps), pos0, cache, slot, self.cfg)

    def ffn(self, lw, x):
        """FFN(Norm_ffn(x)), or 0 without a dense FFN."""
        if not self.has_ffn:
            return torch.zeros_like(x)
        g, u, d = lw["ffn"]
        return gated_ffn(rms_norm(x, lw["ffn_norm"], self.eps), g, u, d, ACTIVATIONS[self.cfg["ffn_activation"]])

    def moe(self, lw, x, rec, norm_key="moe_norm"):
        """MoE(Norm(x)) with Norm_moe (or Norm_ffn for Sequential), or 0 without a MoE."""
        if not self.has_moe:
            return torch.zeros_like(x)
        r = rms_norm(x, lw[norm_key], self.eps)
        out, ids, w = moe(lw, r, self.cfg)
        rec.routing(ids, w, router_margins(lw, r, self.cfg))
        return out

    def logits(self, x):
        z = rms_norm(x, self.final_norm, self.eps) @ self.lm_head.T  # [T x V]
        cap = self.cfg.get("final_logit_softcap", 0)
        return cap * torch.tanh(z / cap) if cap > 0 else z

    def forward(self, token_ids, pos0, cache):
        """token_ids: T new tokens at positions pos0.. -> (logits [T x V] f64, Recorder)."""
        x = self.embed[torch.tensor(token_ids, dtype=torch.long)]  # [T x d], no embedding scale
        rec = Recorder(len(token_ids))
        x = FORWARD_BY_STYLE[self.cfg["combine_style"]](self, x, pos0, cache, rec)
        return self.logits(x), rec

    def new_cache(self):
        return KVCache(self.n_slots())


# ----------------------------------------------------------------------------- combine styles

def forward_parallel_sqrt2(m, x, pos0, cache, rec):
    """0: x_mid = x + Attn(Norm_attn x); x_out = x_mid + (FFN(Norm_ffn x_mid) + MoE(Norm_moe x_mid)) / sqrt(2)."""
    for l, lw in enumerate(m.layers):
        x_mid = x + m.attn(lw, x, pos0, cache, l)
        x = x_mid + (m.ffn(lw, x_mid) + m.moe(lw, x_mid, rec)) / math.sqrt(2.0)
        rec.norm(x)
    return x


def forward_delayed_sum(m, x, pos0, cache, rec):
    """1: dense reads Norm_ffn(h_{l-dd}) (x_mid when dd = 0; h_j = emb for j < 0); experts read
    Norm_moe(x_mid) and e_l lands at layer min(l + de, L - 1) of the same token."""
    n_layers = len(m.layers)
    dd, de = m.cfg["dense_delay"], m.cfg["expert_delay"]
    emb = x
    history = []  # history[j] = x_j_out
    pending = {}  # target layer -> list of expert outputs, in routing-layer order
    for l, lw in enumerate(m.layers):
        x_mid = x + m.attn(lw, x, pos0, cache, l)
        if dd == 0:
            dense_in = x_mid
        else:
            dense_in = history[l - dd] if l - dd >= 0 else emb
        f = m.ffn(lw, dense_in)
        if m.has_moe:
            pending.setdefault(min(l + de, n_layers - 1), []).append(m.moe(lw, x_mid, rec))
        x = x_mid + f
        for e in pending.pop(l, []):
            x = x + e
        history.append(x)
        rec.norm(x)
    assert not pending
    return x


def forward_async_experts(m, x, pos0, cache, rec):
    """2: dense and router read the pre-attention residual x_in; e_l lands at min(l + de, L - 1)."""
    n_layers = len(m.layers)
    de = m.cfg["expert_delay"]
    pending = {}
    for l, lw in enumerate(m.layers):
        a = m.attn(lw, x, pos0, cache, l)
        f = m.ffn(lw, x)
        if m.has_moe:
            pending.setdefault(min(l + de, n_layers - 1), []).append(m.moe(lw, x, rec))
        x = x + a + f
        for e in pending.pop(l, []):
            x = x + e
        rec.norm(x)
    assert not pending
    return x


def forward_sequential(m, x, pos0, cache, rec):
    """3: standard pre-norm; the MoE reads Norm_ffn(x_mid) (pre_moe_layernorm is not used)."""
    for l, lw in enumerate(m.layers):
        x_mid = x + m.attn(lw, x, pos0, cache, l)
        x = x_mid + m.ffn(lw, x_mid) + m.moe(lw, x_mid, rec, norm_key="ffn_norm")
        rec.norm(x)
    return x


def forward_decoupled_streams(m, x, pos0, cache, rec):
    """4: streams a (attention) and f (FFN + MoE) from emb, both set to (a + f) / 2 after every
    merge_interval-th layer and after the last. Trace value: ||(a_l + f_l) / 2|| at every layer."""
    n_layers = len(m.layers)
    mi = m.cfg["merge_interval"]
    a, f = x, x
    for l, lw in enumerate(m.layers):
        a_new = a + m.attn(lw, a, pos0, cache, l)
        f_new = f + m.ffn(lw, f) + m.moe(lw, f, rec)
        mean = (a_new + f_new) / 2.0
        rec.norm(mean)
        if (l + 1) % mi == 0 or l == n_layers - 1:
            a, f = mean, mean
        else:
            a, f = a_new, f_new
    return a


def forward_pipeline_registers(m, x, pos0, cache, rec):
    """5: A_l = A_{l-1} + Attn(Norm_attn A_{l-1}); X_l = A_l + FFN(Norm_ffn X_{l-1}) + MoE(Norm_moe X_{l-1});
    A_{-1} = X_{-1} = emb; output X_{L-1}. Trace value: ||X_l||."""
    a_reg, x_reg = x, x
    for l, lw in enumerate(m.layers):
        a_next = a_reg + m.attn(lw, a_reg, pos0, cache, l)
        x_reg = a_next + m.ffn(lw, x_reg) + m.moe(lw, x_reg, rec)
        a_reg = a_next
        rec.norm(x_reg)
    return x_reg


def forward_fixed_point(m, x, pos0, cache, rec):
    """6: per block b (input x_b) and iteration t: a = Attn(Norm_attn y_t) (once),
    y_{t+1} = x_b + a + FFN(Norm_ffn(y_t + a)) + MoE(Norm_moe(y_t + a)); KV slot b * n_iter + t.
    Trace value per effective layer (b, t): ||y_{t+1}||."""
    n_iter = m.cfg["n_iter"]
    for b, lw in enumerate(m.layers):
        x_b = x
        y = x_b
        for t in range(n_iter):
            a = m.attn(lw, y, pos0, cache, b * n_iter + t)
            u = y + a
            y = x_b + a + m.ffn(lw, u) + m.moe(lw, u, rec)
            rec.norm(y)
        x = y
    return x


FORWARD_BY_STYLE = [forward_parallel_sqrt2, forward_delayed_sum, forward_async_experts, forward_sequential,
                    forward_decoupled_streams, forward_pipeline_registers, forward_fixed_point]


# ----------------------------------------------------------------------------- runs used by the traces

def argmax_lowest(row):
    """argmax with ties toward the lowest id."""
    vals = row.tolist()
    best = max(vals)
    return vals.index(best)


def top2_margin(row):
    s = torch.sort(row, descending=True).values
    return float(s[0] - s[1])


def run_trace(model, tokens):
    """Token-by-token decode of a fixed sequence: logits, residual norms and routing per position."""
    cache = model.new_cache()
    out = {"logits": [], "residual_norms": [], "experts": [], "expert_weights": [], "router_margins": []}
    for pos, tok in enumerate(tokens):
        logits, rec = model.forward([tok], pos, cache)
        out["logits"].append(logits[0].tolist())
        out["residual_norms"].append(rec.norms[0])
        out["experts"].append(rec.experts[0])
        out["expert_weights"].append(rec.weights[0])
        out["router_margins"].extend(rec.router_margins)
    return out


def run_greedy(model, prompt, n_new):
    """Greedy decode (argmax, ties -> lowest id), never stopping at a special token."""
    cache = model.new_cache()
    generated, margins, router_margins = [], [], []
    logits = None
    for pos, tok in enumerate(prompt):
        logits, rec = model.forward([tok], pos, cache)
        router_margins.extend(rec.router_margins)
    pos = len(prompt)
    for _ in range(n_new):
        row = logits[0]
        margins.append(top2_margin(row))
        nxt = argmax_lowest(row)
        generated.append(nxt)
        if len(generated) == n_new:
            break
        logits, rec = model.forward([nxt], pos, cache)
        router_margins.extend(rec.router_margins)
        pos += 1
    return generated, margins, router_margins
