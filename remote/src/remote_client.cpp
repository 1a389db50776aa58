#include "cflow/remote/remote_client.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <thread>

#include <nlohmann/json.hpp>

#include "cflow/remote/diagnosis.h"
#include "cflow/remote/endpoint_url.h"
#include "cflow/remote/sse_parser.h"

namespace cflow::remote {
namespace {

using Clock = std::chrono::steady_clock;

// One request's answer as the retry loop sees it.
struct Exchange {
    int status = 0;  // 0: no response head came
    std::string retry_after;
    std::string error_body;  // the first max_error_body_bytes of a non-200 answer
    TransportResult transport;
    size_t bytes_read = 0;
    bool over_cap = false;
    bool cancelled = false;  // the caller's token
    bool sink_stopped = false;  // the 200 body's reader had what it needed, or found it malformed
};

std::string cap_text(size_t bytes) {
    return bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

} // namespace

RemoteClient::RemoteClient(EndpointConfig config, std::shared_ptr<HttpTransport> transport)
    : config_(std::move(config)), transport_(std::move(transport)) {}

HttpRequest RemoteClient::make_request(std::string method, std::string url, std::string body) const {
    HttpRequest request;
    request.method = std::move(method);
    request.url = std::move(url);
    request.body = std::move(body);
    request.connect_timeout_ms = config_.connect_timeout_ms;
    request.read_timeout_ms = config_.read_timeout_ms;
    request.ca_file = config_.ca_file;
    request.headers.emplace_back("Accept", request.method == "POST" ? "text/event-stream, application/json" : "application/json");
    if (!config_.api_key.empty()) request.headers.emplace_back("Authorization", "Bearer " + config_.api_key);
    return request;
}

bool RemoteClient::wait_unless_cancelled(uint64_t wait_ms, const CancelToken* cancel) {
    // Short slices so that Ctrl-C during a Retry-After wait answers at once.
    const auto until = Clock::now() + std::chrono::milliseconds(wait_ms);
    while (Clock::now() < until) {
        if (cancel && cancel->is_cancelled()) return false;
        const auto left = until - Clock::now();
        std::this_thread::sleep_for(std::min<Clock::duration>(left, std::chrono::milliseconds(20)));
    }
    return !(cancel && cancel->is_cancelled());
}

namespace {

// Sends `request` once; a 200 body goes to `sink` (false: stop reading), any other status's first
// bytes to error_body. The response's bytes are capped at max_response_bytes.
Exchange send_once(HttpTransport& transport, const HttpRequest& request, const EndpointConfig& config,
                   const CancelToken* cancel, const std::function<bool(std::string_view)>& sink) {
    Exchange x;
    auto on_head = [&](const HttpResponseHead& head) {
        x.status = head.status;
        x.retry_after = head.header("Retry-After");
        return true;
    };
    auto on_chunk = [&](std::string_view bytes) {
        // Checked once per chunk: a cancelled stream ends within one chunk.
        if (cancel && cancel->is_cancelled()) {
            x.cancelled = true;
            return false;
        }
        x.bytes_read += bytes.size();
        if (x.bytes_read > config.max_response_bytes) {
            x.over_cap = true;
            return false;
        }
        if (x.status != 200) {
            const size_t room = config.max_error_body_bytes - std::min(config.max_error_body_bytes, x.error_body.size());
            x.error_body.append(bytes.substr(0, room));
            return x.error_body.size() < config.max_error_body_bytes;
        }
        if (!sink(bytes)) {
            x.sink_stopped = true;
            return false;
        }
        return true;
    };
    x.transport = transport.send(request, on_head, on_chunk);
    if (cancel && cancel->is_cancelled()) x.cancelled = true;
    return x;
}

} // namespace

// A whole (non-streamed) response to `request`: sent again as the retry policy says on 429/503,
// every failure diagnosed.
Result<RemoteClient::WholeResponse> RemoteClient::fetch_whole(const HttpRequest& request, const CancelToken* cancel) {
    for (uint32_t attempt = 1;; ++attempt) {
        std::string body;
        Exchange x = send_once(*transport_, request, config_, cancel, [&](std::string_view bytes) {
            body.append(bytes);
            return true;
        });
        if (x.cancelled) return cancelled_error(request.url);
        if (x.over_cap)
            return make_error(ErrorKind::InvalidInput, request.url + ": the response is over the cap of " +
                                                           cap_text(config_.max_response_bytes) + ": refused");
        if (x.status == 0) return diagnose_transport(x.transport, request.url, request, config_.hints);
        if (x.status != 200) {
            RetryDecision d = decide_retry(config_.retry, attempt, x.status, x.retry_after, false,
                                           std::chrono::system_clock::now());
            if (d.retry) {
                if (!wait_unless_cancelled(d.wait_ms, cancel)) return cancelled_error(request.url);
                continue;
            }
            Error e = diagnose_status(x.status, x.error_body, request.url, config_.hints);
            if (!d.why_not.empty()) e.message += " (" + d.why_not + ")";
            return e;
        }
        if (x.transport.failure != TransportFailure::None) return diagnose_transport(x.transport, request.url, request, config_.hints);
        return WholeResponse{std::move(body), attempt};
    }
}

Result<std::vector<std::string>> RemoteClient::list_models(const CancelToken* cancel) {
    auto url = parse_endpoint_url(config_.base_url);
    if (!url) return url.take_error();
    const HttpRequest request = make_request("GET", url->route("/models"), "");
    auto whole = fetch_whole(request, cancel);
    if (!whole) return whole.take_error();
    const std::string& body = whole->body;
    nlohmann::json root = nlohmann::json::parse(body, nullptr, false);
    if (root.is_discarded() || !root.is_object() || !root.contains("data") || !root["data"].is_array())
        return make_error(ErrorKind::InvalidInput, request.url + ": malformed model list: expected {\"data\": [...]}");
    std::vector<std::string> ids;
    for (const auto& entry : root["data"]) {
        if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_string())
            return make_error(ErrorKind::InvalidInput, request.url + ": malformed model list: an entry has no string id");
        ids.push_back(entry["id"].get<std::string>());
    }
    return ids;
}

Result<RemoteReply> RemoteClient::stream_chat(RemoteChatRequest chat, const TokenCallback& on_token, const CancelToken* cancel) {
    auto url = parse_endpoint_url(config_.base_url);
    if (!url) return url.take_error();
    chat.stream = true;
    const HttpRequest request = make_request("POST", url->route("/chat/completions"), chat_request_json(chat));
    RemoteReply reply;
    for (uint32_t attempt = 1;; ++attempt) {
        reply = RemoteReply{};
        reply.attempts = attempt;
        const auto started = Clock::now();
        bool done = false;
        std::optional<Error> stream_error;
        SseParser parser;
        auto on_event = [&](const SseEvent& event) {
            if (event.data == "[DONE]") {
                done = true;
                return false;
            }
            auto chunk = read_stream_chunk(event.data);
            if (!chunk) {
                stream_error = make_error(ErrorKind::InvalidInput, request.url + ": malformed stream at line " +
                                                                       std::to_string(event.first_line) + ": " + chunk.error());
                return false;
            }
            if (chunk->error) {
                stream_error = make_error(ErrorKind::Io, request.url + ": the server reported an error in the stream: " + *chunk->error);
                return false;
            }
            if (!chunk->content.empty()) {
                if (reply.first_token_ms < 0)
                    reply.first_token_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
                reply.text += chunk->content;
                if (on_token) on_token(chunk->content);
            }
            if (chunk->logprobs) {
                if (!reply.logprobs) reply.logprobs.emplace();
                reply.logprobs->insert(reply.logprobs->end(), std::make_move_iterator(chunk->logprobs->begin()),
                                       std::make_move_iterator(chunk->logprobs->end()));
            }
            if (chunk->finish_reason) reply.finish_reason = chunk->finish_reason;
            if (chunk->usage) reply.usage = chunk->usage;
            if (chunk->timings) reply.timings = chunk->timings;
            return true;
        };
        Exchange x = send_once(*transport_, request, config_, cancel, [&](std::string_view bytes) {
            Status s = parser.feed(bytes, on_event);
            if (!s) stream_error = make_error(ErrorKind::InvalidInput, request.url + ": malformed stream: " + s.error());
            return s.ok() && !done && !stream_error;
        });
        const bool started_reply = !reply.text.empty();
        // A failure after the first token keeps the text, marked incomplete; before it, an error.
        auto cut = [&](Error why) -> Result<RemoteReply> {
            if (!started_reply) return why;
            reply.complete = false;
            reply.cancelled = why.kind == ErrorKind::Cancelled;
            reply.incomplete_reason = why.message;
            return reply;
        };
        if (x.cancelled && !done) return cut(cancelled_error(request.url));
        if (x.over_cap)
            return cut(make_error(ErrorKind::InvalidInput, request.url + ": the response is over the cap of " +
                                                               cap_text(config_.max_response_bytes) + ": the rest was refused"));
        if (x.status == 0) return diagnose_transport(x.transport, request.url, request, config_.hints);
        if (x.status != 200) {
            RetryDecision d = decide_retry(config_.retry, attempt, x.status, x.retry_after, false,
                                           std::chrono::system_clock::now());
            if (d.retry) {
                if (!wait_unless_cancelled(d.wait_ms, cancel)) return cancelled_error(request.url);
                continue;
            }
            Error e = diagnose_status(x.status, x.error_body, request.url, config_.hints);
            if (!d.why_not.empty()) e.message += " (" + d.why_not + ")";
            return e;
        }
        if (stream_error) return cut(*stream_error);
        if (done) return reply;
        if (x.transport.failure != TransportFailure::None && x.transport.failure != TransportFailure::Cancelled) {
            Error e = diagnose_transport(x.transport, request.url, request, config_.hints);
            if (x.transport.failure == TransportFailure::ConnectionLost || x.transport.failure == TransportFailure::Other)
                e.message = request.url + ": the server closed the connection in the middle of the reply" +
                            (x.transport.detail.empty() ? "" : " (" + x.transport.detail + ")");
            return cut(std::move(e));
        }
        if (Status s = parser.finish(on_event); !s)
            return cut(make_error(ErrorKind::InvalidInput, request.url + ": malformed stream: " + s.error()));
        if (stream_error) return cut(*stream_error);
        if (done || reply.finish_reason) return reply;
        return cut(make_error(ErrorKind::Io, request.url + ": the stream ended without [DONE] or a finish_reason "
                                                           "(the server closed the connection in the middle of the reply)"));
    }
}

Result<RemoteReply> RemoteClient::complete_chat(RemoteChatRequest chat, const CancelToken* cancel) {
    auto url = parse_endpoint_url(config_.base_url);
    if (!url) return url.take_error();
    chat.stream = false;
    const HttpRequest request = make_request("POST", url->route("/chat/completions"), chat_request_json(chat));
    auto whole = fetch_whole(request, cancel);
    if (!whole) return whole.take_error();
    const std::string& body = whole->body;
    auto chunk = read_stream_chunk(body);
    if (!chunk) return make_error(ErrorKind::InvalidInput, request.url + ": malformed response: " + chunk.error());
    if (chunk->error) return make_error(ErrorKind::Io, request.url + ": the server reported an error: " + *chunk->error);
    RemoteReply reply;
    reply.attempts = whole->attempts;
    reply.text = std::move(chunk->content);
    reply.finish_reason = chunk->finish_reason;
    reply.usage = chunk->usage;
    reply.timings = chunk->timings;
    reply.logprobs = std::move(chunk->logprobs);
    return reply;
}

Result<std::optional<ServerMetrics>> RemoteClient::fetch_metrics(const CancelToken* cancel) {
    auto url = parse_endpoint_url(config_.base_url);
    if (!url) return url.take_error();
    HttpRequest request = make_request("GET", metrics_url(*url), "");
    request.headers = {{"Accept", "text/plain"}};
    if (!config_.api_key.empty()) request.headers.emplace_back("Authorization", "Bearer " + config_.api_key);
    request.connect_timeout_ms = std::min(request.connect_timeout_ms, kMetricsTimeoutMs);
    request.read_timeout_ms = std::min(request.read_timeout_ms, kMetricsTimeoutMs);
    EndpointConfig capped = config_;
    capped.max_response_bytes = std::min(config_.max_response_bytes, kMaxMetricsBytes);
    std::string body;
    const Exchange x = send_once(*transport_, request, capped, cancel, [&](std::string_view bytes) {
        body.append(bytes);
        return true;
    });
    if (x.cancelled) return cancelled_error(request.url);
    if (x.over_cap)
        return make_error(ErrorKind::InvalidInput, request.url + ": the metrics are over the cap of " +
                                                       cap_text(capped.max_response_bytes) + ": refused");
    if (x.status == 0) return diagnose_transport(x.transport, request.url, request, config_.hints);
    if (x.status == 404 || x.status == 405 || x.status == 501) return std::optional<ServerMetrics>();
    if (x.status != 200) return diagnose_status(x.status, x.error_body, request.url, config_.hints);
    if (x.transport.failure != TransportFailure::None) return diagnose_transport(x.transport, request.url, request, config_.hints);
    auto samples = parse_prometheus_text(body);
    if (!samples) return make_error(ErrorKind::InvalidInput, request.url + ": " + samples.error());
    return read_server_metrics(*samples);
}

Result<std::optional<std::vector<double>>> RemoteClient::score_prompt(const std::string& model, const std::string& text,
                                                                      const CancelToken* cancel) {
    auto url = parse_endpoint_url(config_.base_url);
    if (!url) return url.take_error();
    nlohmann::json body = {{"prompt", text}, {"max_tokens", 1}, {"temperature", 0}, {"prompt_logprobs", 0}};
    if (!model.empty()) body["model"] = model;
    const HttpRequest request = make_request("POST", url->route("/completions"),
                                             body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    auto whole = fetch_whole(request, cancel);
    if (!whole) return whole.take_error();
    const nlohmann::json root = nlohmann::json::parse(whole->body, nullptr, false);
    const auto malformed = [&](const std::string& what) {
        return make_error(ErrorKind::InvalidInput, request.url + ": malformed prompt_logprobs: " + what);
    };
    if (!root.is_object() || !root.contains("choices") || !root["choices"].is_array() || root["choices"].empty())
        return malformed("no choices");
    const nlohmann::json& choice = root["choices"][0];
    const auto found = choice.find("prompt_logprobs");
    if (found == choice.end() || found->is_null()) return std::optional<std::vector<double>>();
    if (!found->is_array()) return malformed("not an array");
    // vLLM: [null, {"<token id>": {"logprob": x, "rank": r, "decoded_token": "..."}}, ...]; with
    // prompt_logprobs 0 each position holds the prompt's own token only.
    std::vector<double> logprobs;
    for (size_t i = 0; i < found->size(); ++i) {
        const nlohmann::json& position = (*found)[i];
        if (position.is_null()) continue;
        if (!position.is_object() || position.size() != 1)
            return malformed("position " + std::to_string(i) + " is not one token's entry");
        const nlohmann::json& entry = position.begin().value();
        const auto logprob = entry.is_object() ? entry.find("logprob") : entry.end();
        if (!entry.is_object() || logprob == entry.end() || !logprob->is_number())
            return malformed("position " + std::to_string(i) + " has no numeric logprob");
        logprobs.push_back(logprob->get<double>());
    }
    return std::optional<std::vector<double>>(std::move(logprobs));
}

} // namespace cflow::remote
