// `cflow tokenize` / `cflow detokenize`: the CLI gives llama.cpp's reference ids for its
// conformance strings, reads GGUF vocabularies, HF tokenizer.json and converted .cflow models
// alike, is binary-safe on stdin/stdout, and fails with one line naming the bad input.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "cli_runner.h"
#include "test_support.h"

namespace cflow::test {
namespace {

constexpr const char* kVocabDir = "assets/tokenizer-vocab-gguf/llama.cpp/";

std::string read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The llama.cpp .inp format: strings each followed by "\n__ggml_vocab_test__\n".
std::vector<std::string> split_inputs(const std::string& text) {
    static const std::string kSeparator = "\n__ggml_vocab_test__\n";
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t at = text.find(kSeparator); at != std::string::npos; at = text.find(kSeparator, start)) {
        parts.push_back(text.substr(start, at - start));
        start = at + kSeparator.size();
    }
    return parts;
}

// One .out line (" 798 604 25208") -> the CLI's format ("798 604 25208\n").
std::string ids_line(const std::string& out_line) {
    std::istringstream in(out_line);
    std::string line;
    for (long long id = 0; in >> id;) {
        if (!line.empty()) line.push_back(' ');
        line.append(std::to_string(id));
    }
    line.push_back('\n');
    return line;
}

std::vector<std::string> out_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(ids_line(line));
    return lines;
}

// Every conformance string of the vocabulary through the CLI: tokenize gives the reference
// ids, detokenize of the reference ids gives the string back byte for byte.
void check_vocab_suite(const std::string& name) {
    const std::string base = std::string(kVocabDir) + "ggml-vocab-" + name + ".gguf";
    CFLOW_REQUIRE_ASSET(gguf, base);
    CFLOW_REQUIRE_ASSET(inp, base + ".inp");
    CFLOW_REQUIRE_ASSET(out, base + ".out");
    const auto inputs = split_inputs(read_text_file(inp));
    const auto expected = out_lines(read_text_file(out));
    ASSERT_EQ(inputs.size(), expected.size());
    ASSERT_GE(inputs.size(), 40u);
    // Every case starts the CLI twice: a sanitized build takes every fifth (see kSanitizedBuild).
    const size_t stride = kSanitizedBuild ? 5 : 1;
    for (size_t i = 0; i < inputs.size(); i += stride) {
        auto tokenized = run_cflow_with_input({"tokenize", gguf.string()}, inputs[i]);
        ASSERT_EQ(tokenized.exit_code, 0) << tokenized.err;
        EXPECT_EQ(tokenized.out, expected[i]) << name << " #" << i << ": \"" << inputs[i] << "\"";
        auto detokenized = run_cflow_with_input({"detokenize", gguf.string()}, expected[i]);
        ASSERT_EQ(detokenized.exit_code, 0) << detokenized.err;
        EXPECT_EQ(detokenized.out, inputs[i]) << name << " #" << i;
    }
}

TEST(TokenizeCli, LlamaSpmVocabMatchesLlamaCppIds) { check_vocab_suite("llama-spm"); }

TEST(TokenizeCli, Gpt2VocabMatchesLlamaCppIds) { check_vocab_suite("gpt-2"); }

TEST(TokenizeCli, HfTokenizerJsonGivesTheGgufIds) {
    CFLOW_REQUIRE_ASSET(json, "assets/tokenizers/gpt2-hf/tokenizer.json");
    CFLOW_REQUIRE_ASSET(gguf, std::string(kVocabDir) + "ggml-vocab-gpt-2.gguf");
    for (const std::string text : {"Hello world", " Hello World!\n\tTabs and  spaces", "3333333 \xF0\x9F\xA6\x99 caf\xC3\xA9",
                                   "<|endoftext|> is text here"}) {
        auto from_json = run_cflow_with_input({"tokenize", json.string()}, text);
        auto from_gguf = run_cflow_with_input({"tokenize", gguf.string()}, text);
        ASSERT_EQ(from_json.exit_code, 0) << from_json.err;
        ASSERT_EQ(from_gguf.exit_code, 0) << from_gguf.err;
        EXPECT_GT(from_json.out.size(), 1u);
        EXPECT_EQ(from_json.out, from_gguf.out) << text;
    }
    // A folder holding tokenizer.json reads the same.
    auto from_dir = run_cflow_with_input({"tokenize", json.parent_path().string()}, "Hello world");
    EXPECT_EQ(from_dir.out, "15496 995\n") << from_dir.err;
}

TEST(TokenizeCli, PiecesAndSpecialTokenOptions) {
    CFLOW_REQUIRE_ASSET(gguf, std::string(kVocabDir) + "ggml-vocab-gpt-2.gguf");
    auto pieces = run_cflow_with_input({"tokenize", gguf.string(), "--pieces"}, "Hello world");
    EXPECT_EQ(pieces.out, "Hello \xC4\xA0world\n") << pieces.err;  // byte-level BPE writes the space as U+0120
    // <|endoftext|> is the control token 50256 only with --parse-special.
    auto parsed = run_cflow_with_input({"tokenize", gguf.string(), "--parse-special"}, "<|endoftext|>");
    EXPECT_EQ(parsed.out, "50256\n") << parsed.err;
    auto literal = run_cflow_with_input({"tokenize", gguf.string()}, "<|endoftext|>");
    ASSERT_EQ(literal.exit_code, 0);
    EXPECT_EQ(literal.out.find("50256"), std::string::npos) << literal.out;
    EXPECT_GE(std::count(literal.out.begin(), literal.out.end(), ' '), 2) << literal.out;  // several ordinary pieces
    expect_one_line_failure(run_cflow_with_input({"tokenize", gguf.string(), "--ids", "--pieces"}, "x"), "--pieces");
}

