#pragma once
// The engine on its own thread. EngineWorker owns the Model and the Session and lives on
// a QThread (see EngineThread); the GUI talks to it only through queued slot calls and
// receives tokens, the rendered prompt, stats and errors through queued signals, so the
// GUI thread never blocks on inference. stop() and setTelemetrySink() are the two calls
// that are safe from any thread (they must work while the worker thread is busy).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <QObject>
#include <QString>
#include <QThread>

#include "cflow/engine/forward/load_policy.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/forward/telemetry.h"
#include "cflow/base/cancel.h"
#include "cflow/ui/chat_types.h"
#include "cflow/ui/token_spans.h"
#include "cflow/ui/worker_thread.h"

namespace cflow::ui {

class EngineWorker : public QObject {
    Q_OBJECT
public:
    // Receives every forward step's telemetry on the worker thread (the inspector's ring
    // producer). Must be cheap and must not block.
    using TelemetrySink = std::function<void(const TokenTelemetry&)>;
    static constexpr int kBatchIntervalMs = 30;  // streamed text is coalesced into ~30 ms batches

    explicit EngineWorker(QObject* parent = nullptr);
    ~EngineWorker() override;

    // Thread-safe. Takes effect at the next generation.
    void setTelemetrySink(TelemetrySink sink);
    // Thread-safe: cancels the generation in progress; it ends within one token.
    // Returns the tokens generated so far in that reply (read after the cancel was set).
    int stop();
    // Thread-safe: cancels the current generation and turns every later request into a no-op
    // (called before the thread is quit).
    void shutdown();
    // Thread-safe: how many times stop() was called; a request posted with this count is
    // cancelled when it starts if stop() was called after it was posted.
    uint64_t stopRequests() const { return stopRequests_.load(std::memory_order_acquire); }
    static constexpr uint64_t kNoStopCheck = ~uint64_t{0};
    // Thread-safe: tokens generated so far in the current (or last) reply.
    int tokensGenerated() const { return tokensGenerated_.load(std::memory_order_acquire); }

    // Thread-safe; before the first load: what loadModel opens files with (Model::load when unset).
    // Tests count the opens through it.
    void setModelLoader(ModelLoader loader);
    // Thread-safe: counts load requests; the value returned goes with the request it was taken for
    // (loadModel's loadsAtPost), so a request that a newer one overtook while queued is skipped.
    uint64_t postLoadRequest() { return loadRequests_.fetch_add(1, std::memory_order_acq_rel) + 1; }
    static constexpr uint64_t kNoLoadCheck = ~uint64_t{0};

public slots:
    // Opens and validates path once (Model::load, or the injected loader) and answers with
    // modelLoaded, whose ModelInfo carries the summary and card read from that open, or loadFailed.
    // loadsAtPost: postLoadRequest() for this request (kNoLoadCheck: never skipped).
    void loadModel(const QString& path, unsigned threads, uint64_t loadsAtPost = kNoLoadCheck);
    // Renders the conversation with the model's chat template (or the fallback), reuses the
    // KV cache where the new prompt extends what it holds, and streams the reply.
    // stopsAtPost: stopRequests() when the request was posted (kNoStopCheck: no check).
    void generate(const cflow::ui::Conversation& conversation, const cflow::ui::GenerationSettings& settings,
                  uint64_t stopsAtPost = kNoStopCheck);
    // Renders and encodes the conversation as generate() would (template, mode, context
    // policy, KV reuse plan) without running anything: the context gauge and the raw-prompt
    // view of a conversation that is not being generated. Answers with measured(serial, ...).
    // Sessions this worker has built so far (each one starts with an empty KV cache); any thread.
    int sessionsCreated() const { return sessionsCreated_.load(std::memory_order_relaxed); }
    void measure(quint64 serial, const cflow::ui::Conversation& conversation,
                 const cflow::ui::GenerationSettings& settings);

signals:
    void modelLoaded(const cflow::ui::ModelInfo& info);
    void loadFailed(const QString& path, const cflow::ui::WorkerError& error);
    void promptReady(const cflow::ui::RenderedPrompt& prompt);
    void measured(quint64 serial, const cflow::ui::RenderedPrompt& prompt);
    // Prompt tokens computed so far of this turn's `total` to feed (after KV reuse); sent at
    // most every kBatchIntervalMs while the prompt is processed, and once when it is done.
    void promptProgress(int processed, int total);
    // Newly decoded text since the previous batch, how many tokens it holds, and which part of
    // it each token wrote: one piece per token in order (plus one for the decoder's flushed
    // tail, credited to the last token), whose UTF-16 lengths add up to text.size().
    void tokensReady(const QString& text, int tokenCount, const cflow::ui::TokenPieces& pieces);
    void finished(const cflow::ui::ReplyStats& stats);
    void error(const cflow::ui::WorkerError& error);

private:
    // The chat core does the rendering, encoding, KV reuse and stop rules; this only adapts
    // its turn to queued signals and batched text.
    void run(Result<PreparedTurn> prepared, const GenerationSettings& settings, uint64_t stopsAtPost = kNoStopCheck);
    // A session for these settings, kept when it already fits (a new one starts with an empty KV cache).
    bool ensureSession(unsigned threads, KvCacheType kvCache, ExpertFetch expertFetch, int expertCacheMiB);
    // The turn generate() would run: template applied, completion text joined, policy planned.
    Result<PreparedTurn> prepareTurn(const Conversation& conversation, const GenerationSettings& settings);
    RenderedPrompt describe(const PreparedTurn& turn, const GenerationSettings& settings) const;
    // Whether these settings ask for tools at all (chat mode, some tools, a choice other than none).
    bool offersTools(const GenerationSettings& settings) const;
    // Caps on a forced call's unbounded strings and arrays (JsonSchemaLimits), so a small model
    // ends its arguments.
    static constexpr size_t kToolArgumentMaxChars = 64;
    static constexpr size_t kToolArgumentMaxItems = 8;

    std::shared_ptr<const Model> model_;
    std::unique_ptr<ChatSession> chat_;
    QString modelPath_;

    int sessionCacheMiB_ = 0;  // the expertCacheMiB the session was made with ('fit' resolves anew each time)
    std::atomic<int> sessionsCreated_{0};

    CancelToken cancel_;
    std::atomic<bool> shutDown_{false};
    std::atomic<int> tokensGenerated_{0};
    std::atomic<uint64_t> stopRequests_{0};
    std::atomic<uint64_t> loadRequests_{0};
    std::mutex loaderMutex_;
    ModelLoader loader_;  // empty: Model::load
    std::mutex sinkMutex_;
    TelemetrySink sink_;
};

// The engine's worker on its own thread (worker_thread.h): cancels any generation and joins the
// thread on destruction.
class EngineThread : public WorkerThread<EngineWorker> {
public:
    EngineThread() : WorkerThread(QStringLiteral("cflow-engine")) {}
};

} // namespace cflow::ui
