// The critical-path bandwidth model against the paper's figures (4.5, Table 4.1, 6.2.1) and
// against the real segment bytes of synthetic .cflow files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "cflow/engine/forward/critical_path.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The paper's trained geometry (4.1.3): d 512, d_ff 2048, L 6, E 8, k 2, expert hidden 512, H = Hkv = 8.
CriticalPathGeometry paper_geometry(CombineStyle style, uint32_t dense_delay, uint32_t expert_delay) {
    CriticalPathGeometry g;
    g.d_model = 512;
    g.d_ff = 2048;
    g.n_layers = 6;
    g.n_experts = 8;
    g.top_k = 2;
    g.expert_d_ff = 512;
    g.n_heads = 8;
    g.n_kv_heads = 8;
    g.head_dim = 64;
    g.combine_style = style;
    g.dense_delay = dense_delay;
    g.expert_delay = expert_delay;
    return g;
}

CriticalPathReport analyze_ok(const CriticalPathGeometry& g) {
    auto r = analyze_geometry(g);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
    return r.ok() ? std::move(r.value()) : CriticalPathReport{};
}

std::string two_decimals(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

TEST(CriticalPath, Arch24CombinedHalvesTheCriticalPath) {
    const CriticalPathReport r = analyze_ok(paper_geometry(CombineStyle::DelayedSum, 1, 2));
    ASSERT_EQ(r.ideal.size(), 6u);
    for (const LayerStreams& s : r.ideal) {  // equations 4.24-4.26
        EXPECT_DOUBLE_EQ(s.attn_bytes, 0.50 * kMiB);
        EXPECT_DOUBLE_EQ(s.dense_bytes, 1.50 * kMiB);
        EXPECT_DOUBLE_EQ(s.expert_bytes, 0.75 * kMiB);
        EXPECT_DOUBLE_EQ(s.router_bytes, 8.0 * 512 * 4);
        EXPECT_DOUBLE_EQ(s.naive_bytes, 1.50 * kMiB);
        EXPECT_DOUBLE_EQ(s.critical_bytes, 0.75 * kMiB);  // max(0.50, 1.50/2, 0.75/3)
    }
    EXPECT_EQ(two_decimals(r.ideal_totals.b_naive_bytes / kMiB), "9.00");
    EXPECT_EQ(two_decimals(r.ideal_totals.b_critical_bytes / kMiB), "4.50");
    EXPECT_EQ(two_decimals(r.ideal_totals.reduction), "2.00");
    EXPECT_DOUBLE_EQ(r.ideal_totals.b_serial_bytes, 16.5 * kMiB);  // 4.1.3's fully serial bound
    EXPECT_EQ(r.effective_dense_delay, 1u);
    EXPECT_EQ(r.effective_expert_delay, 2u);
    EXPECT_FALSE(r.has_actual);
    EXPECT_NE(r.note.find("router"), std::string::npos) << r.note;
}

struct Candidate {
    const char* name;
    CombineStyle style;
    uint32_t dense_delay, expert_delay;
    const char* b_critical_mib;  // Table 4.1
};

TEST(CriticalPath, Table41Candidates) {
    const Candidate candidates[] = {
        {"arch1_decoupled_streams", CombineStyle::DecoupledStreams, 0, 0, "9.00"},
        {"arch2_4_combined", CombineStyle::DelayedSum, 1, 2, "4.50"},
        {"arch2_4_sync (ablation)", CombineStyle::DelayedSum, 1, 0, "4.50"},
        {"arch3_pipeline_registers", CombineStyle::PipelineRegisters, 0, 0, "9.00"},
        {"arch4_async_experts", CombineStyle::AsyncExperts, 0, 2, "9.00"},
        {"undelayed DelayedSum", CombineStyle::DelayedSum, 0, 0, "9.00"},
        {"expert delay only, DelayedSum", CombineStyle::DelayedSum, 0, 2, "9.00"},
    };
    for (const Candidate& c : candidates) {
        SCOPED_TRACE(c.name);
        const CriticalPathReport r = analyze_ok(paper_geometry(c.style, c.dense_delay, c.expert_delay));
        EXPECT_EQ(two_decimals(r.ideal_totals.b_naive_bytes / kMiB), "9.00");
        EXPECT_EQ(two_decimals(r.ideal_totals.b_critical_bytes / kMiB), c.b_critical_mib);
    }
}

TEST(CriticalPath, DelaysTheCombineStyleDoesNotConsumeCountAsZero) {
    // AsyncExperts' dense FFN reads x_in: a header dense_delay does not move it off the path.
    CriticalPathReport r = analyze_ok(paper_geometry(CombineStyle::AsyncExperts, 1, 2));
    EXPECT_EQ(r.effective_dense_delay, 0u);
    EXPECT_EQ(r.effective_expert_delay, 2u);
    EXPECT_EQ(two_decimals(r.ideal_totals.b_critical_bytes / kMiB), "9.00");
    EXPECT_NE(r.note.find("does not consume dense_delay 1"), std::string::npos) << r.note;

    r = analyze_ok(paper_geometry(CombineStyle::Sequential, 1, 2));
    EXPECT_EQ(r.effective_dense_delay, 0u);
    EXPECT_EQ(r.effective_expert_delay, 0u);
    EXPECT_EQ(two_decimals(r.ideal_totals.b_critical_bytes / kMiB), "9.00");
    EXPECT_NE(r.note.find("does not consume expert_delay 2"), std::string::npos) << r.note;
}

// Gemma 4 26B-A4B sizing (2.5, 6.2.1). The paper gives no attention geometry beyond
// "B_attn ~ 4 x 2816^2": H*dk = Hkv*dk = d (11 heads x 256) reproduces exactly that.
CriticalPathGeometry gemma_sliding_layer_geometry() {
    CriticalPathGeometry g;
    g.d_model = 2816;
    g.d_ff = 2112;
    g.n_layers = 25;
    g.n_experts = 128;
    g.top_k = 8;
    g.expert_d_ff = 704;
    g.n_heads = 11;
    g.n_kv_heads = 11;
    g.head_dim = 256;
    g.combine_style = CombineStyle::DelayedSum;
    g.dense_delay = 1;
    g.expert_delay = 2;
    return g;
}

double truncate_one_decimal(double v) { return std::floor(v * 10.0) / 10.0; }

TEST(CriticalPath, GemmaSizingGivesOnePointFiveTimesPerMoeLayer) {
    const CriticalPathReport r = analyze_ok(gemma_sliding_layer_geometry());
    ASSERT_FALSE(r.ideal.empty());
    const LayerStreams& s = r.ideal.front();
    // Equations 6.1-6.3 are decimal MB, cut to one decimal.
    EXPECT_DOUBLE_EQ(truncate_one_decimal(s.attn_bytes / 1e6), 15.8);
    EXPECT_DOUBLE_EQ(truncate_one_decimal(s.dense_bytes / 1e6), 8.9);
    EXPECT_DOUBLE_EQ(truncate_one_decimal(s.expert_bytes / 1e6), 23.7);
    EXPECT_DOUBLE_EQ(s.naive_bytes, s.expert_bytes);     // the expert stream binds undelayed
    EXPECT_DOUBLE_EQ(s.critical_bytes, s.attn_bytes);    // attention is the floor once delayed
    EXPECT_EQ(two_decimals(s.naive_bytes / s.critical_bytes), "1.50");
    EXPECT_EQ(two_decimals(r.ideal_totals.reduction), "1.50");
    // Why the router stays out of the max: charged to attention it would move the paper's figure.
    EXPECT_LT(s.naive_bytes / (s.attn_bytes + s.router_bytes), 1.45);
}

TEST(CriticalPath, AttentionBoundLayersGainNothing) {
    // 6.2.1: Gemma's full-attention layers (head dim 512, no experts) have attention as the
    // binding stream on both sides of the delay.
    CriticalPathGeometry g = gemma_sliding_layer_geometry();
    g.n_layers = 5;
    g.n_experts = 0;
    g.top_k = 0;
    g.expert_d_ff = 0;
    g.head_dim = 512;
    g.expert_delay = 0;
    const CriticalPathReport r = analyze_ok(g);
    EXPECT_DOUBLE_EQ(r.ideal_totals.reduction, 1.0);
    EXPECT_DOUBLE_EQ(r.ideal_totals.b_critical_bytes, 5 * r.ideal.front().attn_bytes);
}

TEST(CriticalPath, FixedPointCountsEveryPass) {
    CriticalPathGeometry g = paper_geometry(CombineStyle::FixedPoint, 0, 0);
    g.n_experts = g.top_k = g.expert_d_ff = 0;
    g.n_layers = g.n_blocks = 2;
    g.n_iter = 3;
    const CriticalPathReport r = analyze_ok(g);
    EXPECT_EQ(r.n_passes, 6u);
    ASSERT_EQ(r.ideal.size(), 6u);
    const uint32_t expected_blocks[] = {0, 0, 0, 1, 1, 1};  // block 0 iterated, then block 1
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(r.ideal[i].layer, i);
        EXPECT_EQ(r.ideal[i].block, expected_blocks[i]);
    }
    EXPECT_DOUBLE_EQ(r.ideal_totals.b_critical_bytes, 6 * 1.5 * kMiB);  // max(0.5, 1.5) per pass
    EXPECT_DOUBLE_EQ(r.ideal_totals.b_naive_bytes, r.ideal_totals.b_critical_bytes);
    EXPECT_DOUBLE_EQ(r.ideal_totals.b_serial_bytes, 6 * 2.0 * kMiB);
    EXPECT_DOUBLE_EQ(r.ideal_totals.b_critical_unique_blocks_bytes, 2 * 1.5 * kMiB);
    EXPECT_NE(r.note.find("14.06"), std::string::npos) << r.note;
    EXPECT_NE(r.note.find("6 passes"), std::string::npos) << r.note;
    EXPECT_NE(r.note.find("3.00 MiB"), std::string::npos) << r.note;

    // FixedPoint consumes no delays.
    g.dense_delay = 1;
    const CriticalPathReport delayed = analyze_ok(g);
    EXPECT_EQ(delayed.effective_dense_delay, 0u);
    EXPECT_DOUBLE_EQ(delayed.ideal_totals.b_critical_bytes, r.ideal_totals.b_critical_bytes);
}

