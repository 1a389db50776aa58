#include "cflow/ui/server_settings_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QVBoxLayout>

namespace cflow::ui {
namespace {

bool is_loopback(const QString& host) {
    const QString h = host.trimmed();
    return h == QLatin1String("localhost") || h == QLatin1String("::1") || h.startsWith(QLatin1String("127."));
}

} // namespace

ServerSettingsDialog::ServerSettingsDialog(const ServerSettings& settings, QWidget* parent)
    : QDialog(parent), threadsPerSlot_(settings.threadsPerSlot) {
    setWindowTitle(tr("Server settings"));
    host_ = new QLineEdit(settings.host, this);
    host_->setAccessibleName(tr("Listen address"));
    host_->setToolTip(tr("127.0.0.1: only programs on this computer can connect"));
    port_ = new QSpinBox(this);
    port_->setRange(0, 65535);
    port_->setSpecialValueText(tr("any free port"));
    port_->setValue(settings.port);
    port_->setAccessibleName(tr("Port"));
    apiKey_ = new QLineEdit(settings.apiKey, this);
    apiKey_->setEchoMode(QLineEdit::PasswordEchoOnEdit);
    apiKey_->setPlaceholderText(tr("none: any client may connect"));
    apiKey_->setAccessibleName(tr("API key"));
    apiKey_->setToolTip(tr("Clients then send 'Authorization: Bearer KEY' (the api_key of an OpenAI client)"));
    parallel_ = new QSpinBox(this);
    parallel_->setRange(1, 16);
    parallel_->setValue(settings.parallel);
    parallel_->setAccessibleName(tr("Parallel requests"));
    parallel_->setToolTip(tr("Requests answered at once, each with its own KV cache; more wait their turn"));
    keyNote_ = new QLabel(this);
    keyNote_->setWordWrap(true);
    keyNote_->setObjectName(QStringLiteral("serverKeyNote"));
    keyNote_->hide();
    warning_ = new QLabel(this);
    warning_->setWordWrap(true);
    warning_->setStyleSheet(QStringLiteral("color: #b3261e;"));

    auto* form = new QFormLayout;
    form->addRow(tr("&Address:"), host_);
    form->addRow(tr("&Port:"), port_);
    form->addRow(tr("API &key:"), apiKey_);
    form->addRow(QString(), keyNote_);
    form->addRow(tr("P&arallel requests:"), parallel_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(warning_);
    layout->addWidget(buttons);
    connect(host_, &QLineEdit::textChanged, this, &ServerSettingsDialog::updateWarning);
    connect(apiKey_, &QLineEdit::textChanged, this, &ServerSettingsDialog::updateWarning);
    updateWarning();
}

ServerSettings ServerSettingsDialog::settings() const {
    ServerSettings s;
    s.host = host_->text().trimmed().isEmpty() ? QStringLiteral("127.0.0.1") : host_->text().trimmed();
    s.port = port_->value();
    s.apiKey = apiKey_->text();
    s.parallel = parallel_->value();
    s.threadsPerSlot = threadsPerSlot_;
    return s;
}

QString ServerSettingsDialog::warningText() const { return warning_->text(); }

void ServerSettingsDialog::setKeyNote(const QString& note) {
    keyNote_->setText(note);
    keyNote_->setVisible(!note.isEmpty());
}

QString ServerSettingsDialog::keyNoteText() const { return keyNote_->text(); }

void ServerSettingsDialog::setKeyPending(bool pending) {
    apiKey_->setReadOnly(pending);
    apiKey_->setPlaceholderText(pending ? tr("being read from the keychain…") : tr("none: any client may connect"));
}

void ServerSettingsDialog::updateWarning() {
    const QString host = host_->text().trimmed();
    if (host.isEmpty() || is_loopback(host)) {
        warning_->clear();
        warning_->hide();
        return;
    }
    warning_->setText(apiKey_->text().isEmpty()
                          ? tr("%1 can be reached from other machines, and without an API key anyone there can use "
                               "this model. Set a key, or use 127.0.0.1.").arg(host)
                          : tr("%1 can be reached from other machines (they need the API key).").arg(host));
    warning_->show();
}

} // namespace cflow::ui
