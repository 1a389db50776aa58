#include "cflow/ui/tools/mcp_client.h"

#include <algorithm>

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QProcessEnvironment>
#include <QRegularExpression>

#include <QCoro/QCoroSignal>

#include "cflow/ui/tools/mcp_exchange.h"
#include "qt_text.h"
#include "tool_arguments.h"

namespace cflow::ui {
namespace {

constexpr int kMcpStderrLines = 8;                          // kept for error messages
constexpr qsizetype kMcpStderrLineChars = 300;              // each kept line cut to this
constexpr qsizetype kMcpMaxLineBytes = 64 * 1024 * 1024;    // one JSON-RPC message on stdout
constexpr int kMcpMaxListPages = 1000;                      // tools/list pages followed
// The protocol revisions whose tools/list and tools/call this client reads (they agree on both).
constexpr const char* kMcpKnownVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

bool mcp_tool_name_usable(const QString& name) {
    static const QRegularExpression pattern(QStringLiteral("^[A-Za-z0-9_-]{1,64}$"));
    return pattern.match(name).hasMatch();
}

QString mcp_excerpt(const QByteArray& line) {
    QString text = QString::fromUtf8(line.left(160));
    if (line.size() > 160) text += QStringLiteral("…");
    return text;
}

// The result of tools/call as the model reads it: text blocks joined by newlines; other blocks
// named by their type (the chat shows text only).
QString mcp_content_text(const QJsonObject& result) {
    QStringList parts;
    for (const QJsonValue& v : result.value(QStringLiteral("content")).toArray()) {
        const QJsonObject block = v.toObject();
        const QString type = block.value(QStringLiteral("type")).toString();
        if (type == QLatin1String("text")) {
            parts << block.value(QStringLiteral("text")).toString();
        } else if (type == QLatin1String("resource")) {
            const QJsonObject resource = block.value(QStringLiteral("resource")).toObject();
            if (resource.contains(QStringLiteral("text")))
                parts << resource.value(QStringLiteral("text")).toString();
            else
                parts << QStringLiteral("[resource %1]").arg(resource.value(QStringLiteral("uri")).toString());
        } else {
            const QString mime = block.value(QStringLiteral("mimeType")).toString();
            parts << (mime.isEmpty() ? QStringLiteral("[%1 content]").arg(type)
                                     : QStringLiteral("[%1 content, %2]").arg(type, mime));
        }
    }
    if (parts.isEmpty() && result.value(QStringLiteral("structuredContent")).isObject())
        parts << QString::fromUtf8(
            QJsonDocument(result.value(QStringLiteral("structuredContent")).toObject()).toJson(QJsonDocument::Compact));
    return parts.join(QLatin1Char('\n'));
}

} // namespace

McpClient::McpClient(McpServerConfig config, std::chrono::milliseconds requestTimeout, QObject* parent)
    : ToolProvider(parent), config_(std::move(config)), requestTimeout_(requestTimeout) {}

McpClient::~McpClient() {
    // No signals from here on: the registry may be mid-destruction.
    blockSignals(true);
    close();
}

QString McpClient::seconds() const { return QString::number(double(requestTimeout_.count()) / 1000.0, 'g', 4); }

QString McpClient::summary() const {
    switch (state_) {
    case State::NotStarted: return tr("Not started (%1)").arg(config_.command);
    case State::Starting: return tr("Starting %1…").arg(config_.command);
    case State::Ready:
        return (tools_.size() == 1 ? tr("1 tool, protocol %1") : tr("%1 tools, protocol %2").arg(tools_.size()))
            .arg(serverProtocolVersion_);
    case State::Failed: return tr("Failed: %1").arg(lastError_);
    }
    return {};
}

std::vector<cflow::ToolDefinition> McpClient::tools() const {
    if (state_ != State::Ready) return {};
    return tools_;
}

void McpClient::setState(State state, const QString& error) {
    state_ = state;
    if (!error.isEmpty()) lastError_ = error;
    if (state == State::Ready) lastError_.clear();
    emit toolsChanged();
}

QString McpClient::stderrLines() const {
    QStringList lines = stderrTail_;
    if (!stderrPending_.isEmpty()) lines << QString::fromUtf8(stderrPending_.left(kMcpStderrLineChars));
    while (lines.size() > kMcpStderrLines) lines.removeFirst();
    if (lines.isEmpty()) return tr("; it wrote nothing to stderr");
    return tr("; its stderr ended with:\n%1").arg(lines.join(QLatin1Char('\n')));
}

void McpClient::failInFlight(const std::function<QString(const QString& method)>& messageFor) {
    // Settled exchanges resume their coroutines later (queued), never inside this loop.
    std::map<int64_t, McpExchange*> failing;
    failing.swap(inFlight_);
    for (auto& [id, exchange] : failing) exchange->settle(false, {}, messageFor(exchange->method));
}

void McpClient::close() {
    if (process_) {
        process_->disconnect(this);
        if (process_->state() != QProcess::NotRunning) {
            process_->kill();
            process_->waitForFinished(2000);
        }
        process_.reset();
    }
    failInFlight([this](const QString& method) {
        return tr("MCP server %1 was closed before it answered %2").arg(config_.name, method);
    });
    stdoutPending_.clear();
    stderrPending_.clear();
    if (state_ != State::NotStarted && state_ != State::Failed) setState(State::NotStarted);
}

void McpClient::send(const QJsonObject& message) {
    if (!process_ || process_->state() == QProcess::NotRunning) return;
    QByteArray line = QJsonDocument(message).toJson(QJsonDocument::Compact);
    line += '\n';  // the stdio transport: one message per line, no embedded newlines (Compact has none)
    process_->write(line);
}

QCoro::Task<McpClient::RpcReply> McpClient::request(QString method, QJsonObject params) {
    if (!process_ || process_->state() == QProcess::NotRunning)
        co_return RpcReply{false, {}, tr("MCP server %1 is not running").arg(config_.name)};
    const int64_t id = nextId_++;
    McpExchange exchange;  // in this frame: see mcp_exchange.h
    exchange.method = method;
    inFlight_[id] = &exchange;
    send(QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                     {QStringLiteral("id"), qint64(id)},
                     {QStringLiteral("method"), method},
                     {QStringLiteral("params"), params}});
    QPointer<McpClient> self(this);
    const QString serverName = config_.name;
    if (!exchange.answered) co_await qCoro(&exchange, &McpExchange::settled, requestTimeout_);
    if (!self) {
        co_return exchange.answered ? RpcReply{exchange.ok, exchange.result, exchange.error}
                                    : RpcReply{false, {}, tr("MCP server %1 was closed before it answered %2").arg(serverName, method)};
    }
    inFlight_.erase(id);
    if (!exchange.answered) {
        // The spec's way to give up on a request: the server may stop its work.
        send(QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                         {QStringLiteral("method"), QStringLiteral("notifications/cancelled")},
                         {QStringLiteral("params"), QJsonObject{{QStringLiteral("requestId"), qint64(id)},
                                                                {QStringLiteral("reason"), QStringLiteral("timed out")}}}});
        co_return RpcReply{false, {}, tr("MCP server %1 did not answer %2 within %3 s").arg(serverName, method, seconds())};
    }
    co_return RpcReply{exchange.ok, exchange.result, exchange.error};
}

