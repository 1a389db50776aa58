// `cflow chat --endpoint` driven through a pipe against a `cflow serve` on loopback: two turns
// answered, the second sent with the first in its history; a wrong path is one clear line.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "serve_process.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// The remote chat sends the local chat's sampling (seed + turn, as the local loop draws) and the
// history, and cflow serve renders the same template: the two conversations print the same text.
TEST(ChatEndpointCli, TwoTurnsThroughAPipeMatchTheLocalChat) {
    ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    const std::string input = "printf 'Hello there\\nAnd then?\\n' | ";
    std::string remote, local;
    ASSERT_EQ(run_shell(input + quoted(CFLOW_CLI_PATH) + " chat --endpoint " + serve.base_url() + " -n 12 --seed 5 2>/dev/null",
                        &remote),
              0) << remote;
    ASSERT_EQ(run_shell(input + quoted(CFLOW_CLI_PATH) + " chat -n 12 --seed 5 2>/dev/null", &local), 0) << local;
    EXPECT_GT(remote.size(), 20u) << remote;
    EXPECT_EQ(remote, local) << "the endpoint's two replies differ from the local chat's";
    // A third turn changes the second reply only if the history is sent: /reset between them
    // makes the remote chat answer "And then?" without the first turn.
    std::string reset;
    ASSERT_EQ(run_shell("printf 'Hello there\\n/reset\\nAnd then?\\n' | " + quoted(CFLOW_CLI_PATH) + " chat --endpoint " +
                            serve.base_url() + " -n 12 --seed 5 2>/dev/null",
                        &reset),
              0) << reset;
    EXPECT_NE(reset, remote) << "the second reply did not depend on the first turn";
}

// The history: a server of the test's own records what the CLI sends.
TEST(ChatEndpointCli, TheSecondTurnCarriesTheFirst) {
    httplib::Server http;
    std::mutex mutex;
    std::vector<std::string> bodies;
    http.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
        size_t n = 0;
        {
            std::lock_guard lock(mutex);
            bodies.push_back(req.body);
            n = bodies.size();
        }
        res.set_content("data: {\"choices\":[{\"delta\":{\"content\":\"reply " + std::to_string(n) +
                            "\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
                        "text/event-stream");
    });
    const int port = http.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread server([&] { http.listen_after_bind(); });
    while (!http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::string out;
    const int rc = run_shell("printf 'first\\nsecond\\n' | " + quoted(CFLOW_CLI_PATH) + " chat --endpoint http://127.0.0.1:" +
                                 std::to_string(port) + "/v1 --model m --system 'be brief' 2>/dev/null",
                             &out);
    http.stop();
    server.join();
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "reply 1\nreply 2\n");
    ASSERT_EQ(bodies.size(), 2u);
    const auto second = nlohmann::json::parse(bodies[1]);
    const nlohmann::json expected = nlohmann::json::parse(R"([{"role":"system","content":"be brief"},
        {"role":"user","content":"first"},{"role":"assistant","content":"reply 1"},{"role":"user","content":"second"}])");
    EXPECT_EQ(second["messages"], expected) << bodies[1];
    EXPECT_EQ(second["model"], "m");
    EXPECT_EQ(second["stream"], true);
}

// Ctrl-C (SIGINT) during a slow reply stops it, keeps its text in the conversation, and the chat
// goes on to the next line.
TEST(ChatEndpointCli, CtrlCStopsTheReplyAndKeepsTheConversation) {
    httplib::Server http;
    std::mutex mutex;
    std::vector<std::string> bodies;
    std::atomic<bool> release{false};
    http.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
        size_t n = 0;
        {
            std::lock_guard lock(mutex);
            bodies.push_back(req.body);
            n = bodies.size();
        }
        if (n > 1) {
            res.set_content("data: {\"choices\":[{\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\n"
                            "data: [DONE]\n\n",
                            "text/event-stream");
            return;
        }
        res.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
            const std::string e = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
            for (int i = 0; i < 1000 && !release; ++i) {  // 20 s at most: Ctrl-C must come first
                if (!sink.write(e.data(), e.size())) return false;
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            sink.done();
            return true;
        });
    });
    const int port = http.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread server([&] { http.listen_after_bind(); });
    while (!http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto dir = temp_dir("chat-endpoint-interrupt");
    const std::string d = quoted(dir.string());
    // bash with set -m: a non-interactive shell starts `&` jobs with SIGINT ignored (dash cannot turn
    // job control on without a terminal), and cflow keeps an ignored SIGINT ignored.
    std::ofstream(dir / "run.sh") << "set -m\ncd \"$1\"\nprintf 'one\\ntwo\\n' > in\n"
                                     "\"$2\" chat --endpoint \"$3\" --model m < in > out 2> err &\npid=$!\n"
                                     "for i in $(seq 200); do [ -s out ] && break; sleep 0.05; done\nsleep 0.2\n"
                                     "kill -INT $pid\nwait $pid\necho rc=$?\ncat out\necho\necho ---\ncat err\n";
    std::string out;
    const int rc = run_shell("bash " + quoted((dir / "run.sh").string()) + " " + d + " " + quoted(CFLOW_CLI_PATH) +
                                 " http://127.0.0.1:" + std::to_string(port) + "/v1",
                             &out);
    release = true;
    http.stop();
    server.join();
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("rc=0\na"), std::string::npos) << out;
    EXPECT_NE(out.find("\ndone\n"), std::string::npos) << "the chat went on to the second line: " << out;
    EXPECT_NE(out.find("[cflow] reply interrupted"), std::string::npos) << out;
    ASSERT_EQ(bodies.size(), 2u) << out;
    const auto second = nlohmann::json::parse(bodies[1]);
    ASSERT_EQ(second["messages"].size(), 3u) << bodies[1];
    const std::string kept = second["messages"][1]["content"];
    EXPECT_EQ(second["messages"][1]["role"], "assistant");
    EXPECT_FALSE(kept.empty());
    EXPECT_EQ(kept.find_first_not_of('a'), std::string::npos) << "the interrupted reply's text is kept: " << kept;
}

