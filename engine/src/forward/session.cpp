// Session lifetime, buffers and the per-token entry point; the layer math is in
// layer_ops.cpp and the per-combine-style drivers in combine_styles.cpp.
#include <algorithm>
#include <system_error>
#include <chrono>
#include <cmath>
#include <new>
#include <string>

#include "forward/session_state.h"

namespace cflow {

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Model> model, const SessionOptions& options) {
    if (!model) return make_error("Session::create: no model");
    if (options.isa && !isa_supported(*options.isa))
        return make_error(ErrorKind::Unsupported, "Session::create: kernel path '" +
                                                      std::string(isa_name(*options.isa)) +
                                                      "' is not supported by this CPU/OS");
    const GlobalHeader& h = model->header();
    uint32_t ctx = options.context_length;
    if (ctx == 0) ctx = std::min(h.max_seq_len > 0 ? h.max_seq_len : SessionOptions::kDefaultContextCap,
                                 SessionOptions::kDefaultContextCap);
    const uint64_t kv_floats = uint64_t(model->effective_layers()) * ctx * uint64_t(h.n_kv_heads) * h.head_dim;
    constexpr uint64_t kMaxKvBytes = 64ull << 30;
    const uint64_t kv_bytes = kv_floats * 2 * KvCache::value_bytes(options.kv_cache);
    if (kv_bytes > kMaxKvBytes)
        return make_error("context length " + std::to_string(ctx) + " needs " + std::to_string(kv_bytes >> 20) +
                          " MiB of KV cache; choose a shorter context");
    try {
        std::unique_ptr<ExpertFetcher> fetcher;
        if (options.expert_fetch != ExpertFetch::Mapped && h.n_experts > 0) {
            std::shared_ptr<ExpertCache> cache;
            if (options.expert_cache_bytes > 0) cache = std::make_shared<ExpertCache>(options.expert_cache_bytes);
            ExpertFetcherOptions fetch;
            fetch.backend = options.io_backend;
            fetch.readerThreads = options.fetch_threads;
            // Reads in flight at once: every routing layer whose experts are not yet injected.
            fetch.readsInFlight = unsigned(h.top_k) * (unsigned(h.expert_delay) + 1);
            auto f = ExpertFetcher::create(model->file().path(), fetch, std::move(cache));
            if (!f) return f.take_error();
            fetcher = std::move(f.value());
        }
        auto session = std::unique_ptr<Session>(new Session(std::move(model), options, ctx));
        session->fetcher_ = std::move(fetcher);
        session->wait_at_routing_ = options.expert_fetch == ExpertFetch::Sync;
        session->expert_fetch_ = options.expert_fetch;
        return session;
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory,
                          "out of memory allocating the KV cache for context length " + std::to_string(ctx));
    } catch (const std::system_error& e) {  // the OS refused a thread (the pool's or a reader's)
        return make_error(ErrorKind::Io, std::string("Session::create: cannot start engine threads: ") + e.what());
    }
}

Session::Session(std::shared_ptr<const Model> model, const SessionOptions& options, uint32_t context_length)
    : model_(std::move(model)),
      kernels_(options.isa ? &kernels_for(*options.isa) : &active_kernels()),
      pool_(options.threads),
      context_length_(context_length), buf_(std::make_unique<Buffers>()) {
    const GlobalHeader& h = model_->header();
    const size_t d = h.d_model, dk = h.head_dim, qdim = size_t(h.n_heads) * dk, kvdim = size_t(h.n_kv_heads) * dk;
    const size_t hidden = std::max({size_t(h.d_ff), size_t(h.expert_d_ff), size_t(model_->params().shared_expert_d_ff)});
    const size_t slots = model_->effective_layers();
    Buffers& b = *buf_;
    for (auto* v : {&b.x, &b.x2, &b.emb, &b.xn, &b.attn_out, &b.dense_out, &b.moe_out, &b.proj, &b.tmp}) v->resize(d);
    b.q.resize(qdim);
    b.k.resize(kvdim);
    b.v.resize(kvdim);
    b.attn.resize(qdim);
    b.gate.resize(hidden);
    b.up.resize(hidden);
    b.router_logits.resize(h.n_experts);
    b.scores.resize(size_t(h.n_heads) * context_length_);
    b.logits.resize(h.vocab_size);
    // Sliding-window layers keep a ring of their window plus one prefill chunk (a chunk's keys are
    // all written before its first token attends).
    std::vector<uint32_t> ring(slots, 0);
    const bool fixed_point = static_cast<CombineStyle>(h.combine_style) == CombineStyle::FixedPoint;
    for (size_t slot = 0; slot < slots; ++slot) {
        const uint32_t layer = fixed_point ? uint32_t(slot / model_->params().n_iter) : uint32_t(slot);
        if (const uint32_t window = model_->attention_window(layer); window > 0) ring[slot] = window + kPrefillChunk - 1;
    }
    b.kv = KvCache(options.kv_cache, slots, context_length_, h.n_kv_heads, h.head_dim, std::move(ring));
    long_rope_ = model_->uses_long_rope(context_length_);
    // The widest matvec input (attention output, FFN and expert hidden sizes) in 256-column slices.
    const size_t widest = std::max({d, qdim, hidden});
    b.quantized_x.resize((widest + kTileCols - 1) / kTileCols * kQuantizedSliceBytes + kQuantizedSliceAlign);
    b.rope_cos.resize(dk / 2);
    b.rope_sin.resize(dk / 2);
    b.history.assign(size_t(std::max(h.dense_delay, h.expert_delay)) + 1, std::vector<float>(d));
    b.routing.input.resize(d);
    telemetry_.layers.resize(slots);
}

