#include "cflow/remote/server_metrics.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <string_view>

namespace cflow::remote {
namespace {

// The sum and count of the finite samples carrying one of `names` (the first name that has any).
struct Totals {
    double sum = 0;
    int count = 0;
};

Totals totals_of(const std::vector<PrometheusSample>& samples, std::initializer_list<std::string_view> names) {
    for (std::string_view name : names) {
        Totals t;
        for (const PrometheusSample& s : samples)
            if (s.name == name && std::isfinite(s.value)) {
                t.sum += s.value;
                ++t.count;
            }
        if (t.count > 0) return t;
    }
    return {};
}

std::optional<double> summed(const std::vector<PrometheusSample>& samples, std::initializer_list<std::string_view> names) {
    const Totals t = totals_of(samples, names);
    return t.count > 0 ? std::optional<double>(t.sum) : std::nullopt;
}

std::optional<double> averaged(const std::vector<PrometheusSample>& samples, std::initializer_list<std::string_view> names) {
    const Totals t = totals_of(samples, names);
    return t.count > 0 ? std::optional<double>(t.sum / t.count) : std::nullopt;
}

// A histogram's mean (its _sum over its _count); nullopt before its first observation.
std::optional<double> histogram_mean(const std::vector<PrometheusSample>& samples, std::initializer_list<std::string_view> bases) {
    for (std::string_view base : bases) {
        const std::string sum_name = std::string(base) + "_sum";
        const std::string count_name = std::string(base) + "_count";
        const std::optional<double> sum = summed(samples, {sum_name});
        const std::optional<double> count = summed(samples, {count_name});
        if (sum && count) return *count > 0 ? std::optional<double>(*sum / *count) : std::nullopt;
    }
    return std::nullopt;
}

bool any_prefixed(const std::vector<PrometheusSample>& samples, std::string_view prefix) {
    for (const PrometheusSample& s : samples)
        if (s.name.compare(0, prefix.size(), prefix) == 0) return true;
    return false;
}

std::string number_text(double value, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

} // namespace

std::optional<ServerMetrics> read_server_metrics(const std::vector<PrometheusSample>& samples) {
    ServerMetrics m;
    if (any_prefixed(samples, "vllm:")) {
        m.server = "vLLM";
        m.requests_running = summed(samples, {"vllm:num_requests_running"});
        m.requests_waiting = summed(samples, {"vllm:num_requests_waiting"});
        // v1 renamed the v0 engine's GPU cache gauge.
        m.kv_cache_usage = averaged(samples, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"});
        m.prompt_tokens_total = summed(samples, {"vllm:prompt_tokens_total", "vllm:prompt_tokens"});
        m.generated_tokens_total = summed(samples, {"vllm:generation_tokens_total", "vllm:generation_tokens"});
        m.mean_time_to_first_token_s = histogram_mean(samples, {"vllm:time_to_first_token_seconds"});
        m.mean_inter_token_s =
            histogram_mean(samples, {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"});
        const std::optional<double> queries = summed(samples, {"vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries"});
        const std::optional<double> hits = summed(samples, {"vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits"});
        if (queries && hits && *queries > 0) m.prefix_cache_hit_rate = *hits / *queries;
        else m.prefix_cache_hit_rate = averaged(samples, {"vllm:gpu_prefix_cache_hit_rate"});
        m.preemptions_total = summed(samples, {"vllm:num_preemptions_total", "vllm:num_preemptions"});
        return m;
    }
    if (any_prefixed(samples, "llamacpp:")) {
        m.server = "llama.cpp";
        m.requests_running = summed(samples, {"llamacpp:requests_processing"});
        m.requests_waiting = summed(samples, {"llamacpp:requests_deferred"});
        m.kv_cache_usage = averaged(samples, {"llamacpp:kv_cache_usage_ratio"});
        m.prompt_tokens_total = summed(samples, {"llamacpp:prompt_tokens_total"});
        m.generated_tokens_total = summed(samples, {"llamacpp:tokens_predicted_total"});
        m.prompt_tokens_per_s = averaged(samples, {"llamacpp:prompt_tokens_seconds"});
        m.predicted_tokens_per_s = averaged(samples, {"llamacpp:predicted_tokens_seconds"});
        return m;
    }
    return std::nullopt;
}

std::string server_metrics_text(const ServerMetrics& m) {
    std::string text = m.server + ":";
    const auto add = [&](const std::string& part) { text += (text.back() == ':' ? " " : ", ") + part; };
    if (m.requests_running) add(number_text(*m.requests_running, 0) + " running");
    if (m.requests_waiting) add(number_text(*m.requests_waiting, 0) + " waiting");
    if (m.kv_cache_usage) add("KV cache " + number_text(*m.kv_cache_usage * 100.0, 1) + "% used");
    if (m.prefix_cache_hit_rate) add("prefix cache hits " + number_text(*m.prefix_cache_hit_rate * 100.0, 1) + "%");
    if (m.mean_time_to_first_token_s) add("first token " + number_text(*m.mean_time_to_first_token_s * 1000.0, 0) + " ms (mean)");
    if (m.mean_inter_token_s && *m.mean_inter_token_s > 0)
        add(number_text(1.0 / *m.mean_inter_token_s, 1) + " tok/s per request (mean)");
    if (m.prompt_tokens_per_s) add("prompt " + number_text(*m.prompt_tokens_per_s, 1) + " tok/s (mean)");
    if (m.predicted_tokens_per_s) add("generation " + number_text(*m.predicted_tokens_per_s, 1) + " tok/s (mean)");
    if (m.preemptions_total && *m.preemptions_total > 0) add(number_text(*m.preemptions_total, 0) + " preemptions");
    if (m.generated_tokens_total) add(number_text(*m.generated_tokens_total, 0) + " tokens generated since start");
    if (text.back() == ':') text += " no figures reported yet";
    return text;
}

std::string metrics_url(const EndpointUrl& base) {
    std::string path = base.path;
    if (path.size() >= 3 && path.compare(path.size() - 3, 3, "/v1") == 0) path.resize(path.size() - 3);
    return base.origin() + path + "/metrics";
}

} // namespace cflow::remote
