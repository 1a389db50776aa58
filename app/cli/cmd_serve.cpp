// cflow serve: the local OpenAI-compatible server (server/include/cflow/server/openai_server.h)
// on one model, until Ctrl-C. Logs one line per answered request on stderr.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "chat_args.h"
#include "cli_args.h"
#include "commands.h"
#include "default_model.h"
#include "expert_fetch_args.h"
#include "interrupt.h"
#include "kv_cache_args.h"
#include "load_args.h"

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

int run_serve(const std::vector<std::string>& argv) {
#if !CFLOW_HAVE_SERVER
    (void)argv;
    return fail("serve", "this build has no server (it was built without cpp-httplib: libcpp-httplib-dev)");
#else
    ArgSpec spec{{"--host", "--port", "--api-key", "--threads", "--ctx", "--parallel", "--queue", "--load", "--kv-cache",
                  "--max-body-mib", "--expert-fetch", "--cache-mib", "--io-backend", kTemplateOption, kContextPolicyOption},
                 {}};
    auto args = Args::parse(argv, spec);
    if (!args) return fail("serve", args.error());
    auto model_path = model_argument_or_default(args->positionals());
    if (!model_path) return fail("serve", model_path.error());
    auto port = args->integer("--port", 8080, 0, 65535);
    if (!port) return fail("serve", port.error());
    auto parallel = args->integer("--parallel", 1, 1, 64);
    if (!parallel) return fail("serve", parallel.error());
    auto queue = args->integer("--queue", 32, 0, 4096);
    if (!queue) return fail("serve", queue.error());
    auto threads = args->integer("--threads", 0, 0, 1024);
    if (!threads) return fail("serve", threads.error());
    auto ctx = args->integer("--ctx", 0, 0, 1 << 24);
    if (!ctx) return fail("serve", ctx.error());
    auto max_body = args->integer("--max-body-mib", 8, 1, 1024);
    if (!max_body) return fail("serve", max_body.error());
    auto kv_cache = parse_kv_cache_arg(*args, KvCacheType::F16);
    if (!kv_cache) return fail("serve", kv_cache.error());
    auto fetch = parse_expert_fetch_arg(*args);
    if (!fetch) return fail("serve", fetch.error());
    auto io_backend = parse_io_backend_arg(*args);
    if (!io_backend) return fail("serve", io_backend.error());
    if (Status st = check_io_backend_for(*io_backend, *fetch); !st) return fail("serve", st.error());
    auto cache_mib = parse_cache_mib_arg(*args);
    if (!cache_mib) return fail("serve", cache_mib.error());
    auto load = parse_load_args(*args, *model_path, *fetch != ExpertFetch::Mapped);
    if (!load) return fail("serve", load.error());
    auto chosen_template = parse_template_arg(*args);
    if (!chosen_template) return fail("serve", chosen_template.error());
    auto policy = parse_context_policy_arg(*args, ContextPolicy::Stop);
    if (!policy) return fail("serve", policy.error());

    server::ServerOptions options;
    options.host = args->value("--host").value_or("127.0.0.1");
    options.port = int(*port);
    options.api_key = args->value("--api-key").value_or("");
    options.parallel = unsigned(*parallel);
    options.max_waiting = unsigned(*queue);
    options.max_body_bytes = size_t(*max_body) << 20;
    options.template_choice = *chosen_template;
    options.context_policy = *policy;
    options.model_id = server::model_id_for_path(*model_path);

    SessionOptions session_options;
    // Without --threads the cores are shared out between the slots, so parallel requests do not
    // oversubscribe the machine.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    session_options.threads = *threads > 0 ? unsigned(*threads) : std::max(1u, cores / options.parallel);
    session_options.context_length = uint32_t(*ctx);
    session_options.kv_cache = *kv_cache;
    session_options.expert_fetch = *fetch;
    session_options.io_backend = *io_backend;

    auto model = load_model(*model_path, *load);
    if (!model) return fail("serve", model.error());
    if (*cache_mib) {
        auto bytes = expert_cache_bytes_for(**cache_mib, session_options.expert_fetch, **model);
        if (!bytes) return fail("serve", bytes.error());
        // Every slot's session holds its own cache: the budget asked for is the process's, so
        // --parallel 4 with 'fit' does not claim four times the free memory.
        session_options.expert_cache_bytes = *bytes / options.parallel;
    }
    server::ServerObserver observer;
    observer.on_served = log_served;
    auto created = server::OpenAiServer::create(model.value(), session_options, options, observer);
    if (!created) return fail("serve", created.error());
    server::OpenAiServer& http = *created.value();
    if (!server::is_loopback_host(options.host))
        std::fprintf(stderr, "cflow serve: warning: listening on %s, reachable from other machines%s\n",
                     options.host.c_str(), options.api_key.empty() ? " and without an API key (--api-key KEY)" : "");
    // A client that disconnects mid-write must not kill the process.
    std::signal(SIGPIPE, SIG_IGN);
    if (Status started = http.start(); !started) return fail("serve", started.error());
    std::string experts;  // how a MoE model's experts are fetched, said only for one
    if ((*model)->header().n_experts > 0) {
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