TEST(CriticalPath, SharedExpertJoinsTheExpertStream) {
    CriticalPathGeometry g = paper_geometry(CombineStyle::DelayedSum, 1, 2);
    g.shared_expert_d_ff = 1024;
    const CriticalPathReport r = analyze_ok(g);
    EXPECT_DOUBLE_EQ(r.ideal.front().expert_bytes, (2.0 * 3 * 512 * 512 + 3.0 * 512 * 1024) * 0.5);
}

TEST(CriticalPath, RejectsInconsistentGeometry) {
    auto expect_error = [](CriticalPathGeometry g, const std::string& field) {
        auto r = analyze_geometry(g);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.kind(), ErrorKind::InvalidInput) << r.error();
        EXPECT_NE(r.error().find(field), std::string::npos) << r.error();
    };
    CriticalPathGeometry g = paper_geometry(CombineStyle::DelayedSum, 1, 2);
    g.top_k = 9;
    expect_error(g, "top_k");
    g = paper_geometry(CombineStyle::DelayedSum, 6, 2);
    expect_error(g, "dense_delay");
    g = paper_geometry(CombineStyle::DelayedSum, 1, 2);
    g.n_kv_heads = 3;
    expect_error(g, "n_heads");
    g = paper_geometry(CombineStyle::ParallelSqrt2, 1, 0);
    expect_error(g, "ParallelSqrt2");
    g = paper_geometry(CombineStyle::FixedPoint, 0, 0);
    g.n_blocks = 2;
    g.n_iter = 3;  // n_layers is 6
    expect_error(g, "n_blocks");
    g = paper_geometry(CombineStyle::DelayedSum, 0, 0);
    g.n_iter = 3;
    expect_error(g, "FixedPoint fields");
    g = paper_geometry(CombineStyle::DelayedSum, 0, 0);
    g.d_model = 0;
    expect_error(g, "d_model");
}

