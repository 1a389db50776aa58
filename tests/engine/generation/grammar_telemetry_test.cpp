// The per-token telemetry says when a grammar masked the sampling (issue 33: the inspector marks
// grammar-masked steps): every generated step under a grammar carries how many tokens the
// grammar allowed and the vocabulary's size, prefill chunks and free replies carry zeros, and
// the JSON lines of --stats write the pair only for masked steps.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/forward/telemetry.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/generation/grammar.h"

namespace cflow {
namespace {

// The records of one reply; promptTokens: how many positions the prompt took.
std::vector<TokenTelemetry> telemetry_of_reply(const std::shared_ptr<const Grammar>& grammar, std::string& text,
                                               uint32_t& promptTokens) {
    auto model = Model::load(std::string(CFLOW_SOURCE_DIR) + "/resources/default-model.cflow");
    EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error());
    if (!model.ok()) return {};
    SessionOptions options;
    options.threads = 1;
    auto session = Session::create(model.value(), options);
    EXPECT_TRUE(session.ok());
    GenerateRequest request;
    request.prompt = model.value()->tokenizer().encode("Once upon a time", true);
    request.sampling.seed = 3;
    request.max_tokens = 12;
    promptTokens = uint32_t(request.prompt.size());
    request.grammar = grammar;
    std::vector<TokenTelemetry> steps;
    request.on_step = [&](const TokenTelemetry& t) { steps.push_back(t); };
    auto stats = generate(**session, request, [&](int32_t, std::string_view piece) {
        text += piece;
        return true;
    });
    EXPECT_TRUE(stats.ok()) << (stats.ok() ? "" : stats.error());
    return steps;
}

TEST(GrammarTelemetry, MaskedStepsCarryTheAllowedCountAndFreeStepsZero) {
    auto parsed = parse_grammar(R"g(root ::= "yes, " [a-z]{3,5} | "no, " [a-z]{3,5})g");
    ASSERT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error());
    const auto grammar = std::make_shared<const Grammar>(std::move(parsed.value()));

    std::string constrained;
    uint32_t promptTokens = 0;
    const std::vector<TokenTelemetry> masked = telemetry_of_reply(grammar, constrained, promptTokens);
    ASSERT_FALSE(masked.empty());
    size_t maskedSteps = 0;
    for (const TokenTelemetry& t : masked) {
        if (t.position < promptTokens) {  // the prompt's records: nothing was sampled
            EXPECT_EQ(t.grammarAllowedTokens, 0u) << "position " << t.position;
            EXPECT_EQ(t.grammarVocabTokens, 0u) << "position " << t.position;
            continue;
        }
        ++maskedSteps;
        EXPECT_EQ(t.grammarVocabTokens, 4096u) << "position " << t.position;
        EXPECT_GT(t.grammarAllowedTokens, 0u) << "position " << t.position;
        EXPECT_LT(t.grammarAllowedTokens, t.grammarVocabTokens) << "position " << t.position;
        const auto line = nlohmann::json::parse(to_json_line(t, false, false));
        EXPECT_EQ(line.value("grammarAllowedTokens", 0u), t.grammarAllowedTokens);
        EXPECT_EQ(line.value("grammarVocabTokens", 0u), 4096u);
    }
    EXPECT_GE(maskedSteps, 2u) << "reply '" << constrained << "'";

    std::string free;
    const std::vector<TokenTelemetry> unmasked = telemetry_of_reply(nullptr, free, promptTokens);
    ASSERT_FALSE(unmasked.empty());
    for (const TokenTelemetry& t : unmasked) {
        EXPECT_EQ(t.grammarAllowedTokens, 0u) << "position " << t.position;
        EXPECT_EQ(t.grammarVocabTokens, 0u) << "position " << t.position;
        EXPECT_FALSE(nlohmann::json::parse(to_json_line(t, false, true)).contains("grammarAllowedTokens"));
    }
}

} // namespace
} // namespace cflow