QCoro::Task<Status> McpClient::start() {
    close();
    const QString problem = config_.problem();
    if (!problem.isEmpty()) {
        setState(State::Failed, tr("MCP server %1 cannot start: %2").arg(config_.name, problem));
        co_return make_error(utf8(lastError_));
    }
    stderrTail_.clear();
    skippedTools_.clear();
    tools_.clear();
    serverProtocolVersion_.clear();
    process_ = std::make_unique<QProcess>();
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    for (const QString& variable : config_.environment) {
        const qsizetype eq = variable.indexOf(QLatin1Char('='));
        environment.insert(variable.left(eq), variable.mid(eq + 1));
    }
    process_->setProcessEnvironment(environment);
    connect(process_.get(), &QProcess::readyReadStandardOutput, this, &McpClient::onStdout);
    connect(process_.get(), &QProcess::readyReadStandardError, this, &McpClient::onStderr);
    connect(process_.get(), &QProcess::finished, this, &McpClient::onFinished);
    connect(process_.get(), &QProcess::errorOccurred, this, &McpClient::onProcessError);
    setState(State::Starting);
    process_->start(config_.command, config_.arguments);
    if (state_ == State::Failed) co_return make_error(ErrorKind::Io, utf8(lastError_));  // could not start

    QPointer<McpClient> self(this);
    Status shaken = co_await handshake();
    if (!self) co_return shaken;
    if (!shaken.ok()) {
        // A server that did not finish the handshake is of no use: stop it, keep the error.
        const QString error = qt(shaken.error());
        close();
        setState(State::Failed, error);
        co_return shaken;
    }
    setState(State::Ready);
    co_return Status{};
}

