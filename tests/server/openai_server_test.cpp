// The server end to end over loopback HTTP (cpp-httplib's client) on a synthetic chat model:
// the model list, streamed deltas equal to the whole reply for one seed, stop strings, the
// length limit, the API key, concurrent clients, a client leaving mid-stream, a full queue,
// and bad requests that get 4xx while the server keeps serving.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/formats/converter.h"
#include "cflow/server/openai_server.h"
#include "cflow/server/sse.h"
#include "server_test_fixture.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::server {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(OpenAiServer, ListsTheServedModelAndAnswersHealth) {
    TestServer t;
    ASSERT_TRUE(t.server);
    auto models = t.client().Get("/v1/models");
    ASSERT_TRUE(models);
    EXPECT_EQ(models->status, 200);
    const json list = json::parse(models->body);
    EXPECT_EQ(list["object"], "list");
    ASSERT_EQ(list["data"].size(), 1u);
    EXPECT_EQ(list["data"][0]["id"], "chat-model");
    auto one = t.client().Get("/v1/models/chat-model");
    ASSERT_TRUE(one);
    EXPECT_EQ(one->status, 200);
    auto other = t.client().Get("/v1/models/gpt-4");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 404);
    auto health = t.client().Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(json::parse(health->body)["status"], "ok");
    auto unknown = t.client().Get("/v2/nothing");
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->status, 404);
    EXPECT_TRUE(json::parse(unknown->body).contains("error")) << "even the library's own 404 is an OpenAI error";
}

TEST(OpenAiServer, StreamedDeltasJoinToTheWholeReplyForOneSeed) {
    TestServer t;
    ASSERT_TRUE(t.server);
    auto whole = t.post("/v1/chat/completions", chat_body(24, 7, false));
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    const json reply = json::parse(whole->body);
    EXPECT_EQ(reply["object"], "chat.completion");
    EXPECT_EQ(reply["model"], "chat-model");
    const std::string content = reply["choices"][0]["message"]["content"];
    const std::string finish = reply["choices"][0]["finish_reason"];
    const int completion_tokens = reply["usage"]["completion_tokens"];
    EXPECT_GT(reply["usage"]["prompt_tokens"].get<int>(), 5);
    EXPECT_EQ(finish, completion_tokens == 24 ? "length" : "stop");

    auto streamed = t.post("/v1/chat/completions", chat_body(24, 7, true, {{"stream_options", {{"include_usage", true}}}}));
    ASSERT_TRUE(streamed);
    ASSERT_EQ(streamed->status, 200);
    EXPECT_EQ(streamed->get_header_value("Content-Type"), "text/event-stream");
    const StreamedReply stream = read_stream(streamed->body);
    EXPECT_TRUE(stream.done) << "the stream ends with data: [DONE]";
    EXPECT_EQ(stream.content, content);
    EXPECT_EQ(stream.finish_reason, finish);
    EXPECT_EQ(stream.usage["completion_tokens"], completion_tokens);
    EXPECT_GT(stream.chunks, 3u);

    auto other_seed = t.post("/v1/chat/completions", chat_body(24, 8, false));
    ASSERT_TRUE(other_seed);
    EXPECT_NE(json::parse(other_seed->body)["choices"][0]["message"]["content"], content) << "the seed matters";
}

TEST(OpenAiServer, StopStringsAndTheTokenLimitSetTheFinishReason) {
    TestServer t;
    ASSERT_TRUE(t.server);
    auto free_run = t.post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":40,"seed":3})");
    ASSERT_TRUE(free_run);
    ASSERT_EQ(free_run->status, 200) << free_run->body;
    const json free_json = json::parse(free_run->body);
    EXPECT_EQ(free_json["object"], "text_completion");
    const std::string text = free_json["choices"][0]["text"];
    const int generated = free_json["usage"]["completion_tokens"];
    EXPECT_EQ(free_json["choices"][0]["finish_reason"], generated == 40 ? "length" : "stop");
    ASSERT_GE(text.size(), 6u);
    // A stop string from the middle of the free text (ASCII: the byte vocabulary may write anything).
    size_t at = text.size() / 2;
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0x80)) ++at;
    ASSERT_LT(at, text.size());
    const std::string stop = text.substr(at, 1);
    auto stopped = t.post("/v1/completions",
                          json{{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"seed", 3}, {"stop", {stop}}}.dump());
    ASSERT_TRUE(stopped);
    const json stopped_json = json::parse(stopped->body);
    EXPECT_EQ(stopped_json["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(stopped_json["choices"][0]["text"], text.substr(0, text.find(stop)));

    auto limited = t.post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":3,"seed":3})");
    ASSERT_TRUE(limited);
    const json limited_json = json::parse(limited->body);
    if (limited_json["usage"]["completion_tokens"] == 3) {
        EXPECT_EQ(limited_json["choices"][0]["finish_reason"], "length");
    }
    EXPECT_LE(limited_json["usage"]["completion_tokens"].get<int>(), 3);
}

