// Deterministic synthetic SourceModel (see synthetic_model.h).
#include "synthetic_model.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include <gtest/gtest.h>

#include "cflow/formats/converter.h"
#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/tile_codec.h"

namespace cflow::test {
namespace {

// splitmix64 + Box-Muller: identical streams on every platform and standard library.
class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
    float normal() {
        const double u1 = uniform() + 1e-300, u2 = uniform();
        return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }

private:
    uint64_t state_;
};

// The in-memory "file" that owns all tensor bytes.
class MemoryFile final : public MappedFile {
public:
    explicit MemoryFile(std::string path) : path_(std::move(path)) {}
    const uint8_t* data() const override { return bytes_.data(); }
    uint64_t size() const override { return bytes_.size(); }
    const std::string& path() const override { return path_; }
    LoadMode mode() const override { return LoadMode::ReadAnon; }
    void advise_willneed(uint64_t, uint64_t) const override {}
    uint64_t resident_bytes() const override { return bytes_.size(); }

    std::vector<uint8_t> bytes_;

private:
    std::string path_;
};

uint64_t block_bytes(DType t) { return t == DType::Q4_0 ? 18 : 34; }

// Encodes f32 values [rows x cols] as `dtype` in the source layout (ggml blocks for Q types).
std::vector<uint8_t> encode_source(DType dtype, const std::vector<float>& values, uint64_t cols) {
    std::vector<uint8_t> out;
    const uint64_t n = values.size();
    switch (dtype) {
        case DType::F32:
            out.resize(n * 4);
            std::memcpy(out.data(), values.data(), n * 4);
            break;
        case DType::F16:
        case DType::BF16:
            out.resize(n * 2);
            for (uint64_t i = 0; i < n; ++i) {
                uint16_t h = 0;
                if (dtype == DType::F16) {
                    h = f32_to_f16(values[i]);
                } else {  // bf16: round to nearest even on the top 16 bits (finite inputs)
                    uint32_t bits;
                    std::memcpy(&bits, &values[i], 4);
                    h = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
                }
                std::memcpy(out.data() + i * 2, &h, 2);
            }
            break;
        case DType::Q8_0:
        case DType::Q4_0: {
            if (cols % 32 != 0) throw std::invalid_argument("synthetic Q8_0/Q4_0 tensors need cols % 32 == 0");
            const uint64_t blocks = n / 32, bb = block_bytes(dtype);
            out.resize(blocks * bb);
            for (uint64_t b = 0; b < blocks; ++b) {
                uint8_t* block = out.data() + b * bb;
                uint16_t scale = 0;
                if (dtype == DType::Q4_0)
                    quantize_block_q4_0(values.data() + b * 32, &scale, block + 2);
                else
                    quantize_block_q8_0(values.data() + b * 32, &scale, reinterpret_cast<int8_t*>(block + 2));
                std::memcpy(block, &scale, 2);
            }
            break;
        }
        case DType::GgmlBlock: throw std::invalid_argument("synthetic tensors are F32, F16, BF16, Q8_0 or Q4_0");
    }
    return out;
}

struct PendingTensor {
    TensorView view;
    std::vector<uint8_t> bytes;
};

class Builder {
public:
    explicit Builder(const SyntheticSpec& spec) : spec_(spec), rng_(spec.seed) {}

    // row_skew > 0 (routers): row r also scaled by 1 + row_skew * (rows-1-r)/(rows-1).
    void matrix(const std::string& name, std::vector<uint64_t> shape, DType dtype, float row_skew = 0.0f) {
        const uint64_t cols = shape.back();
        uint64_t n = 1;
        for (uint64_t d : shape) n *= d;
        std::vector<float> v(n);  // [rows x cols] f32 (rows = product of outer dims)
        const uint64_t rows = n / cols;
        for (uint64_t r = 0; r < rows; ++r) {
            float row_scale = static_cast<float>(0.5 + 1.5 * rng_.uniform());
            if (row_skew > 0.0f && rows > 1) row_scale *= 1.0f + row_skew * float(rows - 1 - r) / float(rows - 1);
            for (uint64_t c = 0; c < cols; ++c) v[r * cols + c] = spec_.weight_std * row_scale * rng_.normal();
        }
        add(name, std::move(shape), dtype, v);
    }
    void vector(const std::string& name, uint64_t n, float center, float spread) {
        std::vector<float> v(n);  // [n] f32
        for (float& x : v) x = center + spread * rng_.normal();
        add(name, {n}, DType::F32, v);
    }
    void add(const std::string& name, std::vector<uint64_t> shape, DType dtype, const std::vector<float>& values) {
        PendingTensor t;
        t.view.name = name;
        t.view.dtype = dtype;
        t.view.shape = std::move(shape);
        t.view.origin = "synthetic: tensor '" + name + "'";
        t.bytes = encode_source(dtype, values, t.view.shape.back());
        pending_.push_back(std::move(t));
    }

