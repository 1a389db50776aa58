// Corrupt source checkpoints: every reader fails with a message naming what is wrong,
// and none crashes (run under ASan too), including on truncations and byte flips.
#include <cstring>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/formats/gguf.h"
#include "cflow/formats/safetensors.h"
#include "cflow/formats/source_model.h"
#include "source_writers.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;
using test::GgufWriter;

// What a reader said: "" when it succeeded, else its message and kind.
struct Failure {
    std::string error;
    ErrorKind kind = ErrorKind::Internal;
};

template <class R>
Failure failure_of(const R& r) {
    return r.ok() ? Failure{} : Failure{r.error(), r.kind()};
}

// Writes bytes to a fresh file and returns what the reader said.
template <class Reader>
Failure error_of(const std::vector<uint8_t>& bytes, const std::string& name, Reader read) {
    auto dir = test::temp_dir("corrupt");
    auto path = dir / name;
    test::write_bytes(path, bytes);
    return failure_of(read(path.string()));
}

Failure gguf_error(const std::vector<uint8_t>& bytes) {
    return error_of(bytes, "m.gguf", [](const std::string& p) { return read_gguf_model(p); });
}

// A valid one-layer llama GGUF (d = 32, 2 heads, ff 64, vocab 8).
GgufWriter valid_gguf(uint32_t q_type = kGgmlF32) {
    const uint64_t d = 32;
    GgufWriter w;
    w.str("general.architecture", "llama");
    w.u32("llama.embedding_length", d);
    w.u32("llama.block_count", 1);
    w.u32("llama.feed_forward_length", 64);
    w.u32("llama.attention.head_count", 2);
    w.strings("tokenizer.ggml.tokens", {"a", "b", "c", "d", "e", "f", "g", "h"});
    auto zeros = [](uint64_t n) { return std::vector<uint8_t>(n, 0); };
    w.tensor("token_embd.weight", kGgmlF32, {d, 8}, zeros(8 * d * 4));
    w.tensor("blk.0.attn_q.weight", q_type, {d, d}, zeros(q_type == kGgmlF32 ? d * d * 4 : 0));
    return w;
}

// The kind tells callers what went wrong; the parts check the message says where (file, field, offset).
void expect_failure(const Failure& f, ErrorKind kind, std::initializer_list<const char*> parts) {
    ASSERT_FALSE(f.error.empty()) << "the reader accepted a corrupt file";
    EXPECT_EQ(f.kind, kind) << f.error;
    for (const char* p : parts)
        EXPECT_NE(f.error.find(p), std::string::npos) << "missing '" << p << "' in: " << f.error;
}

TEST(SourceCorrupt, GgufValidFixtureReads) {
    EXPECT_EQ(gguf_error(valid_gguf().bytes()).error, "");  // the base of the corruptions below is sound
}

TEST(SourceCorrupt, GgufTruncatedHeader) {
    auto bytes = valid_gguf().bytes();
    bytes.resize(14);
    expect_failure(gguf_error(bytes), ErrorKind::InvalidInput,
                   {"m.gguf", "header tensor_count at offset 8", "truncated header"});
    bytes.resize(2);
    expect_failure(gguf_error(bytes), ErrorKind::InvalidInput, {"header magic at offset 0", "too short"});
}

TEST(SourceCorrupt, GgufBadMagic) {
    auto bytes = valid_gguf().bytes();
    bytes[0] = 'X';
    expect_failure(gguf_error(bytes), ErrorKind::InvalidInput, {"header magic at offset 0", "not a GGUF file"});
}

TEST(SourceCorrupt, GgufUnsupportedVersion) {
    auto bytes = valid_gguf().bytes();
    bytes[4] = 1;
    expect_failure(gguf_error(bytes), ErrorKind::Unsupported, {"header version at offset 4", "v1 is not supported"});
    bytes[4] = 7;
    expect_failure(gguf_error(bytes), ErrorKind::Unsupported, {"unsupported GGUF version 7"});
}

TEST(SourceCorrupt, GgufStringLengthPastEof) {
    GgufWriter w;
    std::vector<uint8_t> value;
    test::put<uint64_t>(value, 1ull << 40);  // length, then only 3 bytes
    value.insert(value.end(), {'a', 'b', 'c'});
    w.raw("general.name", 8, value);
    expect_failure(gguf_error(w.bytes()), ErrorKind::InvalidInput,
                   {"metadata 'general.name' string length at offset 48", "length 1099511627776 runs past the end"});
}

