// Synthetic models converted to .cflow and to .vflow: every segment, tile, stripe and expert
// of the .vflow file equals the .cflow conversion's (the containers differ only in where the
// bytes lie), the streaming region is stage-major (attention stage of all layers, then the
// dense stage), and expert lookup goes through the per-layer ExpertTable in O(1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/schedule_order.h"
#include "cflow/formats/tile_codec.h"
#include "cflow/formats/vflow_layout.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

using test::SyntheticSpec;

struct Pair {
    SourceModel model;
    std::shared_ptr<CflowFile> cflow, vflow;
    ConvertReport cflow_report, vflow_report;
};

Pair convert_both(const SyntheticSpec& spec, ConvertOptions options, const std::string& name) {
    Pair p;
    p.model = test::make_synthetic_model(spec);
    const auto dir = test::temp_dir("vflow-rt-" + name);
    if (options.threads == 0) options.threads = 2;
    for (ContainerFormat format : {ContainerFormat::Cflow, ContainerFormat::Vflow}) {
        options.format = format;
        const bool v = format == ContainerFormat::Vflow;
        const std::string path = (dir / (v ? "model.vflow" : "model.cflow")).string();
        auto report = convert_to_cflow(p.model, path, options);
        EXPECT_TRUE(report.ok()) << report.error();
        if (!report.ok()) return p;
        auto file = CflowFile::open(path);
        EXPECT_TRUE(file.ok()) << file.error();
        if (!file.ok()) return p;
        (v ? p.vflow : p.cflow) = *file;
        (v ? p.vflow_report : p.cflow_report) = *report;
    }
    return p;
}

void expect_tiles_equal(const std::vector<TileRef>& a, const std::vector<TileRef>& b, DType dtype, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    std::vector<float> row_a, row_b;
    for (size_t i = 0; i < a.size(); ++i) {
        const TileRef& x = a[i];
        const TileRef& y = b[i];
        ASSERT_EQ(std::memcmp(x.header, y.header, sizeof(TileHeader)), 0) << what << " tile " << i << " header";
        ASSERT_EQ(x.row_offset, y.row_offset) << what << " tile " << i;
        ASSERT_EQ(x.col_offset, y.col_offset) << what << " tile " << i;
        ASSERT_EQ(x.rows, y.rows) << what << " tile " << i;
        ASSERT_EQ(x.cols, y.cols) << what << " tile " << i;
        ASSERT_EQ(x.part, y.part) << what << " tile " << i;
        ASSERT_EQ(std::memcmp(x.payload, y.payload, tile_payload_bytes(dtype, x.rows, x.cols)), 0) << what << " tile " << i;
        // Decoded values too: what a kernel sees.
        row_a.resize(x.cols);  // [cols] f32
        row_b.resize(x.cols);
        for (uint32_t r = 0; r < x.rows; ++r) {
            decode_tile_row(dtype, x.payload, x.rows, x.cols, r, row_a.data());
            decode_tile_row(dtype, y.payload, y.rows, y.cols, r, row_b.data());
            ASSERT_EQ(std::memcmp(row_a.data(), row_b.data(), x.cols * sizeof(float)), 0) << what << " tile " << i << " row " << r;
        }
    }
}

void expect_stripes_equal(const std::vector<StripeRef>& a, const std::vector<StripeRef>& b, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].first_tile, b[i].first_tile) << what << " stripe " << i;
        EXPECT_EQ(a[i].n_tiles, b[i].n_tiles) << what << " stripe " << i;
        EXPECT_EQ(a[i].part, b[i].part) << what << " stripe " << i;
        EXPECT_EQ(a[i].row_offset, b[i].row_offset) << what << " stripe " << i;
        EXPECT_EQ(a[i].rows, b[i].rows) << what << " stripe " << i;
    }
}

void expect_segment_equal(const SegmentView& a, const SegmentView& b, const std::string& what) {
    EXPECT_EQ(a.role, b.role) << what;
    EXPECT_EQ(a.dtype, b.dtype) << what;
    EXPECT_EQ(a.cols, b.cols) << what;
    EXPECT_EQ(a.raw_rows, b.raw_rows) << what;
    ASSERT_EQ(a.parts.size(), b.parts.size()) << what;
    for (size_t p = 0; p < a.parts.size(); ++p) {
        EXPECT_EQ(a.parts[p].matrix, b.parts[p].matrix) << what;
        EXPECT_EQ(a.parts[p].rows, b.parts[p].rows) << what;
    }
    ASSERT_EQ(a.bytes, b.bytes) << what;
    EXPECT_EQ(b.offset % 64, 0u) << what;
    if (a.role == SegmentRole::ExpertTable) return;  // holds absolute offsets, which differ by container
    ASSERT_EQ(std::memcmp(a.data, b.data, a.bytes), 0) << what << ": segment bytes differ";
    expect_tiles_equal(a.tiles, b.tiles, a.dtype, what);
    expect_stripes_equal(a.stripes, b.stripes, what);
}

