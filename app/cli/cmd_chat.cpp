// cflow chat: an interactive multi-turn conversation in the terminal through the model's chat
// template. Each turn renders the whole conversation; when the new prompt extends what the KV
// cache already holds (previous prompt + reply), only the new tokens are prefilled.
// Reads stdin line by line, so it works from a pipe as well as from a terminal (chat_loop.h).
// With --endpoint URL the replies come from a remote server instead (cmd_chat_remote.cpp).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/whole_file.h"
#include "chat_args.h"
#include "chat_loop.h"
#include "commands.h"
#include "default_model.h"
#include "console.h"
#include "interrupt.h"

namespace cflow::cli {
namespace {

// The local engine's replies: each turn renders the whole conversation through the template and
// prefills only what the KV cache does not hold yet.
class LocalReplier final : public ChatReplier {
public:
    LocalReplier(ChatSession chat, SamplingArgs sampling, bool show_prompt, std::shared_ptr<const Grammar> reply_grammar)
        : chat_(std::move(chat)), sampling_(sampling), show_prompt_(show_prompt), reply_grammar_(std::move(reply_grammar)) {}

    void forget() override { chat_.forget(); }

    // One user message -> one streamed assistant reply. Errors end the chat; a conversation
    // that outgrows the context only drops this message.
    Status turn(Conversation& conversation, const std::string& user_text) override {
        ++turn_index_;
        conversation.turns.push_back({"user", user_text, ""});
        PrepareOptions prepare;
        prepare.policy = policy_;
        prepare.reserve_tokens = uint32_t(std::max(0, sampling_.max_tokens));
        auto prepared = chat_.prepare(conversation.messages(), prepare);
        if (!prepared) return prepared.take_error();
        if (prepared->dropped_messages > 0)
            std::fprintf(stderr, "[cflow] the %zu oldest messages no longer fit the context: left out of this turn\n",
                         prepared->dropped_messages);
        else if (prepared->dropped_tokens > 0)
            std::fprintf(stderr, "[cflow] sliding window: the oldest %zu tokens are left out of this turn\n",
                         prepared->dropped_tokens);
        if (!prepared->fits()) {
            conversation.turns.pop_back();
            std::fprintf(stderr, "[cflow] the conversation (%zu tokens) no longer fits the context of %u tokens; "
                                 "message dropped (/reset to start over)\n", prepared->ids.size(), prepared->context_length);
            return {};
        }
        if (show_prompt_) {
            std::fprintf(stderr, "[cflow] prompt of turn %u (%zu bytes):\n", turn_index_, prepared->text.size());
            std::fwrite(prepared->text.data(), 1, prepared->text.size(), stderr);
            std::fprintf(stderr, "\n[cflow] end of prompt; %zu tokens, %zu reused from the KV cache, %zu to prefill\n",
                         prepared->ids.size(), prepared->reused_tokens, prepared->ids.size() - prepared->reused_tokens);
        }

        ReplyOptions options;
        options.sampling = sampling_.sampling;
        options.sampling.seed = sampling_.sampling.seed + turn_index_;  // a fresh draw per turn, reproducible
        options.max_tokens = sampling_.max_tokens;
        options.context_policy = policy_;
        options.grammar = reply_grammar_;
        ChatTurnOutcome outcome;
        CancelToken cancel;
        Status status;
        {
            InterruptGuard guard(cancel);
            status = chat_.reply(*prepared, options, [](const ChatPiece& piece) {
                std::fwrite(piece.text.data(), 1, piece.text.size(), stdout);
                std::fflush(stdout);
            }, &cancel, outcome);
        }
        std::fputs("\n", stdout);
        std::fflush(stdout);
        if (!status && status.kind() != ErrorKind::Cancelled) return status;
        if (!status) std::fputs("[cflow] reply interrupted\n", stderr);
        else if (outcome.stats.stop_reason == StopReason::ContextFull)
            std::fputs("[cflow] the context is full: reply cut short (--context-policy drop-oldest or sliding-window "
                       "keeps going; /reset to start over)\n", stderr);
        else if (reply_grammar_ && outcome.stats.stop_reason == StopReason::MaxTokens)  // an end token comes only when it is complete
            std::fprintf(stderr, "[cflow] the reply stopped (%s) before its JSON was complete (-n)\n",
                         std::string(stop_reason_name(outcome.stats.stop_reason)).c_str());
        if (outcome.stats.context_shifts > 0)
            std::fprintf(stderr, "[cflow] the context filled during the reply: %u of the oldest tokens after the system "
                                 "prompt were left out (%u shift(s)) and the reply went on\n",
                         outcome.stats.shift_dropped_tokens, outcome.stats.context_shifts);
        conversation.turns.push_back({"assistant", outcome.text, ""});
        return {};
    }

public:
    void set_context_policy(ContextPolicy policy) { policy_ = policy; }

private:
    ChatSession chat_;
    SamplingArgs sampling_;
    ContextPolicy policy_ = ContextPolicy::Stop;
    bool show_prompt_;
    unsigned turn_index_ = 0;
    std::shared_ptr<const Grammar> reply_grammar_;  // --json-schema: every reply stays inside it; null: free text
};

} // namespace

int run_chat(const ChatCommandArgs& args) {
    if (args.remote.endpoint) return run_remote_chat(args);
    if (args.remote.server_metrics)
        return fail("chat", "--server-metrics reads a remote server's /metrics: give it with --endpoint URL");
    auto model_path = model_argument_or_default(args.positionals);
    if (!model_path) return fail("chat", model_path.error());
    const SamplingArgs sampling = args.sampling.resolved();
    auto chosen_template = parse_template_arg(args.chat.template_name);
    if (!chosen_template) return fail("chat", chosen_template.error());
    auto reply_grammar = load_json_schema_grammar(args.json_schema);
    if (!reply_grammar) return fail("chat", reply_grammar.error());

    auto loaded = load_for_session(args.session, *model_path);
    if (!loaded) return fail("chat", loaded.error());
    auto session = Session::create(loaded->model, loaded->options);
    if (!session) return fail("chat", session.error());
    ChatSession chat(loaded->model, std::move(session.value()));
    if (Status chosen = chat.set_template(*chosen_template); !chosen) return fail("chat", chosen.error());
    if (!chat.has_model_template())
        std::fprintf(stderr, "cflow chat: %s; using the plain 'role: content' fallback\n",
                     one_line(chat.template_note()).c_str());
    if (args.chat.thinking.has_value() && !chat.template_reads_thinking())
        std::fprintf(stderr, "cflow chat: %s: the chat template does not read enable_thinking; the switch changes nothing\n",
                     kThinkingOption);
    chat.set_thinking(args.chat.thinking);
    chat.set_template_clock(args.chat.template_time);

    LocalReplier replier(std::move(chat), sampling, args.show_prompt, *reply_grammar);
    replier.set_context_policy(args.chat.context_policy);
    Conversation conversation;
    if (args.system) conversation.system_prompt = *args.system;
    return run_chat_loop(replier, conversation);
}

} // namespace cflow::cli
