#pragma once
// The KV cache of one session: for every KV slot (effective layer) and KV head a K and a V
// matrix of [context x dk] values, f32 or IEEE half (KvCacheType), in demand-zero memory, so
// only the positions a conversation wrote become resident. Head-major, so a head's keys are one
// row-major matrix: its scores for every position are one tile matvec (the f32/f16 tile
// kernels, 4 rows per pass) instead of a dot-product call per position. Attention reads it
// through attend(), the one implementation of a head's scores, softmax and weighted sum for
// step() and prefill().
//
// A slot whose layer attends over a sliding window keeps only a ring of `ring` positions:
// position p lives at p % ring, so that slot's resident memory is the window (plus a prefill
// chunk, written before it is attended) however long the conversation grows. Its [context x dk]
// span stays reserved but untouched past the ring, so nothing else about the layout changes.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cflow/engine/forward/session.h"
#include "forward/zeroed_buffer.h"

namespace cflow {

class KvCache {
public:
    KvCache() = default;
    // Throws std::bad_alloc (Session::create reports it).
    // ring: [slots] positions a slot keeps (0 = all of context), or empty for no rings.
    KvCache(KvCacheType type, size_t slots, uint32_t context, uint32_t kv_heads, uint32_t head_dim,
            std::vector<uint32_t> ring = {});

    static size_t value_bytes(KvCacheType type) { return type == KvCacheType::F16 ? 2 : 4; }
    KvCacheType type() const { return type_; }

    // Stores position `pos` of `slot`: k, v [kv_heads x head_dim] f32 (rounded to nearest half for F16).
    void write(uint32_t slot, uint32_t pos, const float* k, const float* v);

    // The `group` query heads q [group x dk] that share KV head `kv_head` of `slot` (1 without
    // GQA) over positions [first, n_pos): for each head g, scores[g * scores_stride + s] =
    // softmax(softcap(q_g . k_s * scale)) for s in [first, n_pos) (with sinks [group], head g's
    // sink logit joins that softmax and takes its share without a value), and out [g * dk ..] =
    // sum_s scores * v_s. Keys and values are walked in blocks of kPositionBlock positions, each
    // block used by every head of the group while it is in cache: per head the same operations
    // in the same order whatever the group size, so grouping never changes a result.
    void attend(const Kernels& kernels, uint32_t slot, uint32_t kv_head, uint32_t dk, const float* q, uint32_t group,
                uint32_t first, uint32_t n_pos, float scale, float softcap, const float* sinks, float* scores,
                size_t scores_stride, float* out) const;
    static constexpr uint32_t kPositionBlock = 256;

    // Whether every ring slot still stores position `first` (and so every later one), given that
    // positions below `written` have been written since the last reset.
    bool holds_from(uint32_t first, uint32_t written) const;
    uint32_t ring(uint32_t slot) const { return slot < ring_.size() ? ring_[slot] : 0; }

private:
    size_t offset(uint32_t slot, uint32_t head, uint32_t pos) const {
        const uint32_t r = ring(slot);
        return ((size_t(slot) * kvHeads_ + head) * context_ + (r ? pos % r : pos)) * headDim_;
    }

    KvCacheType type_ = KvCacheType::F32;
    uint32_t context_ = 0;
    uint32_t kvHeads_ = 0;
    uint32_t headDim_ = 0;
    std::vector<uint32_t> ring_;       // [slots] or empty: 0 = the slot keeps every position
    ZeroedArray<float> k32_, v32_;     // [slots x kv_heads x context x dk] when F32
    ZeroedArray<uint16_t> k16_, v16_;  // [slots x kv_heads x context x dk] when F16
};

} // namespace cflow
