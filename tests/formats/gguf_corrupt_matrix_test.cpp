// Corrupt-file matrix for GGUF (issue 16): a valid one-layer llama GGUF is cut at every
// structural boundary, given huge counts, lengths and offsets, overlapping or misaligned
// tensors, wrong metadata types and missing pieces. Each case must be refused where the table
// says (reader or converter validation), with its error kind and its own message naming the
// file, and the conversion must leave its output folder empty.
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include <gtest/gtest.h>

#include "cflow/formats/ggml_blocks.h"
#include "corrupt_matrix.h"
#include "source_writers.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;
using test::Expectation;
using test::Stage;

// GGUF value type codes (gguf.md).
constexpr uint32_t kU32 = 4, kI32 = 5, kF32 = 6, kString = 8, kArray = 9, kU64 = 10, kI64 = 11;

std::vector<uint8_t> u32v(uint32_t v) { std::vector<uint8_t> b; test::put(b, v); return b; }
std::vector<uint8_t> f32v(float v) { std::vector<uint8_t> b; test::put(b, v); return b; }
std::vector<uint8_t> strv(const std::string& s) {
    std::vector<uint8_t> b;
    test::put<uint64_t>(b, s.size());
    b.insert(b.end(), s.begin(), s.end());
    return b;
}
// Array value: element type, count, then the encoded elements.
std::vector<uint8_t> arrayv(uint32_t elem_type, uint64_t n, const std::vector<uint8_t>& elements) {
    std::vector<uint8_t> b;
    test::put(b, elem_type);
    test::put(b, n);
    b.insert(b.end(), elements.begin(), elements.end());
    return b;
}

struct Kv {
    std::string key;
    uint32_t type;
    std::vector<uint8_t> value;  // encoded as the type says (not checked: corruptions need that)
};

struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> ne;  // innermost first
    std::vector<uint8_t> data;
    std::optional<uint64_t> offset;  // written instead of the packed offset
};

// The serialised file and the absolute offset of every structural boundary in it:
// "kv:KEY" (its key length), "kv:KEY:key", "kv:KEY:type", "kv:KEY:value", "ti:NAME",
// "ti:NAME:name", "ti:NAME:n_dims", "ti:NAME:ne0".., "ti:NAME:type", "ti:NAME:offset",
// "infos_end", "data", "data:NAME", "end".
struct Image {
    std::vector<uint8_t> bytes;
    std::map<std::string, uint64_t> at;
    uint64_t operator[](const std::string& mark) const {
        auto it = at.find(mark);
        EXPECT_NE(it, at.end()) << "no mark " << mark;
        return it == at.end() ? 0 : it->second;
    }
};

struct Gguf {
    uint32_t version = 3;
    uint64_t alignment = 32;  // the padding written; general.alignment is an ordinary KV below
    std::vector<Kv> kvs;
    std::vector<Tensor> tensors;
    std::optional<uint64_t> tensor_count, kv_count;  // written instead of the real counts

    Kv& kv(const std::string& key) {
        for (Kv& k : kvs)
            if (k.key == key) return k;
        ADD_FAILURE() << "no key " << key;
        return kvs.front();
    }
    Tensor& tensor(const std::string& name) {
        for (Tensor& t : tensors)
            if (t.name == name) return t;
        ADD_FAILURE() << "no tensor " << name;
        return tensors.front();
    }
    void drop_kv(const std::string& key) { std::erase_if(kvs, [&](const Kv& k) { return k.key == key; }); }
    void drop_tensor(const std::string& name) { std::erase_if(tensors, [&](const Tensor& t) { return t.name == name; }); }

    Image image() const {
        Image im;
        auto& b = im.bytes;
        test::put<uint32_t>(b, 0x46554747u);
        test::put(b, version);
        test::put<uint64_t>(b, tensor_count.value_or(tensors.size()));
        test::put<uint64_t>(b, kv_count.value_or(kvs.size()));
        for (const Kv& k : kvs) {
            const std::string m = "kv:" + k.key;
            im.at[m] = b.size();
            test::put<uint64_t>(b, k.key.size());
            im.at[m + ":key"] = b.size();
            b.insert(b.end(), k.key.begin(), k.key.end());
            im.at[m + ":type"] = b.size();
            test::put(b, k.type);
            im.at[m + ":value"] = b.size();
            b.insert(b.end(), k.value.begin(), k.value.end());
        }
        std::vector<uint64_t> offsets;
        uint64_t packed = 0;
        for (const Tensor& t : tensors) {
            packed = (packed + alignment - 1) / alignment * alignment;
            offsets.push_back(packed);
            packed += t.data.size();
        }
        for (size_t i = 0; i < tensors.size(); ++i) {
            const Tensor& t = tensors[i];
            const std::string m = "ti:" + t.name;
            im.at[m] = b.size();
            test::put<uint64_t>(b, t.name.size());
            im.at[m + ":name"] = b.size();
            b.insert(b.end(), t.name.begin(), t.name.end());
            im.at[m + ":n_dims"] = b.size();
            test::put<uint32_t>(b, static_cast<uint32_t>(t.ne.size()));
            for (size_t d = 0; d < t.ne.size(); ++d) {
                im.at[m + ":ne" + std::to_string(d)] = b.size();
                test::put(b, t.ne[d]);
            }
            im.at[m + ":type"] = b.size();
            test::put(b, t.type);
            im.at[m + ":offset"] = b.size();
            test::put<uint64_t>(b, t.offset.value_or(offsets[i]));
        }
        im.at["infos_end"] = b.size();
        if (!tensors.empty())
            while (b.size() % alignment != 0) b.push_back(0);
        const uint64_t data = b.size();
        im.at["data"] = data;
        for (size_t i = 0; i < tensors.size(); ++i) {
            b.resize(data + offsets[i], 0);
            im.at["data:" + tensors[i].name] = b.size();
            b.insert(b.end(), tensors[i].data.begin(), tensors[i].data.end());
        }
        im.at["end"] = b.size();
        return im;
    }
};

