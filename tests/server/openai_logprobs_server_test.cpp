// Log probabilities through the OpenAI API (`logprobs`, `top_logprobs`; the legacy completions'
// `logprobs: N`) on the synthetic chat model, checked against the engine's own logits for the
// same prompt and seed: the same ChatSession flow run in the test, its rows captured with
// ReplyOptions::on_sampled. Tolerance 1e-5 on each logprob: the server and the test both work in
// double from the same f32 row, so only the order of the sum differs (JSON keeps 17 digits).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/engine/chat/chat_session.h"
#include "cflow/server/openai_response.h"
#include "server_test_fixture.h"

namespace cflow::server {
namespace {

using nlohmann::json;

constexpr double kLogprobTolerance = 1e-5;

// One generated token as the engine saw it: its id, the log-softmax of its row and the row's
// ids by descending logit (ties: lower id).
struct EngineStep {
    int32_t token = -1;
    double logprob = 0;
    std::vector<int32_t> ranked;
    std::vector<double> ranked_logprobs;
};

std::vector<EngineStep> engine_steps(float temperature, uint64_t seed, int max_tokens) {
    SessionOptions options;
    options.threads = 1;
    auto session = Session::create(chat_model(), options);
    EXPECT_TRUE(session.ok());
    ChatSession chat(chat_model(), std::move(session).value());
    auto turn = chat.prepare({{"system", "You are terse.", ""}, {"user", "Say something.", ""}});
    EXPECT_TRUE(turn.ok());
    ReplyOptions reply;
    reply.sampling.temperature = temperature;
    reply.sampling.seed = seed;
    reply.max_tokens = max_tokens;
    std::vector<EngineStep> steps;
    reply.on_sampled = [&](int32_t token, std::span<const float> logits) {
        double max_logit = -std::numeric_limits<double>::infinity();
        for (float l : logits) max_logit = std::max(max_logit, double(l));
        double sum = 0;
        for (float l : logits) sum += std::exp(double(l) - max_logit);
        const double norm = max_logit + std::log(sum);
        EngineStep step;
        step.token = token;
        step.logprob = double(logits[size_t(token)]) - norm;
        for (size_t i = 0; i < logits.size(); ++i) step.ranked.push_back(int32_t(i));
        std::stable_sort(step.ranked.begin(), step.ranked.end(),
                         [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
        for (int32_t id : step.ranked) step.ranked_logprobs.push_back(double(logits[size_t(id)]) - norm);
        steps.push_back(std::move(step));
    };
    ChatTurnOutcome outcome;
    EXPECT_TRUE(chat.reply(*turn, reply, {}, nullptr, outcome).ok());
    return steps;
}

std::string bytes_of(const json& array) {
    std::string bytes;
    for (const json& b : array) bytes += char(b.get<int>());
    return bytes;
}

// choices[0].logprobs.content of a whole body, or of a stream's chunks joined in order.
json chat_content(const std::string& body, bool streamed) {
    if (!streamed) return json::parse(body)["choices"][0]["logprobs"]["content"];
    json joined = json::array();
    for (const std::string& data : parse_sse_events(body)) {
        if (data == "[DONE]") continue;
        const json chunk = json::parse(data);
        for (const json& choice : chunk["choices"]) {
            const json& logprobs = choice["logprobs"];
            if (logprobs.is_null()) {
                EXPECT_FALSE(choice["delta"].contains("content") && !choice["delta"]["content"].get<std::string>().empty())
                    << "a content chunk of a logprobs request carries its tokens: " << data;
                continue;
            }
            for (const json& entry : logprobs["content"]) joined.push_back(entry);
        }
    }
    return joined;
}

void expect_matches_engine(const json& content, const std::vector<EngineStep>& steps, size_t top_n, bool greedy) {
    const Tokenizer& tokenizer = chat_model()->tokenizer();
    ASSERT_EQ(content.size(), steps.size()) << content.dump();
    for (size_t i = 0; i < steps.size(); ++i) {
        const json& entry = content[i];
        SCOPED_TRACE("token " + std::to_string(i));
        EXPECT_EQ(bytes_of(entry["bytes"]), tokenizer.token_bytes(steps[i].token));
        EXPECT_NEAR(entry["logprob"].get<double>(), steps[i].logprob, kLogprobTolerance);
        const json& top = entry["top_logprobs"];
        ASSERT_EQ(top.size(), top_n);
        for (size_t k = 0; k < top_n; ++k) {
            EXPECT_EQ(bytes_of(top[k]["bytes"]), tokenizer.token_bytes(steps[i].ranked[k])) << "rank " << k;
            EXPECT_NEAR(top[k]["logprob"].get<double>(), steps[i].ranked_logprobs[k], kLogprobTolerance);
            if (k > 0) {
                EXPECT_GE(top[k - 1]["logprob"].get<double>(), top[k]["logprob"].get<double>()) << "sorted";
            }
        }
        if (greedy && top_n > 0) {
            EXPECT_EQ(top[0]["bytes"], entry["bytes"]) << "greedy: the chosen token is the most likely";
            EXPECT_DOUBLE_EQ(top[0]["logprob"].get<double>(), entry["logprob"].get<double>());
        }
    }
}

TEST(OpenAiLogprobs, TheChatAndLegacyShapesCarryBytesAndAlternatives) {
    LogprobList list(1);
    list[0].chosen = {7, "\xE2\x96", "\xE2\x96", -0.25};  // a token ending inside a character
    list[0].top = {{7, "a", "a", -0.25}, {9, "b", "b", -1.5}};
    list[0].text_offset = 3;
    const ResponseHeader header{"chatcmpl-x", 1, "m"};
    const json chat = json::parse(chat_chunk(header, "a", false, std::nullopt, &list))["choices"][0]["logprobs"];
    ASSERT_TRUE(chat.is_object()) << chat.dump();
    EXPECT_EQ(chat["content"][0]["bytes"], json::array({0xE2, 0x96}));
    EXPECT_EQ(chat["content"][0]["logprob"], -0.25);
    EXPECT_EQ(chat["content"][0]["top_logprobs"][1]["token"], "b");
    EXPECT_TRUE(json::parse(chat_chunk(header, "a", false, std::nullopt))["choices"][0]["logprobs"].is_null());
    const json legacy = json::parse(text_chunk(header, "a", std::nullopt, &list))["choices"][0]["logprobs"];
    EXPECT_EQ(legacy["token_logprobs"], json::array({-0.25}));
    EXPECT_EQ(legacy["top_logprobs"][0]["b"], -1.5);
    EXPECT_EQ(legacy["text_offset"], json::array({3}));
}

TEST(OpenAiLogprobs, GreedyChatLogprobsAreTheEnginesLogSoftmaxWholeAndStreamed) {
    TestServer t;
    ASSERT_TRUE(t.server);
    const std::vector<EngineStep> steps = engine_steps(0.0f, 3, 12);
    ASSERT_FALSE(steps.empty());
    const json extra = {{"temperature", 0}, {"logprobs", true}, {"top_logprobs", 5}};
    auto whole = t.post("/v1/chat/completions", chat_body(12, 3, false, extra));
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    const json whole_content = chat_content(whole->body, false);
    expect_matches_engine(whole_content, steps, 5, true);
    EXPECT_EQ(whole_content.size(), json::parse(whole->body)["usage"]["completion_tokens"].get<size_t>());

    auto streamed = t.post("/v1/chat/completions", chat_body(12, 3, true, extra));
    ASSERT_TRUE(streamed);
    ASSERT_EQ(streamed->status, 200);
    EXPECT_EQ(chat_content(streamed->body, true), whole_content) << "the chunks' tokens join to the whole reply's";
}

TEST(OpenAiLogprobs, SampledTokensReportTheRawLogitsNotTheTemperaturesDistribution) {
    TestServer t;
    ASSERT_TRUE(t.server);
    // temperature 0.9 (chat_body's): the tokens follow the seed; their logprobs stay the raw row's.
    const std::vector<EngineStep> steps = engine_steps(0.9f, 11, 16);
    const json extra = {{"logprobs", true}, {"top_logprobs", 2}};
    auto whole = t.post("/v1/chat/completions", chat_body(16, 11, false, extra));
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    expect_matches_engine(chat_content(whole->body, false), steps, 2, false);
    auto streamed = t.post("/v1/chat/completions", chat_body(16, 11, true, extra));
    ASSERT_TRUE(streamed);
    EXPECT_EQ(chat_content(streamed->body, true), chat_content(whole->body, false));

    // Without top_logprobs each entry has an empty list; without logprobs the field is null.
    auto chosen_only = t.post("/v1/chat/completions", chat_body(4, 11, false, {{"logprobs", true}}));
    ASSERT_TRUE(chosen_only);
    for (const json& entry : chat_content(chosen_only->body, false)) EXPECT_TRUE(entry["top_logprobs"].empty());
    auto none = t.post("/v1/chat/completions", chat_body(4, 11, false));
    ASSERT_TRUE(none);
    EXPECT_TRUE(json::parse(none->body)["choices"][0]["logprobs"].is_null());
}

// Tokens whose text a stop string swallowed were generated all the same: they keep their entries
// (one per completion token), and a stream sends them with its last chunk.
TEST(OpenAiLogprobs, AStopStringsTokensKeepTheirEntriesWholeAndStreamed) {
    TestServer t;
    ASSERT_TRUE(t.server);
    auto first = t.post("/v1/chat/completions", chat_body(16, 5, false, {{"temperature", 0}}));
    ASSERT_TRUE(first);
    const std::string reply = json::parse(first->body)["choices"][0]["message"]["content"];
    ASSERT_GE(reply.size(), 6u) << reply;
    // A stop string from the middle of the reply (cut on a character boundary).
    size_t at = reply.size() / 2;
    while (at < reply.size() && (static_cast<unsigned char>(reply[at]) & 0xC0) == 0x80) ++at;
    size_t end = at + 1;
    while (end < reply.size() && (static_cast<unsigned char>(reply[end]) & 0xC0) == 0x80) ++end;
    const std::string stop = reply.substr(at, end - at);
    const json extra = {{"temperature", 0}, {"logprobs", true}, {"top_logprobs", 1}, {"stop", stop}};
    auto whole = t.post("/v1/chat/completions", chat_body(16, 5, false, extra));
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    const json body = json::parse(whole->body);
    ASSERT_EQ(body["choices"][0]["finish_reason"], "stop");
    const json content = chat_content(whole->body, false);
    EXPECT_EQ(content.size(), body["usage"]["completion_tokens"].get<size_t>());
    auto streamed = t.post("/v1/chat/completions", chat_body(16, 5, true, extra));
    ASSERT_TRUE(streamed);
    EXPECT_EQ(chat_content(streamed->body, true), content);
}

TEST(OpenAiLogprobs, OutOfRangeTopLogprobsIsA400NamingTheField) {
    TestServer t;
    ASSERT_TRUE(t.server);
    auto too_many = t.post("/v1/chat/completions", chat_body(4, 1, false, {{"logprobs", true}, {"top_logprobs", 21}}));
    ASSERT_TRUE(too_many);
    EXPECT_EQ(too_many->status, 400);
    EXPECT_EQ(json::parse(too_many->body)["error"]["param"], "top_logprobs");
    auto alone = t.post("/v1/chat/completions", chat_body(4, 1, false, {{"top_logprobs", 2}}));
    ASSERT_TRUE(alone);
    EXPECT_EQ(alone->status, 400);
    EXPECT_EQ(json::parse(alone->body)["error"]["param"], "top_logprobs");
}

TEST(OpenAiLogprobs, LegacyCompletionsGiveTokensTokenLogprobsTopLogprobsAndTextOffset) {
    TestServer t;
    ASSERT_TRUE(t.server);
    const json body = {{"model", "chat-model"}, {"prompt", "Once upon"}, {"max_tokens", 10}, {"seed", 5},
                       {"temperature", 0}, {"logprobs", 3}};
    auto whole = t.post("/v1/completions", body.dump());
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    const json reply = json::parse(whole->body);
    const json& logprobs = reply["choices"][0]["logprobs"];
    const std::string text = reply["choices"][0]["text"];
    const size_t tokens = reply["usage"]["completion_tokens"];
    ASSERT_EQ(logprobs["tokens"].size(), tokens);
    ASSERT_EQ(logprobs["token_logprobs"].size(), tokens);
    ASSERT_EQ(logprobs["top_logprobs"].size(), tokens);
    ASSERT_EQ(logprobs["text_offset"].size(), tokens);
    size_t previous_offset = 0;
    for (size_t i = 0; i < tokens; ++i) {
        const json& top = logprobs["top_logprobs"][i];
        EXPECT_GE(top.size(), 1u);
        EXPECT_LE(top.size(), 3u);
        // Greedy: the chosen token is among the alternatives, with the same logprob.
        ASSERT_TRUE(top.contains(logprobs["tokens"][i].get<std::string>())) << top.dump();
        EXPECT_DOUBLE_EQ(top[logprobs["tokens"][i].get<std::string>()].get<double>(), logprobs["token_logprobs"][i].get<double>());
        const size_t offset = logprobs["text_offset"][i];
        EXPECT_GE(offset, previous_offset);
        EXPECT_LE(offset, text.size());
        previous_offset = offset;
    }

    json streamed_body = body;
    streamed_body["stream"] = true;
    auto streamed = t.post("/v1/completions", streamed_body.dump());
    ASSERT_TRUE(streamed);
    json tokens_streamed = json::array(), logprobs_streamed = json::array(), offsets_streamed = json::array();
    for (const std::string& data : parse_sse_events(streamed->body)) {
        if (data == "[DONE]") continue;
        const json chunk = json::parse(data);
        const json& chunk_logprobs = chunk["choices"][0]["logprobs"];
        if (chunk_logprobs.is_null()) continue;
        for (const json& x : chunk_logprobs["tokens"]) tokens_streamed.push_back(x);
        for (const json& x : chunk_logprobs["token_logprobs"]) logprobs_streamed.push_back(x);
        for (const json& x : chunk_logprobs["text_offset"]) offsets_streamed.push_back(x);
    }
    EXPECT_EQ(tokens_streamed, logprobs["tokens"]);
    EXPECT_EQ(logprobs_streamed, logprobs["token_logprobs"]);
    EXPECT_EQ(offsets_streamed, logprobs["text_offset"]);

    auto refused = t.post("/v1/completions", json{{"prompt", "x"}, {"logprobs", 6}}.dump());
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400);
    EXPECT_EQ(json::parse(refused->body)["error"]["param"], "logprobs");
}

} // namespace
} // namespace cflow::server
