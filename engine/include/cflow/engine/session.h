#pragma once
// One conversation's inference state: KV cache, scratch buffers and a thread pool.
// A Session is used by one thread at a time (the engine's worker thread).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cflow/engine/kernels.h"
#include "cflow/engine/model.h"
#include "cflow/engine/thread_pool.h"
#include "cflow/formats/result.h"

namespace cflow {

struct SessionOptions {
    unsigned threads = 0;             // 0 = hardware concurrency
    uint32_t context_length = 0;      // 0 = the model's max_seq_len, capped at kDefaultContextCap
    static constexpr uint32_t kDefaultContextCap = 8192;
};

class Session {
public:
    static Result<std::unique_ptr<Session>> create(std::shared_ptr<const Model> model, const SessionOptions& options = {});
    ~Session();

    // Feeds `token` at position(); returns the next-token logits [vocab] when want_logits
    // (an empty span otherwise: prompt tokens before the last skip the LM head).
    // Fails when the context is full or the token id is out of range.
    Result<std::span<const float>> step(int32_t token, bool want_logits = true);

    void reset();                                 // forget the context (KV cache)
    uint32_t position() const { return position_; }
    uint32_t context_length() const { return context_length_; }
    const Model& model() const { return *model_; }
    unsigned threads() const { return pool_.size(); }
    Isa isa() const { return kernels_->isa; }

private:
    Session(std::shared_ptr<const Model> model, const SessionOptions& options, uint32_t context_length);
    struct Buffers;

    void embed(int32_t token, float* out) const;
    void attention_block(uint32_t layer);
    void ffn_block(uint32_t layer);
    void matvec(const SegmentView& segment, const std::vector<float*>& outputs, const float* x);
    void output_logits();

    std::shared_ptr<const Model> model_;
    const Kernels* kernels_;
    ThreadPool pool_;
    uint32_t context_length_;
    uint32_t position_ = 0;
    std::unique_ptr<Buffers> buf_;
};

} // namespace cflow