constexpr uint64_t kGgufD = 32, kGgufFf = 64, kGgufVocab = 8;

std::vector<uint8_t> weights(uint64_t n, uint32_t seed) { return test::f32_bytes(test::test_floats(n, seed)); }

// A valid, convertible one-layer llama: d 32, 2 heads, ff 64, vocab 8, separate LM head. The
// metadata the corruptions below read field by field comes last (general.alignment,
// general.name), so that cutting there leaves enough bytes for the header's plausibility check of
// the counts and the reader meets the cut field itself.
Gguf valid_matrix_gguf() {
    Gguf g;
    std::vector<uint8_t> tokens, scores, types;
    for (uint64_t i = 0; i < kGgufVocab; ++i) {
        auto s = strv(std::string(1, static_cast<char>('a' + i)));
        tokens.insert(tokens.end(), s.begin(), s.end());
        test::put<float>(scores, -static_cast<float>(i));
        test::put<int32_t>(types, 1);
    }
    g.kvs = {
        {"general.architecture", kString, strv("llama")},
        {"llama.embedding_length", kU32, u32v(kGgufD)},
        {"llama.block_count", kU32, u32v(1)},
        {"llama.feed_forward_length", kU32, u32v(kGgufFf)},
        {"llama.attention.head_count", kU32, u32v(2)},
        {"llama.attention.head_count_kv", kU32, u32v(2)},
        {"llama.attention.layer_norm_rms_epsilon", kF32, f32v(1e-5f)},
        {"llama.rope.freq_base", kF32, f32v(10000.0f)},
        {"tokenizer.ggml.model", kString, strv("llama")},
        {"tokenizer.ggml.tokens", kArray, arrayv(kString, kGgufVocab, tokens)},
        {"tokenizer.ggml.scores", kArray, arrayv(kF32, kGgufVocab, scores)},
        {"tokenizer.ggml.token_type", kArray, arrayv(kI32, kGgufVocab, types)},
        {"general.alignment", kU32, u32v(32)},
        {"general.name", kString, strv("matrix-fixture")},
    };
    uint32_t seed = 1;
    auto add = [&](const std::string& name, std::vector<uint64_t> ne) {
        uint64_t n = 1;
        for (uint64_t x : ne) n *= x;
        g.tensors.push_back({name, kGgmlF32, std::move(ne), weights(n, seed++), std::nullopt});
    };
    add("token_embd.weight", {kGgufD, kGgufVocab});
    add("output_norm.weight", {kGgufD});
    add("output.weight", {kGgufD, kGgufVocab});
    add("blk.0.attn_norm.weight", {kGgufD});
    add("blk.0.attn_q.weight", {kGgufD, kGgufD});
    add("blk.0.attn_k.weight", {kGgufD, kGgufD});
    add("blk.0.attn_v.weight", {kGgufD, kGgufD});
    add("blk.0.attn_output.weight", {kGgufD, kGgufD});
    add("blk.0.ffn_norm.weight", {kGgufD});
    add("blk.0.ffn_gate.weight", {kGgufD, kGgufFf});
    add("blk.0.ffn_up.weight", {kGgufD, kGgufFf});
    add("blk.0.ffn_down.weight", {kGgufFf, kGgufD});
    return g;
}

template <class T>
void poke_gguf(std::vector<uint8_t>& b, uint64_t at, T value) {
    ASSERT_LE(at + sizeof(T), b.size());
    std::memcpy(b.data() + at, &value, sizeof(T));
}
std::vector<uint8_t> cut(Image im, uint64_t n) {
    im.bytes.resize(n);
    return im.bytes;
}
std::string off(uint64_t v) { return std::to_string(v); }

struct GgufCase {
    std::string name;
    std::function<std::vector<uint8_t>()> make;
    Expectation want;
};

Expectation gguf_open_error(std::string expected, ErrorKind kind = ErrorKind::InvalidInput) {
    return {std::move(expected), kind, Stage::Open};
}
Expectation gguf_plan_error(std::string expected) { return {std::move(expected), ErrorKind::InvalidInput, Stage::Plan}; }

