// cflow chat --endpoint URL: the same interactive loop as the local chat (chat_loop.h), the replies
// streamed from an OpenAI-compatible server through cflow_remote (issue 34). A network failure
// leaves the conversation as it was (the message is not recorded) and the chat goes on; a reply
// cut short keeps its text, marked on stderr. Builds without cpp-httplib refuse --endpoint.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "chat_loop.h"
#include "command_args.h"
#include "commands.h"
#include "interrupt.h"

#ifdef CFLOW_HAVE_REMOTE
#include "cflow/remote/httplib_transport.h"
#include "cflow/remote/remote_client.h"
#endif

namespace cflow::cli {

#ifdef CFLOW_HAVE_REMOTE
namespace {

class RemoteReplier final : public ChatReplier {
public:
    RemoteReplier(remote::RemoteClient client, std::string model, SamplingArgs sampling, bool serverMetrics)
        : client_(std::move(client)), model_(std::move(model)), sampling_(sampling), server_metrics_(serverMetrics) {}

    Status turn(Conversation& conversation, const std::string& user_text) override {
        ++turn_index_;
        remote::RemoteChatRequest request;
        request.model = model_;
        for (const ChatMessage& m : conversation.messages()) request.messages.push_back({m.role, m.content});
        request.messages.push_back({"user", user_text});
        const SamplingParams& s = sampling_.sampling;
        request.sampling.temperature = s.temperature;
        request.sampling.top_k = s.top_k;
        request.sampling.top_p = s.top_p;
        request.sampling.min_p = s.min_p;
        request.sampling.repeat_penalty = s.repeat_penalty;
        request.sampling.seed = s.seed + turn_index_;  // a fresh draw per turn, reproducible, as the local chat
        if (sampling_.max_tokens > 0) request.max_tokens = sampling_.max_tokens;

        CancelToken cancel;
        Result<remote::RemoteReply> reply = remote::RemoteReply{};
        {
            InterruptGuard guard(cancel);
            reply = client_.stream_chat(std::move(request), [](std::string_view text) {
                std::fwrite(text.data(), 1, text.size(), stdout);
                std::fflush(stdout);
            }, &cancel);
        }
        if (!reply) {
            // Nothing came: the message is not part of the conversation; the user may send it again.
            if (reply.kind() == ErrorKind::Cancelled) std::fputs("[cflow] reply interrupted before it began\n", stderr);
            else std::fprintf(stderr, "[cflow] %s; the message was not sent (type it again)\n", one_line(reply.error()).c_str());
            return {};
        }
        std::fputs("\n", stdout);
        std::fflush(stdout);
        if (reply->cancelled) std::fputs("[cflow] reply interrupted\n", stderr);
        else if (!reply->complete)
            std::fprintf(stderr, "[cflow] the reply is incomplete: %s\n", one_line(reply->incomplete_reason).c_str());
        else if (reply->finish_reason == "length")
            std::fputs("[cflow] the reply stopped at the token limit (-n)\n", stderr);
        conversation.turns.push_back({"user", user_text, ""});
        conversation.turns.push_back({"assistant", reply->text, ""});
        if (server_metrics_) print_server_metrics();
        return {};
    }

private:
    // After the reply, so the figures include it; a failure is one line and the chat goes on.
    void print_server_metrics() {
        CancelToken cancel;
        InterruptGuard guard(cancel);
        auto metrics = client_.fetch_metrics(&cancel);
        if (!metrics) std::fprintf(stderr, "[cflow] server metrics: %s\n", one_line(metrics.error()).c_str());
        else if (!*metrics) std::fputs("[cflow] server metrics: the server reports none on /metrics\n", stderr);
        else std::fprintf(stderr, "[cflow] %s\n", remote::server_metrics_text(**metrics).c_str());
    }

    remote::RemoteClient client_;
    std::string model_;
    SamplingArgs sampling_;
    bool server_metrics_ = false;
    unsigned turn_index_ = 0;
};

} // namespace

int run_remote_chat(const ChatCommandArgs& args) {
    const RemoteChatArgs& r = args.remote;
    if (!args.positionals.empty())
        return fail("chat", "give a local MODEL or " + std::string(kEndpointOption) + " URL, not both");
    if (!args.json_schema.file.empty() || args.show_prompt || args.chat.template_name)
        return fail("chat", std::string(kEndpointOption) +
                                ": --json-schema, --show-prompt and --template are for the local engine (the server "
                                "renders its own template)");
    remote::EndpointConfig config;
    config.base_url = *r.endpoint;
    config.ca_file = r.ca_file;
    config.read_timeout_ms = uint32_t(r.timeout_s) * 1000;
    if (!r.api_key_env.empty()) {
        const char* key = std::getenv(r.api_key_env.c_str());
        if (!key || !*key) return fail("chat", "--api-key-env " + r.api_key_env + ": the environment variable is not set");
        config.api_key = key;
    }
    remote::RemoteClient client(config, std::shared_ptr<remote::HttpTransport>(remote::make_httplib_transport()));
    std::string model = r.model;
    if (model.empty()) {
        CancelToken cancel;
        InterruptGuard guard(cancel);
        auto models = client.list_models(&cancel);
        if (!models) return fail("chat", one_line(models.error()));
        if (models->empty()) return fail("chat", *r.endpoint + ": the endpoint lists no model (give one with --model)");
        model = models->front();
    }
    std::fprintf(stderr, "cflow chat: %s, model '%s'\n", r.endpoint->c_str(), model.c_str());
    RemoteReplier replier(std::move(client), std::move(model), args.sampling.resolved(), r.server_metrics);
    Conversation conversation;
    if (args.system) conversation.system_prompt = *args.system;
    return run_chat_loop(replier, conversation);
}

#else

int run_remote_chat(const ChatCommandArgs&) {
    return fail("chat", std::string(kEndpointOption) +
                            ": this build has no HTTP client (it was built without cpp-httplib, as the Windows build is); "
                            "use a Linux build for remote endpoints");
}

#endif

} // namespace cflow::cli
