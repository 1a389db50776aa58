#include "cflow/engine/generation/json_grammar.h"
#include "cflow/engine/generation/json_schema_grammar.h"
#include "cflow/server/openai_server.h"

#include <httplib.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "cflow/server/api_error.h"
#include "cflow/server/openai_response.h"
#include "cflow/server/slot_pool.h"
#include "cflow/server/sse.h"
#include "anthropic_reply_writer.h"
#include "cflow/server/anthropic_request.h"
#include "cflow/server/anthropic_response.h"
#include "guarded_http_server.h"
#include "openai_reply_writer.h"
#include "reply_job.h"
#include "request_threads.h"
#include "socket_io.h"

namespace cflow::server {
namespace {

using Clock = std::chrono::steady_clock;

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void send_error(httplib::Response& res, const ApiError& error) {
    res.status = error.status;
    res.set_content(error_body(error), "application/json");
}

// POST /v1/messages (and anything under it) speaks the Anthropic API: its errors take that shape.
void send_error_for(std::string_view path, httplib::Response& res, const ApiError& error) {
    if (!is_anthropic_messages_path(path)) return send_error(res, error);
    res.status = error.status;
    res.set_content(anthropic_error_body(error), "application/json");
}

// Constant-time comparison: the key's bytes do not leak through the answer's timing.
bool same_secret(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
    return diff == 0;
}

constexpr size_t kLargeBodyBytes = size_t(1) << 20;

void return_free_heap_to_os() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

// Reads a request body through httplib as it arrives, counting it against the size limit (a
// chunked body declares no size: httplib 0.11.4 read 1 GiB of one into memory) and the body
// deadline (a body sent a byte at a time). An error says which limit, or that it was malformed.
std::optional<ApiError> read_body(const httplib::ContentReader& reader, httplib::Response& res, uint64_t max_bytes,
                                  std::chrono::milliseconds body_deadline, std::string& body) {
    const GuardedHttpServer::Connection* connection = GuardedHttpServer::current();
    const Clock::time_point deadline = (connection ? connection->head_arrived : Clock::now()) + body_deadline;
    bool too_large = false, too_late = false;
    const bool complete = reader([&](const char* data, size_t length) {
        if (body.size() + length > max_bytes) {
            too_large = true;
            return false;
        }
        if (Clock::now() > deadline) {
            too_late = true;
            return false;
        }
        body.append(data, length);
        return true;
    });
    if (complete) return std::nullopt;
    if (too_large || res.status == 413)
        return ApiError{413, "invalid_request_error", "request_too_large", {},
                        "the request body is larger than the " + std::to_string(max_bytes) +
                            " bytes this server accepts (cflow serve --max-body-mib)"};
    if (too_late)
        return ApiError{408, "invalid_request_error", "request_timeout", {},
                        "the request body did not arrive within " + seconds_text(body_deadline)};
    return bad_request("the request body could not be read (a malformed chunked body, or the client stopped sending)");
}

} // namespace

struct OpenAiServer::Impl {
    std::shared_ptr<const Model> model;
    ServerOptions options;
    ServerObserver observer;
    std::unique_ptr<SlotPool> pool;
    GuardedHttpServer http;
    std::atomic<socket_t> listen_socket{INVALID_SOCKET};  // captured when httplib creates it
    std::thread serving;
    // Made by start() and handed to httplib when its loop begins (httplib then owns it).
    std::unique_ptr<RequestThreads> prepared_threads;
    // Set by a request with a large body: once its connection is done, the freed heap is handed
    // back to the OS (glibc keeps freed arena memory: 60 requests of 7 MB left 1 GB resident).
    std::atomic<bool> trim_heap{false};
    std::atomic<bool> stopping{false};
    std::atomic<bool> started{false};
    std::atomic<bool> listen_returned{false};
    std::atomic<int> bound_port{0};
    std::atomic<uint64_t> served{0};
    std::atomic<unsigned> active{0};
    int64_t created = unix_seconds();
    std::mutex stop_mutex;