// --- actual bytes of synthetic files -----------------------------------------------------

std::shared_ptr<CflowFile> convert_and_open(const test::SyntheticSpec& spec, const std::string& name) {
    const auto dir = test::temp_dir("critical_path");
    const std::string path = (dir / name).string();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    auto converted = convert_to_cflow(test::make_synthetic_model(spec), path, options);
    EXPECT_TRUE(converted.ok()) << (converted.ok() ? "" : converted.error());
    auto file = CflowFile::open(path);
    EXPECT_TRUE(file.ok()) << (file.ok() ? "" : file.error());
    return file.ok() ? file.value() : nullptr;
}

double bytes_of(const RegionView& region, std::initializer_list<SegmentRole> roles) {
    double bytes = 0;
    for (const SegmentView& s : region.segments)
        if (std::find(roles.begin(), roles.end(), s.role) != roles.end()) bytes += double(s.bytes);
    return bytes;
}

// Reads the expert table directly (not through CflowFile::expert) and sums the k largest entries.
double top_k_expert_table_bytes(const RegionView& region, uint32_t top_k) {
    const SegmentView* table = region.find(SegmentRole::ExpertTable);
    if (!table) return 0;
    std::vector<uint64_t> lengths;  // [E]
    for (uint64_t off = 0; off + sizeof(ExpertEntry) <= table->bytes; off += sizeof(ExpertEntry)) {
        ExpertEntry e;
        std::memcpy(&e, table->data + off, sizeof e);
        lengths.push_back(e.length);
    }
    std::sort(lengths.begin(), lengths.end(), std::greater<uint64_t>());
    double bytes = 0;
    for (uint32_t j = 0; j < top_k && j < lengths.size(); ++j) bytes += double(lengths[j]);
    return bytes;
}