void expect_region_equal(const RegionView& a, const RegionView& b, const std::string& what) {
    EXPECT_EQ(a.index, b.index) << what;
    ASSERT_EQ(a.segments.size(), b.segments.size()) << what;
    for (size_t r = 0; r < static_cast<size_t>(SegmentRole::Count_); ++r) {
        const auto role = static_cast<SegmentRole>(r);
        const SegmentView* x = a.find(role);
        const SegmentView* y = b.find(role);
        ASSERT_EQ(x == nullptr, y == nullptr) << what << " role " << r;
        if (x) expect_segment_equal(*x, *y, what + " role " + std::to_string(r));
    }
}

// The .vflow file gives the engine the same views as the .cflow file.
void expect_same_model(const Pair& p) {
    ASSERT_TRUE(p.cflow && p.vflow);
    const CflowFile& c = *p.cflow;
    const CflowFile& v = *p.vflow;
    EXPECT_EQ(c.container(), ContainerFormat::Cflow);
    EXPECT_EQ(v.container(), ContainerFormat::Vflow);
    EXPECT_TRUE(c.groups().empty());

    // Headers: identical except where the container puts things.
    GlobalHeader hc = c.header(), hv = v.header();
    EXPECT_EQ(hv.file_bytes, v.file_bytes());
    EXPECT_EQ(p.vflow_report.file_bytes, v.file_bytes());
    EXPECT_EQ(p.vflow_report.tiles, p.cflow_report.tiles);
    EXPECT_EQ(p.vflow_report.tensors, p.cflow_report.tensors);
    hc.file_bytes = hv.file_bytes = 0;
    hc.params_offset = hv.params_offset = 0;
    hc.layer_table_offset = hv.layer_table_offset = 0;
    EXPECT_EQ(std::memcmp(&hc, &hv, sizeof(hc)), 0);
    ModelParams pc = c.params(), pv = v.params();
    EXPECT_EQ(pc.metadata_bytes, pv.metadata_bytes);
    pc.metadata_offset = pv.metadata_offset = 0;
    EXPECT_EQ(std::memcmp(&pc, &pv, sizeof(pc)), 0);
    EXPECT_EQ(std::memcmp(c.file().data() + c.params().metadata_offset, v.file().data() + v.params().metadata_offset,
                          c.params().metadata_bytes),
              0);
    EXPECT_EQ(c.metadata().entries().size(), v.metadata().entries().size());

    ASSERT_EQ(c.layers().size(), v.layers().size());
    for (size_t l = 0; l < c.layers().size(); ++l) {
        expect_region_equal(c.layers()[l], v.layers()[l], "layer " + std::to_string(l));
        for (uint32_t e = 0; e < hv.n_experts; ++e) {
            auto xc = c.expert(static_cast<uint32_t>(l), e);
            auto xv = v.expert(static_cast<uint32_t>(l), e);
            ASSERT_TRUE(xc.ok()) << xc.error();
            ASSERT_TRUE(xv.ok()) << xv.error();
            const std::string what = "layer " + std::to_string(l) + " expert " + std::to_string(e);
            const DType dtype = v.layers()[l].find(SegmentRole::ExpertBank)->dtype;
            EXPECT_EQ(xc->bytes, xv->bytes) << what;
            ASSERT_EQ(std::memcmp(c.file().data() + xc->offset, v.file().data() + xv->offset, xc->bytes), 0) << what;
            expect_tiles_equal(xc->gate_up, xv->gate_up, dtype, what + " gate/up");
            expect_tiles_equal(xc->down, xv->down, dtype, what + " down");
            expect_stripes_equal(xc->gate_up_stripes, xv->gate_up_stripes, what + " gate/up");
            expect_stripes_equal(xc->down_stripes, xv->down_stripes, what + " down");
        }
        if (hv.n_experts > 0) {
            EXPECT_FALSE(v.expert(static_cast<uint32_t>(l), hv.n_experts).ok());
        }
    }
    expect_region_equal(c.vocab(), v.vocab(), "vocabulary");
}