    // Moves all bytes into one MemoryFile (64-byte aligned tensors) and points the views at it.
    void finish(SourceModel* model) {
        auto file = std::make_shared<MemoryFile>("synthetic-model");
        uint64_t total = 0;
        std::vector<uint64_t> offsets;
        for (const PendingTensor& t : pending_) {
            offsets.push_back(total);
            total += (t.bytes.size() + 63) / 64 * 64;
        }
        file->bytes_.assign(total, 0);
        for (size_t i = 0; i < pending_.size(); ++i) {
            PendingTensor& t = pending_[i];
            if (!t.bytes.empty()) std::memcpy(file->bytes_.data() + offsets[i], t.bytes.data(), t.bytes.size());
            t.view.data = file->bytes_.data() + offsets[i];
            t.view.bytes = t.bytes.size();
            model->tensors[t.view.name] = t.view;
        }
        model->files.push_back(file);
    }

private:
    const SyntheticSpec& spec_;
    Rng rng_;
    std::vector<PendingTensor> pending_;
};

Metadata synthetic_metadata(const SyntheticSpec& spec) {
    Metadata meta;
    std::vector<std::string> tokens = synthetic_vocabulary(spec.vocab);
    std::vector<float> scores(tokens.size());
    std::vector<int32_t> types(tokens.size(), 1);  // 1 normal, 2 unknown, 3 control, 6 byte (GGUF token types)
    for (size_t i = 0; i < tokens.size(); ++i) {
        scores[i] = -static_cast<float>(i);
        if (i == 0) types[i] = 2;
        else if (i < 3) types[i] = 3;
        else if (tokens[i].size() == 6 && tokens[i].rfind("<0x", 0) == 0) types[i] = 6;
    }
    meta.set("general.architecture", std::string("llama"));
    meta.set("general.name", std::string("synthetic-test-model"));
    meta.set("general.license", std::string("CC0-1.0"));
    meta.set("tokenizer.ggml.model", std::string("llama"));
    meta.set("tokenizer.ggml.tokens", std::move(tokens));
    meta.set("tokenizer.ggml.scores", std::move(scores));
    meta.set("tokenizer.ggml.token_type", std::move(types));
    meta.set("tokenizer.ggml.unknown_token_id", int64_t{0});
    meta.set("tokenizer.ggml.bos_token_id", int64_t{1});
    meta.set("tokenizer.ggml.eos_token_id", int64_t{2});
    meta.set("tokenizer.ggml.add_bos_token", true);
    meta.set("tokenizer.chat_template",
             std::string("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}"));
    return meta;
}

} // namespace

std::vector<std::string> synthetic_vocabulary(uint32_t vocab) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    static const char* kHex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    const std::string space = "\xE2\x96\x81";  // U+2581, SentencePiece's word-start marker
    for (const char* w : {"the", "a", "hello", "world", "is", "of", "and", "to", "in", "cat", "dog", "pipe", "line",
                          "flow", "tile", "model"})
        tokens.push_back(space + w);
    for (char c = 'a'; c <= 'z'; ++c) tokens.push_back(std::string(1, c));
    for (char c = 'a'; c <= 'z'; ++c) tokens.push_back(space + std::string(1, c));
    for (char c = 'A'; c <= 'Z'; ++c) tokens.push_back(std::string(1, c));
    for (char c = '0'; c <= '9'; ++c) tokens.push_back(std::string(1, c));
    for (const char* p : {".", ",", "!", "?", space.c_str()}) tokens.push_back(p);
    for (int i = 0; tokens.size() < vocab; ++i) {  // two-letter pieces, then numbered fillers
        if (i < 26 * 26)
            tokens.push_back(std::string(1, static_cast<char>('a' + i / 26)) + static_cast<char>('a' + i % 26));
        else
            tokens.push_back("<extra_" + std::to_string(i) + ">");
    }
    tokens.resize(vocab);
    return tokens;
}

