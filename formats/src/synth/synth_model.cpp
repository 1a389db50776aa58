// make_synth_model: plan every tensor, allocate them all at once (one allocation, so an
// impossible size fails cleanly before any work), generate chunks in parallel, wrap as a SourceModel.
#include "cflow/formats/synth/synth_model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <new>
#include <system_error>
#include <thread>

#include "cflow/formats/llama3_rope.h"
#include "cflow/formats/memory_file.h"
#include "cflow/formats/synth/synth_metadata.h"
#include "cflow/formats/synth/synth_weights.h"

namespace cflow {
namespace {

enum class Fill : uint8_t { Blocks, Norm, Router, RopeFactors };

struct PlannedTensor {
    std::string name;
    std::vector<uint64_t> shape;  // outermost first
    DType dtype = DType::F32;
    Fill fill = Fill::Norm;
    double std_dev = 0.0;         // Blocks and Router
    uint64_t units = 0;           // blocks (Q types) or floats
    uint64_t offset = 0;          // in the MemoryFile
    uint64_t bytes = 0;
};

constexpr uint64_t kAlignment = 64;          // each tensor starts cache-line aligned
constexpr uint64_t kChunkUnits = 1u << 16;   // blocks or floats per generation job (about 1 MiB)
constexpr uint64_t kKQuantChunkUnits = 1u << 12;  // K-quant super-blocks per job (the scale search costs)

uint64_t chunk_units(const PlannedTensor& t) { return is_kquant(t.dtype) ? kKQuantChunkUnits : kChunkUnits; }

uint64_t elements(const std::vector<uint64_t>& shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;  // dims are bounded by the spec checks: no overflow
    return n;
}

class Planner {
public:
    void matrix(const std::string& name, std::vector<uint64_t> shape, double std_dev, DType dtype) {
        PlannedTensor t{name, std::move(shape), dtype, Fill::Blocks, std_dev};
        if (is_kquant(dtype)) {
            t.units = elements(t.shape) / kKQuantBlock;
            t.bytes = t.units * kquant_block_bytes(dtype);
        } else if (is_ggml_tile(dtype)) {  // Q4_1, Q5_0, Q5_1, IQ4_NL
            t.units = elements(t.shape) / kQuantGroup;
            t.bytes = t.units * ggml_tile_block_bytes(dtype);
        } else {
            t.units = elements(t.shape) / kQuantGroup;
            t.bytes = t.units * (dtype == DType::Q4_0 ? 18 : 34);
        }
        add(std::move(t));
    }
    void norm(const std::string& name, uint64_t n) { vector(name, {n}, Fill::Norm, 0.0); }
    void rope_factors(const std::string& name, uint64_t n) { vector(name, {n}, Fill::RopeFactors, 0.0); }
    void router(const std::string& name, uint64_t experts, uint64_t d) {
        vector(name, {experts, d}, Fill::Router, 1.0 / std::sqrt(static_cast<double>(d)));
    }

    std::vector<PlannedTensor> take() { return std::move(tensors_); }
    uint64_t total_bytes() const { return end_; }

private:
    void vector(const std::string& name, std::vector<uint64_t> shape, Fill fill, double std_dev) {
        PlannedTensor t{name, std::move(shape), DType::F32, fill, std_dev};
        t.units = elements(t.shape);
        t.bytes = t.units * 4;
        add(std::move(t));
    }
    void add(PlannedTensor t) {
        t.offset = (end_ + kAlignment - 1) / kAlignment * kAlignment;
        end_ = t.offset + t.bytes;
        tensors_.push_back(std::move(t));
    }