TEST(SourceCorrupt, GgufKeyLengthPastEof) {
    auto bytes = valid_gguf().bytes();
    uint64_t huge = ~0ull;
    std::memcpy(bytes.data() + 24, &huge, 8);  // first key's length
    expect_failure(gguf_error(bytes), ErrorKind::InvalidInput,
                   {"metadata entry 0 key at offset 24", "runs past the end of the file"});
}

TEST(SourceCorrupt, GgufArrayLengthOverflow) {
    GgufWriter w;
    std::vector<uint8_t> value;
    test::put<uint32_t>(value, 5);            // i32 elements
    test::put<uint64_t>(value, 1ull << 62);  // n * 4 overflows 64 bits
    w.raw("tokenizer.ggml.token_type", 9, value);
    expect_failure(gguf_error(w.bytes()), ErrorKind::InvalidInput,
                   {"metadata 'tokenizer.ggml.token_type' array length", "run past the end of the file"});
}

TEST(SourceCorrupt, GgufDuplicateKey) {
    // Two block counts: the last one silently won before; llama.cpp refuses such a file too.
    GgufWriter w = valid_gguf();
    w.u32("llama.block_count", 2);
    expect_failure(gguf_error(w.bytes()), ErrorKind::InvalidInput, {"m.gguf: metadata entry 6 key", "'llama.block_count' appears twice"});
}

TEST(SourceCorrupt, GgufUnknownValueType) {
    GgufWriter w;
    w.raw("x.weird", 99, {0, 0, 0, 0});
    expect_failure(gguf_error(w.bytes()), ErrorKind::InvalidInput,
                   {"metadata 'x.weird' type at offset", "unknown value type 99"});
}

TEST(SourceCorrupt, GgufTensorCountOverflow) {
    auto bytes = valid_gguf().bytes();
    uint64_t count = 1ull << 63;
    std::memcpy(bytes.data() + 8, &count, 8);
    expect_failure(gguf_error(bytes), ErrorKind::InvalidInput,
                   {"header tensor_count at offset 8", "count 9223372036854775808 cannot fit"});
}

TEST(SourceCorrupt, GgufTensorOffsetPastEof) {
    auto bytes = valid_gguf().bytes();
    bytes.resize(bytes.size() - 4);  // the last tensor loses its final float
    expect_failure(gguf_error(bytes), ErrorKind::InvalidInput,
                   {"tensor 'blk.0.attn_q.weight' offset at offset", "runs past the end of the file"});
}

TEST(SourceCorrupt, GgufMisalignedTensorOffset) {
    auto w = valid_gguf();
    auto bytes = w.bytes();
    // The last tensor info ends with its u64 offset right before the alignment padding;
    // find it by value (8 * 32 * 4 = 1024) and nudge it.
    uint64_t want = 1024;
    size_t at = 0;
    for (size_t i = 24; i + 8 <= bytes.size(); ++i)
        if (std::memcmp(bytes.data() + i, &want, 8) == 0) { at = i; break; }
    ASSERT_NE(at, 0u);
    uint64_t odd = 1028;
    std::memcpy(bytes.data() + at, &odd, 8);
    expect_failure(gguf_error(bytes), ErrorKind::InvalidInput,
                   {"tensor 'blk.0.attn_q.weight' offset at offset", "is not a multiple of general.alignment 32"});
}

// A type read_gguf cannot size (IQ2_XXS, 16) is listed with 0 bytes and refused by name, with the list.
TEST(SourceCorrupt, GgufUnsupportedTensorType) {
    expect_failure(gguf_error(valid_gguf(16).bytes()), ErrorKind::Unsupported,
                   {"tensor 'blk.0.attn_q.weight' has type IQ2_XXS, which is not supported",
                    "supported types: F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS, BF16"});
    expect_failure(gguf_error(valid_gguf(99).bytes()), ErrorKind::Unsupported, {"has type type 99, which is not supported"});
}

TEST(SourceCorrupt, GgufQuantRowNotWholeBlocks) {
    GgufWriter w;
    w.str("general.architecture", "llama");
    w.tensor("blk.0.attn_q.weight", kGgmlQ8_0, {48, 2}, std::vector<uint8_t>(200, 0));
    expect_failure(gguf_error(w.bytes()), ErrorKind::InvalidInput,
                   {"tensor 'blk.0.attn_q.weight' shape", "type Q8_0: innermost dimension 48 is not a multiple of the 32-weight Q8_0 block"});
}

