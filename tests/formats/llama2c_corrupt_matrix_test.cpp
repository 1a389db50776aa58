// Corrupt-file matrix for llama2.c checkpoints and their tokenizer.bin (issue 16): a valid
// one-layer legacy export (and its version-1 twin) gets each of the 7 header fields zero,
// negative, huge or inconsistent, is cut at every tensor boundary or grows trailing bytes; the
// tokenizer is cut, given bad lengths, too few or too many tokens. Each case must be refused by
// the reader with its error kind and its own message naming the damaged file, and the
// conversion must leave its output folder empty.
#include <cstring>
#include <functional>
#include <limits>

#include <gtest/gtest.h>

#include "corrupt_matrix.h"
#include "source_writers.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;
using test::Expectation;
using test::Stage;

// Header fields, in file order (int32 each).
enum Field { kDimField, kHiddenField, kLayersField, kHeadsField, kKvHeadsField, kVocabField, kSeqLenField };
constexpr int32_t kValid[7] = {32, 64, 1, 2, 2, 8, 16};

struct BlockSpec {
    const char* what;
    uint64_t floats;
};

// The legacy layout (llama2.c export.py legacy_export), one layer: dim 32, hidden 64, 2 heads,
// vocab 8, seq_len 16 (head size 16: freq_cis tables of 16 x 8).
std::vector<BlockSpec> legacy_blocks() {
    const uint64_t d = 32, h = 64, v = 8, seq = 16, half = 8;
    return {{"token_embedding", v * d}, {"rms_att", d},  {"wq", d * d},       {"wk", d * d},          {"wv", d * d},
            {"wo", d * d},              {"rms_ffn", d},  {"w1", h * d},       {"w2", d * h},          {"w3", h * d},
            {"rms_final", d},           {"freq_cis_real", seq * half},        {"freq_cis_imag", seq * half}};
}

// Start offset of each block in the legacy file (28-byte header first).
std::vector<uint64_t> block_offsets() {
    std::vector<uint64_t> at;
    uint64_t o = 28;
    for (const BlockSpec& b : legacy_blocks()) {
        at.push_back(o);
        o += b.floats * 4;
    }
    at.push_back(o);  // end of file
    return at;
}

std::vector<uint8_t> legacy_checkpoint() {
    std::vector<uint8_t> out;
    for (int32_t x : kValid) test::put(out, x);
    uint32_t seed = 1;
    for (const BlockSpec& b : legacy_blocks()) {
        auto w = test::f32_bytes(test::test_floats(b.floats, seed++));
        out.insert(out.end(), w.begin(), w.end());
    }
    return out;
}

// The version-1 export ("ak42", version 1, the 7 fields, shared_classifier, padded to 256).
std::vector<uint8_t> v1_checkpoint() {
    std::vector<uint8_t> out;
    test::put<uint32_t>(out, 0x616b3432u);
    test::put<int32_t>(out, 1);
    for (int32_t x : kValid) test::put(out, x);
    out.push_back(1);  // shared classifier
    out.resize(256, 0);
    const uint64_t d = 32, h = 64, v = 8;
    const uint64_t floats = d + d + d + v * d + 4 * d * d + 3 * h * d;  // norms, embedding, attention, FFN
    auto w = test::f32_bytes(test::test_floats(floats, 3));
    out.insert(out.end(), w.begin(), w.end());
    return out;
}

struct Token {
    float score;
    std::string text;
};
std::vector<Token> tokens() {
    return {{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}, {-1, "a"}, {-2, "b"}, {-3, " c"}, {-4, "d"}, {-5, "e"}};
}
std::vector<uint8_t> tokenizer(const std::vector<Token>& toks, int32_t max_len = 7) {
    std::vector<uint8_t> out;
    test::put(out, max_len);
    for (const Token& t : toks) {
        test::put(out, t.score);
        test::put<int32_t>(out, static_cast<int32_t>(t.text.size()));
        out.insert(out.end(), t.text.begin(), t.text.end());
    }
    return out;
}
// Offset of token i's record (score) in tokenizer(tokens()).
uint64_t token_at(size_t i) {
    uint64_t at = 4;
    for (size_t k = 0; k < i; ++k) at += 8 + tokens()[k].text.size();
    return at;
}

