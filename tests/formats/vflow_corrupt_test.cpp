// Hand-made vflow_corruptions of a valid small .vflow file: each must be rejected by
// CflowFile::open (or expert()) with its own message naming the field and its offset,
// without crashing or reading out of bounds. The .cflow structures a .vflow file reuses
// (segments, tiles, expert table, metadata) are covered by cflow_corrupt_test.cpp; this
// table covers the .vflow container: VFlowHeader, embedded GlobalHeader, group table,
// stage spans, section order and cross-layer overlap.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

constexpr uint64_t kFileBytesField = sizeof(VFlowHeader) + offsetof(GlobalHeader, file_bytes);  // 136

struct SegmentAt {
    uint64_t entry = 0;  // absolute offset of its SegmentEntry
    uint64_t data = 0;   // absolute offset of its bytes
};

// Offsets of interesting structures in the valid file, read from the reader's own view.
struct VflowLayout {
    uint64_t size = 0;
    VFlowHeader vh{};
    uint64_t layer_table = 0;
    uint64_t group0 = 0;  // GroupDescriptor 0
    GroupDescriptor g{};
    std::vector<std::map<SegmentRole, SegmentAt>> layers;  // [n_layers]
};

template <class T>
void put_vflow(std::vector<uint8_t>& b, uint64_t offset, T value) {
    ASSERT_LE(offset + sizeof(T), b.size());
    std::memcpy(b.data() + offset, &value, sizeof(T));
}
template <class T>
T get_vflow(const std::vector<uint8_t>& b, uint64_t offset) {
    T v;
    std::memcpy(&v, b.data() + offset, sizeof(T));
    return v;
}

class VflowCorrupt : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        test::SyntheticSpec spec;
        spec.d_model = 64;
        spec.n_layers = 2;
        spec.d_ff = 96;
        spec.n_experts = 4;
        spec.top_k = 2;
        spec.expert_d_ff = 64;
        spec.qkv_bias = true;
        const SourceModel model = test::make_synthetic_model(spec);
        const std::string path = (test::temp_dir("vflow-corrupt-base") / "base.vflow").string();
        auto report = convert_to_cflow(model, path, {.weight_quant = DType::Q8_0, .threads = 1, .format = ContainerFormat::Vflow});
        ASSERT_TRUE(report.ok()) << report.error();
        auto file = CflowFile::open(path);
        ASSERT_TRUE(file.ok()) << file.error();
        const CflowFile& f = **file;
        std::ifstream in(path, std::ios::binary);
        valid_ = new std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        VflowLayout& L = layout_;
        L.size = valid_->size();
        L.vh = f.vflow_header();
        L.layer_table = f.header().layer_table_offset;
        L.group0 = L.vh.group_table_offset;
        L.g = f.groups().at(0);
        for (const RegionView& r : f.layers()) {
            std::map<SegmentRole, SegmentAt> m;
            for (size_t i = 0; i < r.segments.size(); ++i)
                m[r.segments[i].role] = {r.offset + sizeof(RegionHeader) + i * sizeof(SegmentEntry), r.segments[i].offset};
            L.layers.push_back(m);
        }
    }
    static void TearDownTestSuite() {
        delete valid_;
        valid_ = nullptr;
    }

    static std::vector<uint8_t>* valid_;
    static VflowLayout layout_;
};
std::vector<uint8_t>* VflowCorrupt::valid_ = nullptr;
VflowLayout VflowCorrupt::layout_;

struct VflowCorruption {
    const char* name;
    std::function<void(std::vector<uint8_t>&, const VflowLayout&)> mutate;
    std::string expected;      // substring of the error
    bool via_expert = false;   // open() succeeds; expert(0, 1) must fail
    ErrorKind kind = ErrorKind::InvalidInput;  // damage; a newer version or feature is Unsupported
};