// The stage-major byte order of the .vflow file (vflow-format.md section 1).
void expect_stage_major(const CflowFile& v) {
    const GlobalHeader& h = v.header();
    const VFlowHeader vh = v.vflow_header();  // a copy: the packed member sits unaligned in CflowFile, and gtest binds references to its fields
    EXPECT_EQ(std::memcmp(vh.magic, kVflowMagic, 8), 0);
    EXPECT_EQ(vh.version, kVflowVersion);
    EXPECT_EQ(vh.cflow_header_offset, 64u);
    EXPECT_EQ(h.params_offset, 64u + 88u);
    // One attention geometry: one group of all layers.
    ASSERT_EQ(v.groups().size(), 1u);
    ASSERT_EQ(vh.n_groups, 1u);
    const GroupDescriptor& g = v.groups()[0];
    EXPECT_EQ(g.first_layer, 0u);
    EXPECT_EQ(g.n_layers, h.n_layers);
    EXPECT_EQ(g.n_heads, h.n_heads);
    EXPECT_EQ(g.n_kv_heads, h.n_kv_heads);
    EXPECT_EQ(g.head_dim, h.head_dim);
    EXPECT_EQ(g.offset, vh.stream_offset);
    EXPECT_EQ(g.attn_offset, g.offset);
    EXPECT_EQ(g.offset + g.bytes, vh.stream_offset + vh.stream_bytes);
    EXPECT_EQ(g.dense_offset + g.dense_bytes, g.offset + g.bytes);

    // Walk the stream in the order a vertical pipeline reads it: the attention stage of
    // every layer, then the dense stage of every layer. Offsets strictly increase, the walk
    // starts at each stage's offset and ends at its end, and nothing else lies in between.
    const auto order = layer_read_order(static_cast<CombineStyle>(h.combine_style), h.dense_delay);
    uint64_t expected_next = vh.stream_offset;
    size_t seen = 0;
    for (VflowStage stage : {VflowStage::Attention, VflowStage::Dense}) {
        const uint64_t stage_offset = stage == VflowStage::Attention ? g.attn_offset : g.dense_offset;
        const uint64_t stage_end = stage_offset + (stage == VflowStage::Attention ? g.attn_bytes : g.dense_bytes);
        EXPECT_GE(stage_offset, expected_next);
        EXPECT_LT(stage_offset - expected_next, 64u) << "only alignment padding between stages";
        uint64_t pos = stage_offset;
        for (uint32_t l = 0; l < h.n_layers; ++l)
            for (SegmentRole role : order) {
                if (vflow_stage(role) != stage) continue;
                const SegmentView* s = v.layers()[l].find(role);
                if (!s) continue;
                EXPECT_GE(s->offset, pos) << "layer " << l << " role " << int(role);
                EXPECT_LT(s->offset - pos, 64u) << "layer " << l << " role " << int(role) << ": only alignment padding";
                pos = s->offset + s->bytes;
                ++seen;
            }
        EXPECT_EQ(pos, stage_end);
        expected_next = stage_end;
    }
    // Every attention-stage segment precedes every dense-stage segment.
    uint64_t last_attention_end = 0, first_dense = UINT64_MAX, first_bank = UINT64_MAX;
    size_t layer_segments = 0;
    for (const RegionView& r : v.layers()) {
        layer_segments += r.segments.size();
        for (const SegmentView& s : r.segments) {
            if (vflow_stage(s.role) == VflowStage::Attention) last_attention_end = std::max(last_attention_end, s.offset + s.bytes);
            if (vflow_stage(s.role) == VflowStage::Dense) first_dense = std::min(first_dense, s.offset);
            if (vflow_stage(s.role) == VflowStage::Bank) {
                first_bank = std::min(first_bank, s.offset);
                EXPECT_GE(s.offset, vh.bank_offset);
                EXPECT_LE(s.offset + s.bytes, vh.bank_offset + vh.bank_bytes);
            }
        }
        // A layer's directory lies before the stream and holds no data.
        EXPECT_LT(r.offset, vh.stream_offset);
        EXPECT_EQ(r.bytes, 16u + 64u * r.segments.size());
    }
    EXPECT_LE(last_attention_end, first_dense);
    const size_t bank_segments = h.n_experts ? 2u * h.n_layers : 0u;
    EXPECT_EQ(seen + bank_segments, layer_segments) << "every non-expert segment lies in the stream";
    if (h.n_experts) {
        EXPECT_EQ(first_bank, vh.bank_offset);
        EXPECT_GE(vh.bank_offset, vh.stream_offset + vh.stream_bytes);
    } else {
        EXPECT_EQ(vh.bank_bytes, 0u);
    }
    // Then the vocabulary region, then the metadata.
    EXPECT_GE(v.vocab().offset, vh.bank_offset + vh.bank_bytes);
    EXPECT_GE(v.params().metadata_offset, v.vocab().offset + v.vocab().bytes);
    EXPECT_EQ(v.params().metadata_offset + v.params().metadata_bytes, v.file_bytes());
}

