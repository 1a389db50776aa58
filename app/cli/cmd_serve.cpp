// cflow serve: the local OpenAI-compatible server (server/include/cflow/server/openai_server.h)
// on one model, until Ctrl-C. Logs one line per answered request on stderr.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/whole_file.h"
#include "chat_args.h"
#include "commands.h"
#include "default_model.h"
#include "interrupt.h"

#if CFLOW_HAVE_SERVER
#include <csignal>

#include "cflow/server/openai_server.h"
#endif

namespace cflow::cli {

#if CFLOW_HAVE_SERVER
namespace {

void log_served(const server::ServedRequest& served) {
    std::fprintf(stderr,
                 "[cflow serve] %s%s slot %u: %s, finish %s, prompt %u tokens (%u reused), %u generated, "
                 "first token %.0f ms, %.1f tok/s, %.0f ms\n",
                 served.endpoint.c_str(), served.stream ? " (stream)" : "", served.slot, served.outcome.c_str(),
                 served.finish_reason.empty() ? "-" : served.finish_reason.c_str(), served.prompt_tokens,
                 served.reused_tokens, served.completion_tokens, served.time_to_first_token_ms,
                 served.decode_tokens_per_s, served.total_ms);
}

} // namespace
#endif

// The key from --api-key-file (its first line, blanks around it dropped), --api-key, or the
// CFLOW_API_KEY environment variable; at most one of them. "" when none is given.
Result<std::string> api_key_from(const ServeArgs& args) {
    const char* env = std::getenv("CFLOW_API_KEY");
    const bool from_env = env != nullptr && *env != '\0';
    if (!args.api_key_file.empty() + !args.api_key.empty() + from_env > 1)
        return make_error("give the API key one way: --api-key-file, --api-key or CFLOW_API_KEY");
    auto trimmed = [](std::string key) {
        key = key.substr(0, key.find_first_of("\r\n"));
        const size_t first = key.find_first_not_of(" \t");
        const size_t last = key.find_last_not_of(" \t");
        return first == std::string::npos ? std::string() : key.substr(first, last - first + 1);
    };
    if (!args.api_key_file.empty()) {
        auto text = read_whole_file(args.api_key_file, 64 * 1024, "an API key file");
        if (!text) return text.take_error();
        std::string key = trimmed(*text);
        if (key.empty()) return make_error(args.api_key_file + ": the first line holds no key");
        return key;
    }
    if (from_env) return trimmed(env);
    if (!args.api_key.empty())
        std::fprintf(stderr, "cflow serve: warning: --api-key is visible to other users in the process list; "
                             "CFLOW_API_KEY or --api-key-file keep it out of it\n");
    return args.api_key;
}

int run_serve(const ServeArgs& args) {
#if !CFLOW_HAVE_SERVER
    (void)args;
    return fail("serve", "this build has no server (it was built without cpp-httplib: libcpp-httplib-dev)");
#else
    auto model_path = model_argument_or_default(args.positionals);
    if (!model_path) return fail("serve", model_path.error());
    auto chosen_template = parse_template_arg(args.chat.template_name);
    if (!chosen_template) return fail("serve", chosen_template.error());

    server::ServerOptions options;
    options.host = args.host;
    options.port = args.port;
    auto api_key = api_key_from(args);
    if (!api_key) return fail("serve", api_key.error());
    options.api_key = *api_key;
    options.origin_policy.allowed_hosts = args.allowed_hosts;
    options.origin_policy.cors_origins = args.cors_origins;
    options.parallel = args.parallel;
    options.max_waiting = args.queue;
    options.max_body_bytes = size_t(args.max_body_mib) << 20;
    options.http_limits.max_connections = args.max_connections;
    options.http_limits.max_connections_per_client = args.max_connections_per_client;
    options.http_limits.head_deadline = std::chrono::seconds(args.header_timeout_s);
    options.http_limits.body_deadline = std::chrono::seconds(args.body_timeout_s);
    options.template_choice = *chosen_template;
    options.context_policy = args.chat.context_policy;
    options.model_id = server::model_id_for_path(*model_path);

    auto loaded = load_for_session(args.session, *model_path);
    if (!loaded) return fail("serve", loaded.error());
    const std::shared_ptr<const Model>& model = loaded->model;
    SessionOptions session_options = loaded->options;
    // Without --threads the cores are shared out between the slots, so parallel requests do not
    // oversubscribe the machine.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (session_options.threads == 0) session_options.threads = std::max(1u, cores / options.parallel);
    // Every slot's session holds its own cache: the budget asked for is the process's, so
    // --parallel 4 with 'fit' does not claim four times the free memory.
    session_options.expert_cache_bytes /= options.parallel;
    server::ServerObserver observer;
    observer.on_served = log_served;
    auto created = server::OpenAiServer::create(model, session_options, options, observer);
    if (!created) return fail("serve", created.error());
    server::OpenAiServer& http = *created.value();
    if (!server::is_loopback_host(options.host))
        std::fprintf(stderr, "cflow serve: warning: listening on %s, reachable from other machines%s\n",
                     options.host.c_str(), options.api_key.empty() ? " and without an API key (--api-key KEY)" : "");
    // A client that disconnects mid-write must not kill the process (Windows has no SIGPIPE: such
    // a send just fails).
#ifdef SIGPIPE
    std::signal(SIGPIPE, SIG_IGN);
#endif
    if (Status started = http.start(); !started) return fail("serve", started.error());
    std::string experts;  // how a MoE model's experts are fetched, said only for one
    if (model->header().n_experts > 0) {
        experts = std::string(", experts ") + std::string(expert_fetch_name(session_options.expert_fetch));
        if (session_options.expert_cache_bytes > 0)
            experts += " with a " + std::to_string(session_options.expert_cache_bytes >> 20) + " MiB cache per slot";
    }
    std::fprintf(stderr, "cflow serve: %s on %s/v1 (model '%s', %u slot%s, %u threads each, context %u%s)%s; Ctrl-C stops\n",
                 model_path->c_str(), http.url().c_str(), options.model_id.c_str(), options.parallel,
                 options.parallel == 1 ? "" : "s", session_options.threads,
                 http.context_length(), experts.c_str(), options.api_key.empty() ? "" : ", API key required");
    std::fflush(stderr);

    CancelToken interrupted;
    {
        InterruptGuard guard(interrupted);
        while (!interrupted.is_cancelled() && http.running()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    http.stop();
    std::fprintf(stderr, "cflow serve: stopped after %" PRIu64 " requests\n", http.requests_served());
    return 0;
#endif
}

} // namespace cflow::cli
