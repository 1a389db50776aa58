// `cflow perplexity` end to end on the trained stories260K: real TinyStories text scores far better
// than the same words shuffled, text and --json output agree, bad input fails with one line.
// Also `cflow generate` without MODEL (the bundled default model beside the executable).
#include <gtest/gtest.h>
#include <cmath>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "cli_runner.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_text(const std::filesystem::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

double printed_perplexity(const CommandResult& r) {
    std::smatch m;
    const bool found = std::regex_search(r.out, m, std::regex(R"(^perplexity ([0-9.]+)[,\n])"));
    EXPECT_TRUE(found) << r.out;
    return found ? std::stod(m[1]) : -1;
}

class PerplexityCli : public ::testing::Test {
protected:
    void SetUp() override {
        const auto dir = shared_asset("assets/models/llama2c-stories260K");
        text_ = shared_asset("assets/corpora/tinystories/tinystories_sample.cs336.txt");
        if (dir.empty() || text_.empty() || !std::filesystem::exists(dir / "stories260K.bin") ||
            !std::filesystem::exists(text_))
            GTEST_SKIP() << "stories260K / TinyStories assets not found: this test needs ../shared beside the repository";
        tmp_ = temp_dir("perplexity_cli");
        model_ = (tmp_ / "stories260K.cflow").string();
        auto r = run_cflow({"convert", (dir / "stories260K.bin").string(), "--tokenizer", (dir / "tok512.bin").string(),
                            "-o", model_, "--quant", "f32", "--quiet"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    std::filesystem::path text_, tmp_;
    std::string model_;
};

TEST_F(PerplexityCli, RealStoriesScoreFarBetterThanShuffledWords) {
    auto real = run_cflow({"perplexity", model_, "-f", text_.string(), "--ctx", "128", "--max-tokens", "1500"});
    ASSERT_EQ(real.exit_code, 0) << real.err;
    const double real_ppl = printed_perplexity(real);
    EXPECT_NE(real.out.find("1500 scored tokens"), std::string::npos) << real.out;

    // Same words, same documents, random order: a story model must find this much less likely.
    std::istringstream words_in(read_text(text_).substr(0, 12000));
    std::vector<std::string> words{std::istream_iterator<std::string>(words_in), std::istream_iterator<std::string>()};
    std::shuffle(words.begin(), words.end(), std::mt19937(7));
    std::string shuffled;
    for (size_t i = 0; i < words.size(); ++i) shuffled += words[i] + (i % 120 == 119 ? "\n\n" : " ");
    write_text(tmp_ / "shuffled.txt", shuffled);
    auto noise = run_cflow({"perplexity", model_, "-f", (tmp_ / "shuffled.txt").string(), "--ctx", "128", "--max-tokens", "1500"});
    ASSERT_EQ(noise.exit_code, 0) << noise.err;
    const double noise_ppl = printed_perplexity(noise);
    std::cout << "[perplexity] stories260K on TinyStories " << real_ppl << ", on the same words shuffled " << noise_ppl << "\n";
    EXPECT_GT(real_ppl, 1.0);
    EXPECT_LT(real_ppl * 2.0, noise_ppl);

    auto json = run_cflow({"perplexity", model_, "-f", text_.string(), "--ctx", "128", "--max-tokens", "1500", "--json",
                           "--threads", "1"});
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    EXPECT_NEAR(j.at("perplexity").get<double>(), real_ppl, 1e-3 * real_ppl);
    EXPECT_EQ(j.at("scored_tokens").get<int>(), 1500);
    EXPECT_EQ(j.at("ctx").get<int>(), 128);
    EXPECT_EQ(j.at("stride").get<int>(), 128);
    EXPECT_EQ(j.at("kv_cache").get<std::string>(), "f32") << "perplexity measures: the exact cache unless asked";
    // Bits per byte (issue 37: comparable across tokenizers): the same NLL over the scored text's bytes.
    const double bytes = j.at("scored_bytes").get<double>();
    EXPECT_GT(bytes, 1500.0) << "1500 tokens of a 512-token vocabulary stand for more than a byte each";
    EXPECT_NEAR(j.at("bits_per_byte").get<double>(), j.at("mean_nll").get<double>() * 1500.0 / std::log(2.0) / bytes, 1e-9);
    EXPECT_NE(real.out.find(" bits per byte ("), std::string::npos) << real.out;
}

TEST_F(PerplexityCli, OverlappingWindowsSeeMoreHistoryAndNeverScoreWorse) {
    auto plain = run_cflow({"perplexity", model_, "-f", text_.string(), "--ctx", "32", "--max-tokens", "600"});
    auto strided = run_cflow({"perplexity", model_, "-f", text_.string(), "--ctx", "32", "--stride", "8", "--max-tokens", "600"});
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    ASSERT_EQ(strided.exit_code, 0) << strided.err;
    EXPECT_LT(printed_perplexity(strided), printed_perplexity(plain));  // >= 24 tokens of history instead of 0..31
}

TEST_F(PerplexityCli, BadInputFailsWithOneLine) {
    expect_one_line_failure(run_cflow({"perplexity", model_}), "missing -f TEXT");
    expect_one_line_failure(run_cflow({"perplexity", model_, "-f", (tmp_ / "absent.txt").string()}), "absent.txt: cannot open: No such file or directory");
    write_text(tmp_ / "blank.txt", " \n\n \n");
    expect_one_line_failure(run_cflow({"perplexity", model_, "-f", (tmp_ / "blank.txt").string()}), "no text to score");
    expect_one_line_failure(run_cflow({"perplexity", model_, "-f", text_.string(), "--ctx", "100000"}),
                            "exceeds the model's trained context of 512 positions");
    expect_one_line_failure(run_cflow({"perplexity", model_, "-f", text_.string(), "--ctx", "16", "--stride", "32"}),
                            "stride 32 is larger than the window 16");
    expect_one_line_failure(run_cflow({"perplexity", (tmp_ / "absent.cflow").string(), "-f", text_.string()}), "absent.cflow");
}

// --llama-chunks against llama.cpp's own number on the same file: stories260K.gguf (F32) converted
// without re-quantising, the whole prefix text, -c 128. The golden value is llama-perplexity's final
// estimate at llama.cpp 3f545be (`llama-perplexity -m stories260K.gguf -f <text> -c 128 -t 2`):
// 786 chunks, PPL = 6.0256.
TEST(PerplexityLlamaChunks, MatchesLlamaPerplexityOnTheSameGguf) {
    const auto gguf = shared_asset("assets/models/llama2c-stories260K/stories260K.gguf");
    const auto text = shared_asset("assets/corpora/tinystories/tinystories_prefix.Niklas6-Mini_GPT.txt");
    if (gguf.empty() || text.empty() || !std::filesystem::exists(gguf) || !std::filesystem::exists(text))
        GTEST_SKIP() << "stories260K.gguf / TinyStories prefix not found: this test needs ../shared beside the repository";
    const auto model = (temp_dir("perplexity_llama_chunks") / "stories260K.cflow").string();
    auto converted = run_cflow({"convert", gguf.string(), "-o", model, "--quant", "f32", "--quiet"});
    ASSERT_EQ(converted.exit_code, 0) << converted.err;

    auto r = run_cflow({"perplexity", model, "-f", text.string(), "--ctx", "128", "--llama-chunks", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    constexpr double kLlamaPerplexity = 6.0256;  // llama.cpp 3f545be, printed to 4 decimals
    constexpr double kAgreement = 1e-3;          // relative: float summation order differs between the engines
    std::cout << "[perplexity] --llama-chunks " << j.at("perplexity").get<double>() << " vs llama-perplexity "
              << kLlamaPerplexity << "\n";
    EXPECT_EQ(j.at("recipe").get<std::string>(), "llama-chunks");
    EXPECT_EQ(j.at("stream_tokens").get<int>(), 100708);  // BOS + the text, as llama.cpp tokenizes it
    EXPECT_EQ(j.at("windows").get<int>(), 786);           // floor(100708 / 128)
    EXPECT_EQ(j.at("scored_tokens").get<int>(), 786 * (128 - 64 - 1));
    EXPECT_NEAR(j.at("perplexity").get<double>(), kLlamaPerplexity, kAgreement * kLlamaPerplexity);

    expect_one_line_failure(
        run_cflow({"perplexity", model, "-f", text.string(), "--ctx", "128", "--stride", "64", "--llama-chunks"}),
        "--stride has no meaning with --llama-chunks");
}

TEST(GenerateDefaultModel, WithoutModelArgumentUsesTheBundledModel) {
    const auto bundled = std::filesystem::path(CFLOW_CLI_PATH).parent_path() / "default-model.cflow";
    if (!std::filesystem::exists(bundled)) GTEST_SKIP() << "no default-model.cflow beside " << CFLOW_CLI_PATH;
    auto r = run_cflow({"generate", "-p", "Once upon a time", "-n", "8", "--temp", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("Once upon a time", 0), 0u) << r.out;
    EXPECT_GT(r.out.size(), std::string("Once upon a time").size());

    // A copy of the executable with nothing beside it says what is missing.
    const auto lonely = temp_dir("lonely_cli") / "cflow";
    std::filesystem::copy_file(CFLOW_CLI_PATH, lonely, std::filesystem::copy_options::overwrite_existing);
    const auto err = lonely.parent_path() / "err";
    const std::string cmd = "'" + lonely.string() + "' generate -p x -n 1 >/dev/null 2>'" + err.string() + "'";
    EXPECT_NE(std::system(cmd.c_str()), 0);
    EXPECT_NE(read_text(err).find("no bundled default model"), std::string::npos) << read_text(err);
}

} // namespace
} // namespace cflow::test