QCoro::Task<Status> McpClient::handshake() {
    const QJsonObject params{
        {QStringLiteral("protocolVersion"), QString::fromLatin1(kProtocolVersion)},
        {QStringLiteral("capabilities"), QJsonObject{}},  // no roots, sampling or elicitation offered
        {QStringLiteral("clientInfo"),
         QJsonObject{{QStringLiteral("name"), QStringLiteral("cflow studio")},
                     {QStringLiteral("version"), QCoreApplication::applicationVersion().isEmpty()
                                                     ? QStringLiteral("0")
                                                     : QCoreApplication::applicationVersion()}}}};
    QPointer<McpClient> self(this);
    const QString serverName = config_.name;
    const QString method = QStringLiteral("initialize");
    RpcReply init = co_await request(method, params);
    if (!self) co_return make_error(utf8(tr("MCP server %1 was closed").arg(serverName)));
    if (!init.ok) co_return make_error(utf8(init.error));
    const QString version = init.result.toObject().value(QStringLiteral("protocolVersion")).toString();
    bool known = false;
    for (const char* v : kMcpKnownVersions) known = known || version == QLatin1String(v);
    if (!known)
        co_return make_error(utf8(tr("MCP server %1 speaks protocol version \"%2\"; cflow studio speaks %3")
                                      .arg(serverName, version, QString::fromLatin1(kProtocolVersion))));
    serverProtocolVersion_ = version;
    send(QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                     {QStringLiteral("method"), QStringLiteral("notifications/initialized")}});
    Status listed = co_await refreshTools();
    if (!self) co_return make_error(utf8(tr("MCP server %1 was closed").arg(serverName)));
    co_return listed;
}

QCoro::Task<Status> McpClient::refreshTools() {
    QPointer<McpClient> self(this);
    const QString serverName = config_.name;
    std::vector<cflow::ToolDefinition> listed;
    QStringList skipped;
    QString cursor;
    QStringList seenCursors;
    for (int page = 0;; ++page) {
        if (page == kMcpMaxListPages)
            co_return make_error(utf8(tr("MCP server %1 listed more than %2 pages of tools").arg(serverName).arg(kMcpMaxListPages)));
        QJsonObject params;
        if (!cursor.isEmpty()) params.insert(QStringLiteral("cursor"), cursor);
        const QString method = QStringLiteral("tools/list");
        RpcReply reply = co_await request(method, params);
        if (!self) co_return make_error(utf8(tr("MCP server %1 was closed").arg(serverName)));
        if (!reply.ok) co_return make_error(utf8(reply.error));
        const QJsonObject result = reply.result.toObject();
        for (const QJsonValue& v : result.value(QStringLiteral("tools")).toArray()) {
            const QJsonObject tool = v.toObject();
            const QString toolName = tool.value(QStringLiteral("name")).toString();
            if (!mcp_tool_name_usable(toolName)) {
                skipped << toolName;
                continue;
            }
            const QJsonObject schema = tool.value(QStringLiteral("inputSchema")).toObject();
            listed.push_back({utf8(toolName), utf8(tool.value(QStringLiteral("description")).toString()),
                              schema.isEmpty() ? std::string() : QJsonDocument(schema).toJson(QJsonDocument::Compact).toStdString()});
        }
        cursor = result.value(QStringLiteral("nextCursor")).toString();
        if (cursor.isEmpty()) break;
        if (seenCursors.contains(cursor))
            co_return make_error(utf8(tr("MCP server %1 repeated the tools/list cursor \"%2\"").arg(serverName, cursor)));
        seenCursors << cursor;
    }
    tools_ = std::move(listed);
    skippedTools_ = skipped;
    if (state_ == State::Ready) emit toolsChanged();
    co_return Status{};
}

QCoro::Task<ToolResult> McpClient::call(cflow::ToolCall call) {
    if (state_ != State::Ready) {
        co_return ToolResult{false, lastError_.isEmpty() ? tr("MCP server %1 is not running").arg(config_.name)
                                                         : tr("MCP server %1 is not running: %2").arg(config_.name, lastError_)};
    }
    QString error;
    const QJsonObject arguments = tool_arguments_object(call.arguments_json, error);
    if (!error.isEmpty()) co_return ToolResult{false, error};
    // Named locals, no temporaries in the co_await expression (GCC 12's coroutine bugs; see
    // main_window.cpp). Nothing of `this` is used after the co_await (request() guards its own).
    const QString method = QStringLiteral("tools/call");
    const QJsonObject params{{QStringLiteral("name"), qt(call.name)}, {QStringLiteral("arguments"), arguments}};
    RpcReply reply = co_await request(method, params);
    if (!reply.ok) co_return ToolResult{false, reply.error};
    const QJsonObject result = reply.result.toObject();
    co_return ToolResult{!result.value(QStringLiteral("isError")).toBool(), mcp_content_text(result)};
}

