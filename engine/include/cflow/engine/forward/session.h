#pragma once
// One conversation's inference state: KV cache, scratch buffers, the delay-aware layer
// driver and a thread pool. A Session is used by one thread at a time (the engine worker).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/engine/io/io_backend.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/telemetry.h"
#include "cflow/engine/forward/thread_pool.h"
#include "cflow/base/result.h"

namespace cflow {

// Where expert tiles come from: the model's mapping (page cache or anonymous copy), or direct-I/O
// reads issued at the routing layer and either waited for there (Sync: the stall arm, what a
// runtime without an expert delay pays) or consumed at the injection layer (Staged: the read
// overlaps the layers in between). Same bytes, same arithmetic: the logits are bit-identical.
enum class ExpertFetch : uint8_t { Mapped = 0, Staged = 1, Sync = 2 };
std::string_view expert_fetch_name(ExpertFetch fetch);           // "mapped", "staged", "sync"
std::optional<ExpertFetch> parse_expert_fetch(std::string_view name);

// How the KV cache stores keys and values: f32, or IEEE half (half the memory and the attention
// bytes per token; each value rounded to nearest, relative error <= 2^-11).
enum class KvCacheType : uint8_t { F32 = 0, F16 = 1 };
std::string_view kv_cache_type_name(KvCacheType type);           // "f32", "f16"
std::optional<KvCacheType> parse_kv_cache_type(std::string_view name);

struct SessionOptions {
    unsigned threads = 0;             // 0 = hardware concurrency
    uint32_t context_length = 0;      // 0 = the model's max_seq_len, capped at kDefaultContextCap
    ExpertFetch expert_fetch = ExpertFetch::Mapped;
    unsigned fetch_threads = 2;       // reader threads for ExpertFetch::Staged and Sync (IoBackend::Threads)
    // How Staged and Sync reads reach the OS (io_backend.h): Auto = io_uring / overlapped I/O,
    // the reader-thread pool where that cannot start (io_backend_note() says why). An explicit
    // backend this OS or kernel cannot run makes Session::create fail with Unsupported.
    IoBackend io_backend = IoBackend::Auto;
    // RAM cache of whole experts for ExpertFetch::Staged and Sync, in bytes; 0 = off. Cached
    // experts are served from RAM instead of being read (TokenTelemetry::expertCacheHits). Ignored
    // for Mapped (the page cache is its cache). expert_cache_fit_bytes() sizes one to free memory.
    uint64_t expert_cache_bytes = 0;
    // Kernel path of this session; unset = selected_isa() (CFLOW_ISA or the best this CPU has).
    // Tests pin an f32-activation path (not the VNNI one, which quantizes activations to int8);
    // Session::create fails (Unsupported) when the CPU/OS does not support the requested path.
    std::optional<Isa> isa;
    KvCacheType kv_cache = KvCacheType::F32;
    static constexpr uint32_t kDefaultContextCap = 8192;
};

class Session {
public:
    // Fails with Unsupported for an ISA this CPU lacks, InvalidInput for a context whose KV cache
    // exceeds the 64 GiB cap, Io when staged expert reads cannot open the file, Unsupported when
    // SessionOptions::io_backend names a backend that cannot run here, OutOfMemory when
    // the KV cache or scratch buffers cannot be allocated.
    static Result<std::unique_ptr<Session>> create(std::shared_ptr<const Model> model, const SessionOptions& options = {});
    ~Session();

    // Feeds `token` at position(); returns the next-token logits [vocab] when want_logits
    // (an empty span otherwise: prompt tokens before the last skip the LM head).
    // Fails with ContextFull when the context is full, InvalidInput when the token id is out of
    // range or expert data is corrupt, Io when a staged expert read fails or the model file
    // changed on disk while in use (Model::check_file_unchanged: truncated or rewritten; the step's
    // result is thrown away, never returned), OutOfMemory when an allocation fails (position() is
    // then unchanged).
    Result<std::span<const float>> step(int32_t token, bool want_logits = true);

    // Feeds `tokens` at position() .. position() + size - 1, as that many step() calls would,
    // and returns the logits after the last one (empty unless want_logits). Sequential and
    // ParallelSqrt2 models with mapped experts run the tokens through the layers in chunks of up
    // to kPrefillChunk: each weight tile is read once per chunk and multiplied with all its
    // tokens, attention is causal within the chunk, and the logits and KV cache are
    // bit-identical to the token-by-token path (where a rows-in-lanes kernel adds in another
    // order, as close as the int8 path is to the f32 path; tests/engine/forward/prefill_test.cpp). Other
    // combine styles and staged expert reads take the token-by-token path. Errors as step();
    // ContextFull before anything runs when the tokens do not fit. telemetry() then describes
    // the last chunk (TokenTelemetry::tokens). Cancellation is the caller's, between calls.
    Result<std::span<const float>> prefill(std::span<const int32_t> tokens, bool want_logits = true);
    static constexpr uint32_t kPrefillChunk = 64;
    bool batched_prefill() const;                 // prefill() takes the chunked path for this model

