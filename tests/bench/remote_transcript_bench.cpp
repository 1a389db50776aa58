// cflow_bench_remote_transcript (issue 34): do streamed replies from an endpoint reach the
// transcript at the rate the server sends them? An in-process loopback SSE server (cpp-httplib,
// its own thread) sends N chunks of fixed text, either paced (one every --pace-us) or flat out,
// while the desktop's path receives them offscreen: ChatController -> RemoteWorker (its thread,
// the Qt Network transport, ~30 ms batches) -> ChatController::replyStreamed, with the store
// written at every batch as in the app. Prints, per run:
//   - the server's send rate: chunks (and characters) per second between its first and last chunk;
//   - the transcript's arrival rate between the first and the last batch that reached
//     replyStreamed (characters after the first batch over that span), and its ratio to the send
//     rate (the figure, >= 0.95);
//   - the stricter end-to-end ratio: all characters over [first send, last arrival] against the
//     send rate over [first send, last send] (what the 30 ms batching and the hops cost in all).
// A plain executable: prints, registers no test.
//
//   cflow_bench_remote_transcript [--chunks N] [--pace-us P1,P2,...] [--flat-chunks F] [--runs R]
// Each paced run sends N chunks, or enough for 2 s at its pace when that is more.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <QApplication>
#include <QTemporaryDir>
#include <QTest>

#include <httplib.h>

#include "cflow/ui/chat_controller.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/remote/endpoint_profile.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
    int chunks = 2000;
    std::vector<int> paceUs = {1000, 100};  // 1000 and 10000 chunks/s: a fast server's token rate, and ten times it
    int flatChunks = 400'000;  // flat out, 2000 chunks end inside one 30 ms batch: enough for ~100 batches
    int runs = 2;
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--chunks")) a.chunks = std::max(10, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--flat-chunks")) a.flatChunks = std::max(10, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--pace-us")) {
            a.paceUs.clear();
            for (const char* p = argv[i + 1]; *p; ++p) {
                a.paceUs.push_back(std::max(1, std::atoi(p)));
                while (*p && *p != ',') ++p;
                if (!*p) break;
            }
        }
        else if (!std::strcmp(argv[i], "--runs")) a.runs = std::max(1, std::atoi(argv[i + 1]));
    }
    return a;
}

// Each chunk's text: 5 characters, so characters and chunks give the same ratio.
const std::string kPiece = "word ";

std::string chunk_event(const std::string& content) {
    return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + content + "\"},\"finish_reason\":null}]}\n\n";
}

// An SSE server sending `chunks` pieces, paced or flat out (paceUs 0), recording when the first
// and the last were handed to the socket.
class SseServer {
public:
    std::atomic<int> chunks{0};
    std::atomic<int> paceUs{0};
    // Written by the server's thread, read once the reply has ended.
    std::atomic<Clock::rep> firstSentTicks{0}, lastSentTicks{0};
    Clock::time_point firstSent() const { return Clock::time_point(Clock::duration(firstSentTicks.load())); }
    Clock::time_point lastSent() const { return Clock::time_point(Clock::duration(lastSentTicks.load())); }

