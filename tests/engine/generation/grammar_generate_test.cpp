// generate() under a grammar, on the bundled trained model (4096-token SPM vocabulary): at
// temperature 1 with every truncation off, every seed's output is in the grammar's language and
// the reply ends because the grammar is complete; a vocabulary that cannot spell the grammar is
// a clear error, not a hang.
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/generation/grammar.h"
#include "cflow/engine/generation/grammar_vocabulary.h"
#include "test_support.h"

namespace cflow {
namespace {

std::shared_ptr<const Model> grammar_trained_model() {
    auto model = Model::load(std::string(CFLOW_SOURCE_DIR) + "/resources/default-model.cflow");
    EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error());
    return model.ok() ? model.value() : nullptr;
}

struct GrammarReply {
    std::string text;
    GenerateStats stats;
    std::string error;
};

GrammarReply grammar_reply(const std::shared_ptr<const Model>& model, const std::string& source, uint64_t seed,
                           std::shared_ptr<const GrammarVocabulary> vocabulary = nullptr) {
    SessionOptions options;
    options.threads = 1;
    auto session = Session::create(model, options);
    EXPECT_TRUE(session.ok());
    auto grammar = parse_grammar(source);
    EXPECT_TRUE(grammar.ok()) << (grammar.ok() ? "" : grammar.error());
    GenerateRequest request;
    request.prompt = model->tokenizer().encode("Once upon a time", true);
    request.sampling.temperature = 1.0f;
    request.sampling.top_k = 0;
    request.sampling.top_p = 1.0f;
    request.sampling.min_p = 0.0f;
    request.sampling.seed = seed;
    request.max_tokens = 200;
    request.grammar = std::make_shared<const Grammar>(std::move(grammar.value()));
    request.grammar_vocabulary = std::move(vocabulary);
    GrammarReply reply;
    auto stats = generate(**session, request, [&](int32_t, std::string_view text) {
        reply.text += text;
        return true;
    });
    if (stats) reply.stats = *stats;
    else reply.error = stats.error();
    return reply;
}

TEST(GrammarGenerate, YesOrNoForEverySeed) {
    auto model = grammar_trained_model();
    ASSERT_TRUE(model);
    for (uint64_t seed = 1; seed <= 8; ++seed) {
        const GrammarReply reply = grammar_reply(model, R"g(root ::= "yes" | "no")g", seed);
        ASSERT_TRUE(reply.error.empty()) << reply.error;
        EXPECT_TRUE(reply.text == "yes" || reply.text == "no") << "seed " << seed << ": '" << reply.text << "'";
        EXPECT_EQ(reply.stats.stop_reason, StopReason::GrammarComplete) << "seed " << seed;
    }
}

TEST(GrammarGenerate, SmallJsonObjectForEverySeed) {
    auto model = grammar_trained_model();
    ASSERT_TRUE(model);
    const char* grammar = R"g(root ::= "{" ws "\"name\"" ws ":" ws name ws "," ws "\"age\"" ws ":" ws age ws "}"
name ::= "\"" [a-zA-Z ]{1,16} "\""
age ::= [1-9] [0-9]?
ws ::= " "?
)g";
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        const GrammarReply reply = grammar_reply(model, grammar, seed);
        ASSERT_TRUE(reply.error.empty()) << reply.error;
        SCOPED_TRACE("seed " + std::to_string(seed) + ": '" + reply.text + "'");
        const auto json = nlohmann::json::parse(reply.text, nullptr, /*allow_exceptions=*/false);
        ASSERT_FALSE(json.is_discarded());
        ASSERT_TRUE(json.is_object());
        EXPECT_TRUE(json.at("name").is_string());
        EXPECT_TRUE(json.at("age").is_number_integer());
        EXPECT_TRUE(reply.stats.stop_reason == StopReason::GrammarComplete ||
                    reply.stats.stop_reason == StopReason::EndOfGeneration);
    }
}

TEST(GrammarGenerate, AVocabularyThatCannotSpellTheGrammarIsAnError) {
    auto model = grammar_trained_model();
    ASSERT_TRUE(model);
    // The model's vocabulary size, every token spelling "q".
    auto only_q = std::make_shared<const GrammarVocabulary>(std::vector<std::string>(model->tokenizer().vocab_size(), "q"),
                                                            std::vector<bool>{});
    const GrammarReply reply = grammar_reply(model, R"g(root ::= "yes")g", 1, only_q);
    EXPECT_EQ(reply.error, "generate: no token of the vocabulary continues the grammar after 0 generated tokens");
}

} // namespace
} // namespace cflow