    void install_routes();
    void handle_generation(const httplib::Request& req, const std::string& body, httplib::Response& res,
                           GenerationRequest::Kind kind);
    void serve_reply(const httplib::Request& req, httplib::Response& res, ReplyPlan plan);
    ReplyJobHost job_host();
    void handle_post(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);
    void handle_messages(const httplib::Request& req, const std::string& body, httplib::Response& res);
};

void OpenAiServer::Impl::handle_post(const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& reader) {
    const bool chat_endpoint = req.path == "/v1/chat/completions";
    const bool messages_endpoint = req.path == "/v1/messages";
    if (!chat_endpoint && !messages_endpoint && req.path != "/v1/completions")
        return send_error_for(req.path, res, error_for_status(404));
    std::string body;
    if (auto refused = read_body(reader, res, options.max_body_bytes, options.http_limits.body_deadline, body))
        return send_error_for(req.path, res, *refused);
    if (body.size() >= kLargeBodyBytes) trim_heap = true;
    if (messages_endpoint) return handle_messages(req, body, res);
    handle_generation(req, body, res, chat_endpoint ? GenerationRequest::Kind::Chat : GenerationRequest::Kind::Completion);
}

void OpenAiServer::Impl::handle_messages(const httplib::Request& req, const std::string& body, httplib::Response& res) {
    const Clock::time_point arrived = Clock::now();
    ParsedRequest parsed = parse_anthropic_messages_request(body, options.limits);
    if (!parsed.ok()) return send_error_for(req.path, res, parsed.error);
    ReplyPlan plan;
    plan.arrived = arrived;
    plan.request = std::move(*parsed.request);
    plan.writer = std::make_unique<AnthropicWriter>(options.model_id, plan.request.stream, plan.request.parallel_tool_calls);
    serve_reply(req, res, std::move(plan));
}

void OpenAiServer::Impl::handle_generation(const httplib::Request& req, const std::string& body, httplib::Response& res,
                                           GenerationRequest::Kind kind) {
    const Clock::time_point arrived = Clock::now();
    const bool chat_endpoint = kind == GenerationRequest::Kind::Chat;
    ParsedRequest parsed = chat_endpoint ? parse_chat_completion_request(body, options.limits)
                                         : parse_completion_request(body, options.limits);
    if (!parsed.ok()) return send_error(res, parsed.error);
    ReplyPlan plan;
    plan.arrived = arrived;
    plan.request = std::move(*parsed.request);
    const ResponseHeader header{new_response_id(chat_endpoint ? "chatcmpl-" : "cmpl-"), unix_seconds(), options.model_id};
    if (chat_endpoint)
        plan.writer = std::make_unique<OpenAiChatWriter>(header, plan.request.stream, plan.request.include_usage,
                                                          plan.request.parallel_tool_calls, plan.request.logprobs);
    else
        plan.writer = std::make_unique<OpenAiTextWriter>(header, plan.request.stream, plan.request.include_usage,
                                                          plan.request.logprobs);
    if (plan.request.json_object) {
        auto parsed_grammar = json_object_grammar();
        if (!parsed_grammar) return send_error(res, server_error(parsed_grammar.error()));
        plan.grammar = std::move(parsed_grammar).value();
    }
    if (!plan.request.json_schema.empty()) {
        // A schema the converter refuses is the client's to fix: 400 with its JSON pointer.
        auto schema_grammar = json_schema_grammar(plan.request.json_schema);
        if (!schema_grammar)
            return send_error(res, schema_grammar.kind() == ErrorKind::InvalidInput
                                       ? bad_request(schema_grammar.error(), "response_format.json_schema.schema")
                                       : server_error(schema_grammar.error()));
        plan.grammar = std::move(schema_grammar).value();
    }
    serve_reply(req, res, std::move(plan));
}

ReplyJobHost OpenAiServer::Impl::job_host() {
    ReplyJobHost host;
    host.stopping = &stopping;
    host.observer = &observer;
    host.context_policy = options.context_policy;
    host.report = [this](const ServedRequest& served) {
        this->served.fetch_add(1);
        if (observer.on_served) observer.on_served(served);
    };
    return host;
}

void OpenAiServer::Impl::serve_reply(const httplib::Request& req, httplib::Response& res, ReplyPlan plan) {
    const ReplyWriter& writer = *plan.writer;
    const auto refuse = [&res, &writer](const ApiError& error) {
        res.status = error.status;
        res.set_content(writer.refusal(error), "application/json");
    };
    const bool chat_turn = plan.request.kind == GenerationRequest::Kind::Chat;
    const GenerationRequest& request = plan.request;
    if (!request.model.empty() && request.model != options.model_id)
        return refuse(not_found("the model '" + request.model + "' does not exist; this server serves '" +
                                    options.model_id + "' (GET /v1/models)",
                                "model_not_found"));
    // A model file truncated or rewritten under the server is refused before a slot runs on it
    // (one that changes during a generation fails that generation: Session::step).
    if (Status unchanged = model->check_file_unchanged(); !unchanged)
        return refuse(ApiError{503, "server_error", "model_changed", {}, unchanged.error() + " (restart cflow serve)"});

    std::string key;
    if (chat_turn) {
        key = conversation_key(request.messages);
    } else if (request.prompt_ids) {
        key = "\x02ids:";
        for (int32_t id : *request.prompt_ids) key += std::to_string(id) + ",";
    } else {
        key = "\x02" + request.prompt;
    }
    std::function<bool()> client_left;
    if (const GuardedHttpServer::Connection* connection = GuardedHttpServer::current()) {
        const socket_t sock = connection->sock;
        client_left = [sock] { return socket_io::peer_has_left(sock); };
    }
    auto acquired = pool->acquire(key, std::chrono::milliseconds(int64_t(options.max_wait_s * 1000)), client_left);
    if (auto* refusal = std::get_if<SlotPool::Refusal>(&acquired)) {
        switch (*refusal) {
        case SlotPool::Refusal::Busy:
            return refuse(server_busy("every generation slot is busy and " + std::to_string(options.max_waiting) +
                                      " requests are already waiting; retry later"));
        case SlotPool::Refusal::TimedOut:
            return refuse(server_busy("no generation slot became free within " + std::to_string(int(options.max_wait_s)) +
                                      " s; retry later"));
        case SlotPool::Refusal::ShuttingDown: return refuse(server_busy("the server is shutting down"));
        case SlotPool::Refusal::ClientLeft: return refuse(server_busy("the client left while it waited"));
        }
    }
    auto job = std::make_shared<ReplyJob>(ReplyJob{std::move(std::get<SlotPool::Lease>(acquired)), std::move(plan.request), {},
                                                   std::move(key), req.path, std::move(plan.writer), std::move(plan.grammar),
                                                   plan.arrived});
    ChatSession& chat = job->lease.chat();
    PrepareOptions prepare = std::move(plan.prepare);
    // Tools: the template renders them, the writer reads calls back in the template's format, and
    // tool_choice required / named constrains the reply to a call by grammar.
    const GenerationRequest& asked = job->request;
    const bool tools_offered = !asked.tools.empty() && asked.tool_choice.kind != ToolChoice::Kind::None;
    const ToolCallFormat tool_format = tools_offered ? chat.tool_call_format() : ToolCallFormat::None;
    if (tools_offered) prepare.tools = asked.tools;
    const bool call_required =
        tools_offered && (asked.tool_choice.kind == ToolChoice::Kind::Required || asked.tool_choice.kind == ToolChoice::Kind::Named);
    if (call_required) {
        if (job->grammar)
            return refuse(bad_request("a tool_choice that requires a call cannot be combined with a response format",
                                      "tool_choice"));
        if (tool_format == ToolCallFormat::None)
            return refuse(bad_request("this model's chat template does not render tools, so a tool call cannot be required",
                                      "tool_choice"));
        auto call_grammar = tool_call_grammar(tool_format, asked.tools, asked.tool_choice);
        if (!call_grammar) return refuse(bad_request(call_grammar.error(), "tools"));
        job->grammar = std::move(call_grammar).value();
    }
    prepare.policy = options.context_policy;
    prepare.reserve_tokens = uint32_t(job->request.max_tokens.value_or(0));
    const char* input = chat_turn ? "messages" : "prompt";
    Result<PreparedTurn> turn = chat_turn                  ? chat.prepare(job->request.messages, prepare)
                                : job->request.prompt_ids ? chat.prepare_ids(*job->request.prompt_ids, prepare)
                                                          : chat.prepare_raw(job->request.prompt, prepare);
    if (!turn) {
        if (turn.kind() == ErrorKind::InvalidInput) return refuse(bad_request(turn.error(), input));
        return refuse(server_error("preparing the prompt failed: " + turn.error()));
    }
    if (!turn->fits())
        return refuse(bad_request("this model's maximum context length is " + std::to_string(turn->context_length) +
                                      " tokens, but the " + input + " resulted in " + std::to_string(turn->ids.size()) +
                                      " tokens",
                                  input, "context_length_exceeded"));
    job->turn = std::move(turn).value();
    job->writer->prepared({uint32_t(job->turn.ids.size()), tool_format});

    const bool stream = job->writer->streams();
    if (stream) {
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Accel-Buffering", "no");
    }
    active.fetch_add(1);
    res.set_chunked_content_provider(
        stream ? "text/event-stream" : "application/json",
        [job, host = job_host()](size_t, httplib::DataSink& sink) {
            // Called again only if a previous call neither finished nor failed: never run twice.
            if (std::exchange(job->ran, true)) return false;
            return run_reply_job(*job, host, sink);
        },
        [this](bool) { active.fetch_sub(1); });
}

void OpenAiServer::Impl::install_routes() {
    http.routes().set_payload_max_length(options.max_body_bytes);
    http.set_limits(options.http_limits, options.max_body_bytes);
    // httplib's default also sets SO_REUSEPORT, which lets a second server bind the same port
    // and take half of the first one's connections: address reuse after a restart is enough.
    // The server's socket is the only one httplib::Server makes: kept for the listen backlog.
    http.set_socket_options([this](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const char*>(&yes), sizeof(yes));
        listen_socket = sock;
    });
    http.new_task_queue = [this]() -> httplib::TaskQueue* {
        if (prepared_threads) return prepared_threads.release();
        // A second listen() (not done here): one thread, so it cannot fail where start() did not.
        auto fallback = std::make_unique<RequestThreads>();
        (void)fallback->start(1);
        return fallback.release();
    };

