// write_gguf: what it writes reads back through read_gguf byte for byte (tensors, every key and
// its value, ggml's offset rule), and every refusal is the right ErrorKind with no file left behind.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "cflow/formats/gguf.h"
#include "cflow/formats/gguf_writer.h"
#include "cflow/formats/source_model.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

struct SmallModel {
    SourceModel source;
    std::vector<GgufKeyValue> metadata;
    std::vector<GgufTensorData> tensors;
};

// A 2-layer llama with Q4_0 matrices and F32 vectors, plus one key of every value type.
SmallModel small_model() {
    test::SyntheticSpec spec;
    spec.dtype = DType::Q4_0;
    SmallModel m;
    m.source = test::make_synthetic_model(spec);
    m.metadata = test::synthetic_llama_gguf_metadata(spec, "gguf-writer-test");
    m.metadata.insert(m.metadata.end(), {
        {"tokenizer.ggml.add_bos_token", true},
        {"test.u8", uint8_t{200}},
        {"test.i8", int8_t{-100}},
        {"test.u16", uint16_t{60000}},
        {"test.i16", int16_t{-30000}},
        {"test.i32", int32_t{-2000000000}},
        {"test.u64", uint64_t{1} << 40},
        {"test.i64", int64_t{-(int64_t{1} << 50)}},
        {"test.f64", 0.125},
    });
    for (const auto& [name, view] : m.source.tensors) m.tensors.push_back(gguf_tensor(view));
    return m;
}

TEST(GgufWriter, RoundTripsTensorsAndKeysThroughTheReader) {
    const SmallModel m = small_model();
    const std::string path = (test::temp_dir("gguf-writer") / "small.gguf").string();
    Status s = write_gguf(path, m.metadata, m.tensors);
    ASSERT_TRUE(s.ok()) << s.error();

    auto g = read_gguf(path);
    ASSERT_TRUE(g.ok()) << g.error();
    EXPECT_EQ(g->version, 3u);
    EXPECT_EQ(g->alignment, 32u);
    EXPECT_EQ(g->data_offset % 32, 0u);
    EXPECT_TRUE(g->skipped_keys.empty());

    // Every key with its value as read_gguf reports it, plus the general.alignment the writer adds.
    const Metadata expected = gguf_metadata_view(m.metadata);
    EXPECT_EQ(g->metadata.entries().size(), expected.entries().size() + 1);
    for (const auto& [key, value] : expected.entries()) {
        const MetaValue* got = g->metadata.find(key);
        ASSERT_NE(got, nullptr) << key;
        EXPECT_TRUE(*got == value) << key;
    }
    EXPECT_EQ(g->metadata.get_int("general.alignment"), 32);
    EXPECT_EQ(g->metadata.get_int("test.u64"), int64_t{1} << 40);
    EXPECT_EQ(g->metadata.get_float("llama.rope.freq_base"), 10000.0);

    ASSERT_EQ(g->tensors.size(), m.tensors.size());
    uint64_t expected_offset = 0;
    for (size_t i = 0; i < m.tensors.size(); ++i) {
        const GgufTensorData& want = m.tensors[i];
        const GgufTensorInfo& got = g->tensors[i];  // file order = the caller's order
        EXPECT_EQ(got.name, want.name);
        EXPECT_EQ(got.ggml_type, want.ggml_type) << want.name;
        EXPECT_EQ(got.ne, std::vector<uint64_t>(want.shape.rbegin(), want.shape.rend())) << want.name;
        // ggml's rule: each tensor starts exactly at the previous one's padded end.
        EXPECT_EQ(got.offset, expected_offset) << want.name;
        expected_offset += (want.bytes + 31) / 32 * 32;
        ASSERT_EQ(got.bytes, want.bytes) << want.name;
        EXPECT_EQ(std::memcmp(g->file->data() + g->data_offset + got.offset, want.data, want.bytes), 0) << want.name;
    }
    EXPECT_EQ(g->file->size(), g->data_offset + expected_offset);  // the last tensor is padded too

    // And it is a model: read_gguf_model sees the same geometry and tensors.
    auto model = read_gguf_model(path);
    ASSERT_TRUE(model.ok()) << model.error();
    EXPECT_EQ(model->config.d_model, m.source.config.d_model);
    EXPECT_EQ(model->config.d_ff, m.source.config.d_ff);
    EXPECT_EQ(model->tensors.size(), m.source.tensors.size());
}

TEST(GgufWriter, HonoursACustomAlignment) {
    const SmallModel m = small_model();
    const std::string path = (test::temp_dir("gguf-writer") / "aligned.gguf").string();
    GgufWriteOptions options;
    options.alignment = 256;
    ASSERT_TRUE(write_gguf(path, m.metadata, m.tensors, options).ok());
    auto g = read_gguf(path);
    ASSERT_TRUE(g.ok()) << g.error();
    EXPECT_EQ(g->alignment, 256u);
    EXPECT_EQ(g->data_offset % 256, 0u);
    for (const GgufTensorInfo& t : g->tensors) EXPECT_EQ(t.offset % 256, 0u) << t.name;
}

