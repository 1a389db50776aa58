// The pieces of the protocol with no network: a chunk's delta, finish_reason, usage and
// llama.cpp's timings; malformed chunks named; base URLs taken apart; the request body.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cflow/remote/chat_request.h"
#include "cflow/remote/endpoint_url.h"
#include "cflow/remote/stream_chunk.h"

namespace cflow::remote {
namespace {

TEST(StreamChunk, ReadsDeltaFinishUsageAndLlamaCppTimings) {
    // A llama.cpp server's last chunk (trimmed).
    auto chunk = read_stream_chunk(R"({"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,
        "usage":{"completion_tokens":12,"prompt_tokens":7,"total_tokens":19},
        "timings":{"prompt_n":7,"prompt_ms":3.5,"predicted_n":12,"predicted_ms":60.0,"predicted_per_second":200.0}})");
    ASSERT_TRUE(chunk) << chunk.error();
    EXPECT_EQ(chunk->content, "");
    EXPECT_EQ(chunk->finish_reason, "stop");
    ASSERT_TRUE(chunk->usage);
    EXPECT_EQ(chunk->usage->prompt_tokens, 7);
    EXPECT_EQ(chunk->usage->completion_tokens, 12);
    ASSERT_TRUE(chunk->timings);
    EXPECT_EQ(chunk->timings->predicted_n, 12);
    EXPECT_DOUBLE_EQ(chunk->timings->predicted_per_second, 200.0);

    auto delta = read_stream_chunk(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]})");
    ASSERT_TRUE(delta) << delta.error();
    EXPECT_EQ(delta->content, "Hi");
    EXPECT_FALSE(delta->finish_reason);
    EXPECT_FALSE(delta->timings);

    auto whole = read_stream_chunk(R"({"choices":[{"index":0,"message":{"role":"assistant","content":"All"},"finish_reason":"length"}]})");
    ASSERT_TRUE(whole) << whole.error();
    EXPECT_EQ(whole->content, "All");
    EXPECT_EQ(whole->finish_reason, "length");
}

TEST(StreamChunk, ErrorsAndMalformedChunksAreNamed) {
    auto error = read_stream_chunk(R"({"error":{"message":"the model crashed","type":"server_error"}})");
    ASSERT_TRUE(error);
    EXPECT_EQ(error->error, "the model crashed");
    auto not_json = read_stream_chunk("{oops");
    ASSERT_FALSE(not_json);
    EXPECT_NE(not_json.error().find("chunk is not JSON: '{oops'"), std::string::npos);
    auto number = read_stream_chunk(R"({"choices":[{"delta":{"content":5}}]})");
    ASSERT_FALSE(number);
    EXPECT_NE(number.error().find("choices[0].delta.content is not a string"), std::string::npos);
}

TEST(StreamChunk, ReadsLogprobsWithBytesAndAlternatives) {
    // cflow serve's shape (llama.cpp's and vLLM's are the same): a token ending inside a character
    // has bytes that are not its text.
    auto chunk = read_stream_chunk(R"({"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null,
        "logprobs":{"content":[{"token":"H","logprob":-0.5,"bytes":[72],"top_logprobs":[{"token":"H","logprob":-0.5,"bytes":[72]},
        {"token":"\ufffd","logprob":-2.25,"bytes":[226,150]}]},{"token":"i","logprob":-0.125,"top_logprobs":[]}]}}]})");
    ASSERT_TRUE(chunk) << chunk.error();
    ASSERT_TRUE(chunk->logprobs);
    ASSERT_EQ(chunk->logprobs->size(), 2u);
    const RemoteTokenLogprob& first = (*chunk->logprobs)[0];
    EXPECT_EQ(first.chosen.token, "H");
    EXPECT_DOUBLE_EQ(first.chosen.logprob, -0.5);
    ASSERT_EQ(first.top.size(), 2u);
    EXPECT_EQ(first.top[1].bytes, "\xE2\x96");
    EXPECT_TRUE(first.top[1].bytes_sent);
    const RemoteTokenLogprob& second = (*chunk->logprobs)[1];
    EXPECT_EQ(second.chosen.bytes, "i") << "no bytes sent: the token's text";
    EXPECT_FALSE(second.chosen.bytes_sent);

    auto none = read_stream_chunk(R"({"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null}]})");
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->logprobs) << "null: the server reports none";
    auto absent = read_stream_chunk(R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})");
    ASSERT_TRUE(absent);
    EXPECT_FALSE(absent->logprobs);

    auto bad_logprob = read_stream_chunk(R"({"choices":[{"delta":{},"logprobs":{"content":[{"token":"a","logprob":"x"}]}}]})");
    ASSERT_FALSE(bad_logprob);
    EXPECT_NE(bad_logprob.error().find("choices[0].logprobs.content[0].logprob is not a number"), std::string::npos)
        << bad_logprob.error();
    auto bad_byte = read_stream_chunk(R"({"choices":[{"delta":{},"logprobs":{"content":[{"token":"a","logprob":0,
        "top_logprobs":[{"token":"b","logprob":-1,"bytes":[300]}]}]}}]})");
    ASSERT_FALSE(bad_byte);
    EXPECT_NE(bad_byte.error().find("content[0].top_logprobs[0].bytes holds 300"), std::string::npos) << bad_byte.error();
}

