// The engine's forward pass against a naive double-precision reference written from the
// semantics spec and evaluated directly on the source tensors (before conversion). The
// reference applies RoPE in the source's own convention, so it also checks the converter's
// Q/K permutation for interleaved (llama2.c / GGUF-llama) checkpoints.
#include <cmath>
#include <vector>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/tile_codec.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

constexpr double kF32RelTol = 1e-4;  // float32 engine vs double reference, relative L2 of the logits
constexpr double kQ8RelTol = 5e-2;   // Q8_0 weights: per-block rounding noise

using Vec = std::vector<double>;

Vec tensor(const SourceModel& m, const std::string& name) {
    const TensorView* t = m.find(name);
    if (!t) return {};
    uint64_t n = 1;
    for (auto s : t->shape) n *= s;
    std::vector<float> f(n);
    convert_to_f32(t->dtype, t->data, n, f.data());
    return Vec(f.begin(), f.end());
}

// y = W x for W [rows x cols] row-major
Vec matvec(const Vec& w, const Vec& x, size_t rows) {
    const size_t cols = x.size();
    Vec y(rows, 0.0);
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) y[r] += w[r * cols + c] * x[c];
    return y;
}

Vec rmsnorm(const Vec& x, const Vec& w, double eps) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / x.size() + eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
    return y;
}

// RoPE on one head in the checkpoint's own convention.
void rope(double* v, size_t dk, size_t pos, double theta, bool interleaved) {
    for (size_t i = 0; i < dk / 2; ++i) {
        const double freq = std::pow(theta, -2.0 * double(i) / double(dk));
        const double c = std::cos(pos * freq), s = std::sin(pos * freq);
        const size_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + dk / 2;
        const double x0 = v[a], x1 = v[b];
        v[a] = x0 * c - x1 * s;
        v[b] = x0 * s + x1 * c;
    }
}

// Logits after each token of `tokens`, Sequential style, SwiGLU.
std::vector<Vec> reference_logits(const SourceModel& m, const std::vector<int32_t>& tokens) {
    const ModelConfig& c = m.config;
    const size_t d = c.d_model, dk = c.head_dim, H = c.n_heads, Hkv = c.n_kv_heads;
    const Vec emb = tensor(m, "token_embd.weight");
    Vec out_w = tensor(m, "output.weight");
    if (out_w.empty()) out_w = emb;
    std::vector<std::vector<Vec>> kcache(c.n_layers), vcache(c.n_layers);
    std::vector<Vec> result;
    for (size_t pos = 0; pos < tokens.size(); ++pos) {
        Vec x(emb.begin() + tokens[pos] * d, emb.begin() + (tokens[pos] + 1) * d);
        for (uint32_t l = 0; l < c.n_layers; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            Vec xn = rmsnorm(x, tensor(m, p + "attn_norm.weight"), c.norm_eps);
            Vec q = matvec(tensor(m, p + "attn_q.weight"), xn, H * dk);
            Vec k = matvec(tensor(m, p + "attn_k.weight"), xn, Hkv * dk);
            Vec v = matvec(tensor(m, p + "attn_v.weight"), xn, Hkv * dk);
            if (Vec bq = tensor(m, p + "attn_q.bias"); !bq.empty()) {
                Vec bk = tensor(m, p + "attn_k.bias"), bv = tensor(m, p + "attn_v.bias");
                for (size_t i = 0; i < q.size(); ++i) q[i] += bq[i];
                for (size_t i = 0; i < k.size(); ++i) k[i] += bk[i], v[i] += bv[i];
            }
            for (size_t h = 0; h < H; ++h) rope(&q[h * dk], dk, pos, c.rope_theta, c.rope_interleaved);
            for (size_t h = 0; h < Hkv; ++h) rope(&k[h * dk], dk, pos, c.rope_theta, c.rope_interleaved);
            kcache[l].push_back(k);
            vcache[l].push_back(v);
            Vec att(H * dk, 0.0);
            for (size_t h = 0; h < H; ++h) {
                const size_t kvh = h * Hkv / H;
                const size_t first = c.sliding_window && pos + 1 > c.sliding_window ? pos + 1 - c.sliding_window : 0;
                Vec scores;
                double mx = -1e300;
                for (size_t t = first; t <= pos; ++t) {
                    double s = 0;
                    for (size_t i = 0; i < dk; ++i) s += q[h * dk + i] * kcache[l][t][kvh * dk + i];
                    scores.push_back(s / std::sqrt(double(dk)));
                    mx = std::max(mx, scores.back());
                }
                double sum = 0;
                for (double& s : scores) sum += (s = std::exp(s - mx));
                for (size_t t = first; t <= pos; ++t)
                    for (size_t i = 0; i < dk; ++i) att[h * dk + i] += scores[t - first] / sum * vcache[l][t][kvh * dk + i];
            }
            Vec o = matvec(tensor(m, p + "attn_output.weight"), att, d);
            for (size_t i = 0; i < d; ++i) x[i] += o[i];
            xn = rmsnorm(x, tensor(m, p + "ffn_norm.weight"), c.norm_eps);
            Vec g = matvec(tensor(m, p + "ffn_gate.weight"), xn, c.d_ff);
            Vec u = matvec(tensor(m, p + "ffn_up.weight"), xn, c.d_ff);
            for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
            Vec dn = matvec(tensor(m, p + "ffn_down.weight"), g, d);
            for (size_t i = 0; i < d; ++i) x[i] += dn[i];
        }
        Vec xn = rmsnorm(x, tensor(m, "output_norm.weight"), c.norm_eps);
        result.push_back(matvec(out_w, xn, c.vocab_size));
    }
    return result;
}