void expect_actual_matches_segments(const CflowFile& file, const CriticalPathReport& r) {
    ASSERT_TRUE(r.has_actual);
    const uint32_t iterations = r.geometry.combine_style == CombineStyle::FixedPoint ? r.geometry.n_iter : 1;
    ASSERT_EQ(r.actual.size(), file.layers().size() * iterations);
    double critical_sum = 0;
    for (const LayerStreams& a : r.actual) {
        SCOPED_TRACE("pass " + std::to_string(a.layer));
        const RegionView& region = file.layers()[a.block];
        EXPECT_DOUBLE_EQ(a.attn_bytes, bytes_of(region, {SegmentRole::AttnNorm, SegmentRole::QNorm, SegmentRole::KNorm,
                                                         SegmentRole::Qkv, SegmentRole::QkvBias, SegmentRole::AttnOut}));
        EXPECT_DOUBLE_EQ(a.dense_bytes, bytes_of(region, {SegmentRole::FfnNorm, SegmentRole::GateUp, SegmentRole::Down}));
        EXPECT_DOUBLE_EQ(a.expert_bytes,
                         top_k_expert_table_bytes(region, r.geometry.top_k) +
                             bytes_of(region, {SegmentRole::SharedGateUp, SegmentRole::SharedDown, SegmentRole::SharedGate}));
        EXPECT_DOUBLE_EQ(a.router_bytes, bytes_of(region, {SegmentRole::MoeNorm, SegmentRole::Router, SegmentRole::ExpertTable}));
        const double expected_critical = std::max({a.attn_bytes, a.dense_bytes / (r.effective_dense_delay + 1.0),
                                                   a.expert_bytes / (r.effective_expert_delay + 1.0)});
        EXPECT_DOUBLE_EQ(a.critical_bytes, expected_critical);
        critical_sum += expected_critical;
    }
    EXPECT_DOUBLE_EQ(r.actual_totals.b_critical_bytes, critical_sum);
}

