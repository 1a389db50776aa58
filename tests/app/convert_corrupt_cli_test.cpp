// `cflow convert` on corrupt sources (issue 16), one test per source format: the built CLI
// exits non-zero with one stderr line naming the file, and the output folder stays empty (no
// output, no temporary file). The byte-level matrices are tests/formats/*_corrupt_matrix_test.cpp;
// these check that the front end keeps their "refused, nothing written" promise.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_runner.h"
#include "test_support.h"

namespace cflow::test {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_corrupt_file(const fs::path& path, const std::vector<uint8_t>& bytes) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
void write_corrupt_file(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
template <class T>
void poke(std::vector<uint8_t>& b, size_t at, T value) {
    std::memcpy(b.data() + at, &value, sizeof(T));
}
// A safetensors file: u64 header length, then the header text, then `data_bytes` zero bytes.
std::vector<uint8_t> safetensors(const std::string& header, size_t data_bytes) {
    std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
    const uint64_t n = header.size();
    std::memcpy(out.data(), &n, 8);
    std::memcpy(out.data() + 8, header.data(), header.size());
    return out;
}

// Runs `cflow convert SOURCE [--tokenizer TOK] -o OUT/out.cflow` into a fresh empty folder and
// checks the failure contract and that the folder is still empty.
void expect_refused_and_nothing_written(const std::string& label, const fs::path& source, const std::string& needle,
                                        const fs::path& tokenizer = {}) {
    SCOPED_TRACE(label);
    const fs::path out = temp_dir("out-" + label);
    std::vector<std::string> args = {"convert", source.string(), "-o", (out / "out.cflow").string(), "--quiet"};
    if (!tokenizer.empty()) args.insert(args.end(), {"--tokenizer", tokenizer.string()});
    const CommandResult r = run_cflow(args);
    expect_one_line_failure(r, needle);
    EXPECT_LT(r.exit_code, 128) << "ended by a signal: " << r.err;
    EXPECT_TRUE(fs::is_empty(out)) << "the output folder is not empty after: " << r.err;
}

TEST(ConvertCorruptCli, GgufCorruptionsExitWithOneLineAndWriteNothing) {
    CFLOW_REQUIRE_ASSET(gguf, "assets/models/llama2c-stories260K/stories260K.gguf");
    const auto valid = read_file(gguf);
    const fs::path dir = temp_dir("gguf");
    auto cut = valid;
    cut.resize(20);
    write_corrupt_file(dir / "cut.gguf", cut);
    expect_refused_and_nothing_written("cut header", dir / "cut.gguf", "cut.gguf: header metadata_kv_count at offset 16: truncated header");
    auto tensors_cut = valid;
    tensors_cut.resize(valid.size() - 1000);
    write_corrupt_file(dir / "short.gguf", tensors_cut);
    expect_refused_and_nothing_written("cut data", dir / "short.gguf", "runs past the end of the file");
    auto version = valid;
    poke<uint32_t>(version, 4, 9);
    write_corrupt_file(dir / "v9.gguf", version);
    expect_refused_and_nothing_written("version", dir / "v9.gguf", "v9.gguf: header version at offset 4: unsupported GGUF version 9");
}

TEST(ConvertCorruptCli, SafetensorsCorruptionsExitWithOneLineAndWriteNothing) {
    const fs::path dir = temp_dir("st");
    write_corrupt_file(dir / "config.json", std::string(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 4})"));
    write_corrupt_file(dir / "model.safetensors", safetensors("", 0));
    expect_refused_and_nothing_written("header length 0", dir / "model.safetensors", "model.safetensors: header length at offset 0: is 0");
    write_corrupt_file(dir / "model.safetensors",
               safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12));
    expect_refused_and_nothing_written("overlap", dir / "model.safetensors", "tensor 'b' data_offsets [4, 12) overlap tensor 'a'");
    write_corrupt_file(dir / "model.safetensors", safetensors(R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[4,8],"data_offsets":[0,128]}})", 128));
    write_corrupt_file(dir / "config.json", std::string(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": "eight"})"));
    expect_refused_and_nothing_written("config", dir, "config.json: field 'hidden_size' must be an integer");
}

TEST(ConvertCorruptCli, Llama2cCorruptionsExitWithOneLineAndWriteNothing) {
    CFLOW_REQUIRE_ASSET(models, "assets/models/llama2c-stories260K");
    const auto bin = read_file(models / "stories260K.bin");
    const auto tok = read_file(models / "tok512.bin");
    const fs::path dir = temp_dir("l2c");
    auto zero = bin;
    poke<int32_t>(zero, 8, 0);
    write_corrupt_file(dir / "zero.bin", zero);
    expect_refused_and_nothing_written("n_layers 0", dir / "zero.bin", "zero.bin: header at offset 0: n_layers (int32 at offset 8) is 0",
                                       models / "tok512.bin");
    auto cut = bin;
    cut.resize(bin.size() - 100);
    write_corrupt_file(dir / "cut.bin", cut);
    expect_refused_and_nothing_written("cut", dir / "cut.bin", "cut.bin: file size: expected 1056540 bytes", models / "tok512.bin");
    auto long_tok = tok;
    long_tok.insert(long_tok.end(), {0, 0, 0, 0, 1, 0, 0, 0, 'x'});  // a 513th token
    write_corrupt_file(dir / "tok513.bin", long_tok);
    expect_refused_and_nothing_written("tokenizer", models / "stories260K.bin", "tok513.bin: offset 6227: 9 bytes after the model's 512 tokens",
                                       dir / "tok513.bin");
}

} // namespace
} // namespace cflow::test
