#include "cflow/ui/server_controller.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <algorithm>
#include <thread>

#if CFLOW_HAVE_SERVER
#include "cflow/server/openai_server.h"
#else
// Builds without the server (no cpp-httplib: the Windows cross build) never create one, but the
// unique_ptr member's deleter still needs a complete type here.
namespace cflow::server {
class OpenAiServer {};
} // namespace cflow::server
#endif

namespace cflow::ui {

ServerController::ServerController(QObject* parent)
    : QObject(parent), sink_(std::make_shared<TelemetrySink>()) {}

ServerController::~ServerController() { stop(); }

bool ServerController::available() {
#if CFLOW_HAVE_SERVER
    return true;
#else
    return false;
#endif
}

void ServerController::setTelemetrySink(TelemetrySink sink) {
    // Only while stopped: request threads read the sink without a lock.
    if (!isRunning()) *sink_ = std::move(sink);
}

bool ServerController::isRunning() const {
#if CFLOW_HAVE_SERVER
    return server_ && server_->running();
#else
    return false;
#endif
}

QString ServerController::url() const {
#if CFLOW_HAVE_SERVER
    if (isRunning()) return QString::fromStdString(server_->url()) + QStringLiteral("/v1");
#endif
    return {};
}

QString ServerController::modelId() const { return modelId_; }

void ServerController::onServed(const QString& summary) {
    ++served_;
    lastSummary_ = summary;
    emit requestServed(summary, served_);
}

Status ServerController::start(std::shared_ptr<const Model> model, const QString& modelPath) {
    stop();
#if !CFLOW_HAVE_SERVER
    (void)model;
    (void)modelPath;
    return make_error(ErrorKind::Unsupported, tr("this build has no server (it was built without cpp-httplib)").toStdString());
#else
    if (!model) return make_error(ErrorKind::InvalidInput, tr("no model is loaded").toStdString());
    server::ServerOptions options;
    options.host = settings_.host.trimmed().toStdString();
    options.port = settings_.port;
    options.api_key = settings_.apiKey.toStdString();
    options.parallel = unsigned(std::max(1, settings_.parallel));
    options.model_id = server::model_id_for_path(modelPath.toStdString());
    SessionOptions session;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    session.threads = settings_.threadsPerSlot > 0 ? unsigned(settings_.threadsPerSlot)
                                                   : std::max(1u, cores / options.parallel);
    server::ServerObserver observer;
    observer.on_step = [sink = sink_](unsigned, const TokenTelemetry& step) {
        if (*sink) (*sink)(step);
    };
    QPointer<ServerController> self(this);
    observer.on_served = [self](const server::ServedRequest& r) {
        const QString summary =
            QStringLiteral("%1%2: %3, %4 + %5 tokens, %6 tok/s")
                .arg(QString::fromStdString(r.endpoint), r.stream ? QStringLiteral(" (stream)") : QString(),
                     QString::fromStdString(r.outcome))
                .arg(r.prompt_tokens)
                .arg(r.completion_tokens)
                .arg(r.decode_tokens_per_s, 0, 'f', 1);
        // From a request thread: the controller may be gone by the time the call runs.
        QMetaObject::invokeMethod(
            QCoreApplication::instance(), [self, summary] { if (self) self->onServed(summary); }, Qt::QueuedConnection);
    };
    auto created = server::OpenAiServer::create(std::move(model), session, options, observer);
    if (!created) return created.take_error();
    server_ = std::move(created).value();
    if (Status started = server_->start(); !started) {
        server_.reset();
        return started;
    }
    modelId_ = QString::fromStdString(options.model_id);
    served_ = 0;
    lastSummary_.clear();
    emit runningChanged(true);
    return {};
#endif
}

void ServerController::stop() {
#if CFLOW_HAVE_SERVER
    if (!server_) return;
    server_->stop();
    server_.reset();
    emit runningChanged(false);
#endif
}

} // namespace cflow::ui