// Where nlohmann's parser stops on `text`: the byte offset of its first error and whether that
// error is only the end of the input (so `text` is a prefix of some JSON text).
struct JsonPrefixCheck : nlohmann::json_sax<json> {
    size_t error_at = 0;
    bool failed = false;
    bool at_end = false;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception&) override {
        failed = true;
        error_at = position;
        at_end = last_token.empty() || last_token == "<end of input>";
        return false;
    }
};

// response_format json_object (issue 33): the reply is a JSON object by construction. A finished
// reply parses as one; one cut by max_tokens is a prefix of one. Checked by nlohmann's parser,
// not by the grammar that produced it, for several seeds of a random-weight model at temperature 0.9.
TEST(OpenAiServer, AJsonObjectResponseFormatGivesAJsonObject) {
    TestServer t;
    ASSERT_TRUE(t.server);
    int finished = 0;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        auto r = t.post("/v1/chat/completions", chat_body(160, seed, false, {{"response_format", {{"type", "json_object"}}}}));
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        const json reply = json::parse(r->body);
        const std::string content = reply["choices"][0]["message"]["content"];
        const std::string finish = reply["choices"][0]["finish_reason"];
        SCOPED_TRACE("seed " + std::to_string(seed) + ": " + content);
        ASSERT_FALSE(content.empty());
        EXPECT_EQ(content[0], '{') << "the reply is the object, from its brace";
        if (finish == "stop") {
            ++finished;
            const json parsed = json::parse(content, nullptr, false);
            EXPECT_FALSE(parsed.is_discarded());
            EXPECT_TRUE(parsed.is_object());
        } else {
            EXPECT_EQ(finish, "length");
            JsonPrefixCheck check;
            json::sax_parse(content, &check);
            EXPECT_TRUE(check.failed && check.at_end) << "the cut reply is not a JSON prefix: error at byte " << check.error_at;
        }
    }
    std::printf("[json_object] %d of 6 replies closed their object within 160 tokens\n", finished);

    auto streamed = t.post("/v1/chat/completions", chat_body(160, 3, true, {{"response_format", {{"type", "json_object"}}}}));
    ASSERT_TRUE(streamed);
    ASSERT_EQ(streamed->status, 200);
    auto whole = t.post("/v1/chat/completions", chat_body(160, 3, false, {{"response_format", {{"type", "json_object"}}}}));
    ASSERT_TRUE(whole);
    EXPECT_EQ(read_stream(streamed->body).content, json::parse(whole->body)["choices"][0]["message"]["content"])
        << "streamed deltas join to the same constrained reply";

    auto schema = t.post("/v1/chat/completions", chat_body(8, 1, false, {{"response_format", {{"type", "json_schema"}}}}));
    ASSERT_TRUE(schema);
    EXPECT_EQ(schema->status, 400);
}

