#pragma once
// Private state of cflow::Session shared by session.cpp, layer_ops.cpp and combine_styles.cpp.
#include <array>
#include <vector>

#include "cflow/engine/forward/session.h"
#include "forward/kv_cache.h"
#include "forward/zeroed_buffer.h"
#include "io/expert_fetcher.h"

namespace cflow {

struct Session::Routing {
    uint16_t layer = 0;                       // layer whose router chose
    uint16_t target = 0;                      // layer whose output receives the experts' sum
    uint8_t n = 0;
    std::array<uint8_t, kMaxTopK> experts{};
    std::array<float, kMaxTopK> weights{};
    std::array<int32_t, kMaxTopK> tickets{};  // staged reads in flight (-1: read from the mapping)
    std::vector<float> input;                 // [d] normalised router input, kept for deferred experts
};

struct Session::Buffers {
    std::vector<float> x;          // [d] residual stream (style-dependent: x, a, A, y)
    std::vector<float> x2;         // [d] second stream (DecoupledStreams f, PipelineRegisters X, FixedPoint x_b)
    std::vector<float> emb;        // [d] this token's (scaled) embedding: h_j for j < 0
    std::vector<float> xn;         // [d] normalised input of the current projection
    std::vector<float> q;          // [H * dk]
    std::vector<float> k;          // [Hkv * dk]
    std::vector<float> v;          // [Hkv * dk]
    std::vector<float> attn;       // [H * dk] concatenated head outputs
    std::vector<float> attn_out;   // [d] attention block output
    std::vector<float> dense_out;  // [d] dense FFN output
    std::vector<float> moe_out;    // [d] MoE output
    std::vector<float> proj;       // [d] scratch for output projections
    std::vector<float> tmp;        // [d] scratch
    std::vector<float> gate;       // [max(d_ff, expert_d_ff, shared_d_ff)]
    std::vector<float> up;         // [same]
    std::vector<float> router_logits;  // [E]
    std::vector<float> scores;     // [H x context] attention probabilities per head
    std::vector<float> logits;     // [vocab]
    KvCache kv;                    // K, V [kv_slots x context x Hkv*dk], resident as positions are written
    std::vector<uint8_t> quantized_x;  // [slices x kQuantizedSliceBytes + align] one matvec's input, int8 paths
    std::vector<float> rope_cos;   // [dk / 2] for the current position
    std::vector<float> rope_sin;   // [dk / 2]
    std::vector<std::vector<float>> history;  // [max(dd, de) + 1][d] ring of layer outputs (DelayedSum)
    std::vector<Routing> pending;  // routed expert work waiting for its injection layer
    Routing routing;               // scratch for immediate (undelayed) MoE
    std::vector<TileRef> staged_gate_up;  // expert tiles rebased onto a staging buffer
    std::vector<TileRef> staged_down;
};

// Buffers of one prefill chunk of up to kPrefillChunk tokens; row t belongs to the token at
// position() + t.
struct Session::Batch {
    size_t hidden = 0;              // row width of gate / up: max(d_ff, expert_d_ff, shared_d_ff)
    std::vector<float> x;           // [C x d] residual stream
    std::vector<float> xn;          // [C x d] normalised input of the current projection
    std::vector<float> q;           // [C x H*dk]
    std::vector<float> k;           // [C x Hkv*dk]
    std::vector<float> v;           // [C x Hkv*dk]
    std::vector<float> attn;        // [C x H*dk] concatenated head outputs
    std::vector<float> attn_out;    // [C x d]
    std::vector<float> dense_out;   // [C x d]
    std::vector<float> moe_out;     // [C x d]
    std::vector<float> gate;        // [C x max(d_ff, expert_d_ff, shared_d_ff)]
    std::vector<float> up;          // [same]
    std::vector<float> expert_in;   // [C x d] routing inputs of the tokens one expert serves
    std::vector<float> expert_tmp;  // [C x d] that expert's outputs
    std::vector<float> expert_out;  // [C x top_k x d] every token's routed expert outputs, by slot
    std::vector<float> rope_cos;    // [C x dk/2] per position of the chunk
    float rope_layer_theta = 0.0f;          // the rope (base, factors) rope_cos / rope_sin now hold
    const float* rope_layer_factors = nullptr;
    std::vector<float> rope_sin;    // [C x dk/2]
    std::vector<uint8_t> quantized_x;  // [C x slices x kQuantizedSliceBytes + align] int8 paths
    size_t slicesPerToken = 0;
    std::vector<Routing> routing;   // [C] each token's experts
    std::vector<uint32_t> served;   // [C] tokens of the expert being run (token * top_k + slot)
};

} // namespace cflow