template <class T>
void poke_llama2c(std::vector<uint8_t>& b, uint64_t at, T value) {
    std::memcpy(b.data() + at, &value, sizeof(T));
}

struct Llama2cCase {
    std::string name;
    std::function<std::vector<uint8_t>()> checkpoint;
    std::function<std::vector<uint8_t>()> tok;
    Expectation want;
    bool damaged_tokenizer = false;  // the message must name tokenizer.bin instead of model.bin
};

Expectation llama2c_open_error(std::string expected, ErrorKind kind = ErrorKind::InvalidInput) {
    return {std::move(expected), kind, Stage::Open};
}

std::vector<uint8_t> with_field(Field f, int32_t value) {
    auto b = legacy_checkpoint();
    poke_llama2c(b, 4 * static_cast<uint64_t>(f), value);
    return b;
}
Llama2cCase header(std::string name, Field f, int32_t value, Expectation want) {
    return {std::move(name), [f, value] { return with_field(f, value); }, [] { return tokenizer(tokens()); }, std::move(want)};
}
Llama2cCase bin(std::string name, std::function<std::vector<uint8_t>()> make, Expectation want) {
    return {std::move(name), std::move(make), [] { return tokenizer(tokens()); }, std::move(want)};
}
Llama2cCase tok(std::string name, std::function<std::vector<uint8_t>()> make, Expectation want) {
    return {std::move(name), legacy_checkpoint, std::move(make), std::move(want), true};
}
std::string decimal(uint64_t v) { return std::to_string(v); }