void McpClient::onStdout() {
    if (!process_) return;
    stdoutPending_ += process_->readAllStandardOutput();
    qsizetype lineStart = 0;
    for (qsizetype newline; (newline = stdoutPending_.indexOf('\n', lineStart)) >= 0; lineStart = newline + 1) {
        QByteArray line = stdoutPending_.mid(lineStart, newline - lineStart);
        if (line.endsWith('\r')) line.chop(1);
        if (line.trimmed().isEmpty()) continue;
        QJsonParseError parse{};
        const QJsonDocument doc = QJsonDocument::fromJson(line, &parse);
        if (parse.error != QJsonParseError::NoError || !doc.isObject()) {
            const QString why = parse.error != QJsonParseError::NoError
                                    ? tr("%1 at character %2").arg(parse.errorString()).arg(parse.offset + 1)
                                    : tr("not a JSON object");
            const QString message = tr("MCP server %1 wrote malformed JSON (%2): %3").arg(config_.name, why, mcp_excerpt(line));
            lastError_ = message;
            failInFlight([&message](const QString& method) { return message + tr(" (%1 was waiting)").arg(method); });
            continue;
        }
        handleMessage(doc.object());
        if (!process_) return;  // a handler closed the client
    }
    stdoutPending_.remove(0, lineStart);
    if (stdoutPending_.size() > kMcpMaxLineBytes) {
        const QString message = tr("MCP server %1 wrote a line longer than %2 MiB").arg(config_.name).arg(kMcpMaxLineBytes >> 20);
        close();
        setState(State::Failed, message);
    }
}

void McpClient::handleMessage(const QJsonObject& message) {
    const bool hasId = message.contains(QStringLiteral("id"));
    const QString method = message.value(QStringLiteral("method")).toString();
    if (!method.isEmpty()) {
        if (hasId) {
            // A request from the server: ping is answered; this client offers nothing else.
            QJsonObject reply{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("id"), message.value(QStringLiteral("id"))}};
            if (method == QLatin1String("ping"))
                reply.insert(QStringLiteral("result"), QJsonObject{});
            else
                reply.insert(QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), -32601},
                                                                  {QStringLiteral("message"), QStringLiteral("Method not found")}});
            send(reply);
        } else if (method == QLatin1String("notifications/tools/list_changed") && state_ == State::Ready) {
            refreshTools();  // resolves on its own; the list is swapped when complete
        }
        return;
    }
    if (!hasId) return;  // neither request nor response: nothing to answer
    const auto found = inFlight_.find(message.value(QStringLiteral("id")).toInteger(-1));
    if (found == inFlight_.end()) return;  // a late answer to a request that timed out
    McpExchange* exchange = found->second;
    inFlight_.erase(found);
    if (message.contains(QStringLiteral("error"))) {
        const QJsonObject error = message.value(QStringLiteral("error")).toObject();
        exchange->settle(false, {},
                         tr("MCP server %1 refused %2: %3 (code %4)")
                             .arg(config_.name, exchange->method, error.value(QStringLiteral("message")).toString())
                             .arg(error.value(QStringLiteral("code")).toInteger()));
    } else {
        exchange->settle(true, message.value(QStringLiteral("result")), {});
    }
}

void McpClient::onStderr() {
    if (!process_) return;
    stderrPending_ += process_->readAllStandardError();
    qsizetype lineStart = 0;
    for (qsizetype newline; (newline = stderrPending_.indexOf('\n', lineStart)) >= 0; lineStart = newline + 1) {
        stderrTail_ << QString::fromUtf8(stderrPending_.mid(lineStart, std::min(newline - lineStart, kMcpStderrLineChars)));
        if (stderrTail_.size() > kMcpStderrLines) stderrTail_.removeFirst();
    }
    stderrPending_.remove(0, lineStart);
    if (stderrPending_.size() > 4 * kMcpStderrLineChars) stderrPending_ = stderrPending_.right(kMcpStderrLineChars);
}

void McpClient::onFinished(int exitCode, QProcess::ExitStatus exitStatus) {
    onStderr();
    const QString ended = exitStatus == QProcess::CrashExit
                              ? tr("MCP server %1 crashed").arg(config_.name)
                              : tr("MCP server %1 exited with code %2").arg(config_.name).arg(exitCode);
    const QString details = stderrLines();
    failInFlight([&](const QString& method) { return ended + tr(" while answering %1").arg(method) + details; });
    // Inside the process's own signal: it is deleted later, not here.
    process_->disconnect(this);
    process_.release()->deleteLater();
    stdoutPending_.clear();
    stderrPending_.clear();
    setState(State::Failed, ended + details);
}

void McpClient::onProcessError(QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart || !process_) return;  // a crash is reported by finished()
    const QString message = tr("MCP server %1 could not start %2: %3").arg(config_.name, config_.command, process_->errorString());
    failInFlight([&message](const QString&) { return message; });
    process_->disconnect(this);
    process_.release()->deleteLater();
    setState(State::Failed, message);
}

} // namespace cflow::ui
