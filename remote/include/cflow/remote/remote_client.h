#pragma once
// The client of one OpenAI-compatible endpoint: GET /v1/models and a streamed
// POST /v1/chat/completions, with retries (retry_policy.h), caps on what it reads, cancellation and
// diagnosed errors (diagnosis.h). Nothing throws; a reply cut after its first token is returned
// with its partial text and complete == false.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/remote/chat_request.h"
#include "cflow/remote/diagnosis.h"
#include "cflow/remote/http_transport.h"
#include "cflow/remote/retry_policy.h"
#include "cflow/remote/server_metrics.h"
#include "cflow/remote/stream_chunk.h"

namespace cflow::remote {

struct EndpointConfig {
    std::string base_url;  // e.g. http://10.0.0.2:8080/v1
    std::string api_key;   // sent as "Authorization: Bearer KEY"; empty: none
    std::string ca_file;   // https: trust this PEM instead of the system's CAs
    uint32_t connect_timeout_ms = 10'000;
    uint32_t read_timeout_ms = 120'000;  // the longest silence (a large prompt's prefill comes before the first byte)
    size_t max_response_bytes = 64u << 20;  // a whole response, streamed or not
    size_t max_error_body_bytes = 16u << 10;  // what is kept of an error answer for its message
    RetryPolicy retry;
    DiagnosisHints hints;  // the words of its error messages' advice
};

struct RemoteReply {
    std::string text;
    std::optional<std::string> finish_reason;
    std::optional<RemoteUsage> usage;
    std::optional<RemoteTimings> timings;
    // Every token's log probabilities in order (the chunks' choices[0].logprobs.content joined);
    // nullopt when no chunk carried a logprobs object (the server does not report them).
    std::optional<std::vector<RemoteTokenLogprob>> logprobs;
    bool complete = true;        // false: cut short (incomplete_reason says why), text is what came
    bool cancelled = false;      // the caller's token stopped it (complete is false)
    std::string incomplete_reason;
    uint32_t attempts = 0;       // requests made (retries + 1)
    double first_token_ms = -1;  // from the last request's start to its first content; -1: none
};

// Called with each piece of text as it arrives.
using TokenCallback = std::function<void(std::string_view)>;

class RemoteClient {
public:
    RemoteClient(EndpointConfig config, std::shared_ptr<HttpTransport> transport);

    // The ids of GET {base}/models, in the server's order.
    Result<std::vector<std::string>> list_models(const CancelToken* cancel = nullptr);

    // A streamed chat reply (request.stream is forced on). Errors before the first token are
    // Errors (Cancelled when `cancel` was set); after it, the reply comes back marked incomplete.
    Result<RemoteReply> stream_chat(RemoteChatRequest request, const TokenCallback& on_token,
                                    const CancelToken* cancel = nullptr);

    // The same request not streamed (stream: false): one chat.completion.
    Result<RemoteReply> complete_chat(RemoteChatRequest request, const CancelToken* cancel = nullptr);

    // The log probability of each token of `text` after the ones before it, through vLLM's
    // prompt_logprobs extension of POST {base}/completions (prompt_logprobs: 0, one token
    // generated and ignored). The first token has none and is left out. nullopt: the server
    // answered without them (cflow serve, llama.cpp and OpenAI have no such field).
    Result<std::optional<std::vector<double>>> score_prompt(const std::string& model, const std::string& text,
                                                            const CancelToken* cancel = nullptr);

    // What the server reports on GET /metrics (server_metrics.h says where), asked once, without
    // retries, waiting at most metrics_timeout_ms. nullopt: the server has none (404, 405 or 501,
    // as cflow serve, OpenAI and llama.cpp without --metrics answer) or they are not vLLM's or
    // llama.cpp's; an Error for anything else (unreachable, 401, a malformed answer).
    static constexpr uint32_t kMetricsTimeoutMs = 5'000;
    static constexpr size_t kMaxMetricsBytes = 8u << 20;  // vLLM's answer is ~100 KB with a few models
    Result<std::optional<ServerMetrics>> fetch_metrics(const CancelToken* cancel = nullptr);

    const EndpointConfig& config() const { return config_; }

private:
    struct WholeResponse {
        std::string body;       // the 200 response's bytes
        uint32_t attempts = 1;  // sends it took (retries on 429/503 included)
    };
    HttpRequest make_request(std::string method, std::string url, std::string body) const;
    Result<WholeResponse> fetch_whole(const HttpRequest& request, const CancelToken* cancel);
    // Sleeps wait_ms in short slices; false when cancelled meanwhile.
    static bool wait_unless_cancelled(uint64_t wait_ms, const CancelToken* cancel);

    EndpointConfig config_;
    std::shared_ptr<HttpTransport> transport_;
};

} // namespace cflow::remote