// expert(l, e) is one table read: its offset and length are ExpertTable[e] of layer l, inside the bank.
void expect_expert_lookup(const CflowFile& v) {
    const GlobalHeader& h = v.header();
    const VFlowHeader vh = v.vflow_header();  // a copy: the packed member sits unaligned in CflowFile, and gtest binds references to its fields
    for (uint32_t l = 0; l < h.n_layers; ++l) {
        const SegmentView* table = v.layers()[l].find(SegmentRole::ExpertTable);
        const SegmentView* bank = v.layers()[l].find(SegmentRole::ExpertBank);
        ASSERT_NE(table, nullptr);
        ASSERT_NE(bank, nullptr);
        EXPECT_EQ(table->bytes, uint64_t{h.n_experts} * sizeof(ExpertEntry));
        for (uint32_t e = 0; e < h.n_experts; ++e) {
            ExpertEntry entry;
            std::memcpy(&entry, table->data + uint64_t{e} * sizeof(ExpertEntry), sizeof(entry));
            auto view = v.expert(l, e);
            ASSERT_TRUE(view.ok()) << view.error();
            EXPECT_EQ(view->offset, entry.offset) << "layer " << l << " expert " << e;
            EXPECT_EQ(view->bytes, entry.length) << "layer " << l << " expert " << e;
            EXPECT_GE(entry.offset, bank->offset);
            EXPECT_LE(entry.offset + entry.length, bank->offset + bank->bytes);
            EXPECT_GE(entry.offset, vh.bank_offset);
            EXPECT_LE(entry.offset + entry.length, vh.bank_offset + vh.bank_bytes);
            TileHeader first;
            std::memcpy(&first, v.file().data() + entry.offset, sizeof(first));
            EXPECT_EQ(first.layer_id, l);
            EXPECT_EQ(first.expert_id, e);
            EXPECT_EQ(reinterpret_cast<const uint8_t*>(view->gate_up.front().header), v.file().data() + entry.offset);
        }
    }
}

SyntheticSpec vflow_dense_spec() {
    SyntheticSpec s;
    s.d_model = 320;  // two column tiles, the second 64 wide
    s.n_layers = 3;
    s.n_heads = 5;
    s.n_kv_heads = 5;
    s.head_dim = 64;
    s.d_ff = 200;     // partial 32-group in Down
    s.vocab = 300;
    return s;
}

SyntheticSpec vflow_moe_spec() {
    SyntheticSpec s;
    s.d_model = 64;
    s.n_layers = 3;
    s.d_ff = 0;
    s.n_experts = 4;
    s.top_k = 2;
    s.expert_d_ff = 160;  // two gate/up stripes
    s.shared_expert_d_ff = 64;
    s.seed = 7;
    return s;
}

TEST(VflowRoundTrip, DenseQ8MatchesCflowTileForTile) {
    const Pair p = convert_both(vflow_dense_spec(), {.weight_quant = DType::Q8_0}, "dense");
    expect_same_model(p);
    expect_stage_major(*p.vflow);
}

TEST(VflowRoundTrip, DenseF16OddTilesMatchCflow) {
    SyntheticSpec spec = vflow_dense_spec();
    spec.d_model = 100;  // F16 tiles of odd row*col byte counts: unaligned tile headers
    spec.n_heads = 3;
    spec.n_kv_heads = 1;
    spec.head_dim = 33;
    spec.d_ff = 77;
    const Pair p = convert_both(spec, {.weight_quant = DType::F16}, "dense-f16");
    expect_same_model(p);
    expect_stage_major(*p.vflow);
}

TEST(VflowRoundTrip, MoeWithSharedExpertQ4MatchesCflow) {
    const Pair p = convert_both(vflow_moe_spec(), {.weight_quant = DType::Q4_0}, "moe");
    expect_same_model(p);
    expect_stage_major(*p.vflow);
    expect_expert_lookup(*p.vflow);
    // Shared-expert and router segments belong to the dense stage.
    const GroupDescriptor& g = p.vflow->groups()[0];
    for (SegmentRole role : {SegmentRole::MoeNorm, SegmentRole::Router, SegmentRole::SharedGateUp, SegmentRole::SharedDown,
                             SegmentRole::SharedGate}) {
        const SegmentView* s = p.vflow->layers()[2].find(role);
        ASSERT_NE(s, nullptr);
        EXPECT_GE(s->offset, g.dense_offset);
        EXPECT_LE(s->offset + s->bytes, g.dense_offset + g.dense_bytes);
    }
}