TEST(OpenAiServer, TheApiKeyIsRequiredWhenOneIsSet) {
    ServerOptions options;
    options.api_key = "sekrit";
    TestServer t(options);
    ASSERT_TRUE(t.server);
    auto none = t.client().Get("/v1/models");
    ASSERT_TRUE(none);
    EXPECT_EQ(none->status, 401);
    EXPECT_EQ(json::parse(none->body)["error"]["code"], "invalid_api_key");
    auto wrong = t.client().Get("/v1/models", {{"Authorization", "Bearer sekrit2"}});
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 401);
    auto right = t.client().Get("/v1/models", {{"Authorization", "Bearer sekrit"}});
    ASSERT_TRUE(right);
    EXPECT_EQ(right->status, 200);
    // The scheme name is case-insensitive (issue 38: "bearer" was refused); the key is not.
    for (const char* scheme : {"bearer", "BEARER", "bEaReR"}) {
        auto any_case = t.client().Get("/v1/models", {{"Authorization", std::string(scheme) + " sekrit"}});
        ASSERT_TRUE(any_case);
        EXPECT_EQ(any_case->status, 200) << scheme;
    }
    auto key_case = t.client().Get("/v1/models", {{"Authorization", "Bearer SEKRIT"}});
    ASSERT_TRUE(key_case);
    EXPECT_EQ(key_case->status, 401);
    auto chat = t.post("/v1/chat/completions", chat_body(4, 1, false), {{"Authorization", "Bearer nope"}});
    ASSERT_TRUE(chat);
    EXPECT_EQ(chat->status, 401);
    auto health = t.client().Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200) << "the health check needs no key";
}

TEST(OpenAiServer, EightConcurrentClientsAreAllAnswered) {
    ServerOptions options;
    options.parallel = 2;
    TestServer t(options);
    ASSERT_TRUE(t.server);
    std::vector<int> statuses(8, 0);
    std::vector<std::string> contents(8);
    std::vector<std::thread> clients;
    for (int i = 0; i < 8; ++i)
        clients.emplace_back([&, i] {
            auto res = t.post("/v1/chat/completions", chat_body(16, 100 + uint64_t(i % 2), i % 2 == 1));
            if (!res) return;
            statuses[size_t(i)] = res->status;
            contents[size_t(i)] = i % 2 ? read_stream(res->body).content
                                        : json::parse(res->body)["choices"][0]["message"]["content"].get<std::string>();
        });
    for (auto& c : clients) c.join();
    EXPECT_EQ(statuses, std::vector<int>(8, 200));
    for (int i = 2; i < 8; ++i) EXPECT_EQ(contents[size_t(i)], contents[size_t(i % 2)]) << "client " << i;
    t.log->wait_for(8);  // the report follows the response's last byte
    EXPECT_EQ(t.server->requests_served(), 8u);
}

TEST(OpenAiServer, AClientLeavingMidStreamCancelsItsGenerationOnly) {
    ServerOptions options;
    options.parallel = 2;
    TestServer t(options, 3ms);  // ~3 ms a step: a 600-token reply would take ~2 s
    ASSERT_TRUE(t.server);
    std::thread bystander_thread;
    std::string bystander_body;
    int bystander_status = 0;
    bystander_thread = std::thread([&] {
        auto res = t.post("/v1/chat/completions", chat_body(40, 5, true, {{"stop", json::array()}}));
        if (!res) return;
        bystander_status = res->status;
        bystander_body = res->body;
    });

    httplib::Request request;
    request.method = "POST";
    request.path = "/v1/chat/completions";
    request.body = chat_body(600, 9, true);
    request.headers = {{"Content-Type", "application/json"}};
    size_t received = 0;
    request.content_receiver = [&](const char*, size_t length, uint64_t, uint64_t) {
        received += length;
        return received < 600;  // a few chunks, then hang up
    };
    const auto left_at = std::chrono::steady_clock::now();
    {
        // The client goes out of scope to hang up (its destructor closes the socket); calling
        // Client::stop() here instead mixes httplib's inline and compiled halves, which TSan's
        // suppression of the uninstrumented library (tests/sanitizers/tsan.supp) cannot follow.
        auto client = t.client();
        auto gone = client.send(request);
        EXPECT_FALSE(gone) << "the client aborted the transfer";
    }

    // The report of the abandoned request names the disconnect and shows it stopped early.
    ServedRequest abandoned;
    for (size_t n = 1; n <= 2; ++n) {
        const ServedRequest r = t.log->wait_for(n);
        if (r.outcome != "ok") abandoned = r;
    }
    EXPECT_EQ(abandoned.outcome, "client disconnected");
    EXPECT_LT(abandoned.completion_tokens, 200u) << "cancelled within a step of the disconnect, not run to 600";
    EXPECT_LT(std::chrono::steady_clock::now() - left_at, 1500ms);
    bystander_thread.join();
    EXPECT_EQ(bystander_status, 200);
    EXPECT_TRUE(read_stream(bystander_body).done) << "the other client's stream finished normally";
    auto after = t.post("/v1/chat/completions", chat_body(4, 1, false));
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, 200) << "the server keeps serving";
}