    std::vector<PlannedTensor> tensors_;
    uint64_t end_ = 0;
};

// The block type of a matrix: the spec's type, or for the Q4_K_M mix (SynthSpec::quant Q4_K)
// llama.cpp's recipe: Q6_K LM head, Q6_K attn_v and ffn_down (experts' too) on its "more bits"
// layers, Q4_K elsewhere (token embedding included).
enum class MatrixKind : uint8_t { Ordinary, MoreBits, LmHead };

DType matrix_type(const SynthSpec& s, MatrixKind kind, uint32_t layer) {
    if (s.quant != DType::Q4_K) return s.quant;
    if (kind == MatrixKind::LmHead) return DType::Q6_K;  // also a tied token embedding (it is the head)
    if (kind == MatrixKind::MoreBits && q4_k_m_more_bits(layer, s.n_layers)) return DType::Q6_K;
    return DType::Q4_K;
}

// In llama.cpp's GGUF order; shapes and scales as synth_model.h describes.
std::vector<PlannedTensor> plan_tensors(const SynthSpec& s, uint64_t* total_bytes) {
    Planner p;
    const uint64_t d = s.d_model, q = uint64_t{s.n_heads} * s.head_dim(), kv = uint64_t{s.n_kv_heads} * s.head_dim();
    const auto in = [](uint64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); };
    const double out_gain = 1.0 / std::sqrt(2.0 * s.n_layers);  // residual-branch outputs
    const DType ordinary = matrix_type(s, MatrixKind::Ordinary, 0);
    if (s.llama3_rope) p.rope_factors("rope_freqs.weight", s.head_dim() / 2);
    // A tied embedding is also the LM head: llama.cpp's recipes give it the head's type.
    p.matrix("token_embd.weight", {s.vocab, d}, 1.0, s.tied ? matrix_type(s, MatrixKind::LmHead, 0) : ordinary);
    for (uint32_t l = 0; l < s.n_layers; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        const DType more = matrix_type(s, MatrixKind::MoreBits, l);
        p.norm(b + "attn_norm.weight", d);
        if (s.qk_norm()) {
            p.norm(b + "attn_k_norm.weight", s.head_dim());
            p.norm(b + "attn_q_norm.weight", s.head_dim());
        }
        p.matrix(b + "attn_q.weight", {q, d}, in(d), ordinary);
        p.matrix(b + "attn_k.weight", {kv, d}, in(d), ordinary);
        p.matrix(b + "attn_v.weight", {kv, d}, in(d), more);
        p.matrix(b + "attn_output.weight", {d, q}, in(q) * out_gain, ordinary);
        if (s.d_ff > 0) {
            p.norm(b + "ffn_norm.weight", d);
            p.matrix(b + "ffn_gate.weight", {s.d_ff, d}, in(d), ordinary);
            p.matrix(b + "ffn_up.weight", {s.d_ff, d}, in(d), ordinary);
            p.matrix(b + "ffn_down.weight", {d, s.d_ff}, in(s.d_ff) * out_gain, more);
        }
        if (s.n_experts > 0) {
            const uint64_t e = s.n_experts, eff = s.expert_d_ff;
            // Beside a dense FFN (a .cflow-only layout) the MoE branch has its own norm.
            p.norm(b + (s.d_ff > 0 ? "moe_norm.weight" : "ffn_norm.weight"), d);
            p.router(b + "ffn_gate_inp.weight", e, d);
            p.matrix(b + "ffn_gate_exps.weight", {e, eff, d}, in(d), ordinary);
            p.matrix(b + "ffn_up_exps.weight", {e, eff, d}, in(d), ordinary);
            p.matrix(b + "ffn_down_exps.weight", {e, d, eff}, in(eff) * out_gain, more);
        }
    }
    p.norm("output_norm.weight", d);
    if (!s.tied) p.matrix("output.weight", {s.vocab, d}, in(d), matrix_type(s, MatrixKind::LmHead, 0));
    *total_bytes = p.total_bytes();
    return p.take();
}

struct Job {
    const PlannedTensor* tensor;
    uint64_t chunk;
};

std::vector<float> synth_rope_divisors(const SynthSpec& s) {
    return llama3_rope_divisors(Llama3RopeScaling{}, s.rope_theta, s.head_dim());
}

void run_job(const Job& job, const SynthSpec& spec, uint8_t* base) {
    const uint64_t seed = spec.seed;
    const PlannedTensor& t = *job.tensor;
    const uint64_t first = job.chunk * chunk_units(t);
    const uint64_t count = std::min(chunk_units(t), t.units - first);
    SynthRng rng(chunk_seed(seed, t.name, job.chunk));
    uint8_t* out = base + t.offset;
    switch (t.fill) {
        case Fill::Blocks:
            if (is_kquant(t.dtype)) fill_kquant(rng, t.dtype, t.std_dev, count, out + first * kquant_block_bytes(t.dtype));
            else if (is_ggml_tile(t.dtype)) fill_ggml32(rng, t.dtype, t.std_dev, count, out + first * ggml_tile_block_bytes(t.dtype));
            else if (t.dtype == DType::Q4_0) fill_q4_0(rng, t.std_dev, count, out + first * 18);
            else fill_q8_0(rng, t.std_dev, count, out + first * 34);
            break;
        case Fill::Norm:  // (65536 + k) / 65536, k in [-4096, 4096): [0.9375, 1.0625)
            fill_f32(rng, 65536, 4096, 1.0f / 65536.0f, count, reinterpret_cast<float*>(out) + first);
            break;
        case Fill::Router: {  // uniform in [-a, a) with a = sqrt(3) * std: the wanted std
            const auto unit = static_cast<float>(std::sqrt(3.0) * t.std_dev / 32768.0);
            fill_f32(rng, 0, 32768, unit, count, reinterpret_cast<float*>(out) + first);
            break;
        }
        case Fill::RopeFactors: {  // computed, not drawn: Llama 3.1's divisors
            const std::vector<float> divisors = synth_rope_divisors(spec);
            std::copy(divisors.begin() + first, divisors.begin() + first + count, reinterpret_cast<float*>(out) + first);
            break;
        }
    }
}

Status generate(const std::vector<PlannedTensor>& plan, const SynthSpec& spec, uint8_t* base, unsigned threads,
                const CancelToken* cancel) {
    std::vector<Job> jobs;
    for (const PlannedTensor& t : plan)
        for (uint64_t c = 0; c * chunk_units(t) < t.units; ++c) jobs.push_back({&t, c});
    std::atomic<size_t> next{0};
    std::atomic<bool> cancelled{false};
    auto worker = [&] {
        for (size_t j = next++; j < jobs.size(); j = next++) {
            if (cancel && cancel->is_cancelled()) {
                cancelled = true;
                return;
            }
            run_job(jobs[j], spec, base);
        }
    };
    const unsigned n = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < n; ++i) {
        try {
            pool.emplace_back(worker);
        } catch (const std::system_error&) {
            break;  // the OS refused another thread: fewer threads finish the same jobs
        }
    }
    worker();
    for (std::thread& th : pool) th.join();
    if (cancelled) return cancelled_error("synth");
    return {};
}

