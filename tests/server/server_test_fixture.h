#pragma once
// The server suites' fixture: the synthetic chat model (ChatML template) converted once and
// served on a free loopback port, the observer's log of served requests, and readers of
// streamed replies.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/formats/converter.h"
#include "cflow/server/openai_server.h"
#include "cflow/server/sse.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::server {

inline const char* const kChatMl =
    "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

// The synthetic chat model converted to `file_name` under the test's folder and loaded (mapped).
inline std::shared_ptr<const Model> load_chat_model(const std::string& file_name) {
    test::SyntheticSpec spec;
    spec.vocab = 320;
    spec.seed = 21;
    spec.max_seq_len = 1024;
    SourceModel source = test::make_synthetic_model(spec);
    source.metadata.set("tokenizer.chat_template", std::string(kChatMl));
    const auto path = test::temp_dir("openai_server") / file_name;
    ConvertOptions options;
    options.weight_quant = DType::F32;
    EXPECT_TRUE(convert_to_cflow(source, path.string(), options).ok());
    auto loaded = Model::load(path.string());
    EXPECT_TRUE(loaded.ok());
    return loaded.ok() ? loaded.value() : nullptr;
}

inline std::shared_ptr<const Model> chat_model() {
    static std::shared_ptr<const Model> model = load_chat_model("chat-model.cflow");
    return model;
}

// Served requests as the observer reports them, for tests that wait on the server's side.
struct ServedLog {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<ServedRequest> served;

    ServedRequest wait_for(size_t count) {
        std::unique_lock lock(mutex);
        EXPECT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return served.size() >= count; })) << "no report";
        return served.size() >= count ? served[count - 1] : ServedRequest{};
    }
};

struct TestServer {
    std::unique_ptr<OpenAiServer> server;
    std::shared_ptr<ServedLog> log = std::make_shared<ServedLog>();

    explicit TestServer(ServerOptions options = {}, std::chrono::microseconds step_delay = {}) {
        options.port = 0;
        options.model_id = "chat-model";
        SessionOptions session;
        session.threads = 1;
        ServerObserver observer;
        auto shared_log = log;
        observer.on_served = [shared_log](const ServedRequest& r) {
            std::lock_guard lock(shared_log->mutex);
            shared_log->served.push_back(r);
            shared_log->changed.notify_all();
        };
        if (step_delay.count() > 0)
            observer.on_step = [step_delay](unsigned, const TokenTelemetry&) { std::this_thread::sleep_for(step_delay); };
        auto created = OpenAiServer::create(chat_model(), session, options, observer);
        EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
        if (!created.ok()) return;
        server = std::move(created).value();
        const Status started = server->start();
        EXPECT_TRUE(started.ok()) << started.error();
    }

    httplib::Client client() const {
        httplib::Client c("127.0.0.1", server->port());
        c.set_read_timeout(60, 0);
        return c;
    }
    httplib::Result post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) const {
        return client().Post(path.c_str(), headers, body, "application/json");
    }
};

inline std::string chat_body(int max_tokens, uint64_t seed, bool stream, const nlohmann::json& extra = nlohmann::json::object()) {
    nlohmann::json body = {{"model", "chat-model"},
                 {"messages", {{{"role", "system"}, {"content", "You are terse."}}, {{"role", "user"}, {"content", "Say something."}}}},
                 {"max_tokens", max_tokens},
                 {"seed", seed},
                 {"temperature", 0.9},
                 {"stream", stream}};
    body.update(extra);
    return body.dump();
}

// The content of a streamed chat completion, its finish reason and the usage chunk.
struct StreamedReply {
    std::string content;
    std::string finish_reason;
    nlohmann::json usage;
    bool done = false;
    size_t chunks = 0;
};

inline StreamedReply read_stream(const std::string& body) {
    StreamedReply reply;
    for (const std::string& data : parse_sse_events(body)) {
        if (data == "[DONE]") {
            reply.done = true;
            continue;
        }
        EXPECT_FALSE(reply.done) << "nothing after [DONE]";
        const nlohmann::json chunk = nlohmann::json::parse(data);
        ++reply.chunks;
        if (chunk.contains("usage")) reply.usage = chunk["usage"];
        for (const nlohmann::json& choice : chunk["choices"]) {
            if (choice["delta"].contains("content")) reply.content += choice["delta"]["content"].get<std::string>();
            if (!choice["finish_reason"].is_null()) reply.finish_reason = choice["finish_reason"];
        }
    }
    return reply;
}

} // namespace cflow::server