TEST(CriticalPathFile, DenseModelActualBytesAreSegmentBytes) {
    test::SyntheticSpec spec;  // d 64, 2 layers, 4 heads x 16, d_ff 128
    auto file = convert_and_open(spec, "dense.cflow");
    ASSERT_TRUE(file);
    auto r = analyze_file(*file);
    ASSERT_TRUE(r.ok()) << r.error();
    expect_actual_matches_segments(*file, *r);
    EXPECT_DOUBLE_EQ(r->ideal.front().attn_bytes, 4.0 * 64 * 64 * 0.5);
    EXPECT_DOUBLE_EQ(r->ideal.front().dense_bytes, 3.0 * 64 * 128 * 0.5);
    EXPECT_DOUBLE_EQ(r->ideal.front().expert_bytes, 0.0);
    // F32 tiles: actual weight bytes are 8x the 0.5-byte ideal plus headers and norms.
    EXPECT_GT(r->actual.front().attn_bytes, 8 * r->ideal.front().attn_bytes);
    EXPECT_NE(r->note.find("Actual bytes"), std::string::npos);
}

TEST(CriticalPathFile, MoeModelActualExpertBytesAreTopKTableEntries) {
    test::SyntheticSpec spec;
    spec.n_layers = 3;
    spec.n_experts = 4;
    spec.top_k = 2;
    spec.expert_d_ff = 32;
    spec.combine_style = CombineStyle::DelayedSum;
    spec.dense_delay = 1;
    spec.expert_delay = 2;
    auto file = convert_and_open(spec, "moe.cflow");
    ASSERT_TRUE(file);
    auto r = analyze_file(*file);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->effective_dense_delay, 1u);
    EXPECT_EQ(r->effective_expert_delay, 2u);
    expect_actual_matches_segments(*file, *r);
    const SegmentView* bank = file->layers()[0].find(SegmentRole::ExpertBank);
    ASSERT_NE(bank, nullptr);
    // Every expert has the same geometry, so top-2 is half of the 4-expert bank.
    EXPECT_DOUBLE_EQ(r->actual.front().expert_bytes, double(bank->bytes) / 2);
    EXPECT_DOUBLE_EQ(r->ideal.front().expert_bytes, 2.0 * 3 * 64 * 32 * 0.5);
    EXPECT_DOUBLE_EQ(r->ideal.front().router_bytes, 4.0 * 64 * 4);
}

TEST(CriticalPathFile, SharedExpertSegmentsJoinTheExpertStream) {
    test::SyntheticSpec spec;
    spec.n_experts = 4;
    spec.top_k = 2;
    spec.expert_d_ff = 32;
    spec.shared_expert_d_ff = 48;
    auto file = convert_and_open(spec, "shared.cflow");
    ASSERT_TRUE(file);
    auto r = analyze_file(*file);
    ASSERT_TRUE(r.ok()) << r.error();
    expect_actual_matches_segments(*file, *r);
    EXPECT_GT(bytes_of(file->layers()[0], {SegmentRole::SharedGateUp}), 0.0);
}

TEST(CriticalPathFile, FixedPointFileRepeatsEachBlock) {
    test::SyntheticSpec spec;
    spec.combine_style = CombineStyle::FixedPoint;
    spec.n_iter = 3;
    auto file = convert_and_open(spec, "fixed_point.cflow");
    ASSERT_TRUE(file);
    auto r = analyze_file(*file);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->n_passes, 6u);
    expect_actual_matches_segments(*file, *r);
    EXPECT_DOUBLE_EQ(r->actual_totals.b_critical_bytes, 3 * r->actual_totals.b_critical_unique_blocks_bytes);
}

} // namespace
} // namespace cflow