TEST(GgufWriter, MissingFolderIsAnIoError) {
    const SmallModel m = small_model();
    const std::string path = (test::temp_dir("gguf-writer") / "no-such-folder" / "x.gguf").string();
    Status s = write_gguf(path, m.metadata, m.tensors);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.kind(), ErrorKind::Io);
    EXPECT_NE(s.error().find("no-such-folder"), std::string::npos) << s.error();
}

// Each bad request fails before the file is created.
void expect_refused(const std::vector<GgufKeyValue>& metadata, const std::vector<GgufTensorData>& tensors,
                    ErrorKind kind, const std::string& needle, const GgufWriteOptions& options = {}) {
    const auto dir = test::temp_dir("gguf-writer");
    const std::string path = (dir / "bad.gguf").string();
    Status s = write_gguf(path, metadata, tensors, options);
    ASSERT_FALSE(s.ok()) << needle;
    EXPECT_EQ(s.kind(), kind) << s.error();
    EXPECT_NE(s.error().find(needle), std::string::npos) << s.error();
    EXPECT_NE(s.error().find("bad.gguf"), std::string::npos) << s.error();
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "a refused write left files in " << dir;
}

// Every block type of ggml_blocks.h is written with the size its blocks give and read back as is.
TEST(GgufWriter, BlockTypesRoundTrip) {
    const auto dir = test::temp_dir("gguf-writer-blocks");
    const std::string path = (dir / "blocks.gguf").string();
    std::vector<std::vector<uint8_t>> payloads;
    std::vector<GgufTensorData> tensors;
    for (const GgmlBlockType& t : ggml_block_types()) {
        const uint64_t cols = 2 * 256, rows = 3;  // whole blocks of every type
        std::vector<uint8_t> bytes(rows * cols / t.block_elements * t.block_bytes);
        for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + t.ggml_type);
        payloads.push_back(std::move(bytes));
        tensors.push_back({"t." + std::string(t.name), t.ggml_type, {rows, cols}, payloads.back().data(), payloads.back().size()});
    }
    ASSERT_TRUE(write_gguf(path, {{"general.architecture", std::string("llama")}}, tensors).ok());
    auto g = read_gguf(path);
    ASSERT_TRUE(g.ok()) << g.error();
    ASSERT_EQ(g->tensors.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const GgufTensorInfo& info = g->tensors[i];
        EXPECT_EQ(info.ggml_type, tensors[i].ggml_type) << info.name;
        ASSERT_EQ(info.bytes, tensors[i].bytes) << info.name;
        EXPECT_EQ(std::memcmp(g->file->data() + g->data_offset + info.offset, tensors[i].data, info.bytes), 0) << info.name;
    }
}

TEST(GgufWriter, RefusesInvalidRequests) {
    const SmallModel m = small_model();
    auto kv = m.metadata;
    kv.push_back({"general.name", std::string("again")});
    expect_refused(kv, m.tensors, ErrorKind::InvalidInput, "'general.name' appears twice");

    expect_refused({{"general.alignment", uint64_t{32}}}, m.tensors, ErrorKind::InvalidInput, "u32");
    expect_refused({{"general.alignment", uint32_t{64}}}, m.tensors, ErrorKind::InvalidInput, "aligned to 32");
    expect_refused({{"", uint32_t{1}}}, m.tensors, ErrorKind::InvalidInput, "empty");

    auto tensors = m.tensors;
    tensors.push_back(tensors.front());
    expect_refused(m.metadata, tensors, ErrorKind::InvalidInput, "appears twice");

    tensors = m.tensors;
    tensors.front().bytes -= 1;
    expect_refused(m.metadata, tensors, ErrorKind::InvalidInput, "bytes");

    const std::vector<uint8_t> block(18 * 2);
    expect_refused(m.metadata, {{"odd", kGgmlQ4_0, {2, 48}, block.data(), 0}}, ErrorKind::InvalidInput, "32-weight");
    expect_refused(m.metadata, {{"iq2", 16, {1, 256}, block.data(), 66}}, ErrorKind::Unsupported, "IQ2_XXS");
    expect_refused(m.metadata, {{"k_quant", kGgmlQ4_K, {1, 288}, block.data(), 0}}, ErrorKind::InvalidInput,
                   "256-weight Q4_K");
    expect_refused(m.metadata, {{std::string(64, 'n'), kGgmlF32, {1}, block.data(), 4}}, ErrorKind::InvalidInput, "63");
    expect_refused(m.metadata, {{"five_d", kGgmlF32, {1, 1, 1, 1, 1}, block.data(), 4}}, ErrorKind::InvalidInput,
                   "dimensions");
    expect_refused(m.metadata, {{"zero", kGgmlF32, {0, 4}, block.data(), 0}}, ErrorKind::InvalidInput, "is 0");

    GgufWriteOptions odd;
    odd.alignment = 48;
    expect_refused(m.metadata, m.tensors, ErrorKind::InvalidInput, "alignment", odd);
}

TEST(GgufWriter, CancelledWriteLeavesNoFile) {
    const SmallModel m = small_model();
    const auto dir = test::temp_dir("gguf-writer");
    CancelToken cancel;
    cancel.cancel();
    Status s = write_gguf((dir / "c.gguf").string(), m.metadata, m.tensors, {}, &cancel);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.kind(), ErrorKind::Cancelled);
    EXPECT_TRUE(std::filesystem::is_empty(dir));
}

} // namespace
} // namespace cflow
