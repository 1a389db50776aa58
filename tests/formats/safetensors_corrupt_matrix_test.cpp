// Corrupt-file matrix for safetensors and Hugging Face folders (issue 16): a valid one-layer
// llama folder (config.json, model.safetensors, tokenizer.json; and the same weights in two
// shards with model.safetensors.index.json) gets a damaged header length, header JSON, tensor
// entry, buffer layout, config field or shard index. Each case must be refused where the table
// says, with its error kind and its own message naming the damaged file, and the conversion
// must leave its output folder empty.
#include <cstring>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "corrupt_matrix.h"
#include "source_writers.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::Expectation;
using test::Stage;

constexpr uint64_t kStD = 32, kStFf = 64, kStVocab = 8;

struct StTensorSpec {
    std::string name;
    std::vector<uint64_t> shape;
};

// HF names of the one-layer llama, in the order their bytes lie in the file.
std::vector<StTensorSpec> st_llama_tensors() {
    const std::string l = "model.layers.0.";
    return {{"model.embed_tokens.weight", {kStVocab, kStD}},     {"model.norm.weight", {kStD}},
            {"lm_head.weight", {kStVocab, kStD}},                {l + "input_layernorm.weight", {kStD}},
            {l + "self_attn.q_proj.weight", {kStD, kStD}},       {l + "self_attn.k_proj.weight", {kStD, kStD}},
            {l + "self_attn.v_proj.weight", {kStD, kStD}},       {l + "self_attn.o_proj.weight", {kStD, kStD}},
            {l + "post_attention_layernorm.weight", {kStD}},   {l + "mlp.gate_proj.weight", {kStFf, kStD}},
            {l + "mlp.up_proj.weight", {kStFf, kStD}},           {l + "mlp.down_proj.weight", {kStD, kStFf}}};
}

// A safetensors file as an editable header plus its data buffer.
struct StFile {
    json header = json::object();
    std::vector<uint8_t> data;

    std::vector<uint8_t> bytes() const {
        std::string text = header.dump();
        while (text.size() % 8 != 0) text.push_back(' ');
        return with_header_text(text);
    }
    std::vector<uint8_t> with_header_text(const std::string& text) const {
        std::vector<uint8_t> out;
        test::put<uint64_t>(out, text.size());
        out.insert(out.end(), text.begin(), text.end());
        out.insert(out.end(), data.begin(), data.end());
        return out;
    }
    // Absolute offset of the data buffer in bytes().
    uint64_t data_offset() const {
        const std::vector<uint8_t> b = bytes();
        return b.size() - data.size();
    }
};

StFile st_of(const std::vector<StTensorSpec>& tensors, uint32_t seed = 1) {
    StFile f;
    f.header["__metadata__"] = {{"format", "pt"}};
    for (const StTensorSpec& t : tensors) {
        uint64_t st_decimal = 1;
        for (uint64_t x : t.shape) st_decimal *= x;
        const auto bytes = test::f32_bytes(test::test_floats(st_decimal, seed++));
        f.header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {f.data.size(), f.data.size() + bytes.size()}}};
        f.data.insert(f.data.end(), bytes.begin(), bytes.end());
    }
    return f;
}

json valid_config() {
    return {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", kStD}, {"num_hidden_layers", 1},
            {"num_attention_heads", 2}, {"num_key_value_heads", 2}, {"intermediate_size", kStFf},
            {"vocab_size", kStVocab}, {"rms_norm_eps", 1e-5}, {"tie_word_embeddings", false}};
}

std::string tokenizer_json() {
    json vocab = json::object();
    for (uint64_t i = 0; i < kStVocab; ++i) vocab[std::string(1, static_cast<char>('a' + i))] = i;
    return json{{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}, {"added_tokens", json::array()}}.dump();
}

// The folder every case starts from; what a case changes, it changes in here.
struct Folder {
    json config = valid_config();
    StFile weights = st_of(st_llama_tensors());
    bool sharded = false;  // two shards + index instead of model.safetensors
    StFile shard1, shard2;
    json index;