TEST(OpenAiServer, AClientGivingUpOnAWholeReplyCancelsItOnce) {
    TestServer t({}, 3ms);
    ASSERT_TRUE(t.server);
    auto client = t.client();
    client.set_read_timeout(0, 200000);  // gives up after 0.2 s without a byte
    auto gone = client.Post("/v1/chat/completions", chat_body(600, 9, false), "application/json");
    EXPECT_FALSE(gone) << "the client timed out";
    const ServedRequest abandoned = t.log->wait_for(1);
    EXPECT_EQ(abandoned.outcome, "client disconnected");
    EXPECT_LT(abandoned.completion_tokens, 300u) << "cancelled soon after the client left, not run to 600";
    auto after = t.post("/v1/chat/completions", chat_body(4, 1, false));
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, 200);
    t.log->wait_for(2);
    std::lock_guard lock(t.log->mutex);
    EXPECT_EQ(t.log->served.size(), 2u) << "the abandoned generation ran once, not again for each retry of the library";
}

TEST(OpenAiServer, AFullQueueAnswersBusy) {
    ServerOptions options;
    options.parallel = 1;
    options.max_waiting = 0;
    TestServer t(options, 5ms);
    ASSERT_TRUE(t.server);
    std::thread slow([&] { t.post("/v1/chat/completions", chat_body(60, 2, false)); });
    while (t.server->active_generations() == 0) std::this_thread::sleep_for(1ms);
    auto busy = t.post("/v1/chat/completions", chat_body(4, 1, false));
    ASSERT_TRUE(busy);
    EXPECT_EQ(busy->status, 503);
    EXPECT_EQ(json::parse(busy->body)["error"]["type"], "server_error");
    slow.join();
}

TEST(OpenAiServer, BadRequestsGet4xxAndTheServerLivesOn) {
    ServerOptions options;
    options.max_body_bytes = 64 * 1024;
    TestServer t(options);
    ASSERT_TRUE(t.server);
    const auto status_of = [&](const std::string& path, const std::string& body) {
        auto res = t.post(path, body);
        if (!res) return 0;
        EXPECT_TRUE(json::parse(res->body).contains("error")) << res->body;
        return res->status;
    };
    EXPECT_EQ(status_of("/v1/chat/completions", "{not json"), 400);
    EXPECT_EQ(status_of("/v1/chat/completions", R"({"messages":[{"role":"user","content":["x"]}]})"), 400);
    EXPECT_EQ(status_of("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"9"})"), 400);
    EXPECT_EQ(status_of("/v1/chat/completions", std::string(100000, '[')), 413);
    EXPECT_EQ(status_of("/v1/chat/completions", std::string(20000, '[')), 400);
    EXPECT_EQ(status_of("/v1/completions", R"({"prompt":[1,2,999999]})"), 400);
    EXPECT_EQ(status_of("/v1/chat/completions", R"({"model":"other","messages":[{"role":"user","content":"x"}]})"), 404);
    const std::string too_long = json{{"messages", {{{"role", "user"}, {"content", std::string(60000, 'z')}}}}}.dump();
    auto overflow = t.post("/v1/chat/completions", too_long);
    ASSERT_TRUE(overflow);
    EXPECT_EQ(overflow->status, 400);
    EXPECT_EQ(json::parse(overflow->body)["error"]["code"], "context_length_exceeded");
    auto fine = t.post("/v1/chat/completions", chat_body(4, 1, false));
    ASSERT_TRUE(fine);
    EXPECT_EQ(fine->status, 200);
}

TEST(OpenAiServer, AnAddressInUseIsAClearError) {
    TestServer first;
    ASSERT_TRUE(first.server);
    ServerOptions options;
    options.port = first.server->port();
    options.model_id = "m";
    SessionOptions session;
    session.threads = 1;
    auto second = OpenAiServer::create(chat_model(), session, options);
    ASSERT_TRUE(second.ok());
    const Status started = second.value()->start();
    ASSERT_FALSE(started.ok()) << "two servers on one port";
    EXPECT_NE(started.error().find(std::to_string(first.server->port())), std::string::npos) << started.error();
}

