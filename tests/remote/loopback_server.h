#pragma once
// An httplib server on 127.0.0.1 that a test programs to misbehave, and the SSE pieces it sends.
// Shared by the fault tests of each HttpTransport (tests/remote for cpp-httplib, tests/ui for Qt
// Network), so both are held to the same server.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace cflow::test {

inline std::string chunk_event(const std::string& content) {
    return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + content + "\"},\"finish_reason\":null}]}\n\n";
}
inline const std::string kEndEvents =
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n"
    "data: [DONE]\n\n";

// An httplib server on 127.0.0.1, a free port, serving in a thread until the test ends.
class LoopbackServer {
public:
    httplib::Server http;
    std::atomic<bool> release{false};  // lets a stalling handler end at teardown

    void start() {
        port_ = http.bind_to_any_port("127.0.0.1");
        ASSERT_GT(port_, 0);
        thread_ = std::thread([this] { http.listen_after_bind(); });
        // stop() before the loop runs would be lost (httplib 0.11 stops a running server only).
        while (!http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ~LoopbackServer() {
        release = true;
        http.stop();
        if (thread_.joinable()) thread_.join();
    }
    std::string base_url(const std::string& path = "/v1") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
    int port() const { return port_; }

    // Sleeps in 10 ms slices up to max_ms, ending early at teardown.
    void stall(int max_ms) const {
        for (int i = 0; i < max_ms / 10 && !release; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }

private:
    int port_ = 0;
    std::thread thread_;
};

// Streams `events` through a chunked response; end_cleanly false drops the connection without
// the final chunk, as a server that dies mid-reply does.
inline void stream_events(httplib::Response& res, std::vector<std::string> events, bool end_cleanly,
                          std::function<void()> before_end = {}) {
    res.set_chunked_content_provider("text/event-stream", [events, end_cleanly, before_end](size_t, httplib::DataSink& sink) {
        for (const std::string& e : events) sink.write(e.data(), e.size());
        if (before_end) before_end();
        if (!end_cleanly) return false;
        sink.done();
        return true;
    });
}

// Streams `chunks` content events of `text`, one every interval_ms (a server decoding at its own
// pace), stopping early at teardown or when the client goes; then the events `tail` returns
// (it may stall first), and ends the stream.
inline void paced_events(httplib::Response& res, LoopbackServer& server, int chunks, int interval_ms,
                         std::string text = "t", std::function<std::string()> tail = {}) {
    res.set_chunked_content_provider("text/event-stream", [&server, chunks, interval_ms, text, tail](size_t, httplib::DataSink& sink) {
        for (int i = 0; i < chunks && !server.release; ++i) {
            const std::string e = chunk_event(text);
            if (!sink.write(e.data(), e.size())) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
        }
        if (tail) {
            const std::string last = tail();
            if (!sink.write(last.data(), last.size())) return false;
        }
        sink.done();
        return true;
    });
}

} // namespace cflow::test
