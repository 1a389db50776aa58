// A reply longer than the context (issue 37, "context that keeps going"): with a shift, generate()
// drops half of the tokens after the kept head when the cache is full, feeds the kept tail again
// and goes on; every token after each shift is the one a fresh session prefilled with exactly the
// kept tokens picks (greedy). Through ChatSession the system prompt is the kept head, the cache
// record follows the shifts, and "stop" still stops.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <vector>

#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

constexpr uint32_t kShiftContext = 64;
constexpr int32_t kShiftReplyTokens = 150;  // past two shifts of a 64-token context

std::shared_ptr<const Model> shift_model() {
    test::SyntheticSpec spec;
    spec.vocab = 320;
    spec.seed = 11;
    spec.max_seq_len = 256;
    SourceModel source = test::make_synthetic_model(spec);
    source.metadata.set("tokenizer.chat_template",
                        std::string("{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\\n' }}{% endfor %}"
                                    "{% if add_generation_prompt %}assistant: {% endif %}"));
    const auto path = test::temp_dir("context_shift") / "model.cflow";
    ConvertOptions options;
    options.weight_quant = DType::F32;
    EXPECT_TRUE(convert_to_cflow(source, path.string(), options).ok());
    auto model = Model::load(path.string());
    EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error());
    return model.ok() ? model.value() : nullptr;
}

std::unique_ptr<Session> shift_session(const std::shared_ptr<const Model>& model) {
    SessionOptions options;
    options.threads = 1;
    options.context_length = kShiftContext;
    options.kv_cache = KvCacheType::F32;
    auto session = Session::create(model, options);
    EXPECT_TRUE(session.ok()) << (session.ok() ? "" : session.error());
    return session ? std::move(session).value() : nullptr;
}

int32_t shift_argmax(std::span<const float> logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST(ContextShift, AFullContextShiftsAndEachTokenIsAFreshPrefillsPick) {
    auto model = shift_model();
    ASSERT_TRUE(model);
    auto session = shift_session(model);
    ASSERT_TRUE(session);
    GenerateRequest request;
    request.prompt = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};
    request.sampling.temperature = 0;
    request.max_tokens = kShiftReplyTokens;
    request.stop_at_end_of_generation = false;
    const uint32_t keep = 3;
    request.context_shift = ContextShift{{}, keep};
    std::vector<int32_t> generated;
    auto stats = generate(*session, request, [&](int32_t token, std::string_view) {
        if (token >= 0) generated.push_back(token);
        return true;
    });
    ASSERT_TRUE(stats.ok()) << stats.error();
    EXPECT_EQ(stats->stop_reason, StopReason::MaxTokens) << "a shifting reply runs to max_tokens";
    ASSERT_EQ(generated.size(), size_t(kShiftReplyTokens));
    const uint32_t discard = context_shift_discard(kShiftContext, keep);
    EXPECT_EQ(discard, (kShiftContext - keep) / 2);
    EXPECT_GE(stats->context_shifts, 2u);
    EXPECT_EQ(stats->shift_dropped_tokens, stats->context_shifts * discard);
    EXPECT_LE(session->position(), kShiftContext);

    // Replay: feed each generated token as generate() did (shifting a full context first), and from
    // the first shift on, a fresh session holding exactly the kept tokens must pick the next one.
    std::vector<int32_t> all = request.prompt;
    all.insert(all.end(), generated.begin(), generated.end());
    std::vector<int32_t> content = request.prompt;
    uint32_t shifts = 0;
    std::unique_ptr<Session> fresh;
    std::span<const float> logits;
    for (size_t i = request.prompt.size(); i < all.size(); ++i) {
        if (content.size() == kShiftContext) {
            content.erase(content.begin() + keep, content.begin() + keep + discard);
            content.push_back(all[i]);
            ++shifts;
            fresh = shift_session(model);
            ASSERT_TRUE(fresh);
            auto r = fresh->prefill(content, true);
            ASSERT_TRUE(r.ok()) << r.error();
            logits = r.value();
        } else {
            content.push_back(all[i]);
            if (fresh) {
                auto r = fresh->step(all[i], true);
                ASSERT_TRUE(r.ok()) << r.error();
                logits = r.value();
            }
        }
        if (fresh && i + 1 < all.size()) {
            EXPECT_EQ(shift_argmax(logits), all[i + 1]) << "token " << i + 1 << " after shift " << shifts;
        }
    }
    EXPECT_EQ(shifts, stats->context_shifts);
}

TEST(ContextShift, ChatKeepsTheSystemPromptAndRecordsTheShiftedCache) {
    auto model = shift_model();
    ASSERT_TRUE(model);
    const std::vector<ChatMessage> messages = {{"system", "be brief", ""}, {"user", "hello the cat", ""}};
    for (ContextPolicy policy : {ContextPolicy::Stop, ContextPolicy::SlidingWindow, ContextPolicy::DropOldest}) {
        SCOPED_TRACE(std::string(context_policy_name(policy)));
        ChatSession chat(model, shift_session(model));
        PrepareOptions first;
        first.policy = policy;
        auto turn = chat.prepare(messages, first);
        ASSERT_TRUE(turn.ok()) << turn.error();
        if (policy != ContextPolicy::Stop) {
            EXPECT_GT(turn->kept_head, 1u) << "the system prompt's tokens are the kept head";
        }
        ReplyOptions options;
        options.sampling.temperature = 0;
        options.max_tokens = kShiftReplyTokens;
        options.ignore_end_of_turn = true;
        options.context_policy = policy;
        ChatTurnOutcome outcome;
        ASSERT_TRUE(chat.reply(*turn, options, nullptr, nullptr, outcome).ok());
        EXPECT_EQ(chat.cached_tokens().size(), chat.session().position());
        if (policy == ContextPolicy::Stop) {
            EXPECT_EQ(outcome.stats.stop_reason, StopReason::ContextFull);
            EXPECT_EQ(outcome.stats.context_shifts, 0u);
            continue;
        }
        EXPECT_EQ(outcome.stats.stop_reason, StopReason::MaxTokens);
        EXPECT_EQ(outcome.tokens.size(), size_t(kShiftReplyTokens));
        EXPECT_GE(outcome.stats.context_shifts, 1u);
        const std::vector<int32_t>& cached = chat.cached_tokens();
        ASSERT_GE(cached.size(), turn->kept_head);
        EXPECT_TRUE(std::equal(turn->ids.begin(), turn->ids.begin() + std::ptrdiff_t(turn->kept_head), cached.begin()))
            << "the system prompt left the cache";
        // The cache ends with the reply's last tokens, as the session holds them.
        EXPECT_TRUE(std::equal(outcome.tokens.end() - 8, outcome.tokens.end(), cached.end() - 8));

        // The conversation goes on: the next turn plans its reuse on the shifted record.
        std::vector<ChatMessage> next = messages;
        next.push_back({"assistant", outcome.text, ""});
        next.push_back({"user", "and then", ""});
        PrepareOptions prepare;
        prepare.policy = policy;
        prepare.reserve_tokens = 16;
        auto second = chat.prepare(next, prepare);
        ASSERT_TRUE(second.ok()) << second.error();
        EXPECT_GE(second->reused_tokens, turn->kept_head) << "the system prompt stays cached";
        options.max_tokens = 8;
        ASSERT_TRUE(chat.reply(*second, options, nullptr, nullptr, outcome).ok());
        EXPECT_EQ(outcome.tokens.size(), 8u);
    }
}

} // namespace
} // namespace cflow