// The expert-fetch arms behind the server (cflow serve --expert-fetch, --cache-mib): direct
// reads with a RAM cache answer the same greedy completion as the mapped file, and the cache
// serves experts from the second request on.
TEST(OpenAiServer, ExpertFetchArmsAndTheCacheAnswerAlike) {
    test::SyntheticSpec spec;
    spec.vocab = 320;
    spec.seed = 23;
    spec.max_seq_len = 512;
    spec.n_layers = 3;
    spec.n_experts = 8;
    spec.top_k = 2;
    spec.expert_d_ff = 64;
    spec.router_skew = 4.0f;
    SourceModel source = test::make_synthetic_model(spec);
    source.metadata.set("tokenizer.chat_template", std::string(kChatMl));
    const auto path = test::temp_dir("openai_server_moe") / "moe-chat.cflow";
    ConvertOptions convert;
    convert.weight_quant = DType::Q8_0;
    ASSERT_TRUE(convert_to_cflow(source, path.string(), convert).ok());
    auto loaded = Model::load(path.string());
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    const std::string body = chat_body(12, 1, false, {{"temperature", 0.0}});

    std::vector<std::string> replies;
    for (ExpertFetch fetch : {ExpertFetch::Mapped, ExpertFetch::Sync, ExpertFetch::Staged}) {
        SCOPED_TRACE(static_cast<int>(fetch));
        SessionOptions session;
        session.threads = 1;
        session.expert_fetch = fetch;
        if (fetch != ExpertFetch::Mapped) session.expert_cache_bytes = 8ull << 20;  // the whole bank fits
        std::atomic<uint64_t> cache_hits{0};
        ServerObserver observer;
        observer.on_step = [&cache_hits](unsigned, const TokenTelemetry& step) { cache_hits += step.expertCacheHits; };
        ServerOptions options;
        options.port = 0;
        options.model_id = "chat-model";  // what chat_body names
        auto created = OpenAiServer::create(loaded.value(), session, options, observer);
        ASSERT_TRUE(created.ok()) << created.error();
        OpenAiServer& server = *created.value();
        ASSERT_TRUE(server.start().ok());
        httplib::Client client("127.0.0.1", server.port());
        client.set_read_timeout(60, 0);
        std::string first;
        for (int round = 0; round < 2; ++round) {
            auto r = client.Post("/v1/chat/completions", body, "application/json");
            ASSERT_TRUE(r);
            ASSERT_EQ(r->status, 200) << r->body;
            const std::string content = json::parse(r->body)["choices"][0]["message"]["content"];
            if (round == 0) first = content;
            EXPECT_EQ(content, first) << "a repeated greedy request";
        }
        server.stop();
        if (fetch == ExpertFetch::Mapped)
            EXPECT_EQ(cache_hits.load(), 0u) << "the page cache is the mapped arm's cache";
        else
            EXPECT_GT(cache_hits.load(), 0u) << "the second request's experts were read before";
        replies.push_back(first);
    }
    EXPECT_EQ(replies[1], replies[0]) << "sync vs mapped";
    EXPECT_EQ(replies[2], replies[0]) << "staged vs mapped";
}

