// Hand-made corruptions of a valid small .cflow file: each must be rejected by
// CflowFile::open (or expert()) with its own message naming field and offset, and
// none may crash or read out of bounds (run under -fsanitize=address,undefined too).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

// Offsets of interesting structures in the valid file, read from the reader's own view.
struct Layout {
    uint64_t size = 0;
    uint64_t table = 0;                 // LayerTable
    uint64_t region0 = 0, region0_end = 0;
    uint64_t vocab_region = 0;
    uint64_t meta = 0;                  // metadata section
    uint64_t params = 0;
    std::vector<uint64_t> dir0;         // SegmentEntry offsets of layer 0, by segment index
    int qkv = -1, attn_norm = -1, ffn_norm = -1, expert_table = -1, bank = -1;
    uint64_t qkv_data = 0;              // first TileHeader of layer 0 Qkv
    uint64_t expert_table_data = 0, bank_offset = 0, bank_bytes = 0;
    uint64_t vocab_dir = 0;
    uint32_t vocab_segments = 0;
};

class CflowCorrupt : public ::testing::Test {
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
        // Per process: ctest runs this suite's tests at once, each set-up writing its own base file.
        const std::string path = (test::temp_dir("corrupt-base") / "base.cflow").string();
        auto report = convert_to_cflow(model, path, {.weight_quant = DType::Q8_0, .threads = 1});
        ASSERT_TRUE(report.ok()) << report.error();
        auto file = CflowFile::open(path);
        ASSERT_TRUE(file.ok()) << file.error();
        const CflowFile& f = **file;
        std::ifstream in(path, std::ios::binary);
        valid_ = new std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        Layout& L = layout_;
        L.size = valid_->size();
        L.table = f.header().layer_table_offset;
        L.params = f.header().params_offset;
        L.meta = f.params().metadata_offset;
        const RegionView& r0 = f.layers()[0];
        L.region0 = r0.offset;
        L.region0_end = r0.offset + r0.bytes;
        for (size_t i = 0; i < r0.segments.size(); ++i) {
            L.dir0.push_back(r0.offset + 16 + i * 64);
            switch (r0.segments[i].role) {
                case SegmentRole::Qkv: L.qkv = static_cast<int>(i); break;
                case SegmentRole::AttnNorm: L.attn_norm = static_cast<int>(i); break;
                case SegmentRole::FfnNorm: L.ffn_norm = static_cast<int>(i); break;
                case SegmentRole::ExpertTable: L.expert_table = static_cast<int>(i); break;
                case SegmentRole::ExpertBank: L.bank = static_cast<int>(i); break;
                default: break;
            }
        }
        L.qkv_data = r0.segments[L.qkv].offset;
        L.expert_table_data = r0.segments[L.expert_table].offset;
        L.bank_offset = r0.segments[L.bank].offset;
        L.bank_bytes = r0.segments[L.bank].bytes;
        L.vocab_region = f.vocab().offset;
        L.vocab_dir = f.vocab().offset + 16;
        L.vocab_segments = static_cast<uint32_t>(f.vocab().segments.size());
    }
    static void TearDownTestSuite() {
        delete valid_;
        valid_ = nullptr;
    }

    static std::vector<uint8_t>* valid_;
    static Layout layout_;
};
std::vector<uint8_t>* CflowCorrupt::valid_ = nullptr;
Layout CflowCorrupt::layout_;

template <class T>
void put(std::vector<uint8_t>& b, uint64_t offset, T value) {
    ASSERT_LE(offset + sizeof(T), b.size());
    std::memcpy(b.data() + offset, &value, sizeof(T));
}
template <class T>
T get(const std::vector<uint8_t>& b, uint64_t offset) {
    T v;
    std::memcpy(&v, b.data() + offset, sizeof(T));
    return v;
}

struct Corruption {
    const char* name;
    std::function<void(std::vector<uint8_t>&, const Layout&)> mutate;
    std::string expected;  // substring of the error
    bool via_expert = false;  // open() succeeds; expert(0, 1) must fail
    ErrorKind kind = ErrorKind::InvalidInput;  // damage; a newer version or feature is Unsupported
};