    static Folder single() { return Folder{}; }
    static Folder two_shards() {
        Folder f;
        f.sharded = true;
        const auto all = st_llama_tensors();
        f.shard1 = st_of({all.begin(), all.begin() + 6}, 1);
        f.shard2 = st_of({all.begin() + 6, all.end()}, 7);
        json map = json::object();
        for (size_t i = 0; i < all.size(); ++i)
            map[all[i].name] = i < 6 ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
        f.index = {{"metadata", {{"total_size", 0}}}, {"weight_map", map}};
        return f;
    }
    void write(const fs::path& dir) const {
        test::write_text(dir / "config.json", config.dump());
        test::write_text(dir / "tokenizer.json", tokenizer_json());
        if (!sharded) {
            test::write_bytes(dir / "model.safetensors", weights.bytes());
            return;
        }
        test::write_bytes(dir / "model-00001-of-00002.safetensors", shard1.bytes());
        test::write_bytes(dir / "model-00002-of-00002.safetensors", shard2.bytes());
        test::write_text(dir / "model.safetensors.index.json", index.dump());
    }
};

struct StCase {
    std::string name;
    // Writes the corrupt source into the (empty) folder; returns what to open and the file the
    // message must name.
    std::function<std::pair<fs::path, std::string>(const fs::path& dir)> make;
    Expectation want;
};

Expectation st_open_error(std::string expected, ErrorKind kind = ErrorKind::InvalidInput) {
    return {std::move(expected), kind, Stage::Open};
}
Expectation st_plan_error(std::string expected) { return {std::move(expected), ErrorKind::InvalidInput, Stage::Plan}; }

// model.safetensors replaced by `bytes`, opened as the file (its folder supplies config.json).
StCase file_case(std::string name, std::function<std::vector<uint8_t>()> bytes, Expectation want) {
    return {std::move(name),
            [bytes](const fs::path& dir) {
                Folder::single().write(dir);
                test::write_bytes(dir / "model.safetensors", bytes());
                return std::pair{dir / "model.safetensors", std::string("model.safetensors")};
            },
            std::move(want)};
}
// The header of model.safetensors edited as JSON.
StCase header_case(std::string name, std::function<void(StFile&)> change, Expectation want) {
    return file_case(std::move(name), [change] { StFile f = st_of(st_llama_tensors()); change(f); return f.bytes(); }, std::move(want));
}
// The folder edited (config, tokenizer, weights), opened as the folder.
StCase folder_case(std::string name, std::function<void(Folder&)> change, Expectation want, std::string names = "",
                 bool sharded = false, std::function<void(const fs::path&)> after = {}) {
    return {std::move(name),
            [change, names, sharded, after](const fs::path& dir) {
                Folder f = sharded ? Folder::two_shards() : Folder::single();
                change(f);
                f.write(dir);
                if (after) after(dir);
                return std::pair{dir, names.empty() ? dir.filename().string() : names};
            },
            std::move(want)};
}

template <class T>
void poke_st(std::vector<uint8_t>& b, uint64_t at, T value) {
    std::memcpy(b.data() + at, &value, sizeof(T));
}
std::string st_decimal(uint64_t v) { return std::to_string(v); }