TEST(VflowRoundTrip, DelayedStylesMatchCflow) {
    struct Style {
        CombineStyle style;
        uint8_t dense_delay, expert_delay;
    };
    for (Style st : {Style{CombineStyle::DelayedSum, 1, 2}, Style{CombineStyle::AsyncExperts, 0, 1},
                     Style{CombineStyle::PipelineRegisters, 0, 0}}) {
        SCOPED_TRACE(static_cast<int>(st.style));
        SyntheticSpec spec = vflow_moe_spec();
        spec.d_ff = 96;  // dense FFN and experts in every layer
        spec.shared_expert_d_ff = 0;
        spec.combine_style = st.style;
        spec.dense_delay = st.dense_delay;
        spec.expert_delay = st.expert_delay;
        const Pair p = convert_both(spec, {.weight_quant = DType::Q8_0}, "delayed-" + std::to_string(int(st.style)));
        expect_same_model(p);
        expect_stage_major(*p.vflow);
        expect_expert_lookup(*p.vflow);
        EXPECT_EQ(p.vflow->header().dense_delay, st.dense_delay);
        EXPECT_EQ(p.vflow->header().expert_delay, st.expert_delay);
    }
}

TEST(VflowRoundTrip, TiedGqaBiasQkNormMatchCflow) {
    SyntheticSpec spec;
    spec.n_layers = 2;
    spec.n_heads = 4;
    spec.n_kv_heads = 2;
    spec.qkv_bias = true;
    spec.qk_norm = true;
    spec.tied = true;
    spec.rope_interleaved = true;
    const Pair p = convert_both(spec, {.weight_quant = DType::Q4_0, .embedding_quant = DType::Q8_0}, "tied");
    expect_same_model(p);
    expect_stage_major(*p.vflow);
    EXPECT_EQ(p.vflow->vocab().find(SegmentRole::LmHead), nullptr);
    EXPECT_NE(p.vflow->header().feature_flags & kFeatureTiedEmbeddings, 0);
}

TEST(VflowRoundTrip, OutputIsIndependentOfThreadCount) {
    const SourceModel model = test::make_synthetic_model(vflow_moe_spec());
    const auto dir = test::temp_dir("vflow-threads");
    std::vector<std::vector<uint8_t>> outputs;
    for (unsigned threads : {1u, 3u}) {
        std::string name = "t";  // appended: GCC 12 reports a false -Wrestrict for "literal" + std::string&&
        name += std::to_string(threads);
        name += ".vflow";
        const auto path = dir / name;
        auto report = convert_to_cflow(model, path.string(),
                                       {.weight_quant = DType::Q4_0, .threads = threads, .format = ContainerFormat::Vflow});
        ASSERT_TRUE(report.ok()) << report.error();
        std::ifstream in(path, std::ios::binary);
        outputs.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    EXPECT_EQ(outputs[0], outputs[1]);
}

TEST(VflowRoundTrip, CancellationLeavesNoOutputAndNoTempFile) {
    const SourceModel model = test::make_synthetic_model(vflow_moe_spec());
    const auto dir = test::temp_dir("vflow-cancel");
    const auto path = dir / "cancelled.vflow";
    CancelToken cancel;
    int calls = 0;
    auto report = convert_to_cflow(
        model, path.string(), {.weight_quant = DType::Q8_0, .threads = 2, .format = ContainerFormat::Vflow},
        [&](const ConvertProgress&) {
            if (++calls == 3) cancel.cancel();
        },
        &cancel);
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.kind(), ErrorKind::Cancelled) << report.error();
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "temporary file left behind";
}

TEST(VflowRoundTrip, UnknownContainerFormatIsRejectedBeforeWriting) {
    const SourceModel model = test::make_synthetic_model(SyntheticSpec{});
    const auto path = test::temp_dir("vflow-badformat") / "x.vflow";
    auto report = convert_to_cflow(model, path.string(), {.format = static_cast<ContainerFormat>(7)});
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.kind(), ErrorKind::InvalidInput) << report.error();
    EXPECT_NE(report.error().find("unknown container format 7"), std::string::npos) << report.error();
    EXPECT_FALSE(std::filesystem::exists(path));
}

} // namespace
} // namespace cflow