Session::~Session() = default;

std::string_view expert_fetch_name(ExpertFetch fetch) {
    switch (fetch) {
    case ExpertFetch::Mapped: return "mapped";
    case ExpertFetch::Staged: return "staged";
    case ExpertFetch::Sync: return "sync";
    }
    return "mapped";
}

std::optional<ExpertFetch> parse_expert_fetch(std::string_view name) {
    if (name == "mapped") return ExpertFetch::Mapped;
    if (name == "staged") return ExpertFetch::Staged;
    if (name == "sync") return ExpertFetch::Sync;
    return std::nullopt;
}

std::string_view kv_cache_type_name(KvCacheType type) { return type == KvCacheType::F16 ? "f16" : "f32"; }

std::optional<KvCacheType> parse_kv_cache_type(std::string_view name) {
    if (name == "f32") return KvCacheType::F32;
    if (name == "f16") return KvCacheType::F16;
    return std::nullopt;
}

KvCacheType Session::kv_cache_type() const { return buf_->kv.type(); }

bool Session::staged_direct_io() const { return fetcher_ && fetcher_->direct(); }

std::optional<IoBackend> Session::io_backend() const {
    if (!fetcher_) return std::nullopt;
    return fetcher_->backend();
}

std::string Session::io_backend_note() const { return fetcher_ ? fetcher_->fallback_reason() : std::string(); }

uint64_t Session::expert_cache_bytes() const {
    return fetcher_ && fetcher_->cache() ? fetcher_->cache()->budget_bytes() : 0;
}

void Session::reset() {
    position_ = 0;
    kv_written_ = 0;
}

uint32_t Session::truncate(uint32_t tokens) {
    kv_written_ = std::max(kv_written_, position_);
    if (tokens >= position_) return position_;
    // The next token attends from tokens + 1 - window: a sliding layer's ring must still hold that.
    const uint32_t window = model_->header().sliding_window;
    const uint32_t first = tokens + 1 > window ? tokens + 1 - window : 0;
    if (buf_->kv.holds_from(first, kv_written_)) {
        position_ = tokens;
    } else {
        reset();
    }
    return position_;
}

void Session::begin_record(uint32_t tokens, int32_t last_token) {
    telemetry_.position = position_;
    telemetry_.tokens = tokens;
    telemetry_.token = last_token;
    telemetry_.vocabBytes = 0;
    telemetry_.expertCacheHits = 0;
    telemetry_.expertCacheMisses = 0;
    telemetry_.expertBytesSaved = 0;
    telemetry_.expertBytesFromDisk = 0;
    telemetry_.expertFetch = static_cast<uint8_t>(expert_fetch());
    telemetry_.ioBackend = fetcher_ ? static_cast<uint8_t>(fetcher_->backend()) : 0;
    for (uint32_t i = 0; i < telemetry_.layers.size(); ++i) {
        telemetry_.layers[i] = LayerRecord{};
        telemetry_.layers[i].position = position_;
        telemetry_.layers[i].layer = uint16_t(i);
    }
}

Result<std::span<const float>> Session::step(int32_t token, bool want_logits) {
    // Scratch buffers are sized at create(), but routing, staged expert reads and the fetcher's
    // slot table may still allocate; an allocation failure must come back as an error, not
    // unwind through the caller. position() only advances on success, so the session stays usable.
    const uint32_t start = position_;
    try {
        auto logits = step_unguarded(token, want_logits);
        if (Status unchanged = model_->check_file_unchanged(); logits && !unchanged) {
            truncate(start);
            return unchanged.take_error();
        }
        return logits;
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("step at position " + std::to_string(position_));
    }
}

Result<std::span<const float>> Session::step_unguarded(int32_t token, bool want_logits) {
    const GlobalHeader& h = model_->header();
    if (token < 0 || uint32_t(token) >= h.vocab_size)
        return make_error("token id " + std::to_string(token) + " is outside the vocabulary (size " +
                          std::to_string(h.vocab_size) + ")");
    if (position_ >= context_length_)
        return make_error(ErrorKind::ContextFull, "context full: " + std::to_string(context_length_) + " tokens");
    const auto t0 = std::chrono::steady_clock::now();
    begin_record(1, token);
    embed(token, buf_->emb.data());

    Status st;
    switch (static_cast<CombineStyle>(h.combine_style)) {
    case CombineStyle::Sequential: st = forward_sequential(); break;
    case CombineStyle::ParallelSqrt2: st = forward_parallel_sqrt2(); break;
    case CombineStyle::DelayedSum:
    case CombineStyle::AsyncExperts: st = forward_delayed(); break;
    case CombineStyle::DecoupledStreams: st = forward_decoupled(); break;
    case CombineStyle::PipelineRegisters: st = forward_pipeline_registers(); break;
    case CombineStyle::FixedPoint: st = forward_fixed_point(); break;
    }
    if (!st) return st.take_error();
    ++position_;
    std::span<const float> logits;
    if (want_logits) {
        output_logits();
        logits = std::span<const float>(buf_->logits);
    }
    telemetry_.totalUs = std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - t0).count();
    return logits;
}

} // namespace cflow
