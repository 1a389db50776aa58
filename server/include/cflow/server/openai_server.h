#pragma once
// The local OpenAI-compatible server that `cflow serve` and the desktop app's Server switch run:
//   GET  /v1/models, /v1/models/{id}     the one served model
//   POST /v1/chat/completions            the chat core with the model's (or the chosen) template
//   POST /v1/completions                 raw text (or token ids) continued
//   POST /v1/messages                    the Anthropic Messages API (anthropic_request.h; key also as x-api-key)
//   GET  /health                         {"status": "ok", ...} without a key, for scripts
// `stream: true` answers with server-sent events in the OpenAI chunk format ending with
// `data: [DONE]`. Generation runs on the HTTP library's request threads, one per leased slot
// (slot_pool.h); the template, the prompt rules and the sampler are the chat core's.
// A client that goes away cancels its generation within one forward step.
//
// Thread safety: start(), stop() and the counters may be called from any thread; the observer's
// callbacks run on request threads (several at once when parallel > 1).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "cflow/base/result.h"
#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/forward/telemetry.h"
#include "cflow/server/http_limits.h"
#include "cflow/server/origin_policy.h"
#include "cflow/server/openai_request.h"

namespace cflow::server {

struct ServerOptions {
    std::string host = "127.0.0.1";      // loopback unless asked otherwise (is_loopback_host)
    int port = 8080;                     // 0: any free port (port() says which)
    std::string api_key;                 // "": no key; else every /v1/ request needs "Authorization: Bearer KEY"
    std::string model_id;                // the id /v1/models lists; requests naming another model get 404
    unsigned parallel = 1;               // generation slots (sessions with their own KV cache)
    unsigned max_waiting = 32;           // requests queued while every slot is busy; beyond: 503
    double max_wait_s = 600;             // a queued request waiting longer gets 503
    size_t max_body_bytes = size_t(8) << 20;  // larger bodies get 413
    ContextPolicy context_policy = ContextPolicy::Stop;  // Stop: a prompt that does not fit gets 400
    TemplateChoice template_choice;      // the model's own by default
    RequestLimits limits;
    OriginPolicy origin_policy;          // Host names and browser origins answered (origin_policy.h)
    HttpLimits http_limits;              // connection, head and body limits (http_limits.h)
};

// One answered generation request, as the observer and the log see it.
struct ServedRequest {
    std::string endpoint;                // "/v1/chat/completions" or "/v1/completions"
    unsigned slot = 0;
    bool stream = false;
    uint32_t prompt_tokens = 0;          // the whole prompt
    uint32_t reused_tokens = 0;          // of it, already in the slot's KV cache
    uint32_t completion_tokens = 0;
    double time_to_first_token_ms = 0;   // from the request's arrival
    double total_ms = 0;
    double decode_tokens_per_s = 0;
    std::string finish_reason;           // "stop", "length", or "" when it did not finish
    std::string outcome;                 // "ok", "client disconnected", "server stopped" or the error
};

struct ServerObserver {
    std::function<void(unsigned slot, const TokenTelemetry& step)> on_step;  // every forward step
    std::function<void(const ServedRequest& served)> on_served;             // after each generation
};

class OpenAiServer {
public:
    // Creates the slots (sessions) on `model`; fails like Session::create or set_template.
    static Result<std::unique_ptr<OpenAiServer>> create(std::shared_ptr<const Model> model,
                                                        const SessionOptions& session_options, ServerOptions options,
                                                        ServerObserver observer = {});
    ~OpenAiServer();  // stops

    // Binds host:port (an error names the address) and serves on a thread of its own.
    Status start();
    // Stops accepting, cancels running generations within one step, refuses queued requests,
    // and returns when the serving thread has ended. Idempotent.
    void stop();

    bool running() const;
    int port() const;            // the bound port (after start)
    std::string url() const;     // "http://HOST:PORT"
    const ServerOptions& options() const;
    uint64_t requests_served() const;   // generation requests answered (any outcome after the headers)
    unsigned active_generations() const;
    uint32_t context_length() const;    // of each slot's session

    struct Impl;
private:
    explicit OpenAiServer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// 127.0.0.0/8, ::1 and "localhost": addresses other machines cannot reach.
bool is_loopback_host(std::string_view host);

// The id a model file is served under: its file name without folder and extension.
std::string model_id_for_path(std::string_view path);

} // namespace cflow::server