std::vector<VflowCorruption> vflow_corruptions() {
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    const size_t se_offset = offsetof(SegmentEntry, offset);
    const size_t gd_first = offsetof(GroupDescriptor, first_layer), gd_n = offsetof(GroupDescriptor, n_layers),
                 gd_head = offsetof(GroupDescriptor, head_dim), gd_attn = offsetof(GroupDescriptor, attn_offset),
                 gd_dense = offsetof(GroupDescriptor, dense_offset), gd_dense_bytes = offsetof(GroupDescriptor, dense_bytes);
    return {
        {"bad magic", [](auto& b, auto&) { b[0] = 'X'; }, "GlobalHeader.magic at offset 0: bad magic: not a .cflow or .vflow file"},
        {"truncated VFlowHeader", [](auto& b, auto&) { b.resize(40); },
         "VFlowHeader at offset 0: file is 40 bytes, smaller than the 64-byte header"},
        {"unknown version", [](auto& b, auto&) { put_vflow<uint32_t>(b, offsetof(VFlowHeader, version), 2); },
         "VFlowHeader.version at offset 8: unsupported version 2 (this build reads .vflow version 1)", false,
         ErrorKind::Unsupported},
        {"embedded header past EOF", [](auto& b, auto& L) { put_vflow<uint64_t>(b, offsetof(VFlowHeader, cflow_header_offset), L.size - 40); },
         "VFlowHeader.cflow_header_offset at offset 16: embedded GlobalHeader (88 bytes)"},
        {"embedded header overlaps", [](auto& b, auto&) { put_vflow<uint64_t>(b, offsetof(VFlowHeader, cflow_header_offset), 8); },
         "overlaps the 64-byte VFlowHeader"},
        {"embedded header bad magic", [](auto& b, auto&) { b[64] = 'X'; }, "GlobalHeader.magic at offset 64: bad magic"},
        {"embedded header version", [](auto& b, auto&) { put_vflow<uint32_t>(b, 64 + offsetof(GlobalHeader, version), 9); },
         "GlobalHeader.version at offset 72: unsupported version 9", false, ErrorKind::Unsupported},
        {"embedded file_bytes wrong", [](auto& b, auto& L) { put_vflow<uint64_t>(b, kFileBytesField, L.size + 1); },
         "GlobalHeader.file_bytes at offset 136: header says the file has"},
        {"truncated file", [](auto& b, auto&) { b.resize(b.size() - 100); }, "(truncated)"},
        {"no groups", [](auto& b, auto&) { put_vflow<uint32_t>(b, offsetof(VFlowHeader, n_groups), 0); },
         "VFlowHeader.n_groups at offset 12: is 0, must be 1..n_layers (2)"},
        {"more groups than layers", [](auto& b, auto&) { put_vflow<uint32_t>(b, offsetof(VFlowHeader, n_groups), 3); },
         "VFlowHeader.n_groups at offset 12: is 3"},
        {"group table overflow", [kMax](auto& b, auto&) { put_vflow<uint64_t>(b, offsetof(VFlowHeader, group_table_offset), kMax - 8); },
         "VFlowHeader.group_table_offset at offset 24: group table offset 18446744073709551607 + 64 bytes overflows 64 bits"},
        {"group table inside ModelParams", [](auto& b, auto&) {
             put_vflow<uint64_t>(b, offsetof(VFlowHeader, group_table_offset), 64 + 88 + 64);
         },
         "VFlowHeader.group_table_offset at offset 24: starts at 216, before the end of the ModelParams (280)"},
        {"stream past EOF", [](auto& b, auto& L) { put_vflow<uint64_t>(b, offsetof(VFlowHeader, stream_bytes), L.size); },
         "VFlowHeader.stream_offset at offset 32: streaming region ["},
        {"bank overflow", [kMax](auto& b, auto&) { put_vflow<uint64_t>(b, offsetof(VFlowHeader, bank_bytes), kMax); },
         "VFlowHeader.bank_offset at offset 48: expert bank offset"},
        {"bank inside the stream", [](auto& b, auto& L) { put_vflow<uint64_t>(b, offsetof(VFlowHeader, bank_offset), L.vh.stream_offset); },
         "before the end of the streaming region"},
        {"stream shorter than its group", [](auto& b, auto& L) {
             put_vflow<uint64_t>(b, offsetof(VFlowHeader, stream_bytes), L.vh.stream_bytes - 64);
         },
         "GroupTable[0].offset at offset 296: group ["},
        {"group starts at layer 1", [gd_first](auto& b, auto& L) { put_vflow<uint32_t>(b, L.group0 + gd_first, 1); },
         "GroupTable[0].first_layer at offset 280: is 1, expected 0 (groups cover the layers in order, each exactly once)"},
        {"group too long", [gd_n](auto& b, auto& L) { put_vflow<uint32_t>(b, L.group0 + gd_n, 3); },
         "GroupTable[0].n_layers at offset 284: group of 3 layers starting at layer 0 does not fit"},
        {"groups miss a layer", [gd_n](auto& b, auto& L) { put_vflow<uint32_t>(b, L.group0 + gd_n, 1); },
         "GroupTable at offset 280: the 1 groups cover 1 of the 2 layers"},
        {"group geometry", [gd_head](auto& b, auto& L) { put_vflow<uint16_t>(b, L.group0 + gd_head, 32); },
         "GroupTable[0].head_dim at offset 292: is 32, the file's attention geometry has 16", false,
         ErrorKind::Unsupported},
        {"attention stage not first", [gd_attn](auto& b, auto& L) { put_vflow<uint64_t>(b, L.group0 + gd_attn, L.g.attn_offset + 64); },
         "GroupTable[0].attn_offset at offset 312"},
        {"dense stage inside attention", [gd_dense](auto& b, auto& L) { put_vflow<uint64_t>(b, L.group0 + gd_dense, L.g.attn_offset + 64); },
         "starts inside the attention stage"},
        {"dense stage short", [gd_dense_bytes](auto& b, auto& L) {
             put_vflow<uint64_t>(b, L.group0 + gd_dense_bytes, L.g.dense_bytes - 64);
         },
         "GroupTable[0].dense_bytes at offset 336"},
        {"directory bytes", [](auto& b, auto& L) {
             put_vflow<uint64_t>(b, L.layer_table + offsetof(RegionEntry, bytes), get_vflow<uint64_t>(b, L.layer_table + 8) + 64);
         },
         "but a .vflow layer directory of"},
        {"dense segment in the attention stage", [se_offset](auto& b, auto& L) {
             put_vflow<uint64_t>(b, L.layers[0].at(SegmentRole::FfnNorm).entry + se_offset, L.layers[0].at(SegmentRole::AttnNorm).data);
         },
         "(FfnNorm) SegmentEntry.offset at offset"},
        {"attention segment in the bank", [se_offset](auto& b, auto& L) {
             put_vflow<uint64_t>(b, L.layers[1].at(SegmentRole::AttnNorm).entry + se_offset, L.vh.bank_offset);
         },
         "lies outside group 0 attention stage"},
        {"expert bank in the stream", [se_offset](auto& b, auto& L) {
             put_vflow<uint64_t>(b, L.layers[0].at(SegmentRole::ExpertBank).entry + se_offset, L.vh.stream_offset);
         },
         "lies outside the expert bank"},
        {"layers share a segment", [se_offset](auto& b, auto& L) {
             put_vflow<uint64_t>(b, L.layers[1].at(SegmentRole::AttnNorm).entry + se_offset, L.layers[0].at(SegmentRole::AttnNorm).data);
         },
         "overlaps layer 0 segment AttnNorm"},
        {"layers out of order in a stage", [se_offset](auto& b, auto& L) {
             put_vflow<uint64_t>(b, L.layers[0].at(SegmentRole::AttnNorm).entry + se_offset, L.layers[1].at(SegmentRole::AttnNorm).data);
             put_vflow<uint64_t>(b, L.layers[1].at(SegmentRole::AttnNorm).entry + se_offset, L.layers[0].at(SegmentRole::AttnNorm).data);
         },
         "lies before the end of layer 0's data in group 0 attention stage"},
        {"vocabulary region inside the bank", [](auto& b, auto& L) {
             put_vflow<uint64_t>(b, offsetof(VFlowHeader, bank_bytes), L.vh.bank_bytes + 128);
         },
         "LayerTable[2].offset at offset"},
        {"stream tile of the wrong layer", [](auto& b, auto& L) {
             put_vflow<uint16_t>(b, L.layers[1].at(SegmentRole::Qkv).data + offsetof(TileHeader, layer_id), 0);
         },
         "(Qkv) tile 0 TileHeader.layer_id"},
        {"expert entry outside bank", [](auto& b, auto& L) {
             put_vflow<uint64_t>(b, L.layers[0].at(SegmentRole::ExpertTable).data + 16, L.vh.bank_offset + L.vh.bank_bytes);
         },
         "layer 0 ExpertTable[1].offset"},
        {"expert tile wrong expert id", [](auto& b, auto& L) {
             const uint64_t second = get_vflow<uint64_t>(b, L.layers[0].at(SegmentRole::ExpertTable).data + 16);
             b[second + offsetof(TileHeader, expert_id)] = 0;
         },
         "layer 0 expert 1 gate/up tile 0 TileHeader.expert_id", true},
        // Issue 16: the rest of the container's fields, each its own check.
        {"embedded header cut short", [](auto& b, auto&) { b.resize(100); },
         "VFlowHeader.cflow_header_offset at offset 16: embedded GlobalHeader (88 bytes) at 64 past end of file (100 bytes)"},
        {"n_groups huge", [](auto& b, auto&) { put_vflow<uint32_t>(b, offsetof(VFlowHeader, n_groups), 0xFFFFFFFFu); },
         "VFlowHeader.n_groups at offset 12: is 4294967295, must be 1..n_layers (2)"},
        {"group table past EOF", [](auto& b, auto& L) { put_vflow<uint64_t>(b, offsetof(VFlowHeader, group_table_offset), L.size - 32); },
         "VFlowHeader.group_table_offset at offset 24: group table ["},
        {"bank past EOF", [](auto& b, auto& L) { put_vflow<uint64_t>(b, offsetof(VFlowHeader, bank_offset), L.size); },
         "VFlowHeader.bank_offset at offset 48: expert bank ["},
        {"group table overlaps the LayerTable", [](auto& b, auto& L) {
             put_vflow<uint64_t>(b, offsetof(VFlowHeader, group_table_offset), L.group0 + 32);
         },
         "GlobalHeader.layer_table_offset at offset 120: starts at 344, before the end of the group table (376)"},
        {"stream starts inside the LayerTable", [](auto& b, auto& L) {
             put_vflow<uint64_t>(b, offsetof(VFlowHeader, stream_offset), L.layer_table);
         },
         "VFlowHeader.stream_offset at offset 32: starts at 344, before the end of the LayerTable"},
        {"stream longer than its groups", [](auto& b, auto& L) {
             put_vflow<uint64_t>(b, offsetof(VFlowHeader, stream_bytes), L.vh.stream_bytes + 64);
             put_vflow<uint64_t>(b, offsetof(VFlowHeader, bank_offset), L.vh.bank_offset + 64);
             put_vflow<uint64_t>(b, offsetof(VFlowHeader, bank_bytes), L.vh.bank_bytes - 64);
         },
         "VFlowHeader.stream_bytes at offset 40: streaming region ends at"},
        {"group n_heads", [](auto& b, auto& L) { put_vflow<uint16_t>(b, L.group0 + offsetof(GroupDescriptor, n_heads), 8); },
         "GroupTable[0].n_heads at offset 288: is 8, the file's attention geometry has 4", false, ErrorKind::Unsupported},
        {"group n_kv_heads", [](auto& b, auto& L) { put_vflow<uint16_t>(b, L.group0 + offsetof(GroupDescriptor, n_kv_heads), 2); },
         "GroupTable[0].n_kv_heads at offset 290: is 2", false, ErrorKind::Unsupported},
        {"group reserved0", [](auto& b, auto& L) { put_vflow<uint16_t>(b, L.group0 + offsetof(GroupDescriptor, reserved0), 1); },
         "GroupTable[0].reserved0 at offset 294: must be 0"},
        {"group bytes overflow", [kMax](auto& b, auto& L) { put_vflow<uint64_t>(b, L.group0 + offsetof(GroupDescriptor, bytes), kMax); },
         "GroupTable[0].bytes at offset 304: an offset + bytes pair overflows 64 bits"},
        {"first group after the stream start", [](auto& b, auto& L) {
             // Shifted by 64 with its attention stage, still ending where it did: only its start is wrong.
             put_vflow<uint64_t>(b, L.group0 + offsetof(GroupDescriptor, offset), L.g.offset + 64);
             put_vflow<uint64_t>(b, L.group0 + offsetof(GroupDescriptor, bytes), L.g.bytes - 64);
             put_vflow<uint64_t>(b, L.group0 + offsetof(GroupDescriptor, attn_offset), L.g.attn_offset + 64);
             put_vflow<uint64_t>(b, L.group0 + offsetof(GroupDescriptor, attn_bytes), L.g.attn_bytes - 64);
         },
         "expected the start of the streaming region"},
    };
}

