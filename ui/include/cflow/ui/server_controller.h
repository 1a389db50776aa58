#pragma once
// The desktop app's Server switch: runs the same OpenAI-compatible server as `cflow serve`
// (server/include/cflow/server/openai_server.h) on the model the chat has loaded, sharing its
// weights (each server slot has its own session and KV cache). Lives on the GUI thread;
// requests are answered on the server's own threads, and what they report comes back here
// through queued calls. Every forward step of a served generation goes to the telemetry sink
// (the inspector's ring), so the charts show the server's generations as they run.
#include <cstdint>
#include <functional>
#include <memory>

#include <QObject>
#include <QString>

#include "cflow/base/result.h"

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/telemetry.h"

namespace cflow::server {
class OpenAiServer;
struct ServedRequest;
}

namespace cflow::ui {

struct ServerSettings {
    QString host = QStringLiteral("127.0.0.1");
    int port = 8080;                 // 0: any free port
    QString apiKey;                  // empty: no key
    int parallel = 1;                // generation slots
    int threadsPerSlot = 0;          // 0: the cores shared out between the slots
    bool operator==(const ServerSettings&) const = default;
};

class ServerController : public QObject {
    Q_OBJECT
public:
    using TelemetrySink = std::function<void(const TokenTelemetry&)>;  // called on request threads

    explicit ServerController(QObject* parent = nullptr);
    ~ServerController() override;

    static bool available();  // false in a build without cpp-httplib

    void setSettings(const ServerSettings& settings) { settings_ = settings; }
    const ServerSettings& settings() const { return settings_; }
    void setTelemetrySink(TelemetrySink sink);

    // Starts serving `model` (loaded from modelPath, which names it in /v1/models); a running
    // server is stopped first. Errors: Unsupported (a build without the server), InvalidInput
    // (no model), the server's own (Io for a port in use, ...), each with its message.
    Status start(std::shared_ptr<const Model> model, const QString& modelPath);
    void stop();

    bool isRunning() const;
    QString url() const;            // "http://127.0.0.1:8080/v1" while running
    QString modelId() const;
    uint64_t requestsServed() const { return served_; }
    QString lastRequestSummary() const { return lastSummary_; }

signals:
    void runningChanged(bool running);
    // After each answered generation request, on the GUI thread.
    void requestServed(const QString& summary, quint64 requestsServed);

private:
    void onServed(const QString& summary);

    ServerSettings settings_;
    std::unique_ptr<server::OpenAiServer> server_;
    std::shared_ptr<TelemetrySink> sink_;   // shared with the request threads
    QString modelId_;
    QString lastSummary_;
    uint64_t served_ = 0;
};

} // namespace cflow::ui