TEST(ChatEndpointCli, AWrongPathIsOneClearLine) {
    ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    const std::string origin = serve.base_url().substr(0, serve.base_url().size() - 3);
    std::string out;
    const int rc = run_shell("printf 'hi\\n' | " + quoted(CFLOW_CLI_PATH) + " chat --endpoint " + origin + " 2>&1 >/dev/null", &out);
    EXPECT_EQ(rc, 1) << out;
    EXPECT_NE(out.find("HTTP 404: wrong path"), std::string::npos) << out;
    EXPECT_NE(out.find("try " + serve.base_url() + " as the endpoint"), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

TEST(ChatEndpointCli, AMissingKeyVariableIsNamed) {
    std::string out;
    const int rc = run_shell("printf 'hi\\n' | env -u CFLOW_TEST_NO_SUCH_KEY " + quoted(CFLOW_CLI_PATH) +
                                 " chat --endpoint http://127.0.0.1:9/v1 --api-key-env CFLOW_TEST_NO_SUCH_KEY",
                             &out);
    EXPECT_EQ(rc, 1) << out;
    EXPECT_NE(out.find("--api-key-env CFLOW_TEST_NO_SUCH_KEY: the environment variable is not set"), std::string::npos) << out;
}

// --server-metrics: after each reply, the server's /metrics in one stderr line (llama.cpp's names
// here), "none" where the server has no /metrics, and a refusal without --endpoint.
TEST(ChatEndpointCli, ServerMetricsFollowEachReply) {
    httplib::Server http;
    std::atomic<int> metricsAsked{0};
    std::atomic<bool> hasMetrics{true};
    http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.set_content("data: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
                        "text/event-stream");
    });
    http.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
        ++metricsAsked;
        if (!hasMetrics) {
            res.status = 501;  // llama.cpp started without --metrics
            return;
        }
        res.set_content("llamacpp:requests_processing 1\nllamacpp:requests_deferred 0\nllamacpp:kv_cache_usage_ratio 0.25\n"
                        "llamacpp:predicted_tokens_seconds 31.5\n",
                        "text/plain");
    });
    const int port = http.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread server([&] { http.listen_after_bind(); });
    while (!http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::string chat = quoted(CFLOW_CLI_PATH) + " chat --endpoint http://127.0.0.1:" + std::to_string(port) + "/v1 --model m";
    std::string withMetrics, without, plain;
    const int rcWith = run_shell("printf 'a\\nb\\n' | " + chat + " --server-metrics 2>&1 >/dev/null", &withMetrics);
    const int askedWith = metricsAsked.load();
    const int rcPlain = run_shell("printf 'a\\n' | " + chat + " 2>&1 >/dev/null", &plain);
    const int askedPlain = metricsAsked.load() - askedWith;
    hasMetrics = false;
    const int rcWithout = run_shell("printf 'a\\n' | " + chat + " --server-metrics 2>&1 >/dev/null", &without);
    http.stop();
    server.join();
    EXPECT_EQ(rcWith, 0) << withMetrics;
    EXPECT_EQ(askedWith, 2) << "one /metrics request per reply";
    const std::string line = "[cflow] llama.cpp: 1 running, 0 waiting, KV cache 25.0% used, generation 31.5 tok/s (mean)\n";
    ASSERT_NE(withMetrics.find(line), std::string::npos) << withMetrics;
    EXPECT_NE(withMetrics.find(line, withMetrics.find(line) + 1), std::string::npos) << "not after the second reply: " << withMetrics;
    EXPECT_EQ(rcPlain, 0) << plain;
    EXPECT_EQ(askedPlain, 0) << "asked for /metrics without --server-metrics";
    EXPECT_EQ(plain.find("llama.cpp:"), std::string::npos) << plain;
    EXPECT_EQ(rcWithout, 0) << without;
    EXPECT_NE(without.find("[cflow] server metrics: the server reports none on /metrics"), std::string::npos) << without;

    std::string local;
    EXPECT_EQ(run_shell("printf 'a\\n' | " + quoted(CFLOW_CLI_PATH) + " chat --server-metrics 2>&1", &local), 1) << local;
    EXPECT_NE(local.find("--server-metrics reads a remote server's /metrics: give it with --endpoint URL"), std::string::npos) << local;
}

} // namespace
} // namespace cflow::test