SourceModel make_synthetic_model(const SyntheticSpec& spec) {
    SourceModel model;
    ModelConfig& c = model.config;
    c.architecture = spec.qkv_bias ? "qwen2" : "llama";
    c.d_model = spec.d_model;
    c.n_layers = spec.n_layers;
    c.n_heads = spec.n_heads;
    c.n_kv_heads = spec.n_kv_heads;
    c.head_dim = spec.head_dim;
    c.d_ff = spec.d_ff;
    c.n_experts = spec.n_experts;
    c.top_k = spec.top_k;
    c.expert_d_ff = spec.expert_d_ff;
    c.shared_expert_d_ff = spec.shared_expert_d_ff;
    c.vocab_size = spec.vocab;
    c.max_seq_len = spec.max_seq_len;
    c.norm_eps = 1e-5f;
    c.rope_theta = 10000.0f;
    c.combine_style = spec.combine_style;
    c.dense_delay = spec.dense_delay;
    c.expert_delay = spec.expert_delay;
    if (spec.combine_style == CombineStyle::FixedPoint) {
        c.n_blocks = static_cast<uint8_t>(spec.n_layers);
        c.n_iter = spec.n_iter;
    }
    c.rope_interleaved = spec.rope_interleaved;
    if (spec.tied) c.feature_flags |= kFeatureTiedEmbeddings;
    if (spec.qkv_bias) c.feature_flags |= kFeatureQkvBias;
    if (spec.qk_norm) c.feature_flags |= kFeatureQkNorm;
    if (spec.gpt_oss) {
        c.ffn_activation = FfnActivation::ClampedSwiGLU;
        c.ffn_alpha = 1.702f;
        c.ffn_limit = 7.0f;
    }
    model.source_label = "synthetic-model";
    model.metadata = synthetic_metadata(spec);

    Builder b(spec);
    const uint64_t d = spec.d_model, q = uint64_t{spec.n_heads} * spec.head_dim,
                   kv = uint64_t{spec.n_kv_heads} * spec.head_dim;
    const DType m = spec.dtype;
    const DType router = is_block_quant(m) ? DType::F32 : m;
    b.matrix("token_embd.weight", {spec.vocab, d}, m);
    b.vector("output_norm.weight", d, 1.0f, 0.1f);
    if (!spec.tied) b.matrix("output.weight", {spec.vocab, d}, m);
    for (uint32_t l = 0; l < spec.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        b.vector(p + "attn_norm.weight", d, 1.0f, 0.1f);
        b.matrix(p + "attn_q.weight", {q, d}, m);
        b.matrix(p + "attn_k.weight", {kv, d}, m);
        b.matrix(p + "attn_v.weight", {kv, d}, m);
        b.matrix(p + "attn_output.weight", {d, q}, m);
        if (spec.qkv_bias) {
            b.vector(p + "attn_q.bias", q, 0.0f, 0.1f);
            b.vector(p + "attn_k.bias", kv, 0.0f, 0.1f);
            b.vector(p + "attn_v.bias", kv, 0.0f, 0.1f);
        }
        if (spec.gpt_oss) {
            b.vector(p + "attn_sinks.weight", spec.n_heads, 0.0f, 1.0f);
            b.vector(p + "attn_output.bias", d, 0.0f, 0.1f);
        }
        if (spec.qk_norm) {
            b.vector(p + "attn_q_norm.weight", spec.head_dim, 1.0f, 0.1f);
            b.vector(p + "attn_k_norm.weight", spec.head_dim, 1.0f, 0.1f);
        }
        if (spec.post_norms) {
            b.vector(p + "post_attention_norm.weight", d, 1.0f, 0.1f);
            if (spec.d_ff > 0) b.vector(p + "post_ffw_norm.weight", d, 1.0f, 0.1f);
        }
        if (spec.d_ff > 0 || (spec.n_experts > 0 && !spec.moe_norm)) b.vector(p + "ffn_norm.weight", d, 1.0f, 0.1f);
        if (spec.d_ff > 0) {
            b.matrix(p + "ffn_gate.weight", {spec.d_ff, d}, m);
            b.matrix(p + "ffn_up.weight", {spec.d_ff, d}, m);
            b.matrix(p + "ffn_down.weight", {d, spec.d_ff}, m);
        }
        if (spec.n_experts > 0) {
            const uint64_t e = spec.n_experts, eff = spec.expert_d_ff;
            if (spec.moe_norm) b.vector(p + "moe_norm.weight", d, 1.0f, 0.1f);
            b.matrix(p + "ffn_gate_inp.weight", {e, d}, router, spec.router_skew);
            b.matrix(p + "ffn_gate_exps.weight", {e, eff, d}, m);
            b.matrix(p + "ffn_up_exps.weight", {e, eff, d}, m);
            b.matrix(p + "ffn_down_exps.weight", {e, d, eff}, m);
            if (spec.gpt_oss) {
                b.vector(p + "ffn_gate_inp.bias", e, 0.0f, 0.1f);
                b.matrix(p + "ffn_gate_exps.bias", {e, eff}, DType::F32);
                b.matrix(p + "ffn_up_exps.bias", {e, eff}, DType::F32);
                b.matrix(p + "ffn_down_exps.bias", {e, d}, DType::F32);
            }
            if (spec.shared_expert_d_ff > 0) {
                const uint64_t sff = spec.shared_expert_d_ff;
                b.matrix(p + "ffn_gate_shexp.weight", {sff, d}, m);
                b.matrix(p + "ffn_up_shexp.weight", {sff, d}, m);
                b.matrix(p + "ffn_down_shexp.weight", {d, sff}, m);
                b.vector(p + "ffn_gate_inp_shexp.weight", d, 0.0f, 0.1f);
            }
        }
    }
    b.finish(&model);
    return model;
}

