#pragma once
// What step() and prefill() both record about a layer (telemetry.h): its wall time, the bytes
// each block reads, the residual norm; and the small helpers of the layer math they share.
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/telemetry.h"

namespace cflow::layer {

inline uint64_t segment_bytes(const SegmentView* s) { return s ? s->bytes : 0; }
inline size_t stream_index(Stream s) { return static_cast<size_t>(s); }
inline float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

// ||v|| of v [n], accumulated in double.
inline float norm2(const float* v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += double(v[i]) * v[i];
    return float(std::sqrt(s));
}

// Weight bytes the attention block and the dense FFN of layer w read (once per step or chunk).
inline uint64_t attention_bytes(const LayerWeights& w) {
    return segment_bytes(w.attn_norm) + segment_bytes(w.q_norm) + segment_bytes(w.k_norm) + segment_bytes(w.qkv) +
           segment_bytes(w.qkv_bias) + segment_bytes(w.attn_sinks) + segment_bytes(w.attn_out) +
           segment_bytes(w.attn_out_bias) + segment_bytes(w.attn_post_norm);
}
inline uint64_t dense_bytes(const LayerWeights& w) {
    return segment_bytes(w.ffn_norm) + segment_bytes(w.gate_up) + segment_bytes(w.down) + segment_bytes(w.ffn_post_norm);
}

// Records a layer's wall time minus the time it spent waiting for expert data.
struct LayerTimer {
    LayerRecord& rec;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~LayerTimer() {
        rec.computeUs =
            std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - t0).count() - rec.expertWaitUs;
    }
};

} // namespace cflow::layer
