#pragma once
// A client of one MCP server over the stdio transport (modelcontextprotocol.io, "Transports"):
// the server runs as a child process (QProcess); each JSON-RPC 2.0 message is one line of UTF-8
// JSON on its stdin / stdout; its stderr is kept (the last lines) for error messages.
// start() runs the lifecycle's handshake (initialize with our protocolVersion and capabilities,
// then notifications/initialized) and lists the tools (tools/list, following nextCursor);
// call() is tools/call, whose text content blocks are joined and whose isError is honoured.
// Every request has a timeout: a server that does not answer in time gives "MCP server X did not
// answer tools/call within N s" and the request is cancelled (notifications/cancelled). A server
// that exits or crashes fails what is in flight with its exit code and the last lines of its
// stderr; a line that is not JSON-RPC fails what is in flight too. Closing kills the process.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include <QJsonObject>
#include <QProcess>
#include <QStringList>

#include "cflow/base/result.h"
#include "cflow/ui/tools/mcp_server_config.h"
#include "cflow/ui/tools/tool_provider.h"

namespace cflow::ui {

class McpExchange;

class McpClient : public ToolProvider {
    Q_OBJECT
public:
    enum class State { NotStarted, Starting, Ready, Failed };
    static constexpr std::chrono::milliseconds kDefaultRequestTimeout{60'000};
    static constexpr const char* kProtocolVersion = "2025-06-18";  // what initialize asks for

    explicit McpClient(McpServerConfig config, std::chrono::milliseconds requestTimeout = kDefaultRequestTimeout,
                       QObject* parent = nullptr);
    ~McpClient() override;  // kills the server; requests in flight resolve with an error

    // Starts the server (a running one is closed first), shakes hands and lists its tools.
    QCoro::Task<Status> start();
    // tools/list again (every page).
    QCoro::Task<Status> refreshTools();
    // Kills the server; requests in flight resolve with "MCP server X was closed".
    void close();

    State state() const { return state_; }
    const QString& lastError() const { return lastError_; }
    const McpServerConfig& config() const { return config_; }
    const QString& serverProtocolVersion() const { return serverProtocolVersion_; }
    const QStringList& stderrTail() const { return stderrTail_; }

    QString name() const override { return config_.name; }
    QString summary() const override;
    // The listed tools while the server is ready; none otherwise.
    std::vector<cflow::ToolDefinition> tools() const override;
    QCoro::Task<ToolResult> call(cflow::ToolCall call) override;

    // Tools the server listed that the chat cannot offer (a name outside [A-Za-z0-9_-]{1,64}).
    const QStringList& skippedTools() const { return skippedTools_; }

private:
    struct RpcReply {
        bool ok = false;
        QJsonValue result;
        QString error;
    };
    QCoro::Task<RpcReply> request(QString method, QJsonObject params);
    QCoro::Task<Status> handshake();
    void send(const QJsonObject& message);
    void onStdout();
    void onStderr();
    void onFinished(int exitCode, QProcess::ExitStatus exitStatus);
    void onProcessError(QProcess::ProcessError error);
    void handleMessage(const QJsonObject& message);
    // Resolves every request in flight with messageFor(its method).
    void failInFlight(const std::function<QString(const QString& method)>& messageFor);
    void setState(State state, const QString& error = {});
    QString stderrLines() const;  // "; its stderr ended with: ..." or ""
    QString seconds() const;

    McpServerConfig config_;
    std::chrono::milliseconds requestTimeout_;
    std::unique_ptr<QProcess> process_;
    State state_ = State::NotStarted;
    QString lastError_;
    QString serverProtocolVersion_;
    std::vector<cflow::ToolDefinition> tools_;
    QStringList skippedTools_;
    std::map<int64_t, McpExchange*> inFlight_;  // by JSON-RPC id; each lives in its request's frame
    int64_t nextId_ = 1;
    QByteArray stdoutPending_;  // bytes of a line not yet ended by '\n'
    QByteArray stderrPending_;
    QStringList stderrTail_;    // the last kStderrLines lines
};

} // namespace cflow::ui