std::vector<Llama2cCase> llama2c_cases() {
    constexpr int32_t kMaxI32 = std::numeric_limits<int32_t>::max(), kMinI32 = std::numeric_limits<int32_t>::min();
    const auto at = block_offsets();
    const auto blocks = legacy_blocks();
    const uint64_t size = at.back();
    std::vector<Llama2cCase> c;

    // --- the header ---
    c.push_back(bin("empty file", [] { return std::vector<uint8_t>{}; },
                    llama2c_open_error("header at offset 0: file is 0 bytes, too short for the 28-byte llama2.c header")));
    c.push_back(bin("header cut at 27 bytes", [] { auto b = legacy_checkpoint(); b.resize(27); return b; }, llama2c_open_error("file is 27 bytes, too short")));
    c.push_back(header("dim 0", kDimField, 0, llama2c_open_error("header at offset 0: dim (int32 at offset 0) is 0, must be positive")));
    c.push_back(header("dim negative", kDimField, -32, llama2c_open_error("dim (int32 at offset 0) is -32, must be positive")));
    c.push_back(header("hidden_dim 0", kHiddenField, 0, llama2c_open_error("hidden_dim (int32 at offset 4) is 0, must be positive")));
    c.push_back(header("hidden_dim negative", kHiddenField, kMinI32, llama2c_open_error("hidden_dim (int32 at offset 4) is -2147483648")));
    c.push_back(header("n_layers 0", kLayersField, 0, llama2c_open_error("n_layers (int32 at offset 8) is 0, must be positive")));
    c.push_back(header("n_layers negative", kLayersField, -1, llama2c_open_error("n_layers (int32 at offset 8) is -1, must be positive")));
    c.push_back(header("n_heads 0", kHeadsField, 0, llama2c_open_error("n_heads (int32 at offset 12) is 0, must be positive")));
    c.push_back(header("n_kv_heads 0", kKvHeadsField, 0, llama2c_open_error("n_kv_heads (int32 at offset 16) is 0, must be positive")));
    c.push_back(header("seq_len 0", kSeqLenField, 0, llama2c_open_error("seq_len (int32 at offset 24) is 0, must be positive")));
    c.push_back(header("seq_len negative", kSeqLenField, -16, llama2c_open_error("seq_len (int32 at offset 24) is -16, must be positive")));
    c.push_back(header("vocab_size 0", kVocabField, 0, llama2c_open_error("vocab_size (int32 at offset 20) is 0, must be non-zero")));
    c.push_back(header("vocab_size INT32_MIN", kVocabField, kMinI32, llama2c_open_error("vocab_size (int32 at offset 20) is -2147483648, out of range")));
    c.push_back(bin("n_heads not dividing dim", [] { auto b = with_field(kHeadsField, 3); poke_llama2c<int32_t>(b, 16, 3); return b; }, llama2c_open_error("n_heads (int32 at offset 12): dim 32 / n_heads 3 is not an even head size")));
    c.push_back(header("odd head size", kHeadsField, 32, llama2c_open_error("dim 32 / n_heads 32 is not an even head size")));
    c.push_back(header("n_kv_heads above n_heads", kKvHeadsField, 4, llama2c_open_error("n_kv_heads (int32 at offset 16): n_kv_heads 4 does not divide n_heads 2")));
    c.push_back(bin("n_kv_heads not dividing n_heads", [] { auto b = with_field(kHeadsField, 4); poke_llama2c<int32_t>(b, 16, 3); return b; },
                    llama2c_open_error("n_kv_heads 3 does not divide n_heads 4")));
    // Consistent headers of another model than the weights that follow: the size check catches them, naming where.
    c.push_back(header("fewer kv heads than stored", kKvHeadsField, 1,
                       llama2c_open_error("expected " + decimal(size - 2 * 16 * 32 * 4) + " bytes for dim 32, hidden_dim 64, 1 layers, vocab 8 (shared classifier), "
                                  "but the file has " + decimal(size) + " bytes: 4096 trailing bytes after freq_cis_imag")));
    c.push_back(header("a larger vocabulary than stored", kVocabField, 9,
                       llama2c_open_error("the file ends inside freq_cis_imag ([" + decimal(at[12] + 128) + ", " + decimal(size + 128) + "))")));
    c.push_back(header("vocab_size huge", kVocabField, kMaxI32,
                       llama2c_open_error("vocab 2147483647 (shared classifier), but the file has " + decimal(size) + " bytes: the file ends inside token_embedding")));
    c.push_back(header("negative vocab_size without a classifier", kVocabField, -8,
                       llama2c_open_error("(separate classifier), but the file has " + decimal(size) + " bytes: the file ends where wcls begins (offset " + decimal(size) + ")")));
    c.push_back(header("n_layers huge", kLayersField, kMaxI32, llama2c_open_error("2147483647 layers, vocab 8 (shared classifier), but the file has")));
    c.push_back(header("hidden_dim huge", kHiddenField, kMaxI32, llama2c_open_error("hidden_dim 2147483647, 1 layers")));
    c.push_back(header("seq_len huge", kSeqLenField, kMaxI32, llama2c_open_error("the file ends inside freq_cis_real")));
    c.push_back(bin("dims whose sizes overflow 64 bits", [] {
                        auto b = with_field(kDimField, kMaxI32 - 3);  // 2147483644: an even head size for 2 heads
                        poke_llama2c<int32_t>(b, 4 * kLayersField, kMaxI32);
                        return b;
                    },
                    llama2c_open_error("header at offset 0: weight sizes implied by the header overflow 64 bits")));

    // --- truncation at every tensor boundary, and trailing bytes ---
    for (size_t i = 0; i < blocks.size(); ++i) {
        const uint64_t cut = at[i] + 4;
        c.push_back(bin(std::string("cut inside ") + blocks[i].what, [cut] { auto b = legacy_checkpoint(); b.resize(cut); return b; },
                        llama2c_open_error("but the file has " + decimal(cut) + " bytes: the file ends inside " + blocks[i].what + " ([" + decimal(at[i]) +
                                   ", " + decimal(at[i + 1]) + "))")));
    }
    for (size_t i : {1u, 5u, 11u}) {
        const uint64_t cut = at[i];
        c.push_back(bin(std::string("cut where ") + blocks[i].what + " begins", [cut] { auto b = legacy_checkpoint(); b.resize(cut); return b; },
                        llama2c_open_error("the file ends where " + std::string(blocks[i].what) + " begins (offset " + decimal(cut) + ")")));
    }
    c.push_back(bin("trailing bytes", [] { auto b = legacy_checkpoint(); b.resize(b.size() + 6, 0); return b; },
                    llama2c_open_error("but the file has " + decimal(size + 6) + " bytes: 6 trailing bytes after freq_cis_imag (which ends at " + decimal(size) + ")")));

    // --- the version-1 header ---
    c.push_back(bin("v1 header cut", [] { auto b = v1_checkpoint(); b.resize(100); return b; },
                    llama2c_open_error("header at offset 0: file is 100 bytes, shorter than the 256-byte v1 header")));
    c.push_back(bin("v1 version 2", [] { auto b = v1_checkpoint(); poke_llama2c<int32_t>(b, 4, 2); return b; },
                    llama2c_open_error("header version at offset 4: version 2 (Q8_0 export) is not supported", ErrorKind::Unsupported)));
    c.push_back(bin("v1 version 9", [] { auto b = v1_checkpoint(); poke_llama2c<int32_t>(b, 4, 9); return b; },
                    llama2c_open_error("unsupported llama2.c export version 9", ErrorKind::Unsupported)));
    c.push_back(bin("v1 negative vocab_size", [] { auto b = v1_checkpoint(); poke_llama2c<int32_t>(b, 8 + 4 * kVocabField, -8); return b; },
                    llama2c_open_error("vocab_size (int32 at offset 28) is -8: a v1 vocab_size must be positive")));
    c.push_back(bin("v1 n_layers 0", [] { auto b = v1_checkpoint(); poke_llama2c<int32_t>(b, 8 + 4 * kLayersField, 0); return b; },
                    llama2c_open_error("n_layers (int32 at offset 16) is 0, must be positive")));
    c.push_back(bin("v1 separate classifier missing", [] { auto b = v1_checkpoint(); b[36] = 0; return b; },
                    llama2c_open_error("(separate classifier), but the file has " + decimal(v1_checkpoint().size()) + " bytes: the file ends where wcls begins")));

    // --- tokenizer.bin ---
    c.push_back(tok("tokenizer empty", [] { return std::vector<uint8_t>{}; },
                    llama2c_open_error("tokenizer.bin: max_token_length at offset 0: file is 0 bytes, truncated")));
    c.push_back(tok("tokenizer cut inside max_token_length", [] { return std::vector<uint8_t>{7, 0, 0}; }, llama2c_open_error("file is 3 bytes, truncated")));
    c.push_back(tok("max_token_length 0", [] { return tokenizer(tokens(), 0); }, llama2c_open_error("max_token_length at offset 0: is 0, must be positive")));
    c.push_back(tok("max_token_length negative", [] { return tokenizer(tokens(), -7); }, llama2c_open_error("max_token_length at offset 0: is -7, must be positive")));
    c.push_back(tok("a token longer than max_token_length", [] { return tokenizer(tokens(), 5); },
                    llama2c_open_error("token 2 length at offset " + decimal(token_at(2) + 4) + ": length 6 exceeds max_token_length 5 (offset 0)")));
    c.push_back(tok("tokenizer cut inside a score", [] { auto b = tokenizer(tokens()); b.resize(token_at(3) + 2); return b; },
                    llama2c_open_error("token 3 score/length at offset " + decimal(token_at(3)) + ": file is truncated (" + decimal(token_at(3) + 2) + " bytes")));
    c.push_back(tok("tokenizer cut inside a length", [] { auto b = tokenizer(tokens()); b.resize(token_at(4) + 6); return b; },
                    llama2c_open_error("token 4 score/length at offset " + decimal(token_at(4)) + ": file is truncated")));
    c.push_back(tok("tokenizer cut inside a token's bytes", [] { auto b = tokenizer(tokens()); b.resize(token_at(5) + 9); return b; },
                    llama2c_open_error("token 5 length at offset " + decimal(token_at(5) + 4) + ": length 2 runs past the end of the file")));
    c.push_back(tok("negative token length", [] { auto b = tokenizer(tokens()); poke_llama2c<int32_t>(b, token_at(6) + 4, -1); return b; },
                    llama2c_open_error("token 6 length at offset " + decimal(token_at(6) + 4) + ": length -1 is negative")));
    c.push_back(tok("huge token length", [] {
                        auto b = tokenizer(tokens(), std::numeric_limits<int32_t>::max());
                        poke_llama2c<int32_t>(b, token_at(0) + 4, 1 << 30);
                        return b;
                    },
                    llama2c_open_error("token 0 length at offset 8: length 1073741824 runs past the end of the file")));
    c.push_back(tok("fewer tokens than vocab_size", [] { auto t = tokens(); t.pop_back(); return tokenizer(t); },
                    llama2c_open_error("token 7 score/length at offset " + decimal(token_at(7)) + ": file is truncated (" + decimal(token_at(7)) +
                               " bytes; the model's vocab_size is 8)")));
    c.push_back(tok("more tokens than vocab_size", [] { auto t = tokens(); t.push_back({-6, "f"}); return tokenizer(t); },
                    llama2c_open_error("tokenizer.bin: offset " + decimal(token_at(8)) + ": 9 bytes after the model's 8 tokens")));
    return c;
}

