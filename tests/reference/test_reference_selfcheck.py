"""Self-checks of the PyTorch reference and of the generated folders.

    cd tests/reference && /usr/bin/python3 -m unittest test_reference_selfcheck -v
"""
import json
import math
import os
import struct
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cflow_reference as ref  # noqa: E402
import make_reference_models as gen  # noqa: E402

torch.set_num_threads(1)
VOCAB = gen.build_vocab()
MERGES = gen.build_merges(VOCAB)
TOKENS = gen.trace_tokens(VOCAB, MERGES)


def case_model(name, seed=7, **overrides):
    """(cfg, tensors) of a case with fixed-seed weights (no seed search: these checks need no margins)."""
    case = dict(gen.CASE_BY_NAME[name], **overrides)
    cfg = gen.make_config(case)
    return cfg, gen.init_tensors(cfg, case.get("moe_norm", False), case.get("embed_std", 0.5), seed)


def decode_logits(model, tokens):
    cache = model.new_cache()
    return torch.tensor([model.forward([t], p, cache)[0][0].tolist() for p, t in enumerate(tokens)], dtype=torch.float64)


def rel_err(a, b):
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b))


# ----------------------------------------------------------------------------- independent HF-style forwards

def hf_rms(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def hf_rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def hf_attention(cfg, t, p, h):
    """Batched causal attention the way HF's LlamaAttention writes it (repeat_kv, rotate_half)."""
    n, hq, hkv, dk = h.shape[0], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    q = (h @ t[p + "self_attn.q_proj.weight"].T).view(n, hq, dk).transpose(0, 1)
    k = (h @ t[p + "self_attn.k_proj.weight"].T).view(n, hkv, dk).transpose(0, 1)
    v = (h @ t[p + "self_attn.v_proj.weight"].T).view(n, hkv, dk).transpose(0, 1)
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, dk, 2, dtype=torch.float64) / dk))
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    q = q * cos + hf_rotate_half(q) * sin
    k = k * cos + hf_rotate_half(k) * sin
    k = k.repeat_interleave(hq // hkv, dim=0)
    v = v.repeat_interleave(hq // hkv, dim=0)
    w = q @ k.transpose(1, 2) / math.sqrt(dk)
    w = w + torch.triu(torch.full((n, n), float("-inf"), dtype=torch.float64), diagonal=1)
    o = torch.softmax(w, dim=-1) @ v
    return o.transpose(0, 1).reshape(n, hq * dk) @ t[p + "self_attn.o_proj.weight"].T


def hf_mlp(t, p, h, act):
    return (act(h @ t[p + "gate_proj.weight"].T) * (h @ t[p + "up_proj.weight"].T)) @ t[p + "down_proj.weight"].T


def hf_sparse_moe(cfg, t, p, h, act):
    """Mixtral (softmax, top-k, renormalise) / Qwen2-MoE and OLMoE (softmax, top-k) + shared expert."""
    logits = h @ t[p + "moe.gate.weight"].T
    probs = torch.softmax(logits, dim=-1)
    w, idx = torch.topk(probs, cfg["num_experts_per_tok"], dim=-1)
    if cfg["router_mode"] == "softmax_topk":
        w = w / w.sum(dim=-1, keepdim=True)
    out = torch.zeros_like(h)
    for e in range(cfg["num_experts"]):
        rows, slot = torch.where(idx == e)
        if rows.numel():
            out[rows] += w[rows, slot, None] * hf_mlp(t, p + "moe.experts.%d." % e, h[rows], act)
    if cfg["shared_expert_intermediate_size"]:
        gate = torch.sigmoid(h @ t[p + "moe.shared_expert_gate.weight"].T)
        out = out + gate * hf_mlp(t, p + "moe.shared_expert.", h, act)
    return out


def hf_causal_lm(cfg, tensors, ids):
    """A Llama / Mixtral / Qwen2-MoE decoder over the whole sequence at once."""
    t = {k: v.double() for k, v in tensors.items()}
    eps = cfg["rms_norm_eps"]
    act = torch.nn.functional.silu
    x = t["model.embed_tokens.weight"][torch.tensor(ids)]
    for layer in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % layer
        x = x + hf_attention(cfg, t, p, hf_rms(x, t[p + "input_layernorm.weight"], eps))
        h = hf_rms(x, t[p + "post_attention_layernorm.weight"], eps)
        y = torch.zeros_like(x)
        if cfg["intermediate_size"]:
            y = y + hf_mlp(t, p + "mlp.", h, act)
        if cfg["num_experts"]:
            y = y + hf_sparse_moe(cfg, t, p, h, act)
        x = x + y
    head = t["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else t["lm_head.weight"]
    return hf_rms(x, t["model.norm.weight"], eps) @ head.T


class SequentialMatchesHF(unittest.TestCase):
    def test_ordinary_checkpoints_match_a_batched_hf_forward(self):
        for name in ("llama_dense", "mixtral_moe", "qwen2moe_shared", "olmoe_softmax_all"):
            with self.subTest(name=name):
                cfg, tensors = case_model(name)
                ours = decode_logits(ref.CflowModel(cfg, tensors), TOKENS)
                theirs = hf_causal_lm(cfg, tensors, TOKENS)
                self.assertLess(rel_err(ours, theirs), 1e-12)


# ----------------------------------------------------------------------------- identities between styles

class StyleIdentities(unittest.TestCase):
    def test_delayed_sum_without_delays_equals_sequential_when_moe_norm_falls_back(self):
        cfg, tensors = case_model("delayed_dd0_de2_sum", expert_delay=0)
        self.assertNotIn("model.layers.0.pre_moe_layernorm.weight", tensors)
        delayed = decode_logits(ref.CflowModel(cfg, tensors), TOKENS)
        seq = decode_logits(ref.CflowModel(dict(cfg, combine_style=ref.SEQUENTIAL), tensors), TOKENS)
        self.assertLess(rel_err(delayed, seq), 1e-13)

    def test_delayed_sum_reads_pre_moe_layernorm(self):
        cfg, tensors = case_model("arch2_4_sync", dense_delay=0, expert_delay=0)
        with_norm = decode_logits(ref.CflowModel(cfg, tensors), TOKENS)
        copied = dict(tensors)
        for layer in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % layer
            copied[p + "pre_moe_layernorm.weight"] = tensors[p + "post_attention_layernorm.weight"].clone()
        seq = decode_logits(ref.CflowModel(dict(cfg, combine_style=ref.SEQUENTIAL),
                                           {k: v for k, v in copied.items() if "pre_moe" not in k}), TOKENS)
        self.assertLess(rel_err(decode_logits(ref.CflowModel(cfg, copied), TOKENS), seq), 1e-13)
        self.assertGreater(rel_err(with_norm, seq), 1e-4)  # its own Norm_moe weight matters

    def test_sequential_rejects_an_unused_pre_moe_layernorm(self):
        cfg, tensors = case_model("arch2_4_sync", dense_delay=0, expert_delay=0)
        with self.assertRaises(ValueError):
            ref.CflowModel(dict(cfg, combine_style=ref.SEQUENTIAL), tensors)

    def test_fixed_point_with_one_iteration_equals_delayed_sum_without_delays(self):
        cfg, tensors = case_model("arch2_4_sync", dense_delay=0, expert_delay=0)
        fixed = dict(cfg, combine_style=ref.FIXED_POINT, n_blocks=cfg["num_hidden_layers"], n_iter=1)
        self.assertLess(rel_err(decode_logits(ref.CflowModel(fixed, tensors), TOKENS),
                                decode_logits(ref.CflowModel(cfg, tensors), TOKENS)), 1e-13)

    def test_styles_reject_delays_they_do_not_have(self):
        cfg, tensors = case_model("gemma_parallel_sqrt2")
        for style in (ref.PARALLEL_SQRT2, ref.SEQUENTIAL, ref.DECOUPLED_STREAMS, ref.PIPELINE_REGISTERS):
            with self.subTest(style=style), self.assertRaises(ValueError):
                ref.CflowModel(dict(cfg, combine_style=style, expert_delay=1), tensors)
        with self.assertRaises(ValueError):
            ref.CflowModel(dict(cfg, combine_style=ref.ASYNC_EXPERTS, dense_delay=1), tensors)

    def test_prefill_equals_token_by_token_decode_for_every_case(self):
        for case in gen.CASES:
            with self.subTest(name=case["name"]):
                cfg, tensors = case_model(case["name"])
                model = ref.CflowModel(cfg, tensors)
                logits, rec = model.forward(TOKENS, 0, model.new_cache())
                cache = model.new_cache()
                for p, tok in enumerate(TOKENS):
                    step, step_rec = model.forward([tok], p, cache)
                    self.assertLess(rel_err(step[0], logits[p]), 1e-12)
                    self.assertEqual(step_rec.experts[0], rec.experts[p])
                    self.assertTrue(all(math.isclose(a, b, rel_tol=1e-12)
                                        for a, b in zip(step_rec.norms[0], rec.norms[p])))


# ----------------------------------------------------------------------------- schedules written out by hand

def attn_pos0(lw, x, cfg, eps):
    """Attention of the first token: softmax over one key is 1, so it is o(v) with v's kv head per query head."""
    hq, hkv, dk = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    v = (ref.rms_norm(x, lw["attn_norm"], eps) @ lw["v"].T).view(hkv, dk)
    return torch.cat([v[h * hkv // hq] for h in range(hq)]) @ lw["o"].T


class SchedulesByHand(unittest.TestCase):
    """Position 0 of each multi-stream / delayed style, spelled out layer by layer."""

    def setUp(self):
        self.tok = [TOKENS[0]]

    def run_pos0(self, cfg, tensors):
        model = ref.CflowModel(cfg, tensors)
        logits, rec = model.forward(self.tok, 0, model.new_cache())
        return model, logits[0], rec.norms[0]

    def helpers(self, model):
        eps, act = model.eps, ref.ACTIVATIONS[model.cfg["ffn_activation"]]
        attn = lambda lw, x: attn_pos0(lw, x, model.cfg, eps)  # noqa: E731
        ffn = lambda lw, x: ref.gated_ffn(ref.rms_norm(x, lw["ffn_norm"], eps), *lw["ffn"], act)  # noqa: E731
        moe = lambda lw, x: ref.moe(lw, ref.rms_norm(x, lw["moe_norm"], eps)[None], model.cfg)[0][0]  # noqa: E731
        return attn, ffn, moe

    def check(self, model, logits, norms, outs, final):
        self.assertEqual(len(norms), len(outs))
        for n, x in zip(norms, outs):
            self.assertTrue(math.isclose(n, float(torch.linalg.norm(x)), rel_tol=1e-12))
        self.assertLess(rel_err(logits, model.logits(final[None])[0]), 1e-12)

    def test_delayed_sum_dd1_de2(self):
        cfg, tensors = case_model("arch2_4_combined")
        model, logits, norms = self.run_pos0(cfg, tensors)
        attn, ffn, moe = self.helpers(model)
        emb = model.embed[self.tok[0]]
        L = len(model.layers)
        x, outs, injected = emb, [], [torch.zeros_like(emb) for _ in range(L)]
        for l, lw in enumerate(model.layers):
            x_mid = x + attn(lw, x)
            f = ffn(lw, emb if l == 0 else outs[l - 1])  # h_{-1} = emb
            injected[min(l + 2, L - 1)] = injected[min(l + 2, L - 1)] + moe(lw, x_mid)
            x = x_mid + f + injected[l]
            outs.append(x)
        self.check(model, logits, norms, outs, x)

    def test_async_experts_de2(self):
        cfg, tensors = case_model("arch4_async_experts")
        model, logits, norms = self.run_pos0(cfg, tensors)
        attn, ffn, moe = self.helpers(model)
        L = len(model.layers)
        x, outs, injected = model.embed[self.tok[0]], [], [0.0] * L
        for l, lw in enumerate(model.layers):
            injected[min(l + 2, L - 1)] = injected[min(l + 2, L - 1)] + moe(lw, x)
            x = x + attn(lw, x) + ffn(lw, x) + injected[l]
            outs.append(x)
        self.check(model, logits, norms, outs, x)

    def test_decoupled_streams_merge3(self):
        cfg, tensors = case_model("arch1_decoupled_streams")
        model, logits, norms = self.run_pos0(cfg, tensors)
        attn, ffn, moe = self.helpers(model)
        a = f = model.embed[self.tok[0]]
        outs = []
        for l, lw in enumerate(model.layers):
            a, f = a + attn(lw, a), f + ffn(lw, f) + moe(lw, f)
            outs.append((a + f) / 2)
            if l in (2, 5):
                a = f = (a + f) / 2
        self.check(model, logits, norms, outs, a)

    def test_pipeline_registers(self):
        cfg, tensors = case_model("arch3_pipeline_registers")
        model, logits, norms = self.run_pos0(cfg, tensors)
        attn, ffn, moe = self.helpers(model)
        a = xr = model.embed[self.tok[0]]
        outs = []
        for lw in model.layers:
            a_next = a + attn(lw, a)
            xr = a_next + ffn(lw, xr) + moe(lw, xr)
            a = a_next
            outs.append(xr)
        self.check(model, logits, norms, outs, xr)

    def test_fixed_point_2x3(self):
        cfg, tensors = case_model("arch5_fixed_point")
        model, logits, norms = self.run_pos0(cfg, tensors)
        attn, ffn, moe = self.helpers(model)
        x = model.embed[self.tok[0]]
        outs = []
        for lw in model.layers:
            y = x
            for _ in range(3):
                a = attn(lw, y)
                y = x + a + ffn(lw, y + a) + moe(lw, y + a)
                outs.append(y)
            x = y
        self.check(model, logits, norms, outs, x)

    def test_parallel_sqrt2(self):
        cfg, tensors = case_model("gemma_parallel_sqrt2")
        model, logits, norms = self.run_pos0(cfg, tensors)
        attn, ffn, moe = self.helpers(model)
        x, outs = model.embed[self.tok[0]], []
        for lw in model.layers:
            x_mid = x + attn(lw, x)
            x = x_mid + (ffn(lw, x_mid) + moe(lw, x_mid)) / math.sqrt(2)
            outs.append(x)
        self.check(model, logits, norms, outs, x)

    def test_expert_output_lands_within_the_same_token(self):
        """de = 2 at L = 6: layer 4's experts land at layer 5 of the same token, so they change token 0's logits."""
        cfg, tensors = case_model("arch2_4_combined")
        base = self.run_pos0(cfg, tensors)[1]
        silenced = dict(tensors)
        for e in range(cfg["num_experts"]):
            name = "model.layers.4.moe.experts.%d.down_proj.weight" % e
            silenced[name] = torch.zeros_like(tensors[name])
        self.assertGreater(rel_err(self.run_pos0(cfg, silenced)[1], base), 1e-3)


# ----------------------------------------------------------------------------- router

class Router(unittest.TestCase):
    def test_softmax_topk_vs_softmax_all(self):
        cfg, tensors = case_model("mixtral_moe")
        lw = ref.CflowModel(cfg, tensors).layers[1]
        r = torch.randn(16, cfg["hidden_size"], generator=torch.Generator().manual_seed(3), dtype=torch.float64)
        out_topk, ids_topk, w_topk = ref.moe(lw, r, dict(cfg, router_mode="softmax_topk"))
        out_all, ids_all, w_all = ref.moe(lw, r, dict(cfg, router_mode="softmax_all_no_renorm"))
        self.assertEqual(ids_topk, ids_all)
        probs = torch.softmax(r @ lw["router"].T, dim=-1)
        for t in range(16):
            self.assertAlmostEqual(sum(w_topk[t]), 1.0, places=12)
            self.assertLess(sum(w_all[t]), 1.0)
            for j in range(2):
                self.assertAlmostEqual(w_all[t][j], float(probs[t, ids_all[t][j]]), places=14)
                self.assertAlmostEqual(w_topk[t][j], w_all[t][j] / sum(w_all[t]), places=14)
            self.assertGreaterEqual(w_topk[t][0], w_topk[t][1])  # listed by descending logit
        self.assertGreater(rel_err(out_all, out_topk), 1e-3)

    def test_ties_go_to_the_lower_expert_index(self):
        self.assertEqual(ref.top_k_experts(torch.tensor([1.0, 3.0, 3.0, 2.0, 3.0]), 2), [1, 2])
        self.assertEqual(ref.top_k_experts(torch.tensor([0.5, 0.5, 0.5, 0.5]), 3), [0, 1, 2])
        self.assertEqual(ref.top_k_experts(torch.tensor([-1.0, 2.0, -0.5, 2.0]), 3), [1, 3, 2])


# ----------------------------------------------------------------------------- tokenizer

class TokenizerFiles(unittest.TestCase):
    def test_vocab_layout(self):
        self.assertEqual(len(VOCAB), gen.VOCAB_SIZE)
        self.assertEqual([VOCAB["<unk>"], VOCAB["<s>"], VOCAB["</s>"], VOCAB["<0x00>"], VOCAB["<0xFF>"]], [0, 1, 2, 3, 258])
        for m in MERGES:
            a, b = m.split(" ")
            self.assertIn(a, VOCAB)
            self.assertIn(b, VOCAB)
            self.assertIn(a + b, VOCAB)

    def test_hf_bpe_equals_sentencepiece_by_score(self):
        for text in gen.TOKENIZER_CHECK_TEXTS + [gen.TRACE_TEXT, "thethe on,on.and"]:
            with self.subTest(text=text):
                self.assertEqual(gen.hf_bpe_encode(text, VOCAB, MERGES), gen.spm_encode(text, VOCAB, MERGES))

    def test_known_encodings(self):
        ids = gen.hf_bpe_encode("the cat", VOCAB, MERGES)
        self.assertEqual(ids, [VOCAB["\u2581the"], VOCAB["\u2581cat"]])
        self.assertEqual(gen.hf_bpe_encode("Z", VOCAB, MERGES), [VOCAB["\u2581"], VOCAB["<0x5A>"]])
        self.assertEqual(TOKENS[0], 1)
        self.assertEqual(len(TOKENS), gen.TRACE_LEN)


# ----------------------------------------------------------------------------- generated folders

def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    return n, header, blob[8 + n:]


class GeneratedFolders(unittest.TestCase):
    NAMES = ["arch2_4_combined", "arch5_fixed_point", "qwen2moe_shared"]

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dirs = [os.path.join(cls.tmp.name, "a"), os.path.join(cls.tmp.name, "b")]
        args = sum([["--only", n] for n in cls.NAMES], [])
        for d in cls.dirs:
            gen.main([d] + args)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_output_is_deterministic(self):
        for name in self.NAMES:
            for f in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "trace.json"):
                with open(os.path.join(self.dirs[0], name, f), "rb") as a, open(os.path.join(self.dirs[1], name, f), "rb") as b:
                    self.assertEqual(a.read(), b.read(), "%s/%s differs between runs" % (name, f))

    def test_safetensors_layout_and_round_trip(self):
        for name in self.NAMES:
            d = os.path.join(self.dirs[0], name)
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            n, header, data = read_safetensors(os.path.join(d, "model.safetensors"))
            self.assertEqual(n % 8, 0)
            self.assertEqual(header.pop("__metadata__"), {"format": "pt"})
            end = 0
            tensors = {}
            for tname in sorted(header, key=lambda k: header[k]["data_offsets"][0]):
                e = header[tname]
                self.assertEqual(e["dtype"], "F32")
                self.assertEqual(e["data_offsets"][0], end)
                end = e["data_offsets"][1]
                self.assertEqual(end - e["data_offsets"][0], 4 * math.prod(e["shape"]))
                tensors[tname] = torch.frombuffer(bytearray(data[e["data_offsets"][0]:end]),
                                                  dtype=torch.float32).view(e["shape"])
            self.assertEqual(end, len(data))
            with open(os.path.join(d, "trace.json")) as f:
                trace = json.load(f)
            # The weights read back reproduce the trace.
            logits = decode_logits(ref.CflowModel(cfg, tensors), trace["tokens"])
            self.assertLess(rel_err(logits, torch.tensor(trace["logits"], dtype=torch.float64)), 1e-14)

    def test_trace_shapes_and_non_degeneracy(self):
        for name in self.NAMES:
            d = os.path.join(self.dirs[0], name)
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            with open(os.path.join(d, "trace.json")) as f:
                trace = json.load(f)
            depth = cfg["n_blocks"] * cfg["n_iter"] if cfg["combine_style"] == ref.FIXED_POINT else cfg["num_hidden_layers"]
            self.assertEqual(len(trace["tokens"]), 24)
            self.assertEqual(trace["tokens"][0], 1)
            self.assertEqual([len(r) for r in trace["logits"]], [cfg["vocab_size"]] * 24)
            self.assertEqual([len(r) for r in trace["residual_norms"]], [depth] * 24)
            self.assertEqual([len(r) for r in trace["experts"]], [depth] * 24)
            self.assertTrue(all(len(ids) == cfg["num_experts_per_tok"] for pos in trace["experts"] for ids in pos))
            self.assertEqual(trace["greedy"]["prompt"], trace["tokens"][:4])
            self.assertEqual(len(trace["greedy"]["tokens"]), 64)
            self.assertGreaterEqual(len(set(trace["greedy"]["tokens"])), 4)
            self.assertGreaterEqual(min(float(torch.tensor(r).std()) for r in trace["logits"]), 0.25)
            self.assertGreaterEqual(len({e for pos in trace["experts"] for ids in pos for e in ids}), 6)
            for layer in range(depth):
                self.assertGreaterEqual(len({tuple(pos[layer]) for pos in trace["experts"]}), 3)
            self.assertGreaterEqual(trace["checks"]["min_router_margin"], gen.MIN_ROUTER_MARGIN)
            self.assertGreaterEqual(trace["checks"]["min_greedy_margin"], gen.MIN_GREEDY_MARGIN)

    def test_a_float32_run_meets_the_engine_tolerances(self):
        """The same math in float32 (what the C++ engine does) is within the tolerances the engine
        is held to, and makes the same expert and greedy choices."""
        for name in self.NAMES:
            with self.subTest(name=name):
                cfg, tensors, trace = self.load(name)
                old = ref.DTYPE
                ref.DTYPE = torch.float32
                ref._ROPE_TABLES.clear()
                try:
                    model = ref.CflowModel(cfg, tensors)
                    got = ref.run_trace(model, trace["tokens"])
                    greedy = ref.run_greedy(model, trace["greedy"]["prompt"], 64)[0]
                finally:
                    ref.DTYPE = old
                    ref._ROPE_TABLES.clear()
                want_logits = torch.tensor(trace["logits"], dtype=torch.float64)
                self.assertLess(rel_err(torch.tensor(got["logits"], dtype=torch.float64), want_logits), 1e-5)
                norms = torch.tensor(got["residual_norms"], dtype=torch.float64)
                want_norms = torch.tensor(trace["residual_norms"], dtype=torch.float64)
                self.assertLess(float(((norms - want_norms).abs() / want_norms).max()), 1e-5)
                self.assertEqual(got["experts"], trace["experts"])
                self.assertEqual(greedy, trace["greedy"]["tokens"])

    def load(self, name):
        d = os.path.join(self.dirs[0], name)
        with open(os.path.join(d, "config.json")) as f:
            cfg = json.load(f)
        with open(os.path.join(d, "trace.json")) as f:
            trace = json.load(f)
        _, header, data = read_safetensors(os.path.join(d, "model.safetensors"))
        header.pop("__metadata__")
        tensors = {k: torch.frombuffer(bytearray(data[e["data_offsets"][0]:e["data_offsets"][1]]),
                                       dtype=torch.float32).view(e["shape"]) for k, e in header.items()}
        return cfg, tensors, trace

    def test_greedy_tokens_replay(self):
        cfg, tensors, trace = self.load("arch2_4_combined")
        seq = trace["greedy"]["prompt"] + trace["greedy"]["tokens"]
        logits = decode_logits(ref.CflowModel(cfg, tensors), seq[:-1])
        self.assertEqual(logits[3:].argmax(dim=-1).tolist(), trace["greedy"]["tokens"])


if __name__ == "__main__":
    unittest.main()