std::vector<Corruption> corruptions() {
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    const size_t se_role = offsetof(SegmentEntry, role), se_dtype = offsetof(SegmentEntry, dtype),
                 se_offset = offsetof(SegmentEntry, offset), se_bytes = offsetof(SegmentEntry, bytes);
    return {
        {"bad magic", [](auto& b, auto&) { b[0] = 'X'; }, "GlobalHeader.magic at offset 0: bad magic"},
        {"truncated header", [](auto& b, auto&) { b.resize(40); }, "GlobalHeader at offset 0: file is 40 bytes, smaller than the 88-byte header"},
        {"unknown version", [](auto& b, auto&) { put<uint32_t>(b, 8, 7); },
         "GlobalHeader.version at offset 8: unsupported version 7 (this build reads versions 5 to 6)", false,
         ErrorKind::Unsupported},
        {"truncated file", [](auto& b, auto&) { b.resize(b.size() - 100); }, "(truncated)"},
        {"trailing bytes", [](auto& b, auto&) { b.resize(b.size() + 10, 0); }, "(trailing bytes)"},
        {"file_bytes field wrong", [](auto& b, auto& L) { put<uint64_t>(b, offsetof(GlobalHeader, file_bytes), L.size + 1); },
         "GlobalHeader.file_bytes at offset 72: header says the file has"},
        {"tile dims", [](auto& b, auto&) { put<uint16_t>(b, offsetof(GlobalHeader, tile_cols), 512); }, "tile dims 128x512"},
        {"zero d_model", [](auto& b, auto&) { put<uint32_t>(b, offsetof(GlobalHeader, d_model), 0); },
         "GlobalHeader.d_model at offset 12: must not be 0"},
        {"heads not divisible", [](auto& b, auto&) { put<uint16_t>(b, offsetof(GlobalHeader, n_kv_heads), 3); },
         "n_heads 4 is not divisible by n_kv_heads 3"},
        {"top_k > n_experts", [](auto& b, auto&) { put<uint16_t>(b, offsetof(GlobalHeader, top_k), 9); },
         "top_k 9 exceeds n_experts 4"},
        {"delay >= n_layers", [](auto& b, auto&) { b[offsetof(GlobalHeader, expert_delay)] = 2; },
         "expert_delay 2 must be below n_layers 2"},
        {"unknown combine style", [](auto& b, auto&) { b[offsetof(GlobalHeader, combine_style)] = 7; },
         "GlobalHeader.combine_style at offset 82: unknown combine style 7"},
        // Every feature_flags bit is known now; the extended bits (behind bit 7) are where new ones go.
        {"unknown extended feature bits", [](auto& b, auto& L) {
             b[offsetof(GlobalHeader, feature_flags)] |= kFeatureExtended;
             b[L.params + offsetof(ModelParams, extended_features)] |= 0x80;
         },
         "ModelParams.extended_features at offset 140: unknown extended feature bits 128", false, ErrorKind::Unsupported},
        {"extended fields without the flag", [](auto& b, auto& L) { put<float>(b, L.params + offsetof(ModelParams, query_scale), 0.5f); },
         "lacks the extended bit (128)"},
        {"params offset past EOF", [](auto& b, auto& L) { put<uint64_t>(b, offsetof(GlobalHeader, params_offset), L.size - 64); },
         "GlobalHeader.params_offset at offset 64: ModelParams (128 bytes)"},
        {"params_bytes", [](auto& b, auto& L) { put<uint32_t>(b, L.params, 64); },
         "ModelParams.params_bytes at offset 88: is 64, expected 128"},
        {"unknown router mode", [](auto& b, auto& L) { b[L.params + offsetof(ModelParams, router_mode)] = 5; },
         "unknown router mode 5"},
        {"layer table past EOF", [](auto& b, auto& L) { put<uint64_t>(b, offsetof(GlobalHeader, layer_table_offset), L.size - 16); },
         ") past end of file"},
        {"layer table overflow", [kMax](auto& b, auto&) { put<uint64_t>(b, offsetof(GlobalHeader, layer_table_offset), kMax - 10); },
         "GlobalHeader.layer_table_offset at offset 56: offset 18446744073709551605 + table size 48 overflows 64 bits"},
        {"region offset past EOF", [](auto& b, auto& L) { put<uint64_t>(b, L.table + 16, L.size); },
         "LayerTable[1].offset at offset 232: region ["},
        {"region offset+bytes overflow", [kMax](auto& b, auto& L) { put<uint64_t>(b, L.table + 8, kMax - 8); },
         "LayerTable[0].offset at offset 216: offset + bytes overflows 64 bits"},
        {"region bad magic", [](auto& b, auto& L) { b[L.region0] = 'X'; }, "layer 0 RegionHeader.magic"},
        {"region wrong index", [](auto& b, auto& L) { put<uint32_t>(b, L.region0 + 4, 5); },
         "layer 0 RegionHeader.layer_index"},
        {"n_segments huge", [](auto& b, auto& L) { put<uint32_t>(b, L.region0 + 8, 0x7FFFFFFFu); },
         "2147483647 segment entries do not fit the region"},
        {"segment offset past region end", [se_offset](auto& b, auto& L) { put<uint64_t>(b, L.dir0[L.ffn_norm] + se_offset, L.region0_end); },
         "lies outside its region's data"},
        {"segment bytes vs geometry", [se_bytes](auto& b, auto& L) {
             put<uint64_t>(b, L.dir0[L.qkv] + se_bytes, get<uint64_t>(b, L.dir0[L.qkv] + se_bytes) + 64);
         },
         "but the geometry implies"},
        {"segment offset+bytes overflow", [kMax, se_offset](auto& b, auto& L) { put<uint64_t>(b, L.dir0[L.attn_norm] + se_offset, kMax - 15); },
         "+ bytes overflows 64 bits"},
        {"unknown segment role", [se_role](auto& b, auto& L) { b[L.dir0[L.qkv] + se_role] = 77; }, "unknown segment role 77"},
        {"vocab role in a layer", [se_role](auto& b, auto& L) {
             b[L.dir0[L.attn_norm] + se_role] = static_cast<uint8_t>(SegmentRole::OutputNorm);
         },
         "segment role OutputNorm does not belong in the layer regions"},
        // 16: the first code past the ggml-block tile types (9..15 were added within version 6).
        {"unknown dtype", [se_dtype](auto& b, auto& L) { b[L.dir0[L.qkv] + se_dtype] = 17; }, "SegmentEntry.dtype at offset"},
        {"unknown dtype 255", [se_dtype](auto& b, auto& L) { b[L.dir0[L.qkv] + se_dtype] = 255; }, "unknown dtype 255"},
        // the source-only dtypes (BF16 = 4, GgmlBlock = 5) are no tile payload types either
        {"source-only dtype bf16", [se_dtype](auto& b, auto& L) { b[L.dir0[L.qkv] + se_dtype] = 4; }, "unknown dtype 4"},
        {"source-only dtype ggml", [se_dtype](auto& b, auto& L) { b[L.dir0[L.qkv] + se_dtype] = 5; }, "unknown dtype 5"},
        // Version 6 part dtypes (cflow-format.md section 4, SegmentEntry.part_dtype).
        {"part dtype unknown", [](auto& b, auto& L) { b[L.dir0[L.qkv] + offsetof(SegmentEntry, part_dtype) + 1] = 17; },
         "(Qkv) SegmentEntry.part_dtype[1] at offset"},
        {"part dtype 200", [](auto& b, auto& L) { b[L.dir0[L.qkv] + offsetof(SegmentEntry, part_dtype) + 2] = 200; },
         "(Qkv) SegmentEntry.part_dtype[2] at offset"},
        {"part dtype 0 differs from dtype", [](auto& b, auto& L) {
             uint8_t& first = b[L.dir0[L.qkv] + offsetof(SegmentEntry, part_dtype)];
             first = first == 2 ? 3 : 2;
         },
         "but dtype is"},
        {"part dtype past n_parts", [](auto& b, auto& L) { b[L.dir0[L.qkv] + offsetof(SegmentEntry, part_dtype) + 3] = 1; },
         "(Qkv) SegmentEntry.part_dtype[3] at offset"},
        {"part dtype on a raw segment", [](auto& b, auto& L) { b[L.dir0[L.attn_norm] + offsetof(SegmentEntry, part_dtype)] = 1; },
         "(AttnNorm) SegmentEntry.part_dtype[0] at offset"},
        // The test model's 64 columns cannot hold a 256-weight super-block.
        {"k-quant part with 64 cols", [](auto& b, auto& L) {
             b[L.dir0[L.qkv] + offsetof(SegmentEntry, part_dtype) + 2] = static_cast<uint8_t>(DType::Q6_K);
         },
         "is not a multiple of 256, as q6_k super-blocks need"},
        {"q2_k part with 64 cols", [](auto& b, auto& L) {
             b[L.dir0[L.qkv] + offsetof(SegmentEntry, part_dtype) + 1] = static_cast<uint8_t>(DType::Q2_K);
         },
         "is not a multiple of 256, as q2_k super-blocks need"},
        // Q5_0 holds 64 columns (two 32-weight blocks per row), so the sizes, not the type, differ.
        {"q5_0 part resizes the segment", [](auto& b, auto& L) {
             b[L.dir0[L.qkv] + offsetof(SegmentEntry, part_dtype) + 2] = static_cast<uint8_t>(DType::Q5_0);
         },
         "(Qkv) SegmentEntry.bytes at offset"},
        // A version 5 file has no part dtypes: a version 6 file relabelled 5 is refused, not misread.
        {"part dtypes in a version 5 file", [](auto& b, auto&) { put<uint32_t>(b, 8, 5); },
         "SegmentEntry.part_dtype[0] at offset"},
        {"k-quant dtype in a version 5 file", [se_dtype](auto& b, auto& L) {
             put<uint32_t>(b, 8, 5);
             b[L.dir0[L.qkv] + se_dtype] = static_cast<uint8_t>(DType::Q4_K);
         },
         "unknown dtype 6 for a version-5 file"},
        {"q5_0 dtype in a version 5 file", [se_dtype](auto& b, auto& L) {
             put<uint32_t>(b, 8, 5);
             b[L.dir0[L.qkv] + se_dtype] = static_cast<uint8_t>(DType::Q5_0);
         },
         "unknown dtype 13 for a version-5 file"},
        {"raw segment not f32", [se_dtype](auto& b, auto& L) { b[L.dir0[L.attn_norm] + se_dtype] = 1; }, "raw segments must be f32"},
        {"raw segment misaligned", [se_offset](auto& b, auto& L) {
             put<uint64_t>(b, L.dir0[L.attn_norm] + se_offset, get<uint64_t>(b, L.dir0[L.attn_norm] + se_offset) + 2);
         },
         "is not 4-byte aligned"},
        {"part rows vs header", [](auto& b, auto& L) { put<uint32_t>(b, L.dir0[L.qkv] + offsetof(SegmentEntry, part_rows) + 4, 32); },
         "SegmentEntry.part_rows[1] at offset"},
        {"duplicate role", [se_role](auto& b, auto& L) { b[L.dir0[L.ffn_norm] + se_role] = static_cast<uint8_t>(SegmentRole::AttnNorm); },
         "duplicate segment role AttnNorm"},
        {"required segment missing", [](auto& b, auto& L) { put<uint32_t>(b, L.vocab_region + 8, L.vocab_segments - 1); },
         "vocabulary region at offset"},
        {"tied flag with an LM head", [](auto& b, auto&) { b[offsetof(GlobalHeader, feature_flags)] |= kFeatureTiedEmbeddings; },
         "segment LmHead must not be present"},
        {"tile wrong matrix id", [](auto& b, auto& L) { b[L.qkv_data + offsetof(TileHeader, matrix_id)] = 1; },
         "(Qkv) tile 0 TileHeader.matrix_id at offset"},
        {"tile wrong row offset", [](auto& b, auto& L) { put<uint32_t>(b, L.qkv_data + offsetof(TileHeader, row_offset), 128); },
         "TileHeader.row_offset at offset"},
        {"expert entry outside bank", [](auto& b, auto& L) { put<uint64_t>(b, L.expert_table_data + 16, L.bank_offset + L.bank_bytes); },
         "layer 0 ExpertTable[1].offset"},
        {"expert entry length", [](auto& b, auto& L) { put<uint64_t>(b, L.expert_table_data + 8, 12); },
         "layer 0 ExpertTable[0].length"},
        {"expert tile wrong expert id", [](auto& b, auto& L) {
             const uint64_t second = get<uint64_t>(b, L.expert_table_data + 16);
             b[second + offsetof(TileHeader, expert_id)] = 0;
         },
         "layer 0 expert 1 gate/up tile 0 TileHeader.expert_id", true},
        {"metadata offset past EOF", [](auto& b, auto& L) { put<uint64_t>(b, L.params + offsetof(ModelParams, metadata_offset), L.size); },
         "ModelParams.metadata_offset"},
        {"metadata truncated string", [](auto& b, auto& L) {
             // The first entry (keys sort: "general.architecture") holds a String: make its length run past the end.
             const uint32_t key_len = get<uint32_t>(b, L.meta + 8);
             put<uint64_t>(b, L.meta + 8 + 4 + key_len + 1, 1u << 30);
         },
         "metadata entry 0 (key 'general.architecture') at offset"},
        {"metadata bad magic", [](auto& b, auto& L) { b[L.meta] = 'X'; }, "metadata section at offset"},
        // Reserved bytes are 0 in versions 5 and 6; anything else is damage (cflow-format.md, section 10).
        {"GlobalHeader reserved byte", [](auto& b, auto&) { b[offsetof(GlobalHeader, reserved0)] = 1; },
         "GlobalHeader.reserved0 at offset 31: is 1, must be 0"},
        {"ModelParams reserved1 byte", [](auto& b, auto& L) { b[L.params + offsetof(ModelParams, reserved1) + 2] = 7; },
         "ModelParams.reserved1 at offset 111: must be 0"},
        {"ModelParams reserved tail byte", [](auto& b, auto& L) { b[L.params + sizeof(ModelParams) - 1] = 1; },
         "ModelParams.reserved at offset 215: must be 0"},
        {"RegionHeader reserved", [](auto& b, auto& L) { put<uint32_t>(b, L.region0 + offsetof(RegionHeader, reserved), 9); },
         "layer 0 RegionHeader.reserved"},
        {"SegmentEntry reserved0", [](auto& b, auto& L) { b[L.dir0[L.qkv] + offsetof(SegmentEntry, reserved0)] = 1; },
         "(Qkv) SegmentEntry.reserved0 at offset"},
        {"SegmentEntry reserved2", [](auto& b, auto& L) { b[L.dir0[L.ffn_norm] + offsetof(SegmentEntry, reserved2) + 7] = 1; },
         "(FfnNorm) SegmentEntry.reserved2 at offset"},
    };
}