std::vector<float> tensor_to_f32(const TensorView& t) {
    uint64_t n = 1;
    for (uint64_t dim : t.shape) n *= dim;
    std::vector<float> out(n);  // [product(shape)] f32
    if (t.dtype == DType::GgmlBlock) {  // rows of whole blocks, back to back: one long row
        dequantize_ggml_row(t.ggml_type, t.data, n, out.data());
        return out;
    }
    for (uint64_t i = 0; i < n; ++i) {
        uint16_t h;
        switch (t.dtype) {
            case DType::F32: std::memcpy(&out[i], t.data + i * 4, 4); break;
            case DType::F16:
                std::memcpy(&h, t.data + i * 2, 2);
                out[i] = f16_to_f32(h);
                break;
            case DType::BF16: {
                std::memcpy(&h, t.data + i * 2, 2);
                const uint32_t bits = uint32_t{h} << 16;
                std::memcpy(&out[i], &bits, 4);
                break;
            }
            case DType::Q8_0:
            case DType::Q4_0: {
                const uint8_t* block = t.data + (i / 32) * block_bytes(t.dtype);
                std::memcpy(&h, block, 2);
                const float d = f16_to_f32(h);
                const uint64_t j = i % 32;
                if (t.dtype == DType::Q8_0) {
                    out[i] = d * static_cast<float>(static_cast<int8_t>(block[2 + j]));
                } else {
                    const uint8_t byte = block[2 + (j % 16)];
                    out[i] = d * static_cast<float>((j < 16 ? (byte & 15) : (byte >> 4)) - 8);
                }
                break;
            }
            case DType::GgmlBlock: break;  // handled above
        }
    }
    return out;
}

SyntheticSpec delayed_moe_spec() {
    SyntheticSpec spec;
    spec.n_layers = 4;
    spec.n_experts = 8;
    spec.top_k = 2;
    spec.expert_d_ff = 64;
    spec.combine_style = CombineStyle::DelayedSum;
    spec.dense_delay = 1;
    spec.expert_delay = 2;
    return spec;
}

std::string write_synthetic_cflow(const SyntheticSpec& spec, const std::filesystem::path& path, DType quant) {
    ConvertOptions options;
    options.weight_quant = quant;
    const auto written = convert_to_cflow(make_synthetic_model(spec), path.string(), options);
    EXPECT_TRUE(written.ok()) << path.string() << ": " << (written.ok() ? "" : written.error());
    return path.string();
}

std::vector<GgufKeyValue> synthetic_llama_gguf_metadata(const SyntheticSpec& spec, const std::string& name) {
    const std::vector<std::string> vocab = synthetic_vocabulary(spec.vocab);
    return {
        {"general.architecture", std::string("llama")},
        {"general.name", name},
        {"llama.context_length", uint32_t{256}},
        {"llama.embedding_length", spec.d_model},
        {"llama.block_count", spec.n_layers},
        {"llama.feed_forward_length", spec.d_ff},
        {"llama.attention.head_count", spec.n_heads},
        {"llama.attention.head_count_kv", spec.n_kv_heads},
        {"llama.attention.layer_norm_rms_epsilon", 1e-5f},
        {"llama.rope.freq_base", 10000.0f},
        {"llama.rope.dimension_count", spec.head_dim},
        {"tokenizer.ggml.model", std::string("llama")},
        {"tokenizer.ggml.tokens", vocab},
        {"tokenizer.ggml.scores", std::vector<float>(vocab.size(), -1.5f)},
        {"tokenizer.ggml.token_type", std::vector<int32_t>(vocab.size(), 1)},
    };
}

} // namespace cflow::test