// K-quant rows are whole 256-weight super-blocks; 32 | 288 but 256 does not.
TEST(SourceCorrupt, GgufKQuantRowNotWholeSuperBlocks) {
    for (uint32_t type : {kGgmlQ2_K, kGgmlQ3_K, kGgmlQ4_K, kGgmlQ5_K, kGgmlQ6_K, kGgmlQ8_K, kGgmlIQ4_XS}) {
        GgufWriter w;
        w.str("general.architecture", "llama");
        w.tensor("blk.0.ffn_down.weight", type, {288, 2}, std::vector<uint8_t>(2 * 2 * 292, 0));
        const std::string name = ggml_type_name(type);
        const std::string why = "type " + name + ": innermost dimension 288 is not a multiple of the 256-weight " + name + " block";
        expect_failure(gguf_error(w.bytes()), ErrorKind::InvalidInput, {"tensor 'blk.0.ffn_down.weight' shape", why.c_str()});
    }
}

// A Q4_K / IQ4_NL tensor whose data ends early is refused like any other.
TEST(SourceCorrupt, GgufBlockPayloadTruncated) {
    for (auto [type, ne0, bytes] : {std::tuple{kGgmlQ4_K, 256u, 2u * 144}, std::tuple{kGgmlIQ4_NL, 64u, 2u * 2 * 18}}) {
        GgufWriter w;
        w.str("general.architecture", "llama");
        w.tensor("blk.0.attn_q.weight", type, {ne0, 2}, std::vector<uint8_t>(bytes, 0));
        auto file = w.bytes();
        file.resize(file.size() - 1);
        expect_failure(gguf_error(file), ErrorKind::InvalidInput,
                       {"tensor 'blk.0.attn_q.weight' offset at offset", "runs past the end of the file"});
    }
}

TEST(SourceCorrupt, GgufMissingHyperparameter) {
    GgufWriter w;
    w.str("general.architecture", "llama");
    w.tensor("token_embd.weight", kGgmlF32, {4, 4}, std::vector<uint8_t>(64, 0));
    expect_failure(gguf_error(w.bytes()), ErrorKind::InvalidInput,
                   {"metadata key 'llama.embedding_length' is missing"});
}

Failure st_error(const std::vector<uint8_t>& bytes) {
    return error_of(bytes, "m.safetensors", [](const std::string& p) { return read_safetensors_file(p); });
}

std::vector<uint8_t> st_with_header(const std::string& header, size_t data_bytes) {
    std::vector<uint8_t> out;
    test::put<uint64_t>(out, header.size());
    out.insert(out.end(), header.begin(), header.end());
    out.resize(out.size() + data_bytes, 0);
    return out;
}

TEST(SourceCorrupt, SafetensorsHeaderLengthPastEof) {
    auto bytes = st_with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
    uint64_t len = bytes.size();  // claims more than the file holds after the 8-byte prefix
    std::memcpy(bytes.data(), &len, 8);
    expect_failure(st_error(bytes), ErrorKind::InvalidInput,
                   {"m.safetensors: header length at offset 0", "is past the end of the file"});
    expect_failure(st_error({1, 2, 3}), ErrorKind::InvalidInput, {"too short for a safetensors header"});
}

TEST(SourceCorrupt, SafetensorsBadJson) {
    expect_failure(st_error(st_with_header(R"({"a":{"dtype":"F32",)", 8)), ErrorKind::InvalidInput,
                   {"m.safetensors: header JSON (bytes 8..", "is invalid"});
    expect_failure(st_error(st_with_header(R"([1,2])", 0)), ErrorKind::InvalidInput,
                   {"header JSON at offset 8 is not an object"});
    expect_failure(st_error(st_with_header(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)),
                   ErrorKind::InvalidInput, {"tensor 'a'", "field 'shape' holds -2"});
}

TEST(SourceCorrupt, SafetensorsDataOffsetsOutOfRange) {
    expect_failure(st_error(st_with_header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8)),
                   ErrorKind::InvalidInput, {"tensor 'a'", "'data_offsets' end 16 is past the data buffer (8 bytes"});
    expect_failure(st_error(st_with_header(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8)),
                   ErrorKind::InvalidInput, {"'data_offsets' begin 8 is after end 4"});
}