TEST(EndpointUrl, BaseUrlsAreTakenApart) {
    auto v1 = parse_endpoint_url("http://10.0.0.2:8080/v1/");
    ASSERT_TRUE(v1) << v1.error();
    EXPECT_EQ(v1->host, "10.0.0.2");
    EXPECT_EQ(v1->port, 8080);
    EXPECT_EQ(v1->route("/models"), "http://10.0.0.2:8080/v1/models");
    auto tls = parse_endpoint_url("https://example.org");
    ASSERT_TRUE(tls);
    EXPECT_EQ(tls->port, 443);
    EXPECT_EQ(tls->route("/chat/completions"), "https://example.org:443/chat/completions");
    auto v6 = parse_endpoint_url("http://[::1]:9000/v1");
    ASSERT_TRUE(v6) << v6.error();
    EXPECT_EQ(v6->host, "::1");
    EXPECT_EQ(v6->origin(), "http://[::1]:9000");
    for (const char* bad : {"ftp://x/v1", "http://:80/v1", "http://host:0/v1", "http://host:99999", "http://u:p@host/v1",
                            "http://host/v1?x=1", "localhost:8080/v1"}) {
        auto r = parse_endpoint_url(bad);
        EXPECT_FALSE(r) << bad;
        if (!r) {
            EXPECT_NE(r.error().find(std::string("endpoint URL '") + bad + "'"), std::string::npos) << r.error();
        }
    }
}

TEST(ChatRequestJson, CarriesMessagesSamplingAndStreamOptions) {
    RemoteChatRequest request;
    request.model = "m";
    request.messages = {{"system", "s"}, {"user", "u"}};
    request.sampling.temperature = 0.5f;
    request.sampling.seed = 9;
    request.max_tokens = 16;
    request.stop = {"\n\n"};
    const auto body = nlohmann::json::parse(chat_request_json(request));
    EXPECT_EQ(body["model"], "m");
    EXPECT_EQ(body["messages"][1]["content"], "u");
    EXPECT_FLOAT_EQ(body["temperature"].get<float>(), 0.5f);
    EXPECT_EQ(body["seed"], 9);
    EXPECT_EQ(body["max_tokens"], 16);
    EXPECT_EQ(body["stop"][0], "\n\n");
    EXPECT_EQ(body["stream"], true);
    EXPECT_EQ(body["stream_options"]["include_usage"], true);
    EXPECT_FALSE(body.contains("top_k")) << "unset sampling fields are the server's defaults";
    request.stream = false;
    EXPECT_FALSE(nlohmann::json::parse(chat_request_json(request)).contains("stream_options"));
    EXPECT_FALSE(body.contains("logprobs")) << "asked for only when wanted";
    request.logprobs = true;
    request.top_logprobs = 5;
    const auto with_logprobs = nlohmann::json::parse(chat_request_json(request));
    EXPECT_EQ(with_logprobs["logprobs"], true);
    EXPECT_EQ(with_logprobs["top_logprobs"], 5);
}

} // namespace
} // namespace cflow::remote
