#pragma once
// The order in which the engine reads the segments of one decoder layer, and therefore
// the order in which the converter writes them into a .cflow layer region (paper 3.10.2,
// "DelayedMoESource": weights appear in the file in the order they are consumed).
// Writer (converter_layout.cpp) and reader-side consumers (engine, tests) use these
// functions, so the file order and the execution schedule cannot drift apart.
// Normative text: formats/docs/cflow-format.md section 4.2.
#include <array>
#include <cstddef>
#include <cstdint>

#include "cflow/formats/cflow_layout.h"

namespace cflow {

// True when the dense FFN of layer l does not read the output of layer l's attention, so
// the engine can (and does) read the dense weights before the attention weights:
//   DelayedSum with dense_delay >= 1: f = FFN(Norm(h_{l-dd})), an earlier layer's state;
//   AsyncExperts: f = FFN(Norm(x_in)), the pre-attention input;
//   PipelineRegisters: f = FFN(Norm(X_{l-1})), the previous layer's register.
// Every other style (and DelayedSum with dense_delay 0, which reads x_mid) needs attention first.
constexpr bool dense_before_attention(CombineStyle style, uint8_t dense_delay) {
    switch (style) {
        case CombineStyle::DelayedSum: return dense_delay >= 1;
        case CombineStyle::AsyncExperts:
        case CombineStyle::PipelineRegisters: return true;
        default: return false;
    }
}

// The 22 layer-region roles (SegmentRole 0..15, AttnPostNorm .. ExpertBias) in read order for a
// layer of this schedule: the attention block and the dense FFN (each ending with its post-norm)
// in the order dense_before_attention() says, then the MoE block (MoeNorm, Router, ExpertTable,
// ExpertBank) and the shared expert, which read the router input after both. A layer region
// holds the subset its header implies, in this order.
inline constexpr size_t kLayerRoleCount = 22;

constexpr std::array<SegmentRole, kLayerRoleCount> layer_read_order(CombineStyle style, uint8_t dense_delay) {
    constexpr std::array<SegmentRole, 9> attention = {SegmentRole::AttnNorm,    SegmentRole::QNorm,   SegmentRole::KNorm,
                                                      SegmentRole::Qkv,         SegmentRole::QkvBias, SegmentRole::AttnSinks,
                                                      SegmentRole::AttnOut,     SegmentRole::AttnOutBias,
                                                      SegmentRole::AttnPostNorm};
    constexpr std::array<SegmentRole, 4> dense = {SegmentRole::FfnNorm, SegmentRole::GateUp, SegmentRole::Down,
                                                  SegmentRole::FfnPostNorm};
    constexpr std::array<SegmentRole, 9> moe = {SegmentRole::MoeNorm,      SegmentRole::Router,     SegmentRole::RouterBias,
                                                SegmentRole::ExpertBias,   SegmentRole::ExpertTable,
                                                SegmentRole::ExpertBank,   SegmentRole::SharedGateUp,
                                                SegmentRole::SharedDown,   SegmentRole::SharedGate};
    std::array<SegmentRole, kLayerRoleCount> order{};
    size_t n = 0;
    const bool dense_first = dense_before_attention(style, dense_delay);
    if (dense_first)
        for (SegmentRole r : dense) order[n++] = r;
    for (SegmentRole r : attention) order[n++] = r;
    if (!dense_first)
        for (SegmentRole r : dense) order[n++] = r;
    for (SegmentRole r : moe) order[n++] = r;
    return order;
}

// Position of `role` in layer_read_order(style, dense_delay); kLayerRoleCount for roles that
// are not layer roles (the vocabulary roles).
constexpr size_t layer_read_rank(SegmentRole role, CombineStyle style, uint8_t dense_delay) {
    const auto order = layer_read_order(style, dense_delay);
    for (size_t i = 0; i < order.size(); ++i)
        if (order[i] == role) return i;
    return kLayerRoleCount;
}

} // namespace cflow
