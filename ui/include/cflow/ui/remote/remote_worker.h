#pragma once
// Replies written by an OpenAI-compatible endpoint (issue 34), on a thread of their own. The
// remote counterpart of EngineWorker: the same signals (promptReady, tokensReady in ~30 ms
// batches, finished, error), so ChatController handles a remote reply exactly as a local one.
//
// The server renders the prompt, applies its own template and counts tokens: PromptMode,
// template choices and the context policy are the server's business and are not sent. The reply
// format goes as response_format; tools are not sent in this slice (the controller notes it on
// the reply).
//
// RemoteClient's transport (Qt Network) blocks this thread in a local event loop while a reply
// streams, and that loop also runs this thread's queued slots: configure() may run inside
// generate(), so generate() works on its own copy of the endpoint.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <QObject>
#include <QString>
#include <QThread>

#include "cflow/base/cancel.h"
#include "cflow/remote/chat_request.h"
#include "cflow/remote/remote_client.h"
#include "cflow/ui/chat_types.h"
#include "cflow/ui/remote/endpoint_profile.h"
#include "cflow/ui/worker_thread.h"
#include "cflow/ui/token_spans.h"

namespace cflow::ui {

// The request a conversation and the sampling settings make for profile's model: the system
// prompt and the user/assistant turns (tool turns are left out: tools are not sent), sampling,
// the seed, the reply format (response_format), and max_tokens when the settings fix it (0 = the
// server's default).
cflow::remote::RemoteChatRequest remote_chat_request(const EndpointProfile& profile, const Conversation& conversation,
                                                     const GenerationSettings& settings);

// The client's configuration for profile and its key (error advice worded for the desktop).
cflow::remote::EndpointConfig remote_endpoint_config(const EndpointProfile& profile, const QString& apiKey);

// What a finished remote reply reports to the status line and the inspector. arrivalMs: each
// content chunk's arrival, from the request's start.
ReplyStats remote_reply_stats(const cflow::remote::RemoteReply& reply, std::vector<float> arrivalMs);

class RemoteWorker : public QObject {
    Q_OBJECT
public:
    static constexpr int kBatchIntervalMs = 30;  // as EngineWorker: streamed text in ~30 ms batches
    // The latency timeline keeps at most this many arrivals of one reply (a long reply's rest is counted, not kept).
    static constexpr size_t kMaxArrivals = 100'000;

    explicit RemoteWorker(QObject* parent = nullptr);

    // Thread-safe: cancels the reply in progress; it ends within one chunk, its text kept.
    void stop();
    // Thread-safe: cancels and turns every later request into a no-op (before the thread quits).
    void shutdown();
    // Thread-safe: how many times stop() was called (see EngineWorker::stopRequests).
    uint64_t stopRequests() const { return stopRequests_.load(std::memory_order_acquire); }
    static constexpr uint64_t kNoStopCheck = ~uint64_t{0};

public slots:
    // The endpoint later replies go to; answers with modelLoaded (name: the endpoint's label,
    // context length 0: the server knows it).
    void configure(const cflow::ui::EndpointProfile& profile, const QString& apiKey);
    void generate(const cflow::ui::Conversation& conversation, const cflow::ui::GenerationSettings& settings,
                  uint64_t stopsAtPost = kNoStopCheck);

signals:
    void modelLoaded(const cflow::ui::ModelInfo& info);
    void promptReady(const cflow::ui::RenderedPrompt& prompt);
    void tokensReady(const QString& text, int tokenCount, const cflow::ui::TokenPieces& pieces);
    // With each batch: its chunks' arrivals (ms from the request's start), for the latency timeline.
    void chunksArrived(const std::vector<float>& arrivalMs);
    void finished(const cflow::ui::ReplyStats& stats);
    // After a reply: one line of what the server reports on GET /metrics (vLLM, llama.cpp's server
    // with --metrics), or why there is none. Asked after each finished reply until the endpoint
    // answers without metrics or fails once; then not again until the next configure().
    void serverMetrics(const QString& line);
    void error(const cflow::ui::WorkerError& error);

private:
    void reportServerMetrics(cflow::remote::RemoteClient& client);

    EndpointProfile profile_;
    QString apiKey_;
    bool configured_ = false;
    bool metricsAbsent_ = false;  // the endpoint had no /metrics (or it failed): not asked again
    CancelToken cancel_;
    std::atomic<bool> shutDown_{false};
    std::atomic<uint64_t> stopRequests_{0};
};

// Owns the remote worker's thread (as EngineThread does the engine's).
class RemoteThread : public WorkerThread<RemoteWorker> {
public:
    RemoteThread() : WorkerThread(QStringLiteral("cflow-remote")) {}
};

} // namespace cflow::ui
