// The double-precision reference forward (reference_forward.h).
#include "reference_forward.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "synthetic_model.h"

namespace cflow::test {
namespace {

using Vec = std::vector<double>;

Vec tensor(const SourceModel& m, const std::string& name) {
    const TensorView* t = m.find(name);
    if (!t) return {};
    const std::vector<float> f = tensor_to_f32(*t);  // [product(shape)] f32
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

} // namespace

std::vector<std::vector<double>> reference_logits(const SourceModel& m, const std::vector<int32_t>& tokens) {
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

double relative_l2_error(std::span<const float> got, const std::vector<double>& want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

} // namespace cflow::test
