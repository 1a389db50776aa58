#pragma once
// How a QNetworkReply ended, as cflow::remote::TransportFailure: the same kinds the httplib
// transport reports (http_transport.h), so RemoteClient's messages do not depend on the transport.
#include <QList>
#include <QSslError>

#include "cflow/remote/http_transport.h"

class QNetworkReply;

namespace cflow::ui {

// Why the transport itself aborted the reply (QNetworkReply says only OperationCanceledError).
enum class TransferStop { None, Callback, ConnectTimeout, ReadTimeout };

struct ExchangeState {
    TransferStop stop = TransferStop::None;
    bool head_delivered = false;
    QList<QSslError> ssl_errors;  // from QNetworkReply::sslErrors, before the handshake failed
};

// The result of a finished reply.
cflow::remote::TransportResult transport_result(const QNetworkReply& reply, const ExchangeState& state);

} // namespace cflow::ui