    http.routes().set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        const std::string host = req.get_header_value("Host");
        const std::string origin = req.get_header_value("Origin");
        if (auto refused = refuse_request(options.origin_policy, host, origin)) {
            send_error_for(req.path, res, ApiError{403, "invalid_request_error", "forbidden_origin", {}, *refused});
            return httplib::Server::HandlerResponse::Handled;
        }
        const std::string cors = allowed_cors_origin(options.origin_policy, host, origin);
        if (req.method == "OPTIONS") {  // a browser's preflight of an allowed origin: no key needed
            res.status = 204;
            if (!cors.empty()) {
                res.set_header("Access-Control-Allow-Origin", cors);
                res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
                res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key, Anthropic-Version, Anthropic-Beta, "
                                                              "Anthropic-Dangerous-Direct-Browser-Access");
                res.set_header("Access-Control-Max-Age", "600");
                res.set_header("Vary", "Origin");
            }
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!cors.empty()) {
            res.set_header("Access-Control-Allow-Origin", cors);
            res.set_header("Vary", "Origin");
        }
        if (options.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
        const std::string authorization = req.get_header_value("Authorization");
        // The scheme name is case-insensitive (RFC 9110, 11.1): "bearer KEY" is as good.
        constexpr std::string_view kBearer = "bearer ";
        const bool has_bearer = authorization.size() > kBearer.size() &&
                                std::equal(kBearer.begin(), kBearer.end(), authorization.begin(), [](char want, char got) {
                                    return want == std::tolower(static_cast<unsigned char>(got));
                                });
        if (has_bearer && same_secret(std::string_view(authorization).substr(kBearer.size()), options.api_key))
            return httplib::Server::HandlerResponse::Unhandled;
        // The Anthropic API sends its key as x-api-key.
        const bool anthropic = is_anthropic_messages_path(req.path);
        const bool has_x_api_key = anthropic && req.has_header("x-api-key");
        if (has_x_api_key && same_secret(req.get_header_value("x-api-key"), options.api_key))
            return httplib::Server::HandlerResponse::Unhandled;
        send_error_for(req.path, res,
                       unauthorized(has_bearer || has_x_api_key ? "incorrect API key provided"
                                    : anthropic ? "an API key is required: send 'x-api-key: KEY' or 'Authorization: Bearer KEY'"
                                                : "an API key is required: send 'Authorization: Bearer KEY'"));
        return httplib::Server::HandlerResponse::Handled;
    });
    http.routes().set_error_handler([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        ApiError error = error_for_status(res.status);
        // cpp-httplib caps form-encoded bodies at 8 KiB whatever the limit: curl -d sends that type.
        if (res.status == 413 && req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0)
            error.message += " (a form-encoded body is capped at 8 KiB: send 'Content-Type: application/json')";
        send_error_for(req.path, res, error);
    });
    http.routes().set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
        std::string what = "unknown error";
        try {
            if (error) std::rethrow_exception(error);
        } catch (const std::bad_alloc&) {
            what = "out of memory";
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        send_error_for(req.path, res, server_error("internal error: " + what));
    });

    http.routes().Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        nlohmann::json body = {{"status", "ok"}, {"model", options.model_id}, {"slots", pool->size()},
                               {"slots_busy", pool->busy()}, {"waiting", pool->waiting()}};
        if (Status unchanged = model->check_file_unchanged(); !unchanged) {
            body["status"] = "model_changed";
            body["error"] = unchanged.error();
            res.status = 503;
        }
        res.set_content(body.dump(), "application/json");
    });
    http.routes().Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(models_body(options.model_id, created), "application/json");
    });
    http.routes().Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
        if (req.matches[1] != options.model_id)
            return send_error(res, not_found("the model '" + std::string(req.matches[1]) + "' does not exist", "model_not_found"));
        res.set_content(model_body(options.model_id, created), "application/json");
    });
    // Every POST reads its body through the counting reader (httplib would read a chunked body
    // to any path whole), and answers 404 for a path it does not serve.
    http.routes().Post(".*", [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
        handle_post(req, res, reader);
    });
}