TEST_F(VflowCorrupt, ValidFileOpens) {
    ASSERT_NE(valid_, nullptr);
    const auto path = test::temp_dir("vflow-corrupt") / "valid.vflow";
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(valid_->data()), valid_->size());
    auto file = CflowFile::open(path.string());
    ASSERT_TRUE(file.ok()) << file.error();
    EXPECT_EQ((*file)->container(), ContainerFormat::Vflow);
    for (uint32_t e = 0; e < 4; ++e) EXPECT_TRUE((*file)->expert(1, e).ok());
    // The field offsets the table below names.
    EXPECT_EQ(layout_.vh.cflow_header_offset, 64u);
    EXPECT_EQ(layout_.group0, 280u);
    EXPECT_EQ(layout_.layer_table, 344u);
}

TEST_F(VflowCorrupt, EveryVariantIsRejectedWithItsOwnMessage) {
    ASSERT_NE(valid_, nullptr);
    const auto cases = vflow_corruptions();
    ASSERT_GE(cases.size(), 40u);
    RecordProperty("cases", static_cast<int>(cases.size()));
    std::set<std::string> distinct;
    for (const VflowCorruption& c : cases) EXPECT_TRUE(distinct.insert(c.expected).second) << "duplicate expectation: " << c.name;
    const auto dir = test::temp_dir("vflow-corrupt");
    for (const VflowCorruption& c : cases) {
        SCOPED_TRACE(c.name);
        std::vector<uint8_t> bytes = *valid_;
        c.mutate(bytes, layout_);
        // The file_bytes check would mask every structural corruption: keep it matching unless the case is about it.
        const bool about_size = c.expected.find("file_bytes") != std::string::npos ||
                                c.expected.find("truncated") != std::string::npos || bytes.size() < kFileBytesField + 8;
        if (!about_size) put_vflow<uint64_t>(bytes, kFileBytesField, bytes.size());
        const auto path = dir / (std::string("case-") + std::to_string(&c - cases.data()) + ".vflow");
        std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        for (LoadMode mode : {LoadMode::Map, LoadMode::ReadAnon}) {
            auto file = CflowFile::open(path.string(), mode);
            std::string error;
            ErrorKind kind = ErrorKind::Internal;
            if (c.via_expert) {
                ASSERT_TRUE(file.ok()) << file.error();
                auto expert = (*file)->expert(0, 1);
                ASSERT_FALSE(expert.ok());
                error = expert.error();
                kind = expert.kind();
                EXPECT_TRUE((*file)->expert(0, 0).ok()) << "other experts stay readable";
            } else {
                ASSERT_FALSE(file.ok()) << "accepted";
                error = file.error();
                kind = file.kind();
            }
            EXPECT_EQ(kind, c.kind) << error;
            EXPECT_EQ(error.rfind(path.string() + ": ", 0), 0u) << error;
            EXPECT_NE(error.find(c.expected), std::string::npos) << "message was: " << error;
            EXPECT_NE(error.find("offset"), std::string::npos) << error;
        }
    }
}

} // namespace
} // namespace cflow