std::vector<StCase> safetensors_cases() {
    const StFile v = st_of(st_llama_tensors());
    const std::vector<uint8_t> valid = v.bytes();
    const uint64_t size = valid.size(), data_at = v.data_offset(), data_bytes = v.data.size();
    const std::string norm = "model.norm.weight", q = "model.layers.0.self_attn.q_proj.weight";
    std::vector<StCase> c;

    // --- the 8-byte header length ---
    c.push_back(file_case("empty file", [] { return std::vector<uint8_t>{}; },
                          st_open_error("header length at offset 0: file is 0 bytes, too short for a safetensors header")));
    c.push_back(file_case("5-byte file", [] { return std::vector<uint8_t>{1, 0, 0, 0, 0}; }, st_open_error("file is 5 bytes")));
    c.push_back(file_case("header length 0", [valid] { auto b = valid; poke_st<uint64_t>(b, 0, 0); return b; },
                          st_open_error("header length at offset 0: is 0, too short for the JSON header")));
    c.push_back(file_case("header length 2^40", [valid] { auto b = valid; poke_st<uint64_t>(b, 0, 1ull << 40); return b; },
                          st_open_error("header length at offset 0: 1099511627776 bytes is past the end of the file")));
    c.push_back(file_case("header length one past the end", [valid, size] { auto b = valid; poke_st<uint64_t>(b, 0, size - 7); return b; },
                          st_open_error(st_decimal(size - 7) + " bytes is past the end of the file (" + st_decimal(size) + " bytes)")));
    c.push_back(file_case("file cut inside the header", [valid, data_at] { auto b = valid; b.resize(data_at / 2); return b; },
                          st_open_error(st_decimal(data_at - 8) + " bytes is past the end of the file (" + st_decimal(data_at / 2) + " bytes)")));
    c.push_back(file_case("file cut inside the data", [valid] { auto b = valid; b.resize(b.size() - 100); return b; },
                          st_open_error("field 'data_offsets' end " + st_decimal(data_bytes) + " is past the data buffer (" + st_decimal(data_bytes - 100) + " bytes")));
    c.push_back(file_case("header length cutting the JSON short", [valid, data_at] {
                              auto b = valid;
                              poke_st<uint64_t>(b, 0, (data_at - 8) / 2);
                              return b;
                          },
                          st_open_error("header JSON (bytes 8.." + st_decimal(8 + (data_at - 8) / 2) + ") is invalid")));

    // --- header JSON ---
    c.push_back(file_case("header a JSON array", [v] { return v.with_header_text("[1, 2]  "); },
                          st_open_error("header JSON at offset 8 is not an object")));
    c.push_back(file_case("header nested 1000 deep", [v] { return v.with_header_text(std::string(1000, '[') + std::string(1000, ']')); },
                          st_open_error("model.safetensors: header JSON: JSON nested 1000 levels deep")));
    c.push_back(file_case("header not UTF-8 JSON", [v] { return v.with_header_text("{\"a\xff\":1}"); },
                          st_open_error("header JSON (bytes 8..16) is invalid")));
    c.push_back(header_case("__metadata__ a string", [](StFile& f) { f.header["__metadata__"] = "pt"; },
                            st_open_error("header '__metadata__' (bytes 8..")));
    c.push_back(header_case("__metadata__ with a number", [](StFile& f) { f.header["__metadata__"]["total"] = 5; },
                            st_open_error("holds {\"format\":\"pt\",\"total\":5}, not an object of strings")));

    // --- tensor entries ---
    c.push_back(header_case("entry a number", [norm](StFile& f) { f.header[norm] = 5; }, st_open_error("entry holds 5, not an object")));
    c.push_back(header_case("dtype missing", [norm](StFile& f) { f.header[norm].erase("dtype"); }, st_open_error("field 'dtype' is missing")));
    c.push_back(header_case("dtype a number", [norm](StFile& f) { f.header[norm]["dtype"] = 32; }, st_open_error("field 'dtype' holds 32, not a string")));
    c.push_back(header_case("shape missing", [norm](StFile& f) { f.header[norm].erase("shape"); }, st_open_error("field 'shape' is missing")));
    c.push_back(header_case("shape a number", [norm](StFile& f) { f.header[norm]["shape"] = 32; }, st_open_error("field 'shape' holds 32, not a list")));
    c.push_back(header_case("shape negative", [norm](StFile& f) { f.header[norm]["shape"] = {-32}; },
                            st_open_error("field 'shape' holds -32, not a non-negative integer")));
    c.push_back(header_case("shape a float", [norm](StFile& f) { f.header[norm]["shape"] = {32.5}; }, st_open_error("field 'shape' holds 32.5")));
    c.push_back(header_case("shape a string", [norm](StFile& f) { f.header[norm]["shape"] = {"32"}; }, st_open_error("field 'shape' holds \"32\"")));
    c.push_back(header_case("shape element count overflowing", [q](StFile& f) { f.header[q]["shape"] = {1ull << 32, 1ull << 32, 16}; },
                            st_open_error("tensor '" + q + "' (header, bytes 8..")));
    c.push_back(header_case("shape byte size overflowing", [q](StFile& f) { f.header[q]["shape"] = {1ull << 62, 2}; },
                            st_open_error("byte size of shape overflows 64 bits")));
    c.push_back(header_case("data_offsets missing", [norm](StFile& f) { f.header[norm].erase("data_offsets"); },
                            st_open_error("field 'data_offsets' is missing")));
    c.push_back(header_case("data_offsets one element", [norm](StFile& f) { f.header[norm]["data_offsets"] = {1024}; },
                            st_open_error("field 'data_offsets' holds [1024], not [begin, end]")));
    c.push_back(header_case("data_offsets three elements", [norm](StFile& f) { f.header[norm]["data_offsets"] = {1024, 1152, 0}; },
                            st_open_error("field 'data_offsets' holds [1024,1152,0], not [begin, end]")));
    c.push_back(header_case("data_offsets strings", [norm](StFile& f) { f.header[norm]["data_offsets"] = {"1024", "1152"}; },
                            st_open_error("must hold non-negative integers, not [\"1024\",\"1152\"]")));
    c.push_back(header_case("data_offsets negative", [norm](StFile& f) { f.header[norm]["data_offsets"] = {-128, 0}; },
                            st_open_error("must hold non-negative integers, not [-128,0]")));
    c.push_back(header_case("data_offsets begin after end", [norm](StFile& f) { f.header[norm]["data_offsets"] = {1152, 1024}; },
                            st_open_error("field 'data_offsets' begin 1152 is after end 1024")));
    c.push_back(header_case("data_offsets past the buffer", [norm](StFile& f) { f.header[norm]["data_offsets"] = {1024, 1ull << 40}; },
                            st_open_error("field 'data_offsets' end 1099511627776 is past the data buffer")));
    c.push_back(header_case("data_offsets at 2^64-1", [norm](StFile& f) { f.header[norm]["data_offsets"] = {~0ull, ~0ull}; },
                            st_open_error("field 'data_offsets' end 18446744073709551615 is past")));
    c.push_back(header_case("shape x dtype disagreeing with the span", [norm](StFile& f) { f.header[norm]["shape"] = {64}; },
                            st_open_error("data_offsets span 128 bytes but shape x F32 needs 256 bytes")));
    c.push_back(header_case("dtype size disagreeing with the span", [norm](StFile& f) { f.header[norm]["dtype"] = "F16"; },
                            st_open_error("data_offsets span 128 bytes but shape x F16 needs 64 bytes")));
    c.push_back(header_case("overlapping tensors", [norm](StFile& f) {
                                // model.norm.weight takes the first 128 bytes of the embedding; its own bytes become a hole
                                // (the overlap is met first, in offset order: the shorter span sorts first).
                                f.header[norm]["data_offsets"] = {0, 128};
                            },
                            st_open_error("tensor 'model.embed_tokens.weight' data_offsets [0, 1024) overlap tensor 'model.norm.weight', which ends at 128")));
    c.push_back(header_case("a hole between tensors", [norm](StFile& f) {
                                f.header.erase(norm);  // its 128 bytes stay in the buffer
                            },
                            st_open_error("tensor 'lm_head.weight' data_offsets [1152, 2176) leave bytes [1024, 1152) of the data buffer to no tensor")));
    c.push_back(header_case("trailing unindexed bytes", [](StFile& f) { f.data.resize(f.data.size() + 24, 0); },
                            st_open_error("24 trailing bytes after the last tensor's data")));
    c.push_back(header_case("unknown dtype", [norm](StFile& f) { f.header[norm]["dtype"] = "F99"; },
                            st_open_error("tensor 'model.norm.weight' has dtype F99, which is not supported", ErrorKind::Unsupported)));
    c.push_back(header_case("a dtype the converter lacks", [norm](StFile& f) {
                                f.header[norm]["dtype"] = "I64";
                                f.header[norm]["shape"] = {16};
                            },
                            st_open_error("tensor 'model.norm.weight' has dtype I64", ErrorKind::Unsupported)));

    // --- config.json ---
    const std::string cfg = "config.json";
    auto config_case = [&](std::string name, std::function<void(json&)> change, Expectation want) {
        c.push_back(folder_case(std::move(name), [change](Folder& f) { change(f.config); }, std::move(want), cfg));
    };
    c.push_back(folder_case("config.json missing", [](Folder&) {}, st_open_error("config.json", ErrorKind::Io), cfg, false,
                            [](const fs::path& dir) { fs::remove(dir / "config.json"); }));
    c.push_back(folder_case("config.json invalid JSON", [](Folder&) {}, st_open_error("config.json: invalid JSON"), cfg, false,
                            [](const fs::path& dir) { test::write_text(dir / "config.json", "{\"hidden_size\": 32,"); }));
    config_case("config.json an array", [](json& j) { j = json::array({1}); }, st_open_error("config.json: top level is not a JSON object"));
    config_case("hidden_size missing", [](json& j) { j.erase("hidden_size"); }, st_open_error("config.json: required field 'hidden_size' is missing"));
    config_case("hidden_size a string", [](json& j) { j["hidden_size"] = "32"; }, st_open_error("field 'hidden_size' must be an integer"));
    config_case("hidden_size negative", [](json& j) { j["hidden_size"] = -32; }, st_open_error("field 'hidden_size' value -32 is out of range"));
    config_case("hidden_size past u32", [](json& j) { j["hidden_size"] = 1ull << 40; },
                st_open_error("field 'hidden_size' value 1099511627776 is out of range"));
    config_case("num_hidden_layers a float", [](json& j) { j["num_hidden_layers"] = 1.5; }, st_open_error("field 'num_hidden_layers' must be an integer"));
    config_case("num_attention_heads 0", [](json& j) { j["num_attention_heads"] = 0; },
                st_open_error("hidden_size, num_hidden_layers and num_attention_heads must be non-zero"));
    config_case("num_key_value_heads not dividing", [](json& j) { j["num_key_value_heads"] = 3; },
                st_open_error("field 'num_key_value_heads' 3 does not divide num_attention_heads 2"));
    config_case("hidden_size not a multiple of the heads", [](json& j) { j["hidden_size"] = 33; },
                st_open_error("field 'hidden_size' 33 is not a multiple of num_attention_heads"));
    config_case("architectures not a list", [](json& j) { j["architectures"] = "LlamaForCausalLM"; },
                st_open_error("field 'architectures' must be a non-empty list of class names"));
    config_case("architecture unknown", [](json& j) { j["architectures"] = {"GPT2LMHeadModel"}; },
                st_open_error("unsupported architecture 'GPT2LMHeadModel'", ErrorKind::Unsupported));
    config_case("rms_norm_eps a string", [](json& j) { j["rms_norm_eps"] = "1e-5"; }, st_open_error("field 'rms_norm_eps' must be a number"));
    config_case("tie_word_embeddings a string", [](json& j) { j["tie_word_embeddings"] = "no"; },
                st_open_error("field 'tie_word_embeddings' must be true or false"));
    config_case("rope_scaling dynamic", [](json& j) { j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 4}}; },
                st_open_error("field 'rope_scaling' of type 'dynamic' is not supported", ErrorKind::Unsupported));
    config_case("rope_scaling yarn without a context",
                [](json& j) {
                    j.erase("max_position_embeddings");
                    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4}};
                },
                st_open_error("(or max_position_embeddings) must be > 0 for YaRN", ErrorKind::InvalidInput));
    config_case("rope_scaling yarn factor below 1",
                [](json& j) { j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 0.5}, {"original_max_position_embeddings", 64}}; },
                st_open_error("field 'factor' must be a finite number >= 1 for YaRN", ErrorKind::InvalidInput));
    c.push_back(folder_case("hidden_size disagreeing with the embedding", [](Folder& f) { f.config["hidden_size"] = 64; },
                            st_open_error("model.safetensors: tensor 'model.embed_tokens.weight': shape does not match [vocab_size x hidden_size=64]"),
                            "model.safetensors"));
    c.push_back(folder_case("vocab_size disagreeing with the embedding", [](Folder& f) { f.config["vocab_size"] = 9; },
                            st_plan_error("model.safetensors: tensor 'model.embed_tokens.weight': shape [8 x 32], expected [9 x 32]"),
                            "model.safetensors"));

    // --- tensors of the folder ---
    c.push_back(folder_case("embedding missing", [](Folder& f) {
                                auto t = st_llama_tensors();
                                t.erase(t.begin());
                                f.weights = st_of(t);
                            },
                            st_open_error("tensor 'model.embed_tokens.weight' is missing")));
    c.push_back(folder_case("a layer tensor missing", [](Folder& f) {
                                auto t = st_llama_tensors();
                                t.pop_back();  // mlp.down_proj, the last one: no hole is left
                                f.weights = st_of(t);
                            },
                            st_plan_error("tensor 'blk.0.ffn_down.weight' is missing (expected shape [32 x 64]")));
    c.push_back(folder_case("a tensor of the wrong shape", [](Folder& f) {
                                auto t = st_llama_tensors();
                                t[4].shape = {kStD / 2, kStD};
                                f.weights = st_of(t);
                            },
                            st_plan_error("model.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight': shape [16 x 32], expected [32 x 32]"),
                            "model.safetensors"));
    c.push_back(folder_case("a tensor with no canonical name", [](Folder& f) {
                                auto t = st_llama_tensors();
                                t.push_back({"model.layers.0.mystery.weight", {kStD}});
                                f.weights = st_of(t);
                            },
                            st_open_error("tensor 'model.layers.0.mystery.weight' has no canonical name", ErrorKind::Unsupported),
                            "model.safetensors"));
    c.push_back(folder_case("tokenizer.json invalid JSON", [](Folder&) {}, st_open_error("tokenizer.json: invalid JSON"), "tokenizer.json", false,
                            [](const fs::path& dir) { test::write_text(dir / "tokenizer.json", "{\"model\": "); }));

    // --- sharded folder and its index ---
    const std::string idx = "model.safetensors.index.json";
    auto index_case = [&](std::string name, std::function<void(json&)> change, Expectation want) {
        c.push_back(folder_case(std::move(name), [change](Folder& f) { change(f.index); }, std::move(want), idx, true));
    };
    c.push_back(folder_case("index.json invalid JSON", [](Folder&) {}, st_open_error("model.safetensors.index.json: invalid JSON"), idx, true,
                            [](const fs::path& dir) { test::write_text(dir / "model.safetensors.index.json", "{\"weight_map\": {"); }));
    index_case("weight_map missing", [](json& j) { j.erase("weight_map"); },
               st_open_error("model.safetensors.index.json: field 'weight_map' is missing or not an object"));
    index_case("weight_map value a number", [](json& j) { j["weight_map"]["model.norm.weight"] = 1; },
               st_open_error("weight_map['model.norm.weight'] is not a file name"));
    index_case("weight_map path with a slash", [](json& j) { j["weight_map"]["model.norm.weight"] = "../model-00001-of-00002.safetensors"; },
               st_open_error("weight_map['model.norm.weight'] = '../model-00001-of-00002.safetensors' is not a file in the folder"));
    index_case("weight_map '..'", [](json& j) { j["weight_map"]["model.norm.weight"] = ".."; },
               st_open_error("weight_map['model.norm.weight'] = '..' is not a file in the folder"));
    c.push_back(folder_case("weight_map naming a missing shard", [](Folder& f) { f.index["weight_map"]["lm_head.weight"] = "model-00003-of-00002.safetensors"; },
                            st_open_error("model-00003-of-00002.safetensors", ErrorKind::Io), "model-00003-of-00002.safetensors", true));
    c.push_back(folder_case("weight_map naming the wrong shard", [](Folder& f) { f.index["weight_map"]["lm_head.weight"] = "model-00002-of-00002.safetensors"; },
                            st_open_error("model-00002-of-00002.safetensors: tensor 'lm_head.weight' listed in model.safetensors.index.json is not in this shard"),
                            "model-00002-of-00002.safetensors", true));
    c.push_back(folder_case("a damaged shard", [](Folder& f) { f.shard2.data.resize(f.shard2.data.size() - 4); },
                            st_open_error("model-00002-of-00002.safetensors: tensor 'model.layers.0.mlp.down_proj.weight' (header, bytes 8..640): field 'data_offsets' end 32896 is past"),
                            "model-00002-of-00002.safetensors", true));
    (void)size;
    return c;
}