// Issue 38: truncating the served model file killed `cflow serve` with SIGBUS (exit 135). Now the
// generation that reads past the new end fails with the reason (the file is cut after its third
// step), later requests are refused before they run (503 model_changed), /health says so, and
// the server keeps answering.
TEST(OpenAiServer, AModelFileTruncatedUnderTheServerFailsRequestsNotTheProcess) {
#ifdef _WIN32
    GTEST_SKIP() << "Windows refuses to shrink a file while it is mapped, so a served model cannot be truncated under the server";
#endif
    const std::string path = (test::temp_dir("openai_server") / "truncated-model.cflow").string();
    std::shared_ptr<const Model> model = load_chat_model("truncated-model.cflow");
    ASSERT_TRUE(model);
    auto steps = std::make_shared<std::atomic<int>>(0);
    auto cut_at = std::make_shared<std::atomic<int>>(-1);  // set once the first reply is in
    ServerObserver observer;
    observer.on_step = [steps, cut_at, path](unsigned, const TokenTelemetry&) {
        if (++*steps == cut_at->load()) std::filesystem::resize_file(path, 4096);
    };
    ServerOptions options;
    options.port = 0;
    options.model_id = "chat-model";
    SessionOptions session;
    session.threads = 1;
    auto created = OpenAiServer::create(model, session, options, observer);
    ASSERT_TRUE(created.ok()) << created.error();
    std::unique_ptr<OpenAiServer> server = std::move(created).value();
    ASSERT_TRUE(server->start().ok());
    httplib::Client client("127.0.0.1", server->port());
    client.set_read_timeout(60, 0);

    auto fine = client.Post("/v1/chat/completions", chat_body(4, 1, false), "application/json");
    ASSERT_TRUE(fine);
    EXPECT_EQ(fine->status, 200) << fine->body;

    *cut_at = *steps + 3;
    auto during = client.Post("/v1/chat/completions", chat_body(16, 1, true), "application/json");
    ASSERT_TRUE(during);
    EXPECT_NE(during->body.find("changed on disk while in use"), std::string::npos) << during->body;
    EXPECT_NE(during->body.find("read(s) past its end"), std::string::npos) << during->body;

    auto after = client.Post("/v1/chat/completions", chat_body(4, 1, false), "application/json");
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, 503) << after->body;
    EXPECT_EQ(json::parse(after->body)["error"]["code"], "model_changed") << after->body;
    auto health = client.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 503);
    EXPECT_EQ(json::parse(health->body)["status"], "model_changed") << health->body;
    auto models = client.Get("/v1/models");
    ASSERT_TRUE(models);
    EXPECT_EQ(models->status, 200) << "the server itself lives on";
}

// Issue 38: any web page could drive the local model (a `text/plain` POST from its origin needs
// no preflight; DNS rebinding makes its host name point at 127.0.0.1). Both are refused before a
// generation starts; an origin given with --cors is answered, with its CORS headers.
TEST(OpenAiServer, ForeignHostsAndOriginsAreRefusedAndCorsOriginsAnswered) {
    ServerOptions options;
    options.origin_policy.cors_origins = {"http://localhost:3000"};
    TestServer t(options);
    ASSERT_TRUE(t.server);
    auto rebound = t.client().Post("/v1/chat/completions", {{"Host", "evil.example:8080"}}, chat_body(4, 1, false), "text/plain");
    ASSERT_TRUE(rebound);
    EXPECT_EQ(rebound->status, 403) << rebound->body;
    EXPECT_EQ(json::parse(rebound->body)["error"]["code"], "forbidden_origin");
    auto foreign = t.client().Post("/v1/chat/completions", {{"Origin", "https://evil.example"}}, chat_body(4, 1, false), "text/plain");
    ASSERT_TRUE(foreign);
    EXPECT_EQ(foreign->status, 403) << foreign->body;
    EXPECT_NE(foreign->body.find("--cors https://evil.example"), std::string::npos) << foreign->body;
    {
        std::lock_guard lock(t.log->mutex);  // the server's threads append under it
        EXPECT_TRUE(t.log->served.empty()) << "no generation ran for a refused request";
    }

    auto preflight = t.client().Options("/v1/chat/completions", {{"Origin", "http://localhost:3000"},
                                                                 {"Access-Control-Request-Method", "POST"}});
    ASSERT_TRUE(preflight);
    EXPECT_EQ(preflight->status, 204);
    EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
    EXPECT_NE(preflight->get_header_value("Access-Control-Allow-Headers").find("Authorization"), std::string::npos);
    auto allowed = t.client().Post("/v1/chat/completions", {{"Origin", "http://localhost:3000"}}, chat_body(4, 1, false),
                                   "application/json");
    ASSERT_TRUE(allowed);
    EXPECT_EQ(allowed->status, 200) << allowed->body;
    EXPECT_EQ(allowed->get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
    auto plain = t.post("/v1/chat/completions", chat_body(4, 1, false));  // no Origin: not a browser
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->status, 200);
}

} // namespace
} // namespace cflow::server
