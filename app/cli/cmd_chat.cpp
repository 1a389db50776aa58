// cflow chat: an interactive multi-turn conversation in the terminal through the model's chat
// template. Each turn renders the whole conversation; when the new prompt extends what the KV
// cache already holds (previous prompt + reply), only the new tokens are prefilled.
// Reads stdin line by line, so it works from a pipe as well as from a terminal.
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cflow/engine/chat_template.h"
#include "cflow/engine/generate.h"
#include "cflow/engine/model.h"
#include "cflow/engine/session.h"
#include "chat_support.h"
#include "cli_args.h"
#include "commands.h"
#include "default_model.h"
#include "console.h"
#include "interrupt.h"
#include "sampling_args.h"

namespace cflow::cli {
namespace {

constexpr const char* kChatHelp =
    "cflow chat: type a message and press Enter; /reset forgets the conversation, /system TEXT sets the system "
    "prompt (and resets), /quit exits; Ctrl-C stops a reply, Ctrl-D exits\n";

std::string one_line(std::string message) {
    for (char& c : message)
        if (c == '\n' || c == '\r') c = ' ';
    return message;
}

// The conversation as the template sees it: the system prompt (if any) and the turns so far.
struct Conversation {
    std::string system_prompt;
    std::vector<ChatMessage> turns;

    std::vector<ChatMessage> messages() const {
        std::vector<ChatMessage> all;
        if (!system_prompt.empty()) all.push_back({"system", system_prompt, ""});
        all.insert(all.end(), turns.begin(), turns.end());
        return all;
    }
};

class ChatLoop {
public:
    ChatLoop(std::shared_ptr<const Model> model, std::unique_ptr<Session> session, std::optional<ChatTemplate> chat_template,
             SamplingArgs sampling, bool show_prompt)
        : model_(std::move(model)), session_(std::move(session)), template_(std::move(chat_template)),
          sampling_(sampling), show_prompt_(show_prompt) {
        const Tokenizer& tokenizer = model_->tokenizer();
        if (tokenizer.bos_id() >= 0) options_.bos_token = tokenizer.piece(tokenizer.bos_id());
        if (tokenizer.eos_id() >= 0) options_.eos_token = tokenizer.piece(tokenizer.eos_id());
        options_.add_generation_prompt = true;
        if (template_) stop_tokens_ = end_of_turn_tokens(tokenizer, template_->source());
    }

    void set_system_prompt(std::string text) { conversation_.system_prompt = std::move(text); }

    // Returns the process exit code when the conversation ends (EOF or /quit).
    int run() {
        const bool interactive = stdin_is_terminal();
        if (interactive) std::fputs(kChatHelp, stderr);
        std::string line;
        for (;;) {
            if (interactive) {
                std::fputs("> ", stdout);
                std::fflush(stdout);
            }
            if (!std::getline(std::cin, line)) {
                if (interactive) std::fputs("\n", stdout);
                return 0;
            }
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty()) continue;
            if (line == "/quit" || line == "/exit") return 0;
            if (line == "/help") {
                std::fputs(kChatHelp, stderr);
                continue;
            }
            if (line == "/reset") {
                forget();
                std::fputs("[cflow] conversation reset\n", stderr);
                continue;
            }
            if (line == "/system" || line.rfind("/system ", 0) == 0) {
                conversation_.system_prompt = line.size() > 8 ? line.substr(8) : "";
                forget();
                std::fputs(conversation_.system_prompt.empty() ? "[cflow] system prompt cleared; conversation reset\n"
                                                               : "[cflow] system prompt set; conversation reset\n",
                           stderr);
                continue;
            }
            if (line[0] == '/') {
                std::fprintf(stderr, "[cflow] unknown command '%s' (try /help)\n", line.c_str());
                continue;
            }
            if (Status s = turn(line); !s) return fail("chat", one_line(s.error()));
        }
    }

private:
    void forget() {
        conversation_.turns.clear();
        cached_.clear();
        session_->reset();
    }

    Result<std::string> render() const {
        const auto messages = conversation_.messages();
        if (!template_) return render_fallback_chat(messages, options_.add_generation_prompt);
        return template_->render(messages, options_);
    }

