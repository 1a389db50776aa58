#include "cflow/ui/remote/qt_network_transport.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QList>
#include <QNetworkAccessManager>
#include <QNetworkProxy>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QSslError>
#include <QTimer>
#include <QUrl>

#include <algorithm>
#include <limits>

#include "qt_network_errors.h"

namespace cflow::ui {
namespace {

// Qt reads ahead of us into the reply's buffer; bounding it keeps a fast server's bytes in the
// kernel (TCP back-pressure) instead of in memory, and reading in pieces hands the reader (and
// RemoteClient's response cap and cancel check) chunks of the httplib transport's size.
constexpr qint64 kReadBufferBytes = 1 << 20;
constexpr qint64 kPieceBytes = 64 << 10;

// QTimer takes an int: a time-out over 24 days is as good as none.
int timer_ms(uint32_t ms) { return int(std::min<uint32_t>(ms, uint32_t(std::numeric_limits<int>::max()))); }

using cflow::remote::HttpRequest;
using cflow::remote::HttpResponseHead;
using cflow::remote::TransportFailure;
using cflow::remote::TransportResult;

QNetworkRequest make_network_request(const HttpRequest& request, const QList<QSslCertificate>& cas) {
    QNetworkRequest out(QUrl(QString::fromStdString(request.url)));
    // HTTP/1.1 as the httplib transport speaks it: one stream per connection, no ALPN surprises.
    out.setAttribute(QNetworkRequest::Http2AllowedAttribute, false);
    // A 3xx comes back as itself (RemoteClient reports its status) instead of being followed.
    out.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy);
    out.setAttribute(QNetworkRequest::CacheLoadControlAttribute, QNetworkRequest::AlwaysNetwork);
    out.setAttribute(QNetworkRequest::CacheSaveControlAttribute, false);
    for (const auto& [name, value] : request.headers)
        out.setRawHeader(QByteArray::fromStdString(name), QByteArray::fromStdString(value));
    if (request.method == "POST")
        out.setHeader(QNetworkRequest::ContentTypeHeader, QByteArray::fromStdString(request.content_type));
    if (out.url().scheme() == QLatin1String("https")) {
        QSslConfiguration tls = QSslConfiguration::defaultConfiguration();
        tls.setPeerVerifyMode(QSslSocket::VerifyPeer);
        // Only the given CA, as --ca-file means for the CLI (setting the list also stops Qt's
        // on-demand loading of the system's roots).
        if (!cas.isEmpty()) tls.setCaCertificates(cas);
        out.setSslConfiguration(tls);
    }
    return out;
}

// How often a waiting exchange looks at its cancel token (Stop while the server is silent).
constexpr int kCancelPollMs = 50;

class QtNetworkTransport final : public cflow::remote::HttpTransport {
public:
    explicit QtNetworkTransport(const CancelToken* cancel) : cancel_(cancel) {}

    TransportResult send(const HttpRequest& request, const cflow::remote::HeadCallback& on_head,
                         const cflow::remote::ChunkCallback& on_chunk) override {
        if (!QCoreApplication::instance()) return {TransportFailure::Other, "Qt Network needs a QCoreApplication"};
        const QUrl url(QString::fromStdString(request.url));
        if (!url.isValid() || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https")))
            return {TransportFailure::Other, "not an http(s) URL: " + request.url};
        QList<QSslCertificate> cas;
        if (!request.ca_file.empty()) {
            cas = QSslCertificate::fromPath(QString::fromStdString(request.ca_file), QSsl::Pem);
            if (cas.isEmpty()) return {TransportFailure::TlsOther, "no PEM certificate could be read from " + request.ca_file};
        }

        // Everything below lives on this thread and dies before send() returns.
        QNetworkAccessManager manager;
        manager.setProxy(QNetworkProxy::NoProxy);  // as the httplib transport: straight to the host
        const QNetworkRequest network_request = make_network_request(request, cas);
        std::unique_ptr<QNetworkReply> reply(
            request.method == "POST" ? manager.post(network_request, QByteArray::fromStdString(request.body))
                                     : manager.get(network_request));

        reply->setReadBufferSize(kReadBufferBytes);
        ExchangeState state;
        QEventLoop loop;
        QTimer connect_timer;  // until the request is written (name lookup, connect, TLS handshake)
        QTimer read_timer;     // the longest silence after it
        connect_timer.setSingleShot(true);
        read_timer.setSingleShot(true);

        auto stop = [&](TransferStop why) {
            if (state.stop != TransferStop::None) return;
            state.stop = why;
            connect_timer.stop();
            read_timer.stop();
            reply->abort();  // emits finished, which quits the loop
        };
        auto heard_from_server = [&] {
            connect_timer.stop();
            read_timer.start(timer_ms(request.read_timeout_ms));
        };
        auto deliver_head = [&] {
            if (state.head_delivered || state.stop != TransferStop::None) return;
            const QVariant status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute);
            if (!status.isValid()) return;
            state.head_delivered = true;
            HttpResponseHead head;
            head.status = status.toInt();
            for (const auto& [name, value] : reply->rawHeaderPairs()) head.headers.emplace_back(name.toStdString(), value.toStdString());
            if (!on_head(head)) stop(TransferStop::Callback);
        };
        auto deliver_body = [&] {
            deliver_head();
            while (state.stop == TransferStop::None && reply->bytesAvailable() > 0) {
                const QByteArray bytes = reply->read(kPieceBytes);
                if (!on_chunk(std::string_view(bytes.constData(), size_t(bytes.size())))) stop(TransferStop::Callback);
            }
        };

        QTimer cancel_poll;
        if (cancel_) {
            // RemoteClient sees its token only when a chunk arrives: a server silent in its prefill
            // (or stalled) would hold a Stop until the read time-out.
            QObject::connect(&cancel_poll, &QTimer::timeout, &loop, [&] {
                if (cancel_->is_cancelled()) stop(TransferStop::Callback);
            });
            cancel_poll.start(kCancelPollMs);
        }
        QObject::connect(&connect_timer, &QTimer::timeout, &loop, [&] { stop(TransferStop::ConnectTimeout); });
        QObject::connect(&read_timer, &QTimer::timeout, &loop, [&] { stop(TransferStop::ReadTimeout); });
        QObject::connect(reply.get(), &QNetworkReply::requestSent, &loop, heard_from_server);
        QObject::connect(reply.get(), &QNetworkReply::metaDataChanged, &loop, [&] {
            heard_from_server();
            deliver_head();
        });
        QObject::connect(reply.get(), &QNetworkReply::readyRead, &loop, [&] {
            heard_from_server();
            deliver_body();
        });
        QObject::connect(reply.get(), &QNetworkReply::sslErrors, &loop,
                         [&](const QList<QSslError>& errors) { state.ssl_errors += errors; });
        QObject::connect(reply.get(), &QNetworkReply::finished, &loop, &QEventLoop::quit);

        connect_timer.start(timer_ms(request.connect_timeout_ms));
        if (!reply->isFinished()) loop.exec();
        connect_timer.stop();
        read_timer.stop();
        cancel_poll.stop();
        if (state.stop == TransferStop::None) deliver_body();  // what came with the end (a short body)
        return transport_result(*reply, state);
    }

private:
    const CancelToken* cancel_;
};

} // namespace

std::unique_ptr<cflow::remote::HttpTransport> make_qt_network_transport(const CancelToken* cancel) {
    return std::make_unique<QtNetworkTransport>(cancel);
}

} // namespace cflow::ui
