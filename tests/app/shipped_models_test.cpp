// Every model the repository ships (resources/models/models.json: the embedded default model and
// the zoo's other candidates) loads, carries the header fields its manifest entry promises (combine
// style, delays, geometry, quantization) and writes English-looking story text: sampled 32-token
// continuations are mostly whole words of the model's own BPE vocabulary (which the trainer learned
// from the training stories), not one word repeated, and — where ../shared is present — at least
// half of their adjacent word pairs also occur in real TinyStories text. A negative control shows
// the checks reject token salad.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>

#include "cflow/engine/generation/generate.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/tokenizer/tokenizer.h"
#include "test_support.h"

namespace cflow::test {
namespace {

namespace fs = std::filesystem;

constexpr double kMinDictionaryShare = 0.80;  // of the generated words; token salad scores ~0.3-0.5
constexpr size_t kMinWords = 12;              // 32 story tokens are ~20-28 words
constexpr double kMinDistinctShare = 0.40;    // distinct / all words; "the the the ..." scores ~0.05
constexpr int kGeneratedTokens = 32;
constexpr double kMinKnownBigramShare = 0.50;  // adjacent word pairs also found in real TinyStories text

fs::path resources_dir() { return fs::path(CFLOW_SOURCE_DIR) / "resources"; }

nlohmann::json manifest() {
    std::ifstream in(resources_dir() / "models" / "models.json");
    EXPECT_TRUE(in) << "resources/models/models.json is missing";
    return in ? nlohmann::json::parse(in) : nlohmann::json::object();
}

// Whole-word tokens of the vocabulary: pieces that decode to " word" (ASCII letters), lowercased.
std::set<std::string> vocabulary_words(const Tokenizer& tokenizer) {
    std::set<std::string> words;
    for (size_t id = 0; id < tokenizer.vocab_size(); ++id) {
        if (tokenizer.is_control(int32_t(id))) continue;
        const std::string text = tokenizer.token_bytes(int32_t(id));
        if (text.size() < 2 || text[0] != ' ') continue;
        std::string word;
        bool letters = true;
        for (size_t i = 1; i < text.size() && letters; ++i) {
            letters = std::isalpha(static_cast<unsigned char>(text[i])) != 0;
            word += char(std::tolower(static_cast<unsigned char>(text[i])));
        }
        if (letters) words.insert(word);
    }
    return words;
}

// Words = maximal runs of ASCII letters, lowercased.
std::vector<std::string> words_of(const std::string& text) {
    std::vector<std::string> words;
    std::string word;
    for (char c : text) {
        if (std::isalpha(static_cast<unsigned char>(c))) {
            word += char(std::tolower(static_cast<unsigned char>(c)));
        } else if (!word.empty()) {
            words.push_back(word);
            word.clear();
        }
    }
    if (!word.empty()) words.push_back(word);
    return words;
}

// Word bigrams of real children's stories (../shared TinyStories text, which no model trained on).
std::set<std::string> tinystories_bigrams() {
    std::set<std::string> bigrams;
    const auto path = shared_asset("assets/corpora/tinystories/tinystories_prefix.Niklas6-Mini_GPT.txt");
    if (path.empty() || !fs::exists(path)) return bigrams;
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto words = words_of(text);
    for (size_t i = 1; i < words.size(); ++i) bigrams.insert(words[i - 1] + " " + words[i]);
    return bigrams;
}

double known_bigram_share(const std::string& text, const std::set<std::string>& bigrams) {
    const auto words = words_of(text);
    size_t known = 0;
    for (size_t i = 1; i < words.size(); ++i) known += bigrams.count(words[i - 1] + " " + words[i]);
    return words.size() > 1 ? double(known) / double(words.size() - 1) : 0;
}

struct WordScore {
    size_t words = 0;
    size_t known = 0;
    std::set<std::string> distinct;
    double distinct_share() const { return words ? double(distinct.size()) / double(words) : 0; }
    double share() const { return words ? double(known) / double(words) : 0; }
};

WordScore score_words(const std::string& text, const std::set<std::string>& dictionary) {
    WordScore score;
    for (const std::string& word : words_of(text)) {
        ++score.words;
        score.known += dictionary.count(word);
        score.distinct.insert(word);
    }
    return score;
}

std::string sample_text(const std::shared_ptr<const Model>& model, const std::string& prompt, uint64_t seed) {
    auto session = Session::create(model, SessionOptions{1, 256});
    EXPECT_TRUE(session.ok()) << (session.ok() ? "" : session.error());
    if (!session.ok()) return {};
    GenerateRequest request;
    request.prompt = model->tokenizer().encode(prompt, /*add_special=*/true);
    request.max_tokens = kGeneratedTokens;
    request.sampling.temperature = 0.8f;
    request.sampling.seed = seed;
    std::string text;
    auto stats = generate(**session, request, [&](int32_t, std::string_view piece) {
        text += piece;
        return true;
    });
    EXPECT_TRUE(stats.ok()) << (stats.ok() ? "" : stats.error());
    return text;
}

TEST(ShippedModels, ManifestListsEveryShippedModelFile) {
    const auto m = manifest();
    ASSERT_TRUE(m.contains("models")) << "resources/models/models.json has no \"models\" list";
    std::set<std::string> listed;
    for (const auto& entry : m["models"]) listed.insert(entry.at("file").get<std::string>());
    std::set<std::string> on_disk;
    for (const auto& e : fs::recursive_directory_iterator(resources_dir()))
        if (e.path().extension() == ".cflow" || e.path().extension() == ".vflow")
            on_disk.insert(fs::relative(e.path(), resources_dir()).generic_string());
    EXPECT_EQ(listed, on_disk);
    size_t defaults = 0;
    for (const auto& entry : m["models"]) defaults += entry.value("default", false) ? 1 : 0;
    EXPECT_EQ(defaults, 1u) << "exactly one entry is the default model";
}

TEST(ShippedModels, EveryModelLoadsWithItsPromisedHeaderAndWritesEnglishLookingText) {
    const auto m = manifest();
    ASSERT_TRUE(m.contains("models"));
    ASSERT_GE(m["models"].size(), 1u);
    for (const auto& entry : m["models"]) {
        const std::string file = entry.at("file");
        SCOPED_TRACE(file);
        auto model = Model::load((resources_dir() / file).string());
        ASSERT_TRUE(model.ok()) << model.error();
        const GlobalHeader& h = (*model)->header();
        EXPECT_EQ(int(h.combine_style), entry.at("combine_style").get<int>());
        EXPECT_EQ(int(h.dense_delay), entry.at("dense_delay").get<int>());
        EXPECT_EQ(int(h.expert_delay), entry.at("expert_delay").get<int>());
        EXPECT_EQ(h.d_model, entry.at("d_model").get<uint32_t>());
        EXPECT_EQ(h.n_experts, entry.at("n_experts").get<uint32_t>());
        EXPECT_EQ(h.top_k, entry.at("top_k").get<uint32_t>());
        EXPECT_EQ(int(h.weight_quant), entry.at("weight_quant").get<int>());
        EXPECT_EQ((*model)->effective_layers(), entry.at("effective_layers").get<uint32_t>());

        const auto dictionary = vocabulary_words((*model)->tokenizer());
        static const std::set<std::string> bigrams = tinystories_bigrams();  // empty without ../shared
        ASSERT_GT(dictionary.size(), 500u) << "the vocabulary should hold the stories' common words";
        for (const auto& [prompt, seed] : {std::pair{"Once upon a time", 1}, std::pair{"The little dog", 2}}) {
            const std::string text = sample_text(*model, prompt, seed);
            const WordScore score = score_words(text, dictionary);
            std::cout << "[shipped] " << file << " (" << prompt << "): " << score.known << "/" << score.words
                      << " dictionary words: " << prompt << text << "\n";
            EXPECT_GE(score.words, kMinWords) << text;
            EXPECT_GE(score.share(), kMinDictionaryShare) << text;
            EXPECT_GE(score.distinct_share(), kMinDistinctShare) << "degenerate repetition: " << text;
            if (!bigrams.empty()) {
                const double share = known_bigram_share(text, bigrams);
                std::cout << "[shipped]   word pairs also in TinyStories: " << share << "\n";
                EXPECT_GE(share, kMinKnownBigramShare) << text;
            }
        }

        // Negative control: 32 uniformly random tokens of the same vocabulary fail the same check.
        std::mt19937 rng(3);
        std::uniform_int_distribution<int32_t> any(0, int32_t((*model)->tokenizer().vocab_size()) - 1);
        std::vector<int32_t> salad(kGeneratedTokens);
        for (auto& id : salad) id = any(rng);
        const std::string salad_text = (*model)->tokenizer().decode(salad);
        const WordScore noise = score_words(salad_text, dictionary);
        std::cout << "[shipped] " << file << " token salad control: " << noise.known << "/" << noise.words
                  << " dictionary words, word pairs in TinyStories " << known_bigram_share(salad_text, bigrams) << "\n";
        if (!bigrams.empty()) {
            EXPECT_LT(known_bigram_share(salad_text, bigrams), kMinKnownBigramShare)
                << "the word-pair check does not discriminate";
        }
        EXPECT_LT(noise.share(), kMinDictionaryShare) << "the English check does not discriminate";
    }
}

} // namespace
} // namespace cflow::test