    void reset();                                 // forget the context (KV cache)
    // Keeps the first `tokens` positions of the context and forgets the rest (no-op when
    // tokens >= position()). Valid because a step's only lasting state is its KV-cache entry;
    // a sliding-window layer keeps only its recent positions, so going back further than that
    // forgets everything. Returns the new position(): `tokens`, position() or 0.
    uint32_t truncate(uint32_t tokens);
    bool staged_direct_io() const;                // staged expert reads bypass the page cache
    uint64_t expert_cache_bytes() const;          // the expert cache's budget (0: none)
    // The backend that reads the experts (never Auto); nullopt when nothing is read directly
    // (ExpertFetch::Mapped, or a dense model).
    std::optional<IoBackend> io_backend() const;
    std::string io_backend_note() const;          // why Auto fell back to the reader pool; "" otherwise
    uint32_t position() const { return position_; }
    uint32_t context_length() const { return context_length_; }
    const Model& model() const { return *model_; }
    unsigned threads() const { return pool_.size(); }
    Isa isa() const { return kernels_->isa; }
    KvCacheType kv_cache_type() const;
    ExpertFetch expert_fetch() const { return expert_fetch_; }  // as asked (a dense model reads nothing either way)
    // What the last step() read and computed, per effective layer.
    const TokenTelemetry& telemetry() const { return telemetry_; }

private:
    Session(std::shared_ptr<const Model> model, const SessionOptions& options, uint32_t context_length);
    Result<std::span<const float>> step_unguarded(int32_t token, bool want_logits);  // step() minus the bad_alloc guard
    struct Buffers;
    struct Routing;
    struct Batch;  // batched-prefill buffers, allocated by the first chunked prefill
    // One output matrix per interleaved part, token t's rows at base[part] + t * stride[part].
    struct BatchOutputs {
        std::array<float*, 3> base{};
        std::array<size_t, 3> stride{};
    };

    // Building blocks (layer_ops.cpp). Vectors are [d] f32 unless noted.
    void embed(int32_t token, float* out);
    void attention(uint32_t layer, uint32_t kv_slot, const float* x, float* out, LayerRecord& rec);  // out = Attn(Norm_attn(x))
    uint32_t attention_group() const;  // query heads attended together per work item (GQA), else 1
    void dense_ffn(uint32_t layer, const float* x, float* out, LayerRecord& rec);                   // out = FFN(Norm_ffn(x))
    // Router of `layer` on Norm(x) with the given norm weights; saves the normalised input for deferred experts.
    void route(uint32_t layer, const SegmentView& norm, const float* x, Routing& routing, LayerRecord& rec);
    Status run_experts(const Routing& routing, float* out, LayerRecord& rec);                        // out += MoE(r)
    Status moe_now(uint32_t layer, const SegmentView& norm, const float* x, float* out, LayerRecord& rec);
    // One output vector per interleaved part of the segment (Q, K, V / gate, up / one): a fixed
    // array, so a matvec never allocates.
    using MatvecOutputs = std::array<float*, 3>;
    void matvec(const SegmentView& segment, const MatvecOutputs& outputs, const float* x);
    // lanes: the tiles are read from the model's lanes copy (Model::in_lanes).
    // Each tile is multiplied as its own dtype (a segment's parts may differ: kept source types).
    void matvec_tiles(const std::vector<TileRef>& tiles, const std::vector<StripeRef>& stripes,
                      const MatvecOutputs& outputs, const float* x, bool lanes);
    // The slice layout every tile of the matrix reads when the int8 path serves them all from one
    // quantized activation (Kernels::quantized_dtypes, slice_dtype); nullopt: multiply per tile.
    std::optional<DType> quantized_slice_dtype(const std::vector<TileRef>& tiles, const std::vector<StripeRef>& stripes) const;
    void output_logits();
    // Resets telemetry_ for a forward step over `tokens` tokens from position(), the last `last_token`.
    void begin_record(uint32_t tokens, int32_t last_token);

    // Batched prefill (prefill.cpp): n tokens of one chunk through all layers. Matrices are
    // [n x width] f32, row t for the token at position() + t.
    Result<std::span<const float>> prefill_unguarded(std::span<const int32_t> tokens, bool want_logits);
    Status prefill_chunk(std::span<const int32_t> tokens);
    void matmat_tiles(const std::vector<TileRef>& tiles, const std::vector<StripeRef>& stripes,
                      const BatchOutputs& outputs, const float* x, size_t xStride, uint32_t n, bool lanes);
    void matmat(const SegmentView& segment, const BatchOutputs& outputs, const float* x, size_t xStride, uint32_t n);
    void fill_rope_tables(const LayerRope& rope, uint32_t n);                   // the chunk's angles for one layer's rope
    void attention_batch(uint32_t layer, uint32_t n, LayerRecord& rec);          // batch attn_out = Attn(Norm(x))
    void dense_ffn_batch(uint32_t layer, uint32_t n, LayerRecord& rec);          // batch dense_out = FFN(Norm(x))
    Status moe_batch(uint32_t layer, const SegmentView& norm, uint32_t n, LayerRecord& rec);  // batch moe_out

    // Combine-style drivers (combine_styles.cpp): one token through all layers.
    Status forward_sequential();
    Status forward_parallel_sqrt2();
    Status forward_delayed();         // DelayedSum and AsyncExperts
    Status forward_decoupled();
    Status forward_pipeline_registers();
    Status forward_fixed_point();

    std::shared_ptr<const Model> model_;
    const Kernels* kernels_;
    ThreadPool pool_;
    uint32_t context_length_;
    uint32_t position_ = 0;
    bool long_rope_ = false;   // LongRoPE's long factors: the context exceeds the model's original one
    uint32_t kv_written_ = 0;  // positions below it were written since the last reset (truncate() keeps the high-water mark)
    std::unique_ptr<Buffers> buf_;
    TokenTelemetry telemetry_;
    std::unique_ptr<class ExpertFetcher> fetcher_;  // ExpertFetch::Staged and Sync
    ExpertFetch expert_fetch_ = ExpertFetch::Mapped;
    bool wait_at_routing_ = false;                  // ExpertFetch::Sync: block on the reads where they are issued
    std::unique_ptr<Batch> batch_;
};

} // namespace cflow