TEST(SourceCorrupt, SafetensorsShapeSizeMismatch) {
    expect_failure(st_error(st_with_header(R"({"w":{"dtype":"BF16","shape":[3,2],"data_offsets":[0,8]}})", 8)),
                   ErrorKind::InvalidInput,
                   {"tensor 'w'", "data_offsets span 8 bytes but shape x BF16 needs 12 bytes"});
    expect_failure(
        st_error(st_with_header(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", 8)),
        ErrorKind::InvalidInput, {"tensor 'w'", "overflows 64 bits"});
}

fs::path hf_folder(const nlohmann::json& config) {
    auto dir = test::temp_dir("hf");
    test::write_text(dir / "config.json", config.dump());
    test::write_bytes(dir / "model.safetensors",
                      test::safetensors_bytes({{"model.embed_tokens.weight", "F32", {4, 8}, std::vector<uint8_t>(128, 0)}}));
    return dir;
}

TEST(SourceCorrupt, HfConfigMissingField) {
    nlohmann::json cfg = {{"architectures", {"LlamaForCausalLM"}}, {"num_hidden_layers", 1}, {"num_attention_heads", 2},
                          {"intermediate_size", 16}, {"vocab_size", 4}};
    auto r = read_safetensors_model(hf_folder(cfg).string());
    ASSERT_FALSE(r.ok());
    expect_failure(failure_of(r), ErrorKind::InvalidInput, {"config.json: required field 'hidden_size' is missing"});
    cfg["hidden_size"] = "eight";
    auto typed = read_safetensors_model(hf_folder(cfg).string());
    expect_failure(failure_of(typed), ErrorKind::InvalidInput, {"field 'hidden_size' must be an integer"});
}

TEST(SourceCorrupt, HfUnknownArchitecture) {
    nlohmann::json cfg = {{"architectures", {"GPT2LMHeadModel"}}, {"hidden_size", 8}};
    auto r = read_safetensors_model(hf_folder(cfg).string());
    ASSERT_FALSE(r.ok());
    expect_failure(failure_of(r), ErrorKind::Unsupported,
                   {"unsupported architecture 'GPT2LMHeadModel'", "LlamaForCausalLM", "Qwen2ForCausalLM"});
    auto dir = hf_folder(cfg);
    test::write_text(dir / "config.json", "{\"architectures\": [");
    auto bad = read_safetensors_model(dir.string());
    expect_failure(failure_of(bad), ErrorKind::InvalidInput, {"config.json: invalid JSON"});
}

TEST(SourceCorrupt, HfTokenizerSpecialTokenNotInVocab) {
    nlohmann::json cfg = {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 8}, {"num_hidden_layers", 1},
                          {"num_attention_heads", 2}, {"intermediate_size", 16}, {"vocab_size", 4}};
    auto dir = hf_folder(cfg);
    test::write_text(dir / "tokenizer.json", R"({"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]}})");
    test::write_text(dir / "tokenizer_config.json", R"({"bos_token":"<s>"})");
    auto r = read_safetensors_model(dir.string());
    expect_failure(failure_of(r), ErrorKind::InvalidInput,
                   {"tokenizer_config.json: bos_token '<s>' is not in the vocabulary"});
    test::write_text(dir / "tokenizer.json", R"({"model":{"type":"BPE","vocab":{"a":-5}}})");
    auto neg = read_safetensors_model(dir.string());
    expect_failure(failure_of(neg), ErrorKind::InvalidInput, {"tokenizer.json: token 'a' has id -5"});
}

Failure llama2c_error(const fs::path& bin, const fs::path& tok) {
    return failure_of(read_llama2c_model(bin.string(), tok.string()));
}

TEST(SourceCorrupt, Llama2cWrongSize) {
    CFLOW_REQUIRE_ASSET(dir, "assets/models/llama2c-stories260K");
    auto bytes = test::read_bytes(dir / "stories260K.bin");
    bytes.resize(bytes.size() - 100);
    auto tmp = test::temp_dir("l2c");
    test::write_bytes(tmp / "short.bin", bytes);
    expect_failure(llama2c_error(tmp / "short.bin", dir / "tok512.bin"), ErrorKind::InvalidInput,
                   {"short.bin: file size: expected 1056540 bytes", "but the file has 1056440 bytes"});
    int32_t zero = 0;
    std::memcpy(bytes.data() + 8, &zero, 4);  // n_layers = 0
    test::write_bytes(tmp / "zero.bin", bytes);
    expect_failure(llama2c_error(tmp / "zero.bin", dir / "tok512.bin"), ErrorKind::InvalidInput,
                   {"header at offset 0", "must be positive"});
    int32_t huge = 0x7fffffff;
    for (int i = 0; i < 3; ++i) std::memcpy(bytes.data() + 4 * i, &huge, 4);  // dims whose sizes overflow
    int32_t heads = 1;
    std::memcpy(bytes.data() + 12, &heads, 4);
    std::memcpy(bytes.data() + 16, &heads, 4);
    test::write_bytes(tmp / "huge.bin", bytes);
    expect_failure(llama2c_error(tmp / "huge.bin", dir / "tok512.bin"), ErrorKind::InvalidInput, {"huge.bin"});
}

