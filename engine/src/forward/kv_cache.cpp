#include "forward/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cflow/formats/tile_codec.h"
#include "forward/ops.h"

namespace cflow {

KvCache::KvCache(KvCacheType type, size_t slots, uint32_t context, size_t kvdim)
    : type_(type), context_(context), kvdim_(kvdim) {
    const size_t values = slots * context * kvdim;
    if (type == KvCacheType::F16) {
        k16_ = ZeroedArray<uint16_t>(values);
        v16_ = ZeroedArray<uint16_t>(values);
    } else {
        k32_ = ZeroedArray<float>(values);
        v32_ = ZeroedArray<float>(values);
    }
}

void KvCache::write(uint32_t slot, uint32_t pos, const float* k, const float* v) {
    const size_t at = offset(slot, pos);
    if (type_ == KvCacheType::F16) {
        uint16_t* kd = k16_.data() + at;
        uint16_t* vd = v16_.data() + at;
        for (size_t i = 0; i < kvdim_; ++i) {
            kd[i] = f32_to_f16(k[i]);
            vd[i] = f32_to_f16(v[i]);
        }
    } else {
        std::memcpy(k32_.data() + at, k, kvdim_ * sizeof(float));
        std::memcpy(v32_.data() + at, v, kvdim_ * sizeof(float));
    }
}

void KvCache::attend(const Kernels& kernels, uint32_t slot, uint32_t kv_head, uint32_t dk, const float* q,
                     uint32_t first, uint32_t n_pos, float scale, float softcap, float* scores, float* out) const {
    const size_t head = size_t(kv_head) * dk;
    for (uint32_t s = first; s < n_pos; ++s) {
        const size_t at = offset(slot, s) + head;
        float v = (type_ == KvCacheType::F16 ? kernels.dot_f16(q, k16_.data() + at, dk) : kernels.dot(q, k32_.data() + at, dk)) *
                  scale;
        if (softcap > 0.0f) v = softcap * std::tanh(v / softcap);
        scores[s] = v;
    }
    ops::softmax(scores + first, n_pos - first);
    std::fill(out, out + dk, 0.0f);
    for (uint32_t s = first; s < n_pos; ++s) {
        const size_t at = offset(slot, s) + head;
        if (type_ == KvCacheType::F16) kernels.axpy_f16(scores[s], v16_.data() + at, out, dk);
        else kernels.axpy(scores[s], v32_.data() + at, out, dk);
    }
}

} // namespace cflow