double relative_error(std::span<const float> got, const Vec& want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

struct Case {
    const char* name;
    SyntheticSpec spec;
    DType quant;
    double tolerance;
};

std::vector<Case> cases() {
    std::vector<Case> out;
    SyntheticSpec base;
    out.push_back({"dense_mha_f32", base, DType::F32, kF32RelTol});
    SyntheticSpec gqa = base;
    gqa.n_heads = 8;
    gqa.n_kv_heads = 2;
    gqa.rope_interleaved = true;
    out.push_back({"gqa_interleaved_rope_f32", gqa, DType::F32, kF32RelTol});
    SyntheticSpec qwen = base;
    qwen.qkv_bias = true;
    qwen.tied = true;
    out.push_back({"qkv_bias_tied_f32", qwen, DType::F32, kF32RelTol});
    SyntheticSpec wide = base;
    wide.d_model = 320;   // two column tiles per row, an edge tile of 64 columns
    wide.d_ff = 300;      // edge stripe and partial 32-groups
    wide.n_heads = 5;
    wide.n_kv_heads = 5;
    wide.head_dim = 64;
    out.push_back({"edge_tiles_f32", wide, DType::F32, kF32RelTol});
    out.push_back({"edge_tiles_q8_0", wide, DType::Q8_0, kQ8RelTol});
    return out;
}

TEST(ForwardReference, EngineMatchesNaiveReference) {
    for (const Case& tc : cases()) {
        SCOPED_TRACE(tc.name);
        SourceModel source = make_synthetic_model(tc.spec);
        const auto path = (temp_dir(tc.name) / "model.cflow").string();
        ConvertOptions options;
        options.weight_quant = tc.quant;
        auto converted = convert_to_cflow(source, path, options);
        ASSERT_TRUE(converted.ok()) << converted.error();
        auto model = Model::load(path);
        ASSERT_TRUE(model.ok()) << model.error();
        for (unsigned threads : {1u, 3u}) {
            auto session = Session::create(model.value(), SessionOptions{threads, 0});
            ASSERT_TRUE(session.ok()) << session.error();
            const std::vector<int32_t> tokens = {1, 5, 17, 3, 42, 9, 0, 63, 21, 7};
            const auto want = reference_logits(source, tokens);
            for (size_t i = 0; i < tokens.size(); ++i) {
                auto got = (*session)->step(tokens[i]);
                ASSERT_TRUE(got.ok()) << got.error();
                EXPECT_LT(relative_error(*got, want[i]), tc.tolerance) << "position " << i << ", threads " << threads;
            }
        }
    }
}

TEST(ForwardReference, ContextFullAndBadTokenAreErrors) {
    SourceModel source = make_synthetic_model(SyntheticSpec{});
    const auto path = (temp_dir("ctx") / "model.cflow").string();
    ASSERT_TRUE(convert_to_cflow(source, path, ConvertOptions{}).ok());
    auto model = Model::load(path);
    ASSERT_TRUE(model.ok()) << model.error();
    auto session = Session::create(model.value(), SessionOptions{1, 4});
    ASSERT_TRUE(session.ok());
    auto bad = (*session)->step(int32_t((*model)->header().vocab_size));
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.kind(), ErrorKind::InvalidInput) << bad.error();
    EXPECT_NE(bad.error().find(std::to_string((*model)->header().vocab_size)), std::string::npos) << bad.error();
    EXPECT_EQ((*session)->position(), 0u);  // a refused token takes no position
    for (int i = 0; i < 4; ++i) ASSERT_TRUE((*session)->step(1).ok());
    auto full = (*session)->step(1);
    ASSERT_FALSE(full.ok());
    EXPECT_EQ(full.kind(), ErrorKind::ContextFull) << full.error();
    EXPECT_EQ((*session)->position(), 4u);
    (*session)->reset();
    EXPECT_TRUE((*session)->step(1).ok());
}

} // namespace
} // namespace cflow::test
