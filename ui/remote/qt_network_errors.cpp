#include "qt_network_errors.h"

#include <QNetworkReply>

namespace cflow::ui {
namespace {

using cflow::remote::TransportFailure;
using cflow::remote::TransportResult;

// A certificate that does not chain to a trusted CA (OpenSSL's verify errors 2, 18-21, 27-28).
bool is_untrusted(QSslError::SslError error) {
    switch (error) {
    case QSslError::UnableToGetIssuerCertificate:
    case QSslError::UnableToGetLocalIssuerCertificate:
    case QSslError::UnableToVerifyFirstCertificate:
    case QSslError::SelfSignedCertificate:
    case QSslError::SelfSignedCertificateInChain:
    case QSslError::CertificateUntrusted:
    case QSslError::CertificateRejected:
    case QSslError::NoPeerCertificate:
        return true;
    default:
        return false;
    }
}

// The TLS failure the collected errors show. An untrusted chain is told before a wrong name, as
// OpenSSL's verify result comes before httplib's name check.
TransportResult tls_result(const QList<QSslError>& errors, const std::string& fallback) {
    for (const QSslError& e : errors)
        if (is_untrusted(e.error())) return {TransportFailure::TlsUntrusted, e.errorString().toStdString()};
    for (const QSslError& e : errors)
        if (e.error() == QSslError::HostNameMismatch) return {TransportFailure::TlsHostname, e.errorString().toStdString()};
    if (!errors.isEmpty()) return {TransportFailure::TlsOther, errors.front().errorString().toStdString()};
    return {TransportFailure::TlsOther, fallback};
}

// The errors Qt raises for an HTTP status (401, 404, 500, ...): the status speaks for itself.
bool is_http_status_error(QNetworkReply::NetworkError error) {
    return (error >= QNetworkReply::ContentAccessDenied && error <= QNetworkReply::UnknownContentError) ||
           (error >= QNetworkReply::InternalServerError && error <= QNetworkReply::UnknownServerError);
}

} // namespace

TransportResult transport_result(const QNetworkReply& reply, const ExchangeState& state) {
    const std::string detail = reply.errorString().toStdString();
    switch (state.stop) {
    case TransferStop::Callback: return {TransportFailure::Cancelled, "stopped by the reader"};
    case TransferStop::ConnectTimeout: return {TransportFailure::ConnectTimeout, "no connection in time"};
    case TransferStop::ReadTimeout: return {TransportFailure::ReadTimeout, "no data in time"};
    case TransferStop::None: break;
    }
    const QNetworkReply::NetworkError error = reply.error();
    // A body short of its Content-Length is RemoteHostClosedError here; a chunked body cut between
    // two chunks (the server's FIN, no final chunk) Qt 6.4 ends as whole, where httplib says Read:
    // RemoteClient still marks such a stream incomplete, as it lacks [DONE].
    if (error == QNetworkReply::NoError) return {};
    if (state.head_delivered && is_http_status_error(error)) return {};
    switch (error) {
    case QNetworkReply::HostNotFoundError:
        return {TransportFailure::HostNotFound, detail};
    case QNetworkReply::ConnectionRefusedError:
        return {TransportFailure::Refused, detail};
    case QNetworkReply::TimeoutError:
        return {state.head_delivered ? TransportFailure::ReadTimeout : TransportFailure::ConnectTimeout, detail};
    case QNetworkReply::SslHandshakeFailedError:
        return tls_result(state.ssl_errors, detail);
    case QNetworkReply::RemoteHostClosedError:
    case QNetworkReply::TemporaryNetworkFailureError:
    case QNetworkReply::NetworkSessionFailedError:
    case QNetworkReply::UnknownNetworkError:
    case QNetworkReply::ProtocolFailure:  // a body cut inside a chunk
        return {TransportFailure::ConnectionLost, state.head_delivered ? detail : detail + " before the response head"};
    case QNetworkReply::OperationCanceledError:
        return {TransportFailure::Cancelled, detail};
    default:
        break;
    }
    if (!state.ssl_errors.isEmpty()) return tls_result(state.ssl_errors, detail);
    return {TransportFailure::Other, detail};
}

} // namespace cflow::ui