TEST(Llama2cCorruptMatrix, ValidFixturesConvert) {
    for (bool v1 : {false, true}) {
        SCOPED_TRACE(v1 ? "v1" : "legacy");
        const auto dir = test::temp_dir(v1 ? "valid-v1" : "valid");
        test::write_bytes(dir / "model.bin", v1 ? v1_checkpoint() : legacy_checkpoint());
        test::write_bytes(dir / "tokenizer.bin", tokenizer(tokens()));
        const auto out = test::temp_dir(v1 ? "valid-v1-out" : "valid-out");
        const test::ConvertOutcome o = test::convert_into((dir / "model.bin").string(), (dir / "tokenizer.bin").string(), out);
        EXPECT_TRUE(o.converted) << o.error;
        EXPECT_EQ(o.left_in_output, std::vector<std::string>{"out.cflow"});
    }
}

TEST(Llama2cCorruptMatrix, EveryCaseIsRefusedWithItsOwnMessageAndWritesNothing) {
    const std::vector<Llama2cCase> table = llama2c_cases();
    ASSERT_GE(table.size(), 40u);
    RecordProperty("llama2c_cases", static_cast<int>(table.size()));
    test::expect_distinct_expectations(table);
    for (size_t i = 0; i < table.size(); ++i) {
        const Llama2cCase& c = table[i];
        SCOPED_TRACE(c.name);
        const auto dir = test::temp_dir("case-" + std::to_string(i));
        test::write_bytes(dir / "model.bin", c.checkpoint());
        test::write_bytes(dir / "tokenizer.bin", c.tok());
        const auto out = test::temp_dir("out-" + std::to_string(i));
        test::expect_refused(test::convert_into((dir / "model.bin").string(), (dir / "tokenizer.bin").string(), out), c.want,
                             c.damaged_tokenizer ? "tokenizer.bin" : "model.bin");
    }
}

// A checkpoint or tokenizer that is not there is the OS's answer.
TEST(Llama2cCorruptMatrix, MissingFilesAreIoErrorsAndWriteNothing) {
    const auto dir = test::temp_dir("missing");
    test::write_bytes(dir / "model.bin", legacy_checkpoint());
    const auto out = test::temp_dir("missing-out");
    test::expect_refused(test::convert_into((dir / "model.bin").string(), (dir / "absent-tok.bin").string(), out),
                         {"absent-tok.bin", ErrorKind::Io, Stage::Open}, "absent-tok.bin");
    test::expect_refused(test::convert_into((dir / "absent.bin").string(), (dir / "absent-tok.bin").string(), out),
                         {"absent.bin", ErrorKind::Io, Stage::Open}, "absent.bin");
}

} // namespace
} // namespace cflow