OpenAiServer::OpenAiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

OpenAiServer::~OpenAiServer() { stop(); }

Result<std::unique_ptr<OpenAiServer>> OpenAiServer::create(std::shared_ptr<const Model> model,
                                                           const SessionOptions& session_options, ServerOptions options,
                                                           ServerObserver observer) {
    if (!model) return make_error(ErrorKind::Internal, "no model to serve");
    if (options.model_id.empty()) options.model_id = "cflow";
    options.parallel = std::max(1u, options.parallel);
    auto impl = std::make_unique<Impl>();
    auto pool = SlotPool::create(model, session_options, options.template_choice, options.parallel, options.max_waiting);
    if (!pool) return pool.take_error();
    impl->model = std::move(model);
    impl->options = std::move(options);
    impl->observer = std::move(observer);
    impl->pool = std::move(pool).value();
    impl->install_routes();
    return std::unique_ptr<OpenAiServer>(new OpenAiServer(std::move(impl)));
}

Status OpenAiServer::start() {
    Impl& s = *impl_;
    if (s.started.load()) return make_error(ErrorKind::Internal, "the server is already running");
    // Every request holds a thread while it runs or waits for a slot: the slots, the queue, and a
    // few for /health, /v1/models and refusals. Started before binding, so a refusal is an error.
    auto threads = std::make_unique<RequestThreads>();
    threads->set_after_job([&s] {
        if (s.trim_heap.exchange(false)) return_free_heap_to_os();
    });
    threads->set_on_waiting([&s](size_t waiting) {
        ConnectionGate& gate = s.http.gate();
        gate.set_waiting_for_thread(waiting);
        if (waiting > 0) gate.make_room();
    });
    if (Status started = threads->start(size_t(s.options.parallel) + s.options.max_waiting + 4); !started) return started;
    s.prepared_threads = std::move(threads);
    const std::string& host = s.options.host;
    int port = s.options.port;
    errno = 0;
    if (port == 0) {
        port = s.http.bind_to_any_port(host);
        if (port <= 0) port = -1;
    } else if (!s.http.bind_to_port(host, port)) {
        port = -1;
    }
    if (port < 0) {
        const int error = errno;
        return make_error(ErrorKind::Io, "cannot listen on " + host + ":" + std::to_string(s.options.port) +
                                             (error ? std::string(": ") + std::strerror(error) : std::string()) +
                                             " (is another server using the port, or the address not this machine's?)");
    }
    // httplib listens with a backlog of 5: a burst of clients beyond it waited for SYN retries.
    if (const socket_t sock = s.listen_socket.load(); sock != INVALID_SOCKET)
        (void)socket_io::set_listen_backlog(sock, s.options.http_limits.listen_backlog);
    s.http.start_serving(s.listen_socket.load());
    s.bound_port = port;
    s.started = true;
    s.listen_returned = false;
    try {
        s.serving = std::thread([&s] {
            s.http.listen_after_bind();
            s.listen_returned = true;
        });
    } catch (const std::system_error& e) {
        s.started = false;
        s.prepared_threads.reset();
        return make_error(ErrorKind::Io, std::string("cannot start the server's listening thread: ") + e.what());
    }
    // httplib's stop() does nothing until its loop has started: wait for it, so a stop() right
    // after start() cannot leave the loop running.
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!s.http.is_running() && !s.listen_returned.load() && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (!s.http.is_running()) {
        if (s.serving.joinable() && s.listen_returned.load()) s.serving.join();
        if (!s.listen_returned.load()) return make_error(ErrorKind::Internal, "the HTTP server did not start");
        s.started = false;
        return make_error(ErrorKind::Io, "the HTTP server stopped right after binding " + host + ":" + std::to_string(port));
    }
    return {};
}

