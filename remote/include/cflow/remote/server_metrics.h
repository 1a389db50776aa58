#pragma once
// What an endpoint's GET /metrics says about the server as a whole (issue 34: "vLLM's metrics
// where present"): vLLM's `vllm:` names (both the v0 and the v1 engine's spellings) and llama.cpp
// server's `llamacpp:` names (served with --metrics). cflow serve and OpenAI have no /metrics.
// Counts are summed over label sets (one per model or engine); ratios are averaged over them.
#include <optional>
#include <string>
#include <vector>

#include "cflow/remote/endpoint_url.h"
#include "cflow/remote/prometheus_text.h"

namespace cflow::remote {

struct ServerMetrics {
    std::string server;  // "vLLM" or "llama.cpp": whose names were found
    std::optional<double> requests_running;
    std::optional<double> requests_waiting;         // vLLM's waiting queue; llama.cpp's deferred requests
    std::optional<double> kv_cache_usage;           // 0..1 of the KV cache in use
    std::optional<double> prompt_tokens_total;      // since the server started
    std::optional<double> generated_tokens_total;   // since the server started
    std::optional<double> mean_time_to_first_token_s;  // vLLM: the histogram's sum / count
    std::optional<double> mean_inter_token_s;          // vLLM: time per output token, sum / count
    std::optional<double> prefix_cache_hit_rate;       // vLLM: hits / queries (or its v0 gauge)
    std::optional<double> preemptions_total;           // vLLM: requests pushed out for lack of KV cache
    std::optional<double> prompt_tokens_per_s;         // llama.cpp: its average prompt throughput
    std::optional<double> predicted_tokens_per_s;      // llama.cpp: its average generation throughput
};

// nullopt: no vllm: or llamacpp: sample among them (another exporter, or an empty answer).
std::optional<ServerMetrics> read_server_metrics(const std::vector<PrometheusSample>& samples);

// One line for a status area: "vLLM: 1 running, 0 waiting, KV cache 12.5%, first token 85 ms (mean), …";
// only what the server reported.
std::string server_metrics_text(const ServerMetrics& metrics);

// Where the metrics of the endpoint at `base` are: vLLM and llama.cpp serve them at the root, beside
// /v1, so a trailing /v1 of the base path is dropped (http://h:8000/v1 -> http://h:8000/metrics).
std::string metrics_url(const EndpointUrl& base);

} // namespace cflow::remote
