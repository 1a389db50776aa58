// GET /metrics: Prometheus text read into samples, vLLM's and llama.cpp's names read into what the
// desktop shows, and the client's fetch against a loopback server (found, absent, refused,
// malformed) and a real cflow serve (which has none).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include <httplib.h>

#include "cflow/remote/httplib_transport.h"
#include "cflow/remote/prometheus_text.h"
#include "cflow/remote/remote_client.h"
#include "cflow/remote/server_metrics.h"
#include "loopback_server.h"
#include "serve_process.h"

namespace cflow::remote {
namespace {

// vLLM v1's answer, cut to the names read, with two engines' label sets and a timestamp.
const char* const kVllmV1Text = R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 2.0
vllm:num_requests_running{engine="1",model_name="Qwen/Qwen3-8B"} 1.0
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 4.0
vllm:num_requests_waiting{engine="1",model_name="Qwen/Qwen3-8B"} 0.0
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="Qwen/Qwen3-8B"} 0.75
vllm:prefix_cache_queries_total{engine="0",model_name="Qwen/Qwen3-8B"} 400.0
vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} 100.0
vllm:prompt_tokens_total{engine="0",model_name="Qwen/Qwen3-8B"} 1234.0 1733600000000
vllm:generation_tokens_total{engine="0",model_name="Qwen/Qwen3-8B"} 5678.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="Qwen/Qwen3-8B"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 4.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 0.5
vllm:inter_token_latency_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 100.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 2.0
vllm:num_preemptions_total{engine="0",model_name="Qwen/Qwen3-8B"} 3.0
)";

const char* const kLlamaCppText = R"(# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 6886
llamacpp:tokens_predicted_total 3469
llamacpp:prompt_tokens_seconds 2.37151
llamacpp:predicted_tokens_seconds 14.5
llamacpp:kv_cache_usage_ratio 0.125
llamacpp:requests_processing 1
llamacpp:requests_deferred 2
)";

TEST(PrometheusText, ReadsNamesLabelsEscapesAndSpecialValues) {
    auto samples = parse_prometheus_text(
        "# TYPE a counter\n\n  a_total 3 1700000000000\nb{path=\"C:\\\\x\",quote=\"say \\\"hi\\\"\",nl=\"1\\n2\"} NaN\n"
        "c{} +Inf\r\nd{le=\"0.5\",} -Inf\ne 1.5e3  \n");
    ASSERT_TRUE(samples) << samples.error();
    ASSERT_EQ(samples->size(), 5u);
    EXPECT_EQ((*samples)[0].name, "a_total");
    EXPECT_EQ((*samples)[0].value, 3);
    EXPECT_EQ((*samples)[1].label("path"), "C:\\x");
    EXPECT_EQ((*samples)[1].label("quote"), "say \"hi\"");
    EXPECT_EQ((*samples)[1].label("nl"), "1\n2");
    EXPECT_EQ((*samples)[1].label("absent"), "");
    EXPECT_TRUE(std::isnan((*samples)[1].value));
    EXPECT_TRUE(std::isinf((*samples)[2].value) && (*samples)[2].value > 0);
    EXPECT_EQ((*samples)[3].label("le"), "0.5");
    EXPECT_TRUE(std::isinf((*samples)[3].value) && (*samples)[3].value < 0);
    EXPECT_EQ((*samples)[4].value, 1500);
}

TEST(PrometheusText, AMalformedLineIsAnErrorNamingIt) {
    for (const char* bad : {"ok 1\nbroken\n", "ok 1\nx{a=\"open} 1\n", "ok 1\nx{a=1} 1\n", "ok 1\nx 1 2 3\n",
                            "ok 1\n9lives 1\n", "ok 1\nx{a=\"v\" b=\"w\"} 1\n", "ok 1\nx 1e999\n"}) {
        auto samples = parse_prometheus_text(bad);
        ASSERT_FALSE(samples) << bad;
        EXPECT_NE(samples.error().find("metrics line 2"), std::string::npos) << samples.error();
    }
    auto empty = parse_prometheus_text("");
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->empty());
}

TEST(ServerMetrics, VllmV1NamesAreSummedAndAveragedOverEngines) {
    auto samples = parse_prometheus_text(kVllmV1Text);
    ASSERT_TRUE(samples) << samples.error();
    auto m = read_server_metrics(*samples);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->server, "vLLM");
    EXPECT_EQ(m->requests_running, 3.0);
    EXPECT_EQ(m->requests_waiting, 4.0);
    EXPECT_EQ(m->kv_cache_usage, 0.5);
    EXPECT_EQ(m->prefix_cache_hit_rate, 0.25);
    EXPECT_EQ(m->prompt_tokens_total, 1234.0);
    EXPECT_EQ(m->generated_tokens_total, 5678.0);
    EXPECT_EQ(m->mean_time_to_first_token_s, 0.125);
    EXPECT_EQ(m->mean_inter_token_s, 0.02);
    EXPECT_EQ(m->preemptions_total, 3.0);
    EXPECT_FALSE(m->prompt_tokens_per_s);
    EXPECT_EQ(server_metrics_text(*m),
              "vLLM: 3 running, 4 waiting, KV cache 50.0% used, prefix cache hits 25.0%, first token 125 ms (mean), "
              "50.0 tok/s per request (mean), 3 preemptions, 5678 tokens generated since start");
}