    SseServer() {
        http_.Post("/v1/chat/completions", [this](const httplib::Request&, httplib::Response& res) {
            res.set_chunked_content_provider("text/event-stream", [this](size_t, httplib::DataSink& sink) {
                const int n = chunks.load();
                const int pace = paceUs.load();
                const std::string event = chunk_event(kPiece);
                const Clock::time_point start = Clock::now();
                for (int i = 0; i < n; ++i) {
                    if (pace > 0) std::this_thread::sleep_until(start + std::chrono::microseconds(int64_t(pace) * i));
                    if (!sink.write(event.data(), event.size())) return false;
                    const Clock::rep now = Clock::now().time_since_epoch().count();
                    if (i == 0) firstSentTicks = now;
                    lastSentTicks = now;
                }
                const std::string end =
                    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":" + std::to_string(n) +
                    "}}\n\ndata: [DONE]\n\n";
                sink.write(end.data(), end.size());
                sink.done();
                return true;
            });
        });
        port_ = http_.bind_to_any_port("127.0.0.1");
        thread_ = std::thread([this] { http_.listen_after_bind(); });
        while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ~SseServer() {
        http_.stop();
        thread_.join();
    }
    QString baseUrl() const { return QStringLiteral("http://127.0.0.1:%1/v1").arg(port_); }

private:
    httplib::Server http_;
    std::thread thread_;
    int port_ = 0;
};

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Arrival {
    Clock::time_point at;
    qsizetype chars;
};

bool run_once(cflow::ui::ChatController& controller, SseServer& server, int chunks, int paceUs, const char* name) {
    server.chunks = chunks;
    server.paceUs = paceUs;
    std::vector<Arrival> arrivals;
    arrivals.reserve(size_t(chunks));
    const auto connection = QObject::connect(&controller, &cflow::ui::ChatController::replyStreamed,
                                             [&](int, const QString& text, int, const cflow::ui::TokenPieces&) {
                                                 arrivals.push_back({Clock::now(), text.size()});
                                             });
    controller.newConversation();
    if (!controller.send(QStringLiteral("go"))) {
        std::fprintf(stderr, "send refused\n");
        return false;
    }
    const bool ended = QTest::qWaitFor([&] { return !controller.isGenerating(); }, 600'000);
    QObject::disconnect(connection);
    const qsizetype expected = qsizetype(chunks) * qsizetype(kPiece.size());
    qsizetype total = 0;
    for (const Arrival& a : arrivals) total += a.chars;
    if (!ended || total != expected || arrivals.size() < 2) {
        std::fprintf(stderr, "%s: the reply did not arrive whole (%lld of %lld characters, %zu batches)\n", name,
                     (long long)total, (long long)expected, arrivals.size());
        return false;
    }
    const double sendS = seconds(server.lastSent() - server.firstSent());
    const double sendCharsPerS = double(expected - qsizetype(kPiece.size())) / sendS;  // after the first chunk
    const double arriveS = seconds(arrivals.back().at - arrivals.front().at);
    const double arriveCharsPerS = double(total - arrivals.front().chars) / arriveS;
    const double endToEndS = seconds(arrivals.back().at - server.firstSent());
    const double endToEndRatio = (double(expected) / endToEndS) / (double(expected) / std::max(sendS, 1e-9));
    std::printf("%-13s %6d chunks  server %9.0f chunks/s (%10.0f chars/s)  transcript %10.0f chars/s in %4zu batches  "
                "ratio %.3f  end-to-end %.3f  (last batch %.1f ms after the last send)\n",
                name, chunks, sendCharsPerS / double(kPiece.size()), sendCharsPerS, arriveCharsPerS, arrivals.size(),
                arriveCharsPerS / sendCharsPerS, endToEndRatio, seconds(arrivals.back().at - server.lastSent()) * 1e3);
    return true;
}

} // namespace

int main(int argc, char** argv) {
    const Args args = parse(argc, argv);
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QTemporaryDir dir;
    auto store = cflow::ui::ConversationStore::open(dir.filePath(QStringLiteral("bench.sqlite")));
    if (!store) {
        std::fprintf(stderr, "%s\n", store.error().c_str());
        return 1;
    }
    cflow::ui::EngineThread engine;  // the controller's local engine, idle here
    cflow::ui::ChatController controller(engine.worker(), store->get());
    cflow::ui::GenerationSettings settings;
    controller.setSettingsSource([settings] { return settings; });
    SseServer server;
    cflow::ui::EndpointProfile profile;
    profile.baseUrl = server.baseUrl();
    profile.readTimeoutS = 30;
    controller.connectEndpoint(profile, QString());
    if (!QTest::qWaitFor([&] { return controller.onEndpoint() && controller.modelReady(); }, 10'000)) {
        std::fprintf(stderr, "the endpoint was not connected\n");
        return 1;
    }
    std::printf("cflow_bench_remote_transcript: chunks of %zu characters, paced (%d or 2 s of chunks) and %d flat out, %d runs\n",
                kPiece.size(), args.chunks, args.flatChunks, args.runs);
    for (int run = 0; run < args.runs; ++run) {
        for (int pace : args.paceUs) {
            const std::string name = "paced " + std::to_string(pace) + "us";
            if (!run_once(controller, server, std::max(args.chunks, 2'000'000 / pace), pace, name.c_str())) return 1;
        }
        if (!run_once(controller, server, args.flatChunks, 0, "flat-out")) return 1;
    }
    return 0;
}