void OpenAiServer::stop() {
    Impl& s = *impl_;
    std::lock_guard lock(s.stop_mutex);
    s.stopping = true;
    s.http.gate().shut_down();
    s.pool->shut_down();
    s.http.stop();
    if (s.serving.joinable()) s.serving.join();
    s.http.stop_serving();
    s.started = false;
}

bool OpenAiServer::running() const { return impl_->started.load() && !impl_->stopping.load(); }
int OpenAiServer::port() const { return impl_->bound_port.load(); }
std::string OpenAiServer::url() const {
    const std::string& host = impl_->options.host;
    const bool ipv6 = host.find(':') != std::string::npos;
    return "http://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port());
}
const ServerOptions& OpenAiServer::options() const { return impl_->options; }
uint64_t OpenAiServer::requests_served() const { return impl_->served.load(); }
unsigned OpenAiServer::active_generations() const { return impl_->active.load(); }
uint32_t OpenAiServer::context_length() const { return impl_->pool->context_length(); }

bool is_loopback_host(std::string_view host) {
    if (host == "localhost" || host == "::1" || host == "[::1]") return true;
    return host.rfind("127.", 0) == 0;
}

std::string model_id_for_path(std::string_view path) {
    const size_t slash = path.find_last_of("/\\");
    std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    const size_t dot = name.rfind('.');
    if (dot != std::string_view::npos && dot > 0) name = name.substr(0, dot);
    return std::string(name.empty() ? "cflow" : name);
}

} // namespace cflow::server