TEST(ServerMetrics, VllmV0NamesAndAnUnobservedHistogram) {
    auto samples = parse_prometheus_text(
        "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.1\nvllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} 0.5\n"
        "vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 0.0\nvllm:time_per_output_token_seconds_count{model_name=\"m\"} 0.0\n"
        "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 1.0\nvllm:time_to_first_token_seconds_count{model_name=\"m\"} 4.0\n");
    ASSERT_TRUE(samples) << samples.error();
    auto m = read_server_metrics(*samples);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kv_cache_usage, 0.1);
    EXPECT_EQ(m->prefix_cache_hit_rate, 0.5);
    EXPECT_FALSE(m->mean_inter_token_s) << "no token observed yet: no mean";
    EXPECT_EQ(m->mean_time_to_first_token_s, 0.25);
    EXPECT_FALSE(m->requests_running);
}

TEST(ServerMetrics, LlamaCppNames) {
    auto samples = parse_prometheus_text(kLlamaCppText);
    ASSERT_TRUE(samples) << samples.error();
    auto m = read_server_metrics(*samples);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->server, "llama.cpp");
    EXPECT_EQ(m->requests_running, 1.0);
    EXPECT_EQ(m->requests_waiting, 2.0);
    EXPECT_EQ(m->kv_cache_usage, 0.125);
    EXPECT_EQ(m->prompt_tokens_total, 6886.0);
    EXPECT_EQ(m->generated_tokens_total, 3469.0);
    EXPECT_EQ(m->predicted_tokens_per_s, 14.5);
    EXPECT_NE(server_metrics_text(*m).find("generation 14.5 tok/s (mean)"), std::string::npos) << server_metrics_text(*m);
}

TEST(ServerMetrics, OtherExportersAreNotAServersMetrics) {
    auto samples = parse_prometheus_text("process_cpu_seconds_total 12\npython_gc_objects_collected_total{generation=\"0\"} 5\n");
    ASSERT_TRUE(samples);
    EXPECT_FALSE(read_server_metrics(*samples));
    ServerMetrics nothing;
    nothing.server = "vLLM";
    EXPECT_EQ(server_metrics_text(nothing), "vLLM: no figures reported yet");
}

TEST(ServerMetrics, MetricsSitAtTheRootBesideV1) {
    for (auto [base, expected] : {std::pair{"http://10.0.0.2:8000/v1", "http://10.0.0.2:8000/metrics"},
                                  std::pair{"https://gpu.lan/vllm/v1", "https://gpu.lan:443/vllm/metrics"},
                                  std::pair{"http://[::1]:8080", "http://[::1]:8080/metrics"}}) {
        auto url = parse_endpoint_url(base);
        ASSERT_TRUE(url) << url.error();
        EXPECT_EQ(metrics_url(*url), expected) << base;
    }
}

RemoteClient metrics_client(const std::string& base_url, const std::string& key = "") {
    EndpointConfig config;
    config.base_url = base_url;
    config.api_key = key;
    config.connect_timeout_ms = 5'000;
    return RemoteClient(config, std::shared_ptr<HttpTransport>(make_httplib_transport()));
}

TEST(RemoteMetrics, FetchedFromTheRootWithTheKey) {
    test::LoopbackServer server;
    std::string authorization;
    server.http.Get("/metrics", [&](const httplib::Request& req, httplib::Response& res) {
        authorization = req.get_header_value("Authorization");
        res.set_content(kVllmV1Text, "text/plain; version=0.0.4");
    });
    server.start();
    auto m = metrics_client(server.base_url(), "sk-test").fetch_metrics();
    ASSERT_TRUE(m) << m.error();
    ASSERT_TRUE(*m);
    EXPECT_EQ((*m)->requests_running, 3.0);
    EXPECT_EQ(authorization, "Bearer sk-test");
}

TEST(RemoteMetrics, AbsentRefusedAndMalformedAnswers) {
    test::LoopbackServer server;
    server.http.Get("/metrics", [&](const httplib::Request& req, httplib::Response& res) {
        const std::string mode = req.get_header_value("Authorization");
        if (mode == "Bearer 501") res.status = 501;  // llama.cpp without --metrics
        else if (mode == "Bearer 401") res.status = 401;
        else if (mode == "Bearer bad") res.set_content("vllm:num_requests_running{model_name=\"m\" 1\n", "text/plain");
        else res.set_content("process_cpu_seconds_total 1\n", "text/plain");
    });
    server.start();
    auto absent = metrics_client(server.base_url("/elsewhere/v1")).fetch_metrics();  // 404
    ASSERT_TRUE(absent) << absent.error();
    EXPECT_FALSE(*absent);
    auto unsupported = metrics_client(server.base_url(), "501").fetch_metrics();
    ASSERT_TRUE(unsupported) << unsupported.error();
    EXPECT_FALSE(*unsupported);
    auto other = metrics_client(server.base_url()).fetch_metrics();
    ASSERT_TRUE(other) << other.error();
    EXPECT_FALSE(*other);
    auto refused = metrics_client(server.base_url(), "401").fetch_metrics();
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("401"), std::string::npos) << refused.error();
    auto malformed = metrics_client(server.base_url(), "bad").fetch_metrics();
    ASSERT_FALSE(malformed);
    EXPECT_NE(malformed.error().find("/metrics: metrics line 1"), std::string::npos) << malformed.error();
}

TEST(RemoteMetrics, CflowServeHasNone) {
    test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    auto m = metrics_client(serve.base_url()).fetch_metrics();
    ASSERT_TRUE(m) << m.error();
    EXPECT_FALSE(*m);
}

} // namespace
} // namespace cflow::remote