TEST(TokenizeCli, StdinAndStdoutAreBinarySafe) {
    // SentencePiece byte fallback keeps any byte: NUL, invalid UTF-8, CR LF and trailing newlines
    // survive tokenize -> detokenize exactly.
    CFLOW_REQUIRE_ASSET(spm, std::string(kVocabDir) + "ggml-vocab-llama-spm.gguf");
    const std::string bytes("a\0b\xFF\xFE\r\n c\x01\n\n", 12);
    auto tokenized = run_cflow_with_input({"tokenize", spm.string()}, bytes);
    ASSERT_EQ(tokenized.exit_code, 0) << tokenized.err;
    EXPECT_NE(tokenized.out.find("258 257"), std::string::npos) << tokenized.out;  // <0xFF> <0xFE>
    auto detokenized = run_cflow_with_input({"detokenize", spm.string()}, tokenized.out);
    ASSERT_EQ(detokenized.exit_code, 0) << detokenized.err;
    EXPECT_EQ(detokenized.out, bytes);

    // Byte-level BPE: valid UTF-8 with NUL and CR LF round-trips exactly (invalid UTF-8 becomes
    // U+FFFD before pre-tokenization, as in llama.cpp, so it is left out here).
    CFLOW_REQUIRE_ASSET(gpt2, std::string(kVocabDir) + "ggml-vocab-gpt-2.gguf");
    const std::string utf8("x\0y\r\n caf\xC3\xA9\n\n", 13);
    auto bpe_ids = run_cflow_with_input({"tokenize", gpt2.string()}, utf8);
    ASSERT_EQ(bpe_ids.exit_code, 0) << bpe_ids.err;
    auto bpe_text = run_cflow_with_input({"detokenize", gpt2.string()}, bpe_ids.out);
    ASSERT_EQ(bpe_text.exit_code, 0) << bpe_text.err;
    EXPECT_EQ(bpe_text.out, utf8);
}

TEST(TokenizeCli, ConvertedStories260KModelAddsBosOnlyWhenAsked) {
    CFLOW_REQUIRE_ASSET(bin, "assets/models/llama2c-stories260K/stories260K.bin");
    CFLOW_REQUIRE_ASSET(tok, "assets/models/llama2c-stories260K/tok512.bin");
    const std::string model = (temp_dir("tokenize") / "stories260K.cflow").string();
    auto converted = run_cflow({"convert", bin.string(), "--tokenizer", tok.string(), "-o", model, "--quant", "q8_0", "--quiet"});
    ASSERT_EQ(converted.exit_code, 0) << converted.err;

    auto with_bos = run_cflow_with_input({"tokenize", model, "--add-special"}, "Once upon a time");
    EXPECT_EQ(with_bos.out, "1 403 407 261 378\n") << with_bos.err;
    auto without = run_cflow_with_input({"tokenize", model}, "Once upon a time");
    EXPECT_EQ(without.out, "403 407 261 378\n") << without.err;
    auto text = run_cflow_with_input({"detokenize", model}, "1 403 407 261 378\n");
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_EQ(text.out, "Once upon a time");  // BOS is a control token: not printed; no newline added
}

TEST(TokenizeCli, BadInputsFailWithOneLine) {
    CFLOW_REQUIRE_ASSET(gguf, std::string(kVocabDir) + "ggml-vocab-gpt-2.gguf");
    expect_one_line_failure(run_cflow_with_input({"detokenize", gguf.string()}, "15496 99999999 995"), "99999999");
    expect_one_line_failure(run_cflow_with_input({"detokenize", gguf.string()}, "15496 12abc"), "12abc");
    expect_one_line_failure(run_cflow_with_input({"detokenize", gguf.string()}, "-5"), "-5");
    expect_one_line_failure(run_cflow_with_input({"tokenize", "/nonexistent/vocab.gguf"}, "x"), "/nonexistent/vocab.gguf");
    const auto dir = temp_dir("tokenize-bad");
    std::ofstream(dir / "junk.bin", std::ios::binary) << std::string(300, 'x');
    expect_one_line_failure(run_cflow_with_input({"tokenize", (dir / "junk.bin").string()}, "x"), "junk.bin");
    std::filesystem::create_directories(dir / "hf");
    std::ofstream(dir / "hf" / "tokenizer.json", std::ios::binary) << "{\"model\": ";
    expect_one_line_failure(run_cflow_with_input({"tokenize", (dir / "hf" / "tokenizer.json").string()}, "x"),
                            "tokenizer.json");
}

} // namespace
} // namespace cflow::test
