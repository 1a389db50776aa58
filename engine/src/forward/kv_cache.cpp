#include "forward/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/tile_codec.h"
#include "forward/ops.h"

namespace cflow {

KvCache::KvCache(KvCacheType type, size_t slots, uint32_t context, uint32_t kv_heads, uint32_t head_dim,
                 std::vector<uint32_t> ring)
    : type_(type), context_(context), kvHeads_(kv_heads), headDim_(head_dim), ring_(std::move(ring)) {
    for (uint32_t& r : ring_)
        if (r >= context) r = 0;  // a ring as long as the context is the plain layout
    const size_t values = slots * kv_heads * context * head_dim;
    if (type == KvCacheType::F16) {
        k16_ = ZeroedArray<uint16_t>(values);
        v16_ = ZeroedArray<uint16_t>(values);
    } else {
        k32_ = ZeroedArray<float>(values);
        v32_ = ZeroedArray<float>(values);
    }
}

void KvCache::write(uint32_t slot, uint32_t pos, const float* k, const float* v) {
    for (uint32_t h = 0; h < kvHeads_; ++h) {
        const size_t at = offset(slot, h, pos);
        const float* kh = k + size_t(h) * headDim_;
        const float* vh = v + size_t(h) * headDim_;
        if (type_ == KvCacheType::F16) {
            for (uint32_t i = 0; i < headDim_; ++i) {
                k16_.data()[at + i] = f32_to_f16(kh[i]);
                v16_.data()[at + i] = f32_to_f16(vh[i]);
            }
        } else {
            std::memcpy(k32_.data() + at, kh, headDim_ * sizeof(float));
            std::memcpy(v32_.data() + at, vh, headDim_ * sizeof(float));
        }
    }
}

bool KvCache::holds_from(uint32_t first, uint32_t written) const {
    for (uint32_t r : ring_)
        if (r && uint64_t{first} + r < written) return false;  // position q + r, stored where q was, is written
    return true;
}

void KvCache::attend(const Kernels& kernels, uint32_t slot, uint32_t kv_head, uint32_t dk, const float* q, uint32_t group,
                     uint32_t first, uint32_t n_pos, float scale, float softcap, const float* sinks, float* scores,
                     size_t scores_stride, float* out) const {
    const bool half = type_ == KvCacheType::F16;
    const DType dtype = half ? DType::F16 : DType::F32;
    const size_t valueBytes = value_bytes(type_);
    const auto* keys = half ? reinterpret_cast<const uint8_t*>(k16_.data()) : reinterpret_cast<const uint8_t*>(k32_.data());
    const auto* values = half ? reinterpret_cast<const uint8_t*>(v16_.data()) : reinterpret_cast<const uint8_t*>(v32_.data());
    const size_t base = offset(slot, kv_head, 0);  // this head's [context x dk] matrices
    const uint32_t r = ring(slot);
    // Position block [b, b + rows) of the logical range as stored: a ring slot's block ends where
    // the ring wraps (its scores stay indexed by logical position).
    const auto block_rows = [&](uint32_t b) {
        const uint32_t rows = std::min(kPositionBlock, n_pos - b);
        return r ? std::min(rows, r - b % r) : rows;
    };
    const auto stored = [&](uint32_t b) { return size_t(r ? b % r : b); };
    for (uint32_t g = 0; g < group; ++g) std::fill(scores + g * scores_stride + first, scores + g * scores_stride + n_pos, 0.0f);
    for (uint32_t b = first; b < n_pos; b += block_rows(b)) {
        const uint32_t rows = block_rows(b);
        const size_t at = base + stored(b) * dk;
        for (uint32_t g = 0; g < group; ++g) {
            const float* qg = q + size_t(g) * dk;
            float* s = scores + g * scores_stride + b;
            if (dk > kTileCols) {  // wider than the tile kernels take: one dot product per position
                for (uint32_t i = 0; i < rows; ++i)
                    s[i] = half ? kernels.dot_f16(qg, k16_.data() + at + size_t(i) * dk, dk)
                                : kernels.dot(qg, k32_.data() + at + size_t(i) * dk, dk);
            } else {
                kernels.tile_matvec(dtype, keys + at * valueBytes, rows, dk, qg, s);
            }
        }
    }
    for (uint32_t g = 0; g < group; ++g) {
        float* s = scores + g * scores_stride + first;
        for (uint32_t i = 0; i < n_pos - first; ++i) {
            float v = s[i] * scale;
            if (softcap > 0.0f) v = softcap * std::tanh(v / softcap);
            s[i] = v;
        }
        if (sinks) ops::softmax_with_sink(s, n_pos - first, sinks[g]);
        else ops::softmax(s, n_pos - first);
        std::fill(out + size_t(g) * dk, out + size_t(g + 1) * dk, 0.0f);
    }
    for (uint32_t b = first; b < n_pos; b += block_rows(b)) {
        const uint32_t rows = block_rows(b);
        const uint8_t* block = values + (base + stored(b) * dk) * valueBytes;
        for (uint32_t g = 0; g < group; ++g)
            kernels.weighted_row_sum(dtype, block, rows, dk, scores + g * scores_stride + b, out + size_t(g) * dk);
    }
}

} // namespace cflow