TEST(SafetensorsCorruptMatrix, ValidFixturesConvert) {
    for (bool sharded : {false, true}) {
        SCOPED_TRACE(sharded ? "sharded" : "single file");
        const auto dir = test::temp_dir(sharded ? "valid-sharded" : "valid");
        (sharded ? Folder::two_shards() : Folder::single()).write(dir);
        const auto out = test::temp_dir(sharded ? "valid-sharded-out" : "valid-out");
        const test::ConvertOutcome o = test::convert_into(dir.string(), "", out);
        EXPECT_TRUE(o.converted) << o.error;
        EXPECT_EQ(o.left_in_output, std::vector<std::string>{"out.cflow"});
    }
    // The single file, opened as a file, converts too: the file safetensors_cases below open it that way.
    const auto dir = test::temp_dir("valid-file");
    Folder::single().write(dir);
    const auto out = test::temp_dir("valid-file-out");
    EXPECT_TRUE(test::convert_into((dir / "model.safetensors").string(), "", out).converted);
}

TEST(SafetensorsCorruptMatrix, EveryCaseIsRefusedWithItsOwnMessageAndWritesNothing) {
    const std::vector<StCase> table = safetensors_cases();
    ASSERT_GE(table.size(), 40u);
    RecordProperty("safetensors_cases", static_cast<int>(table.size()));
    test::expect_distinct_expectations(table);
    for (size_t i = 0; i < table.size(); ++i) {
        const StCase& c = table[i];
        SCOPED_TRACE(c.name);
        const auto dir = test::temp_dir("case-" + std::to_string(i));
        const auto [source, names] = c.make(dir);
        const auto out = test::temp_dir("out-" + std::to_string(i));
        test::expect_refused(test::convert_into(source.string(), "", out), c.want, names);
    }
}

} // namespace
} // namespace cflow