TEST_F(CflowCorrupt, ValidFileOpens) {
    ASSERT_NE(valid_, nullptr);
    const auto path = test::temp_dir("corrupt") / "valid.cflow";
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(valid_->data()), valid_->size());
    auto file = CflowFile::open(path.string());
    ASSERT_TRUE(file.ok()) << file.error();
    for (uint32_t e = 0; e < 4; ++e) EXPECT_TRUE((*file)->expert(1, e).ok());
}

TEST_F(CflowCorrupt, EveryVariantIsRejectedWithItsOwnMessage) {
    ASSERT_NE(valid_, nullptr);
    const auto cases = corruptions();
    ASSERT_GE(cases.size(), 40u);
    RecordProperty("cases", static_cast<int>(cases.size()));
    std::set<std::string> distinct;
    for (const Corruption& c : cases) EXPECT_TRUE(distinct.insert(c.expected).second) << "duplicate expectation: " << c.name;
    const auto dir = test::temp_dir("corrupt");
    for (const Corruption& c : cases) {
        SCOPED_TRACE(c.name);
        std::vector<uint8_t> bytes = *valid_;
        c.mutate(bytes, layout_);
        // The file_bytes check would mask every structural corruption: keep it matching unless the case is about it.
        const bool about_size = c.expected.find("file_bytes") != std::string::npos ||
                                c.expected.find("truncated") != std::string::npos ||
                                c.expected.find("trailing") != std::string::npos || bytes.size() < sizeof(GlobalHeader);
        if (!about_size) put<uint64_t>(bytes, offsetof(GlobalHeader, file_bytes), bytes.size());
        const auto path = dir / (std::string("case-") + std::to_string(&c - cases.data()) + ".cflow");
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

TEST_F(CflowCorrupt, EmptyAndMissingFiles) {
    const auto dir = test::temp_dir("corrupt-empty");
    std::ofstream(dir / "empty.cflow");
    auto empty = CflowFile::open((dir / "empty.cflow").string());
    ASSERT_FALSE(empty.ok());
    EXPECT_EQ(empty.kind(), ErrorKind::InvalidInput) << empty.error();
    EXPECT_NE(empty.error().find("file is 0 bytes"), std::string::npos) << empty.error();
    for (LoadMode mode : {LoadMode::Map, LoadMode::ReadAnon}) {
        auto missing = CflowFile::open((dir / "nope.cflow").string(), mode);
        ASSERT_FALSE(missing.ok());
        EXPECT_EQ(missing.kind(), ErrorKind::Io) << missing.error();
        EXPECT_NE(missing.error().find("nope.cflow"), std::string::npos) << missing.error();
    }
}

// Truncations (file_bytes patched to match, so the structural checks are what catch them) must fail
// cleanly: every length through the headers, tables and first directories, then every 1,999th byte.
TEST_F(CflowCorrupt, TruncationAtManyPointsNeverCrashes) {
    ASSERT_NE(valid_, nullptr);
    const auto dir = test::temp_dir("corrupt-trunc");
    for (uint64_t n = 0; n < valid_->size(); n += n < 1536 ? 1 : 1999) {
        std::vector<uint8_t> bytes(valid_->begin(), valid_->begin() + static_cast<std::ptrdiff_t>(n));
        if (n >= sizeof(GlobalHeader)) put<uint64_t>(bytes, offsetof(GlobalHeader, file_bytes), n);
        // A new file per length: rewriting one file through O_TRUNC makes ext4 flush it to disk each time.
        const auto path = dir / ("cut-" + std::to_string(n) + ".cflow");
        std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        auto file = CflowFile::open(path.string());
        ASSERT_FALSE(file.ok()) << "truncated to " << n << " bytes was accepted";
        EXPECT_EQ(file.kind(), ErrorKind::InvalidInput) << file.error();
    }
}

} // namespace
} // namespace cflow
