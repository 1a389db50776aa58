// The delayed layout of .cflow layer regions (paper 3.10.2, cflow-format.md 4.2): when a
// layer's dense FFN does not read the layer's attention output (DelayedSum with
// dense_delay >= 1, AsyncExperts, PipelineRegisters) the engine reads the dense weights
// first, so the converter writes them first; the MoE block always comes after both. Across
// the whole file, the segments appear in the engine's read order: layer 0 .. L-1, then the
// vocabulary region.
#include <gtest/gtest.h>

#include <algorithm>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/schedule_order.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

struct StyleCase {
    CombineStyle style;
    uint8_t dense_delay;
    bool dense_first;  // what the semantics spec implies (model-semantics.md, combine styles)
};

// Written from the semantics spec's definition of the dense FFN input, not from
// dense_before_attention(). DecoupledStreams keeps attention first: its FFN reads the f
// stream, but the schedule rule (cflow-format.md 4.2) names only the delayed styles.
const StyleCase kCases[] = {
    {CombineStyle::ParallelSqrt2, 0, false},      // r = Norm_ffn(x_mid), the attention output
    {CombineStyle::DelayedSum, 0, false},         // dd = 0: f reads x_mid, the attention output
    {CombineStyle::DelayedSum, 1, true},          // f reads h_{l-1}
    {CombineStyle::DelayedSum, 2, true},          // f reads h_{l-2}
    {CombineStyle::AsyncExperts, 0, true},        // f reads Norm(x_in), pre-attention
    {CombineStyle::Sequential, 0, false},         // f reads Norm(x_mid)
    {CombineStyle::DecoupledStreams, 0, false},
    {CombineStyle::PipelineRegisters, 0, true},   // f reads X_{l-1}
    {CombineStyle::FixedPoint, 0, false},
};

bool is_dense(SegmentRole r) {
    return r == SegmentRole::FfnNorm || r == SegmentRole::GateUp || r == SegmentRole::Down || r == SegmentRole::FfnPostNorm;
}
bool is_attention(SegmentRole r) {
    return static_cast<uint8_t>(r) <= static_cast<uint8_t>(SegmentRole::AttnOut) || r == SegmentRole::AttnPostNorm ||
           r == SegmentRole::AttnSinks || r == SegmentRole::AttnOutBias;
}
bool is_moe(SegmentRole r) { return !is_dense(r) && !is_attention(r); }

struct Span {
    uint64_t first = UINT64_MAX, end = 0;
    void add(const SegmentView& s) {
        first = std::min(first, s.offset);
        end = std::max(end, s.offset + s.bytes);
    }
};

TEST(DelayedCflowOrder, DenseBeforeAttentionFollowsTheSemantics) {
    for (const StyleCase& c : kCases)
        EXPECT_EQ(dense_before_attention(c.style, c.dense_delay), c.dense_first)
            << "style " << int(c.style) << " dense_delay " << int(c.dense_delay);
    // The read order lists each layer role (every role but the vocabulary's three) exactly once.
    std::vector<SegmentRole> layer_roles;
    for (uint8_t r = 0; r < static_cast<uint8_t>(SegmentRole::Count_); ++r)
        if (r < static_cast<uint8_t>(SegmentRole::OutputNorm) || r > static_cast<uint8_t>(SegmentRole::TokenEmbd))
            layer_roles.push_back(static_cast<SegmentRole>(r));
    ASSERT_EQ(layer_roles.size(), kLayerRoleCount);
    for (const StyleCase& c : kCases) {
        auto order = layer_read_order(c.style, c.dense_delay);
        std::sort(order.begin(), order.end());
        EXPECT_TRUE(std::equal(order.begin(), order.end(), layer_roles.begin(), layer_roles.end()));
    }
}

TEST(DelayedCflowOrder, RegionsAreWrittenInReadOrder) {
    for (const StyleCase& c : kCases) {
        SCOPED_TRACE("style " + std::to_string(int(c.style)) + " dense_delay " + std::to_string(int(c.dense_delay)));
        test::SyntheticSpec spec;
        spec.d_model = 64;
        spec.n_layers = 3;
        spec.d_ff = 96;
        spec.n_experts = 4;
        spec.top_k = 2;
        spec.expert_d_ff = 64;
        spec.shared_expert_d_ff = 32;
        spec.qkv_bias = true;
        spec.qk_norm = true;
        spec.post_norms = true;
        spec.gpt_oss = true;  // sinks, output bias, router and expert biases: every layer role present
        spec.combine_style = c.style;
        spec.dense_delay = c.dense_delay;
        if (c.style == CombineStyle::DelayedSum || c.style == CombineStyle::AsyncExperts) spec.expert_delay = 1;
        const SourceModel model = test::make_synthetic_model(spec);
        const auto path = test::temp_dir("delayed-order") / ("style" + std::to_string(int(c.style)) + "-dd" +
                                                             std::to_string(int(c.dense_delay)) + ".cflow");
        auto report = convert_to_cflow(model, path.string(), {.weight_quant = DType::Q8_0, .threads = 2});
        ASSERT_TRUE(report.ok()) << report.error();
        auto file = CflowFile::open(path.string());
        ASSERT_TRUE(file.ok()) << file.error();
        const CflowFile& f = **file;

        // Engine read order across the file: every layer's segments in layer_read_order, then the
        // vocabulary region's. Non-expert offsets strictly increase along it.
        const auto order = layer_read_order(c.style, c.dense_delay);
        uint64_t previous_end = 0;
        for (uint32_t l = 0; l < f.header().n_layers; ++l) {
            const RegionView& r = f.layers()[l];
            EXPECT_EQ(r.segments.size(), kLayerRoleCount);  // every layer role present in this model
            Span attention, dense, moe;
            for (const SegmentView& s : r.segments) {
                if (is_attention(s.role)) attention.add(s);
                if (is_dense(s.role)) dense.add(s);
                if (is_moe(s.role)) moe.add(s);
            }
            if (c.dense_first) {
                EXPECT_LE(dense.end, attention.first) << "layer " << l << ": dense FFN must precede attention";
            } else {
                EXPECT_LE(attention.end, dense.first) << "layer " << l << ": attention must precede the dense FFN";
            }
            EXPECT_LE(std::max(attention.end, dense.end), moe.first) << "layer " << l << ": MoE after both";
            // The directory lists the segments in the same order as their bytes.
            for (size_t i = 1; i < r.segments.size(); ++i) EXPECT_LT(r.segments[i - 1].offset, r.segments[i].offset);
            for (SegmentRole role : order) {
                const SegmentView* s = r.find(role);
                ASSERT_NE(s, nullptr);
                if (role == SegmentRole::ExpertBank) continue;  // read per selected expert, not sequentially
                EXPECT_GE(s->offset, previous_end) << "layer " << l << " role " << int(role);
                previous_end = s->offset + s->bytes;
            }
            previous_end = std::max(previous_end, r.offset + r.bytes);
        }
        for (const SegmentView& s : f.vocab().segments) {
            EXPECT_GE(s.offset, previous_end) << "vocabulary role " << int(s.role);
            previous_end = s.offset + s.bytes;
        }
    }
}

} // namespace
} // namespace cflow
