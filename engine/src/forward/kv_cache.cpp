#include "forward/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/tile_codec.h"
#include "forward/ops.h"

namespace cflow {

KvCache::KvCache(KvCacheType type, size_t slots, uint32_t context, uint32_t kv_heads, uint32_t head_dim)
    : type_(type), context_(context), kvHeads_(kv_heads), headDim_(head_dim) {
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

void KvCache::attend(const Kernels& kernels, uint32_t slot, uint32_t kv_head, uint32_t dk, const float* q,
                     uint32_t first, uint32_t n_pos, float scale, float softcap, float* scores, float* out) const {
    const size_t at = offset(slot, kv_head, first);  // keys [n_pos - first x dk], then the values
    const uint32_t rows = n_pos - first;
    float* s = scores + first;
    std::fill(s, s + rows, 0.0f);
    if (dk > kTileCols) {  // wider than the tile kernels take: one dot product per position
        for (uint32_t i = 0; i < rows; ++i)
            s[i] = type_ == KvCacheType::F16 ? kernels.dot_f16(q, k16_.data() + at + size_t(i) * dk, dk)
                                             : kernels.dot(q, k32_.data() + at + size_t(i) * dk, dk);
    } else if (type_ == KvCacheType::F16) {
        kernels.tile_matvec(DType::F16, reinterpret_cast<const uint8_t*>(k16_.data() + at), rows, dk, q, s);
    } else {
        kernels.tile_matvec(DType::F32, reinterpret_cast<const uint8_t*>(k32_.data() + at), rows, dk, q, s);
    }
    for (uint32_t i = 0; i < rows; ++i) {
        float v = s[i] * scale;
        if (softcap > 0.0f) v = softcap * std::tanh(v / softcap);
        s[i] = v;
    }
    ops::softmax(s, rows);
    std::fill(out, out + dk, 0.0f);
    if (type_ == KvCacheType::F16)
        kernels.weighted_row_sum(DType::F16, reinterpret_cast<const uint8_t*>(v16_.data() + at), rows, dk, s, out);
    else
        kernels.weighted_row_sum(DType::F32, reinterpret_cast<const uint8_t*>(v32_.data() + at), rows, dk, s, out);
}

} // namespace cflow