    // One user message -> one streamed assistant reply. Errors end the chat; a conversation
    // that outgrows the context only drops this message.
    Status turn(const std::string& user_text) {
        ++turn_index_;
        conversation_.turns.push_back({"user", user_text, ""});
        auto prompt = render();
        if (!prompt) return prompt.take_error();
        const Tokenizer& tokenizer = model_->tokenizer();
        const std::vector<int32_t> ids = encode_chat_prompt(tokenizer, *prompt);
        if (ids.size() >= session_->context_length()) {
            conversation_.turns.pop_back();
            std::fprintf(stderr, "[cflow] the conversation (%zu tokens) no longer fits the context of %u tokens; "
                                 "message dropped (/reset to start over)\n", ids.size(), session_->context_length());
            return {};
        }
        // The cache is only trusted when the session holds exactly what we recorded.
        if (session_->position() != cached_.size()) {
            session_->reset();
            cached_.clear();
        }
        PrefillPlan plan = plan_prefill(cached_, ids);
        if (plan.reset) {
            session_->reset();
            cached_.clear();
        }
        if (show_prompt_) {
            std::fprintf(stderr, "[cflow] prompt of turn %u (%zu bytes):\n", turn_index_, prompt->size());
            std::fwrite(prompt->data(), 1, prompt->size(), stderr);
            std::fprintf(stderr, "\n[cflow] end of prompt; %zu tokens, %zu reused from the KV cache, %zu to prefill\n",
                         ids.size(), plan.reused_tokens, plan.feed.size());
        }

        GenerateRequest request;
        request.prompt = plan.feed;
        request.sampling = sampling_.sampling;
        request.sampling.seed = sampling_.sampling.seed + turn_index_;  // a fresh draw per turn, reproducible
        request.max_tokens = sampling_.max_tokens;
        request.stop_tokens = stop_tokens_;
        std::string reply;
        std::vector<int32_t> generated;
        CancelToken cancel;
        Result<GenerateStats> stats = GenerateStats{};
        {
            InterruptGuard guard(cancel);
            stats = generate(*session_, request, [&](int32_t token, std::string_view text) {
                if (token >= 0) generated.push_back(token);
                reply.append(text);
                std::fwrite(text.data(), 1, text.size(), stdout);
                std::fflush(stdout);
                return true;
            }, &cancel);
        }
        std::fputs("\n", stdout);
        std::fflush(stdout);
        if (!stats) return stats.take_error();
        cached_.insert(cached_.end(), plan.feed.begin(), plan.feed.end());
        cached_.insert(cached_.end(), generated.begin(), generated.end());
        if (stats->stop_reason == StopReason::Cancelled) std::fputs("[cflow] reply interrupted\n", stderr);
        if (stats->stop_reason == StopReason::ContextFull)
            std::fputs("[cflow] the context is full: reply cut short (/reset to start over)\n", stderr);
        conversation_.turns.push_back({"assistant", reply, ""});
        return {};
    }

    std::shared_ptr<const Model> model_;
    std::unique_ptr<Session> session_;
    std::optional<ChatTemplate> template_;  // none: the plain "role: content" fallback
    SamplingArgs sampling_;
    bool show_prompt_;
    TemplateOptions options_;
    std::vector<int32_t> stop_tokens_;
    Conversation conversation_;
    std::vector<int32_t> cached_;  // the ids in the session's KV cache, in order
    unsigned turn_index_ = 0;
};

} // namespace

int run_chat(const std::vector<std::string>& argv) {
    ArgSpec spec{{"--system", "--threads", "--ctx", "--load"}, {"--show-prompt"}};
    for (const auto& name : sampling_option_names()) spec.valued.insert(name);
    auto args = Args::parse(argv, spec);
    if (!args) return fail("chat", args.error());
    auto model_path = model_argument_or_default(args->positionals());
    if (!model_path) return fail("chat", model_path.error());
    auto sampling = parse_sampling_args(*args, 512);
    if (!sampling) return fail("chat", sampling.error());
    SessionOptions session_options;
    auto threads = args->integer("--threads", 0, 0, 1024);
    if (!threads) return fail("chat", threads.error());
    auto ctx = args->integer("--ctx", 0, 0, 1 << 24);
    if (!ctx) return fail("chat", ctx.error());
    session_options.threads = unsigned(*threads);
    session_options.context_length = uint32_t(*ctx);
    LoadOptions load;
    if (auto mode = args->value("--load")) {
        if (*mode == "map") load.mode = LoadMode::Map;
        else if (*mode == "read") load.mode = LoadMode::ReadAnon;
        else return fail("chat", "--load must be 'map' or 'read' (got '" + *mode + "')");
    }

    auto model = Model::load(*model_path, load);
    if (!model) return fail("chat", model.error());
    std::optional<ChatTemplate> chat_template;
    if (!(*model)->chat_template().empty()) {
        auto compiled = ChatTemplate::compile((*model)->chat_template());
        if (!compiled) return fail("chat", one_line(*model_path + ": " + compiled.error()));
        chat_template = std::move(compiled.value());
    } else {
        std::fputs("cflow chat: model has no chat template; using the plain 'role: content' fallback\n", stderr);
    }
    auto session = Session::create(model.value(), session_options);
    if (!session) return fail("chat", session.error());

    ChatLoop loop(model.value(), std::move(session.value()), std::move(chat_template), *sampling, args->flag("--show-prompt"));
    if (auto system = args->value("--system")) loop.set_system_prompt(*system);
    return loop.run();
}

} // namespace cflow::cli