// SynthSpec::router_skew: each router tensor's row e ([E x d] f32) times 1 + S * (E-1-e)/(E-1),
// applied after generation so the unskewed bytes (and every other tensor) stay as they were.
void skew_routers(const std::vector<PlannedTensor>& plan, const SynthSpec& s, uint8_t* base) {
    if (s.router_skew <= 0.0 || s.n_experts < 2) return;
    for (const PlannedTensor& t : plan) {
        if (t.fill != Fill::Router) continue;
        const uint64_t rows = t.shape[0], cols = t.shape[1];
        auto* w = reinterpret_cast<float*>(base + t.offset);
        for (uint64_t e = 0; e < rows; ++e) {
            const auto gain = static_cast<float>(1.0 + s.router_skew * double(rows - 1 - e) / double(rows - 1));
            for (uint64_t c = 0; c < cols; ++c) w[e * cols + c] *= gain;
        }
    }
}

ModelConfig synth_config(const SynthSpec& s) {
    ModelConfig c;
    c.architecture = s.arch;
    c.d_model = s.d_model;
    c.n_layers = s.n_layers;
    c.n_heads = s.n_heads;
    c.n_kv_heads = s.n_kv_heads;
    c.head_dim = s.head_dim();
    c.d_ff = s.d_ff;
    c.n_experts = s.n_experts;
    c.top_k = s.top_k;
    c.expert_d_ff = s.expert_d_ff;
    c.vocab_size = s.vocab;
    c.max_seq_len = s.max_seq_len;
    c.norm_eps = kSynthNormEps;
    c.rope_theta = s.rope_theta;
    c.router_mode = RouterMode::SoftmaxTopK;  // Mixtral and qwen3moe: softmax over the k selected
    c.combine_style = s.combine_style;
    c.dense_delay = s.dense_delay;
    c.expert_delay = s.expert_delay;
    // GGUF llama Q/K row order (adjacent pairs), as read_gguf_model sets it; qwen3moe is NEOX.
    c.rope_interleaved = s.arch == "llama";
    if (s.tied) c.feature_flags |= kFeatureTiedEmbeddings;
    if (s.qk_norm()) c.feature_flags |= kFeatureQkNorm;
    if (s.llama3_rope) c.rope_freq_factors = synth_rope_divisors(s);
    return c;
}

} // namespace

Result<SynthModel> make_synth_model(const SynthSpec& spec, unsigned threads, const CancelToken* cancel) {
    try {
        uint64_t total = 0;
        std::vector<PlannedTensor> plan = plan_tensors(spec, &total);
        auto file = MemoryFile::allocate("synth " + spec.name, total);
        if (!file) return file.take_error();
        if (Status s = generate(plan, spec, (*file)->mutable_data(), threads, cancel); !s) return s.take_error();
        skew_routers(plan, spec, (*file)->mutable_data());

        SynthModel m;
        m.source.config = synth_config(spec);
        m.source.source_label = "synth " + spec.name;
        m.gguf_metadata = synth_gguf_metadata(spec);
        m.source.metadata = gguf_metadata_view(m.gguf_metadata);
        m.source.metadata.set("general.source_format", std::string("synth"));
        if (spec.llama3_rope) m.source.config_tensors.insert("rope_freqs.weight");  // folded into the config
        for (const PlannedTensor& t : plan) {
            TensorView v;
            v.name = t.name;
            v.dtype = t.dtype;
            if (is_ggml_tile(t.dtype) && !is_kquant(t.dtype)) {  // a GGUF's ggml block, as the GGUF reader gives it
                v.dtype = DType::GgmlBlock;
                v.ggml_type = ggml_tile_ggml_type(t.dtype);
            }
            v.shape = t.shape;
            v.data = (*file)->data() + t.offset;
            v.bytes = t.bytes;
            v.origin = "synth: tensor '" + t.name + "'";
            m.source.tensors.emplace(t.name, std::move(v));
            m.tensor_order.push_back(t.name);
            m.weight_count += elements(t.shape);
            m.weight_bytes += t.bytes;
        }
        m.source.files.push_back(std::move(*file));
        return m;
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("synth " + spec.name + ": building the model");
    }
}

} // namespace cflow
