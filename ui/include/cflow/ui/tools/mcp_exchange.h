#pragma once
// One JSON-RPC request of McpClient in flight (internal to mcp_client.cpp; here so AUTOMOC sees
// it). It lives in the awaiting coroutine's frame, not in the client, so a client destroyed while
// a request waits cannot leave the coroutine resuming into freed memory: the client only sets
// the reply and emits settled(), which QCoro delivers queued.
#include <QJsonValue>
#include <QObject>
#include <QString>

namespace cflow::ui {

class McpExchange : public QObject {
    Q_OBJECT
public:
    QString method;       // for the error messages ("tools/call")
    bool answered = false;
    bool ok = false;
    QJsonValue result;    // the JSON-RPC result when ok
    QString error;        // what went wrong when !ok

    void settle(bool succeeded, QJsonValue value, QString message) {
        if (answered) return;
        answered = true;
        ok = succeeded;
        result = std::move(value);
        error = std::move(message);
        emit settled();
    }

signals:
    void settled();
};

} // namespace cflow::ui