// A case built by editing the valid model, then serialising it.
GgufCase edit(std::string name, std::function<void(Gguf&)> change, Expectation want) {
    return {std::move(name), [change] { Gguf g = valid_matrix_gguf(); change(g); return g.image().bytes; }, std::move(want)};
}
// A case built by changing bytes of the valid file (the marks say where).
GgufCase patch(std::string name, std::function<void(std::vector<uint8_t>&, const Image&)> change, Expectation want) {
    return {std::move(name), [change] { Image im = valid_matrix_gguf().image(); change(im.bytes, im); return im.bytes; }, std::move(want)};
}

std::vector<GgufCase> gguf_cases() {
    const Image v = valid_matrix_gguf().image();
    const uint64_t size = v.bytes.size();
    const uint64_t name_kv = v["kv:general.name"], align_kv = v["kv:general.alignment"];
    const std::string embd = "ti:token_embd.weight";
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    std::vector<GgufCase> c;
    auto truncation = [&](std::string name, uint64_t n, Expectation want) {
        c.push_back({"cut at " + off(n) + ": " + name, [v, n] { return cut(v, n); }, std::move(want)});
    };

    // --- truncation at every structural boundary ---
    truncation("empty file", 0, gguf_open_error("header magic at offset 0: file is 0 bytes, too short for a GGUF header"));
    truncation("inside the magic", 2, gguf_open_error("header magic at offset 0: file is 2 bytes"));
    truncation("after the magic", 4, gguf_open_error("header version at offset 4: truncated header"));
    truncation("after the version", 8, gguf_open_error("header tensor_count at offset 8: truncated header"));
    truncation("after tensor_count", 16, gguf_open_error("header metadata_kv_count at offset 16: truncated header"));
    truncation("after the header", 24, gguf_open_error("header metadata_kv_count at offset 16: count 14 cannot fit in the 0 bytes that follow"));
    truncation("inside the first key", v["kv:general.architecture:key"] + 3,
               gguf_open_error("header metadata_kv_count at offset 16: count 14 cannot fit in the 11 bytes that follow"));
    truncation("inside a key length", name_kv + 4,
               gguf_open_error("metadata entry 13 key at offset " + off(name_kv) + ": truncated: the 8-byte key length needs 8 bytes, 4 remain"));
    truncation("after a key length", name_kv + 8,
               gguf_open_error("metadata entry 13 key at offset " + off(name_kv) + ": key length 12 runs past the end of the file"));
    truncation("after a key", v["kv:general.name:type"],
               gguf_open_error("metadata 'general.name' type at offset " + off(v["kv:general.name:type"]) + ": truncated"));
    truncation("after a string type", v["kv:general.name:value"],
               gguf_open_error("metadata 'general.name' string length at offset " + off(v["kv:general.name:value"]) +
                          ": truncated: the 8-byte string length needs 8 bytes, 0 remain"));
    truncation("inside a string", v["kv:general.name:value"] + 10,
               gguf_open_error("metadata 'general.name' string length at offset " + off(v["kv:general.name:value"]) +
                          ": length 14 runs past the end of the file"));
    truncation("inside a u32 value", v["kv:general.alignment:value"] + 2,
               gguf_open_error("metadata 'general.alignment' value at offset " + off(v["kv:general.alignment:value"]) + ": truncated"));
    truncation("inside an array header", v["kv:tokenizer.ggml.token_type:value"] + 6,
               gguf_open_error("metadata 'tokenizer.ggml.token_type' array header at offset " +
                          off(v["kv:tokenizer.ggml.token_type:value"]) + ": truncated"));
    truncation("inside array elements", v["kv:tokenizer.ggml.token_type:value"] + 12 + 10,
               gguf_open_error("metadata 'tokenizer.ggml.token_type' array length at offset " +
                          off(v["kv:tokenizer.ggml.token_type:value"] + 4) + ": 8 elements of 4 bytes run past the end of the file"));
    truncation("inside a tensor name length", v[embd] + 5,
               gguf_open_error("tensor info 0 name length at offset " + off(v[embd]) + ": truncated: the 8-byte name length needs 8 bytes, 5 remain"));
    truncation("inside a tensor name", v[embd + ":name"] + 4,
               gguf_open_error("tensor info 0 name length at offset " + off(v[embd]) + ": length 17 runs past the end of the file"));
    truncation("before n_dims", v[embd + ":n_dims"],
               gguf_open_error("tensor 'token_embd.weight' n_dims at offset " + off(v[embd + ":n_dims"]) + ": truncated"));
    truncation("before ne[0]", v[embd + ":ne0"],
               gguf_open_error("tensor 'token_embd.weight' ne[0] at offset " + off(v[embd + ":ne0"]) + ": truncated"));
    truncation("inside ne[1]", v[embd + ":ne1"] + 3,
               gguf_open_error("tensor 'token_embd.weight' ne[1] at offset " + off(v[embd + ":ne1"]) + ": truncated"));
    truncation("before a tensor type", v[embd + ":type"],
               gguf_open_error("tensor 'token_embd.weight' type at offset " + off(v[embd + ":type"]) + ": truncated"));
    truncation("inside a tensor offset", v[embd + ":offset"] + 7,
               gguf_open_error("tensor 'token_embd.weight' offset at offset " + off(v[embd + ":offset"]) + ": truncated"));
    truncation("after the tensor infos", v["infos_end"],
               gguf_open_error("tensor data section at offset " + off(v["infos_end"]) + ": aligned data start " + off(v["data"]) +
                          " is past the end of the file (" + off(v["infos_end"]) + " bytes)"));
    truncation("inside the alignment padding", v["infos_end"] + 1,
               gguf_open_error("is past the end of the file (" + off(v["infos_end"] + 1) + " bytes)"));
    for (const Tensor& t : valid_matrix_gguf().tensors) {
        // Cut 4 bytes into each tensor's data: it, and only it, runs past the end (the reader
        // checks in file order, so every earlier tensor is whole).
        const uint64_t at = v["data:" + t.name];
        truncation("inside " + t.name, at + 4,
                   gguf_open_error("tensor '" + t.name + "' offset at offset " + off(v["ti:" + t.name]) + ": data [" + off(v["data"]) +
                              " + " + off(at - v["data"]) + ", +" + off(t.data.size()) + " bytes) runs past the end of the file (" +
                              off(at + 4) + " bytes)"));
    }

    // --- header ---
    c.push_back(patch("bad magic", [](auto& b, auto&) { b[3] = 'X'; }, gguf_open_error("not a GGUF file (magic bytes do not read \"GGUF\")")));
    c.push_back(patch("version 1", [](auto& b, auto&) { poke_gguf<uint32_t>(b, 4, 1); },
                      gguf_open_error("header version at offset 4: GGUF v1 is not supported", ErrorKind::Unsupported)));
    c.push_back(patch("version 4", [](auto& b, auto&) { poke_gguf<uint32_t>(b, 4, 4); },
                      gguf_open_error("unsupported GGUF version 4; supported: 2, 3", ErrorKind::Unsupported)));
    c.push_back(patch("big-endian version", [](auto& b, auto&) { poke_gguf<uint32_t>(b, 4, 0x03000000u); },
                      gguf_open_error("unsupported GGUF version 50331648 (a big-endian GGUF?)", ErrorKind::Unsupported)));

    // --- huge counts and lengths ---
    c.push_back(patch("tensor_count 2^63", [](auto& b, auto&) { poke_gguf<uint64_t>(b, 8, 1ull << 63); },
                      gguf_open_error("header tensor_count at offset 8: count 9223372036854775808 cannot fit")));
    c.push_back(patch("kv_count 2^40", [](auto& b, auto&) { poke_gguf<uint64_t>(b, 16, 1ull << 40); },
                      gguf_open_error("header metadata_kv_count at offset 16: count 1099511627776 cannot fit")));
    c.push_back(patch("key length 2^64-1", [kMax](auto& b, auto&) { poke_gguf<uint64_t>(b, 24, kMax); },
                      gguf_open_error("metadata entry 0 key at offset 24: key length 18446744073709551615 runs past the end of the file")));
    c.push_back(patch("string length 2^40", [](auto& b, auto& im) { poke_gguf<uint64_t>(b, im["kv:general.name:value"], 1ull << 40); },
                      gguf_open_error("metadata 'general.name' string length at offset " + off(v["kv:general.name:value"]) +
                                 ": length 1099511627776 runs past the end of the file")));
    c.push_back(patch("string array length 2^61", [](auto& b, auto& im) {
                          poke_gguf<uint64_t>(b, im["kv:tokenizer.ggml.tokens:value"] + 4, 1ull << 61);
                      },
                      gguf_open_error("metadata 'tokenizer.ggml.tokens' array length at offset " + off(v["kv:tokenizer.ggml.tokens:value"] + 4) +
                                 ": 2305843009213693952 strings cannot fit in the")));
    c.push_back(patch("string element length 2^40", [](auto& b, auto& im) {
                          poke_gguf<uint64_t>(b, im["kv:tokenizer.ggml.tokens:value"] + 12 + 3 * 9, 1ull << 40);
                      },
                      gguf_open_error("metadata 'tokenizer.ggml.tokens' element 3 string length at offset " +
                                 off(v["kv:tokenizer.ggml.tokens:value"] + 12 + 3 * 9) + ": length 1099511627776 runs past")));
    c.push_back(patch("i32 array length overflowing n * 4", [](auto& b, auto& im) {
                          poke_gguf<uint64_t>(b, im["kv:tokenizer.ggml.token_type:value"] + 4, 1ull << 62);
                      },
                      gguf_open_error("metadata 'tokenizer.ggml.token_type' array length at offset " +
                                 off(v["kv:tokenizer.ggml.token_type:value"] + 4) + ": 4611686018427387904 elements of 4 bytes")));
    c.push_back(patch("tensor name length 2^63", [embd](auto& b, auto& im) { poke_gguf<uint64_t>(b, im[embd], 1ull << 63); },
                      gguf_open_error("tensor info 0 name length at offset " + off(v[embd]) + ": length 9223372036854775808 runs past")));
    c.push_back(patch("n_dims 2^32-1", [embd](auto& b, auto& im) { poke_gguf<uint32_t>(b, im[embd + ":n_dims"], 0xFFFFFFFFu); },
                      gguf_open_error("tensor 'token_embd.weight' n_dims at offset " + off(v[embd + ":n_dims"]) +
                                 ": 4294967295 dimensions (must be 1..4)")));
    c.push_back(patch("n_dims 0", [embd](auto& b, auto& im) { poke_gguf<uint32_t>(b, im[embd + ":n_dims"], 0); },
                      gguf_open_error("tensor 'token_embd.weight' n_dims at offset " + off(v[embd + ":n_dims"]) + ": 0 dimensions")));
    c.push_back(edit("a dimension of 0", [](Gguf& g) { g.tensor("output.weight").ne[1] = 0; },
                     gguf_open_error("tensor 'output.weight' ne[1] at offset")));
    c.push_back(patch("dims whose element count overflows", [embd](auto& b, auto& im) {
                          poke_gguf<uint64_t>(b, im[embd + ":ne0"], 1ull << 32);
                          poke_gguf<uint64_t>(b, im[embd + ":ne1"], 1ull << 33);
                      },
                      gguf_open_error("tensor 'token_embd.weight' shape at offset " + off(v[embd]) + ": element count overflows 64 bits")));
    c.push_back(patch("dims whose byte size overflows", [embd](auto& b, auto& im) {
                          poke_gguf<uint64_t>(b, im[embd + ":ne0"], 1ull << 32);
                          poke_gguf<uint64_t>(b, im[embd + ":ne1"], 1ull << 31);
                      },
                      gguf_open_error("tensor 'token_embd.weight' shape at offset " + off(v[embd]) + ": byte size overflows 64 bits")));
    c.push_back(patch("a huge dimension", [](auto& b, auto& im) { poke_gguf<uint64_t>(b, im["ti:output.weight:ne1"], 1ull << 40); },
                      gguf_open_error("tensor 'output.weight' offset at offset " + off(v["ti:output.weight"]) + ": data [" + off(v["data"]) + " + " +
                                 off(v["data:output.weight"] - v["data"]) + ", +140737488355328 bytes) runs past")));

    // --- offsets: past the end, misaligned, overlapping ---
    c.push_back(edit("offset past the end", [](Gguf& g) { g.tensor("blk.0.ffn_down.weight").offset = 1ull << 40; },
                     gguf_open_error("tensor 'blk.0.ffn_down.weight' offset at offset " + off(v["ti:blk.0.ffn_down.weight"]) + ": data [" +
                                off(v["data"]) + " + 1099511627776, +8192 bytes) runs past the end of the file (" + off(size) + " bytes)")));
    c.push_back(edit("offset overflowing with the size", [](Gguf& g) { g.tensor("blk.0.ffn_up.weight").offset = ~0ull - 31; },
                     gguf_open_error("tensor 'blk.0.ffn_up.weight' offset at offset " + off(v["ti:blk.0.ffn_up.weight"]) + ": data [" +
                                off(v["data"]) + " + 18446744073709551584, +8192 bytes)")));
    c.push_back(edit("misaligned offset", [v](Gguf& g) {
                         g.tensor("output_norm.weight").offset = v["data:output_norm.weight"] - v["data"] + 4;
                     },
                     gguf_open_error("tensor 'output_norm.weight' offset at offset " + off(v["ti:output_norm.weight:offset"]) + ": offset " +
                                off(v["data:output_norm.weight"] - v["data"] + 4) + " is not a multiple of general.alignment 32")));
    c.push_back(edit("two tensors at one offset", [v](Gguf& g) {
                         g.tensor("blk.0.attn_k.weight").offset = v["data:blk.0.attn_q.weight"] - v["data"];
                     },
                     gguf_open_error("tensor 'blk.0.attn_k.weight' offset at offset " + off(v["ti:blk.0.attn_k.weight"]) +
                                ": data [" + off(v["data:blk.0.attn_q.weight"] - v["data"]) + ", " +
                                off(v["data:blk.0.attn_k.weight"] - v["data"]) + ") overlaps tensor 'blk.0.attn_q.weight'")));
    c.push_back(edit("a tensor starting inside another", [v](Gguf& g) {
                         g.tensor("blk.0.ffn_norm.weight").offset = v["data:blk.0.attn_output.weight"] - v["data"] + 64;
                     },
                     gguf_open_error("tensor 'blk.0.ffn_norm.weight' offset at offset " + off(v["ti:blk.0.ffn_norm.weight"]) + ": data [" +
                                off(v["data:blk.0.attn_output.weight"] - v["data"] + 64) + ", " +
                                off(v["data:blk.0.attn_output.weight"] - v["data"] + 64 + 128) + ") overlaps tensor 'blk.0.attn_output.weight'")));

    // --- types ---
    c.push_back(edit("unknown ggml type", [](Gguf& g) { g.tensor("blk.0.attn_v.weight").type = 99; },
                     gguf_open_error("tensor 'blk.0.attn_v.weight' has type type 99, which is not supported", ErrorKind::Unsupported)));
    c.push_back(edit("removed ggml type code 4", [](Gguf& g) { g.tensor("blk.0.attn_q.weight").type = 4; },
                     gguf_open_error("tensor 'blk.0.attn_q.weight' has type type 4, which is not supported", ErrorKind::Unsupported)));
    c.push_back(edit("a ggml type this build cannot read", [](Gguf& g) { g.tensor("blk.0.ffn_gate.weight").type = 16; },
                     gguf_open_error("tensor 'blk.0.ffn_gate.weight' has type IQ2_XXS", ErrorKind::Unsupported)));
    c.push_back(edit("row not a whole number of blocks", [](Gguf& g) { g.tensor("token_embd.weight").type = kGgmlQ4_K; },
                     gguf_open_error("tensor 'token_embd.weight' shape at offset " + off(v[embd]) +
                                ": type Q4_K: innermost dimension 32 is not a multiple of the 256-weight Q4_K block")));
    c.push_back(patch("unknown metadata value type", [](auto& b, auto& im) { poke_gguf<uint32_t>(b, im["kv:general.name:type"], 99); },
                      gguf_open_error("metadata 'general.name' type at offset " + off(v["kv:general.name:type"]) + ": unknown value type 99")));
    c.push_back(patch("unknown array element type", [](auto& b, auto& im) {
                          poke_gguf<uint32_t>(b, im["kv:tokenizer.ggml.token_type:value"], 77);
                      },
                      gguf_open_error("metadata 'tokenizer.ggml.token_type' array element type at offset " +
                                 off(v["kv:tokenizer.ggml.token_type:value"]) + ": unknown value type 77")));
    c.push_back(edit("arrays nested 9 deep", [](Gguf& g) {
                         std::vector<uint8_t> nested;
                         for (int i = 0; i < 9; ++i) { test::put<uint32_t>(nested, kArray); test::put<uint64_t>(nested, 1); }
                         test::put<uint32_t>(nested, kU32);
                         test::put<uint64_t>(nested, 0);
                         g.kvs.insert(g.kvs.begin() + 1, Kv{"x.nested", kArray, nested});
                     },
                     gguf_open_error("metadata 'x.nested' at offset")));
    c.push_back(edit("u64 value past int64", [](Gguf& g) {
                         Kv& k = g.kv("llama.embedding_length");
                         k.type = kU64;
                         k.value.clear();
                         test::put<uint64_t>(k.value, 1ull << 63);
                     },
                     gguf_open_error("metadata 'llama.embedding_length' value at offset " + off(v["kv:llama.embedding_length:value"]) +
                                ": u64 value 9223372036854775808 does not fit int64")));

    // --- metadata of the wrong type or out of range ---
    c.push_back(edit("embedding_length a string", [](Gguf& g) { g.kv("llama.embedding_length") = {"llama.embedding_length", kString, strv("32")}; },
                     gguf_open_error("metadata key 'llama.embedding_length' (entry at offset " + off(v["kv:llama.embedding_length"]) +
                                ") is not an integer")));
    c.push_back(edit("block_count a float", [](Gguf& g) { g.kv("llama.block_count") = {"llama.block_count", kF32, f32v(1.0f)}; },
                     gguf_open_error("metadata key 'llama.block_count' (entry at offset " + off(v["kv:llama.block_count"]) + ") is not an integer")));
    c.push_back(edit("head_count negative", [](Gguf& g) {
                         Kv& k = g.kv("llama.attention.head_count");
                         k.type = kI32;
                         k.value = u32v(0xFFFFFFFFu);
                     },
                     gguf_open_error("metadata key 'llama.attention.head_count' (entry at offset " + off(v["kv:llama.attention.head_count"]) +
                                ") value -1 is out of range")));
    c.push_back(edit("feed_forward_length past u32", [](Gguf& g) {
                         Kv& k = g.kv("llama.feed_forward_length");
                         k.type = kI64;
                         k.value.clear();
                         test::put<int64_t>(k.value, int64_t{1} << 40);
                     },
                     gguf_open_error("metadata key 'llama.feed_forward_length' (entry at offset " + off(v["kv:llama.feed_forward_length"]) +
                                ") value 1099511627776 is out of range")));
    c.push_back(edit("head_count 0", [](Gguf& g) { g.kv("llama.attention.head_count").value = u32v(0); },
                     gguf_open_error("embedding_length, block_count and attention.head_count must be non-zero")));
    c.push_back(edit("head_count_kv not dividing head_count", [](Gguf& g) { g.kv("llama.attention.head_count_kv").value = u32v(3); },
                     gguf_open_error("attention.head_count 2 is not a multiple of attention.head_count_kv 3")));
    c.push_back(edit("head_count_kv an empty array", [](Gguf& g) { g.kv("llama.attention.head_count_kv") = {"llama.attention.head_count_kv", kArray, arrayv(kI32, 0, {})}; },
                     gguf_open_error("metadata key 'llama.attention.head_count_kv' (entry at offset " + off(v["kv:llama.attention.head_count_kv"]) +
                                ") is an empty array")));
    c.push_back(edit("head_count_kv differing between layers", [](Gguf& g) {
                         std::vector<uint8_t> e;
                         test::put<int32_t>(e, 2);
                         test::put<int32_t>(e, 1);
                         g.kv("llama.attention.head_count_kv") = {"llama.attention.head_count_kv", kArray, arrayv(kI32, 2, e)};
                     },
                     gguf_open_error("metadata key 'llama.attention.head_count_kv' (entry at offset " + off(v["kv:llama.attention.head_count_kv"]) +
                                ") differs between layers", ErrorKind::Unsupported)));
    c.push_back(edit("key_length 0", [](Gguf& g) { g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.attention.key_length", kU32, u32v(0)}); },
                     gguf_open_error("head dimension is 0")));
    c.push_back(edit("rms epsilon a string", [](Gguf& g) { g.kv("llama.attention.layer_norm_rms_epsilon") = {"llama.attention.layer_norm_rms_epsilon", kString, strv("1e-5")}; },
                     gguf_open_error("metadata key 'llama.attention.layer_norm_rms_epsilon' (entry at offset " +
                                off(v["kv:llama.attention.layer_norm_rms_epsilon"]) + ") is not a number")));
    c.push_back(edit("rope base an array", [](Gguf& g) { g.kv("llama.rope.freq_base") = {"llama.rope.freq_base", kArray, arrayv(kF32, 1, f32v(1e4f))}; },
                     gguf_open_error("metadata key 'llama.rope.freq_base' (entry at offset " + off(v["kv:llama.rope.freq_base"]) + ") is not a number")));
    c.push_back(edit("rope scaling longrope", [](Gguf& g) { g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.rope.scaling.type", kString, strv("longrope")}); },
                     gguf_open_error("RoPE scaling 'longrope' (llama.rope.scaling.type) is not supported", ErrorKind::Unsupported)));
    // YaRN (gpt-oss): a factor below 1 shrinks no context; the variants llama.cpp special-cases are refused.
    c.push_back(edit("yarn factor below 1", [](Gguf& g) {
                         g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.rope.scaling.type", kString, strv("yarn")});
                         g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.rope.scaling.factor", kF32, f32v(0.5f)});
                     },
                     gguf_open_error("is 0.500000, YaRN needs a finite factor >= 1")));
    c.push_back(edit("yarn beta_fast negative", [](Gguf& g) {
                         g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.rope.scaling.type", kString, strv("yarn")});
                         g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.rope.scaling.yarn_beta_fast", kF32, f32v(-32.0f)});
                         g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.rope.scaling.original_context_length", kU32, u32v(32)});
                     },
                     gguf_open_error("'llama.rope.scaling.yarn_beta_fast' (entry at offset")));
    c.push_back(edit("yarn log multiplier (DeepSeek)", [](Gguf& g) {
                         g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.rope.scaling.type", kString, strv("yarn")});
                         g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.rope.scaling.yarn_log_multiplier", kF32, f32v(0.1f)});
                         g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.rope.scaling.original_context_length", kU32, u32v(32)});
                     },
                     gguf_open_error("only plain YaRN (0.000000) is supported", ErrorKind::Unsupported)));
    c.push_back(edit("expert_used_count above expert_count", [](Gguf& g) {
                         g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.expert_count", kU32, u32v(2)});
                         g.kvs.insert(g.kvs.begin() + 6, Kv{"llama.expert_used_count", kU32, u32v(3)});
                     },
                     gguf_open_error("llama.expert_used_count 3 is not in 1..2")));
    c.push_back(edit("general.alignment 0", [](Gguf& g) { g.kv("general.alignment").value = u32v(0); },
                     gguf_open_error("metadata 'general.alignment' at offset " + off(align_kv) + ": alignment 0 is not a power of two in [1, 1 MiB]")));
    c.push_back(edit("general.alignment 48", [](Gguf& g) { g.kv("general.alignment").value = u32v(48); },
                     gguf_open_error("alignment 48 is not a power of two")));
    c.push_back(edit("general.alignment a string", [](Gguf& g) { g.kv("general.alignment") = {"general.alignment", kString, strv("32")}; },
                     gguf_open_error("metadata 'general.alignment' at offset " + off(align_kv) + ": is not an integer")));
    // The payloads are 128-byte multiples, so only an alignment above 128 puts an offset off it.
    c.push_back(edit("general.alignment 256 with 32-aligned offsets", [](Gguf& g) { g.kv("general.alignment").value = u32v(256); },
                     gguf_open_error("offset 1152 is not a multiple of general.alignment 256")));
    c.push_back(edit("general.architecture a number", [](Gguf& g) { g.kv("general.architecture") = {"general.architecture", kU32, u32v(1)}; },
                     gguf_open_error("metadata key 'general.architecture' (entry at offset 24) is not a string")));

    // --- duplicates and missing pieces ---
    c.push_back(edit("duplicate key", [](Gguf& g) { g.kvs.push_back({"llama.block_count", kU32, u32v(2)}); },
                     gguf_open_error("metadata entry 14 key at offset " + off(v["ti:token_embd.weight"]) +
                                ": 'llama.block_count' appears twice")));
    c.push_back(edit("duplicate tensor name", [](Gguf& g) { g.tensor("blk.0.attn_k.weight").name = "blk.0.attn_v.weight"; },
                     gguf_open_error("tensor 'blk.0.attn_v.weight' appears twice (tensor info at offset " + off(v["ti:blk.0.attn_v.weight"]) + ")")));
    c.push_back(edit("no tensors", [](Gguf& g) { g.tensors.clear(); }, gguf_open_error("has no tensors (vocab-only GGUF)")));
    c.push_back(edit("architecture missing", [](Gguf& g) { g.drop_kv("general.architecture"); },
                     gguf_open_error("metadata key 'general.architecture' is missing")));
    c.push_back(edit("architecture unknown", [](Gguf& g) { g.kv("general.architecture").value = strv("gpt2"); },
                     gguf_open_error("unsupported architecture 'gpt2'", ErrorKind::Unsupported)));
    c.push_back(edit("embedding_length missing", [](Gguf& g) { g.drop_kv("llama.embedding_length"); },
                     gguf_open_error("metadata key 'llama.embedding_length' is missing")));
    c.push_back(edit("feed_forward_length missing", [](Gguf& g) { g.drop_kv("llama.feed_forward_length"); },
                     gguf_open_error("metadata key 'llama.feed_forward_length' is missing")));
    c.push_back(edit("token embedding missing", [](Gguf& g) { g.drop_tensor("token_embd.weight"); },
                     gguf_open_error("tensor 'token_embd.weight' is missing or not 2-D")));
    c.push_back(edit("embedding_length disagreeing with the embedding", [](Gguf& g) { g.kv("llama.embedding_length").value = u32v(64); },
                     gguf_open_error("tensor 'token_embd.weight' has 32 columns but embedding_length is 64")));
    c.push_back(edit("a layer tensor missing", [](Gguf& g) { g.drop_tensor("blk.0.ffn_down.weight"); },
                     gguf_plan_error("tensor 'blk.0.ffn_down.weight' is missing (expected shape [32 x 64], d_model x d_ff)")));
    c.push_back(edit("output norm missing", [](Gguf& g) { g.drop_tensor("output_norm.weight"); },
                     gguf_plan_error("tensor 'output_norm.weight' is missing")));
    c.push_back(edit("block_count larger than the layers stored", [](Gguf& g) { g.kv("llama.block_count").value = u32v(2); },
                     gguf_plan_error("tensor 'blk.1.attn_norm.weight' is missing")));
    c.push_back(edit("a matrix of the wrong shape", [](Gguf& g) {
                         Tensor& t = g.tensor("blk.0.attn_q.weight");
                         t.ne = {kGgufD, kGgufD / 2};
                         t.data.resize(kGgufD * kGgufD / 2 * 4);
                     },
                     gguf_plan_error("tensor 'blk.0.attn_q.weight': shape [16 x 32], expected [32 x 32]")));
    c.push_back(edit("more tokens than embedding rows", [](Gguf& g) {
                         std::vector<uint8_t> tokens;
                         for (int i = 0; i < 9; ++i) { auto s = strv(std::string(1, static_cast<char>('a' + i))); tokens.insert(tokens.end(), s.begin(), s.end()); }
                         g.kv("tokenizer.ggml.tokens").value = arrayv(kString, 9, tokens);
                     },
                     gguf_plan_error("tensor 'token_embd.weight': shape [8 x 32], expected [9 x 32] (vocab_size x d_model)")));
    return c;
}

TEST(GgufCorruptMatrix, ValidFixtureConverts) {
    const Image im = valid_matrix_gguf().image();
    ASSERT_NE(im["infos_end"] % 32, 0u) << "the fixture needs alignment padding to cut into";
    const auto dir = test::temp_dir("valid");
    test::write_bytes(dir / "m.gguf", im.bytes);
    const auto out = test::temp_dir("valid-out");
    const test::ConvertOutcome o = test::convert_into((dir / "m.gguf").string(), "", out);
    EXPECT_TRUE(o.converted) << o.error;
    EXPECT_EQ(o.left_in_output, std::vector<std::string>{"out.cflow"});
}

TEST(GgufCorruptMatrix, EveryCaseIsRefusedWithItsOwnMessageAndWritesNothing) {
    const std::vector<GgufCase> table = gguf_cases();
    ASSERT_GE(table.size(), 40u);
    RecordProperty("gguf_cases", static_cast<int>(table.size()));
    test::expect_distinct_expectations(table);
    for (size_t i = 0; i < table.size(); ++i) {
        const GgufCase& c = table[i];
        SCOPED_TRACE(c.name);
        const std::string file = "case-" + std::to_string(i) + ".gguf";
        const auto dir = test::temp_dir("case-" + std::to_string(i));
        test::write_bytes(dir / file, c.make());
        const auto out = test::temp_dir("out-" + std::to_string(i));
        test::expect_refused(test::convert_into((dir / file).string(), "", out), c.want, file);
        // read_gguf_model is the reader the dispatch picked: it says the same for reader gguf_cases.
        if (c.want.stage == Stage::Open) {
            auto direct = read_gguf_model((dir / file).string());
            ASSERT_FALSE(direct.ok());
            EXPECT_NE(direct.error().find(c.want.expected), std::string::npos) << direct.error();
        }
    }
}

} // namespace
} // namespace cflow