TEST(SourceCorrupt, Llama2cTokenizerTruncated) {
    CFLOW_REQUIRE_ASSET(dir, "assets/models/llama2c-stories260K");
    auto tok = test::read_bytes(dir / "tok512.bin");
    auto tmp = test::temp_dir("tok");
    auto cut = tok;
    cut.resize(tok.size() / 2);
    test::write_bytes(tmp / "half.bin", cut);
    expect_failure(llama2c_error(dir / "stories260K.bin", tmp / "half.bin"), ErrorKind::InvalidInput,
                   {"half.bin: token", "at offset", "vocab_size is 512"});
    auto bad_len = tok;
    int32_t len = 1 << 30;
    std::memcpy(bad_len.data() + 4 + 4, &len, 4);  // token 0's length
    test::write_bytes(tmp / "len.bin", bad_len);
    expect_failure(llama2c_error(dir / "stories260K.bin", tmp / "len.bin"), ErrorKind::InvalidInput,
                   {"len.bin: token 0 length at offset 8: length 1073741824 runs past the end"});
}

// No input may crash a reader: cut stories260K.gguf at many points and flip header bytes.
TEST(SourceCorrupt, GgufTruncationsAndByteFlipsNeverCrash) {
    CFLOW_REQUIRE_ASSET(path, "assets/models/llama2c-stories260K/stories260K.gguf");
    auto bytes = test::read_bytes(path);
    auto tmp = test::temp_dir("fuzz");
    auto file = tmp / "f.gguf";
    size_t rejected = 0, runs = 0;
    for (size_t cut = 0; cut < 12000; cut += 37) {
        test::write_bytes(file, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(cut)));
        auto r = read_gguf_model(file.string());
        rejected += !r.ok();
        if (!r.ok()) {
            EXPECT_EQ(r.kind(), ErrorKind::InvalidInput) << r.error();  // a cut file is damaged, never "unsupported"
        }
        ++runs;
    }
    EXPECT_EQ(rejected, runs);  // every cut inside the header or tensor data is refused
    uint32_t s = 12345;
    for (int i = 0; i < 300; ++i) {
        auto flipped = bytes;
        for (int k = 0; k < 4; ++k) {
            s = s * 1664525u + 1013904223u;
            flipped[(s >> 8) % 12000] ^= static_cast<uint8_t>(1u << (s % 8));
        }
        test::write_bytes(file, flipped);
        auto r = read_gguf_model(file.string());
        if (!r.ok()) {
            EXPECT_FALSE(r.error().empty());
            // A flipped version, architecture or tensor type reads as Unsupported; anything else is damage.
            EXPECT_TRUE(r.kind() == ErrorKind::InvalidInput || r.kind() == ErrorKind::Unsupported) << r.error();
        }
    }
}

// A path that is not there is the OS's answer (Io), whichever reader gets it; the message names it.
TEST(SourceCorrupt, MissingFilesAreIoErrors) {
    const auto dir = test::temp_dir("missing-sources");
    const std::string gguf = (dir / "absent.gguf").string();
    const std::string st = (dir / "absent.safetensors").string();
    const std::string bin = (dir / "absent.bin").string();
    expect_failure(failure_of(read_gguf_model(gguf)), ErrorKind::Io, {"absent.gguf"});
    expect_failure(failure_of(read_safetensors_file(st)), ErrorKind::Io, {"absent.safetensors"});
    expect_failure(failure_of(read_safetensors_model(st)), ErrorKind::Io, {"absent.safetensors"});
    expect_failure(failure_of(read_llama2c_model(bin, (dir / "tok.bin").string())), ErrorKind::Io, {"absent.bin"});
    expect_failure(failure_of(open_source_model(bin, (dir / "tok.bin").string())), ErrorKind::Io, {"absent.bin"});
    // An HF folder whose config.json is missing: the weights are there, the config cannot be opened.
    nlohmann::json cfg = {{"architectures", {"LlamaForCausalLM"}}};
    const auto folder = hf_folder(cfg);
    fs::remove(folder / "config.json");
    expect_failure(failure_of(read_safetensors_model(folder.string())), ErrorKind::Io, {"config.json"});
}

} // namespace
} // namespace cflow
