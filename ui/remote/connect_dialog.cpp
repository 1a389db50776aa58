// ConnectDialog (connect_dialog.h): the form, the connection test on a worker thread, and
// Connect, which writes the key to the SecretStore before it saves the profile.
#include "cflow/ui/remote/connect_dialog.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QThread>
#include <QUuid>
#include <QVBoxLayout>

#include <algorithm>

#include "cflow/base/cancel.h"
#include "cflow/remote/endpoint_url.h"
#include "cflow/remote/remote_client.h"
#include "cflow/ui/remote/qt_network_transport.h"
#include "cflow/ui/remote/remote_worker.h"

namespace cflow::ui {

namespace {

constexpr uint32_t kTestReadTimeoutMs = 15'000;

// What the worker hands back to the GUI thread (plain Qt values: implicitly shared, thread-safe).
struct ConnectionTestOutcome {
    bool connected = false;
    QStringList models;
    QString message;  // the diagnosis when not connected
};

ConnectionTestOutcome run_connection_test(const cflow::remote::EndpointConfig& config, const CancelToken* cancel) {
    // The transport checks the token while the server is silent too, so a closed dialog's test
    // ends within its polling interval instead of running on to the time-out.
    cflow::remote::RemoteClient client(config, std::shared_ptr<cflow::remote::HttpTransport>(make_qt_network_transport(cancel)));
    const auto models = client.list_models(cancel);
    ConnectionTestOutcome outcome;
    if (!models) {
        outcome.message = QString::fromStdString(models.error());
        return outcome;
    }
    outcome.connected = true;
    for (const std::string& id : *models) outcome.models << QString::fromStdString(id);
    return outcome;
}

QString models_found_text(qsizetype count) {
    if (count == 0)
        return ConnectDialog::tr("Connected, but the server lists no models: type the model's name, or leave it empty "
                                 "for the server's only model.");
    return count == 1 ? ConnectDialog::tr("Connected: 1 model") : ConnectDialog::tr("Connected: %1 models").arg(count);
}

} // namespace

ConnectDialog::ConnectDialog(EndpointProfileStore* profiles, SecretStore* secrets, QWidget* parent)
    : QDialog(parent), profiles_(profiles), secrets_(secrets) {
    setWindowTitle(tr("Connect to a server"));

    list_ = new QListWidget(this);
    list_->setObjectName(QStringLiteral("endpointList"));
    list_->setAccessibleName(tr("Saved endpoints"));
    list_->setToolTip(tr("Servers you connected to before"));
    newButton_ = new QPushButton(tr("&New"), this);
    newButton_->setObjectName(QStringLiteral("newEndpoint"));
    newButton_->setAccessibleName(tr("New endpoint"));
    deleteButton_ = new QPushButton(tr("&Delete"), this);
    deleteButton_->setObjectName(QStringLiteral("deleteEndpoint"));
    deleteButton_->setAccessibleName(tr("Delete endpoint"));
    deleteButton_->setToolTip(tr("Forgets the selected endpoint and its saved API key"));

    name_ = new QLineEdit(this);
    name_->setObjectName(QStringLiteral("endpointName"));
    name_->setAccessibleName(tr("Endpoint name"));
    name_->setPlaceholderText(tr("e.g. GPU box"));
    baseUrl_ = new QLineEdit(this);
    baseUrl_->setObjectName(QStringLiteral("baseUrl"));
    baseUrl_->setAccessibleName(tr("Base URL"));
    baseUrl_->setPlaceholderText(QStringLiteral("http://192.168.1.20:8080/v1"));
    baseUrl_->setToolTip(tr("The address of the OpenAI-compatible API, usually ending in /v1"));
    apiKey_ = new QLineEdit(this);
    apiKey_->setObjectName(QStringLiteral("apiKey"));
    apiKey_->setAccessibleName(tr("API key"));
    apiKey_->setEchoMode(QLineEdit::Password);
    apiKey_->setPlaceholderText(tr("none"));
    keyNote_ = new QLabel(this);
    keyNote_->setObjectName(QStringLiteral("keyNote"));
    // One line, not wrapped: a wrapped label in a form row is given too little height by QFormLayout.
    keyNote_->setText(secrets_ ? tr("Kept in %1, not in the settings file").arg(secrets_->describe())
                               : tr("Not saved: this build has no keychain (type it each session)"));
    caFile_ = new QLineEdit(this);
    caFile_->setObjectName(QStringLiteral("caFile"));
    caFile_->setAccessibleName(tr("CA certificate file"));
    caFile_->setPlaceholderText(tr("the system's certificate authorities"));
    caFile_->setToolTip(tr("https only: a PEM file of the authority that signed the server's certificate"));
    browseButton_ = new QPushButton(tr("&Browse…"), this);
    browseButton_->setAccessibleName(tr("Browse for a CA certificate file"));
    readTimeoutS_ = new QSpinBox(this);
    readTimeoutS_->setObjectName(QStringLiteral("readTimeout"));
    readTimeoutS_->setRange(1, 3600);
    readTimeoutS_->setValue(120);
    readTimeoutS_->setSuffix(tr(" s"));
    readTimeoutS_->setAccessibleName(tr("Read time-out in seconds"));
    readTimeoutS_->setToolTip(tr("The longest silence a reply may have (a long prompt is read before the first word)"));
    testButton_ = new QPushButton(tr("&Test connection"), this);
    testButton_->setObjectName(QStringLiteral("testConnection"));
    testButton_->setAccessibleName(tr("Test connection"));
    testButton_->setToolTip(tr("Asks the server for its models (GET /models)"));
    model_ = new QComboBox(this);
    model_->setObjectName(QStringLiteral("model"));
    model_->setEditable(true);
    model_->setAccessibleName(tr("Model"));
    model_->setToolTip(tr("Test the connection to list the server's models"));
    model_->lineEdit()->setPlaceholderText(tr("the server's only model"));
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("connectionStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setAccessibleName(tr("Connection status"));

    auto* caRow = new QHBoxLayout;
    caRow->addWidget(caFile_, 1);
    caRow->addWidget(browseButton_);
    auto* form = new QFormLayout;
    form->addRow(tr("N&ame:"), name_);
    form->addRow(tr("Base &URL:"), baseUrl_);
    form->addRow(tr("API &key:"), apiKey_);
    form->addRow(QString(), keyNote_);
    auto* caLabel = new QLabel(tr("CA &file:"), this);
    caLabel->setBuddy(caFile_);  // a row of a layout gets no buddy from QFormLayout
    form->addRow(caLabel, caRow);
    form->addRow(tr("&Read time-out:"), readTimeoutS_);
    form->addRow(QString(), testButton_);
    form->addRow(tr("&Model:"), model_);

    auto* listButtons = new QHBoxLayout;
    listButtons->addWidget(newButton_);
    listButtons->addWidget(deleteButton_);
    auto* left = new QVBoxLayout;
    left->addWidget(list_, 1);
    left->addLayout(listButtons);
    auto* columns = new QHBoxLayout;
    columns->addLayout(left, 1);
    columns->addLayout(form, 2);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
    connectButton_ = buttons->addButton(tr("&Connect"), QDialogButtonBox::AcceptRole);
    connectButton_->setObjectName(QStringLiteral("connectButton"));
    connectButton_->setAccessibleName(tr("Connect"));
    connectButton_->setDefault(true);
    buttons->button(QDialogButtonBox::Cancel)->setAccessibleName(tr("Cancel"));
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(columns);
    layout->addWidget(status_);
    layout->addWidget(buttons);

    connect(list_, &QListWidget::currentRowChanged, this, &ConnectDialog::showProfile);
    connect(newButton_, &QPushButton::clicked, this, &ConnectDialog::newProfile);
    connect(deleteButton_, &QPushButton::clicked, this, &ConnectDialog::deleteProfile);
    connect(browseButton_, &QPushButton::clicked, this, &ConnectDialog::browseCaFile);
    connect(testButton_, &QPushButton::clicked, this, &ConnectDialog::testConnection);
    connect(connectButton_, &QPushButton::clicked, this, &ConnectDialog::connectClicked);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    reloadList(QString());
    if (saved_.empty()) newProfile();
}

ConnectDialog::~ConnectDialog() {
    // A test still running ends within the transport's polling interval; its answer finds no dialog.
    if (testCancel_) testCancel_->cancel();
}

QString ConnectDialog::statusText() const { return status_->text(); }

void ConnectDialog::reloadList(const QString& selectId) {
    saved_ = profiles_->profiles();
    const QSignalBlocker blocker(list_);
    list_->clear();
    int selectRow = saved_.empty() ? -1 : 0;
    for (int row = 0; row < static_cast<int>(saved_.size()); ++row) {
        const EndpointProfile& profile = saved_[static_cast<size_t>(row)];
        auto* item = new QListWidgetItem(profile.name, list_);
        item->setToolTip(profile.baseUrl);
        if (profile.id == selectId) selectRow = row;
    }
    deleteButton_->setEnabled(!saved_.empty());
    if (selectRow >= 0) {
        list_->setCurrentRow(selectRow);
        showProfile(selectRow);
    }
}

void ConnectDialog::showProfile(int row) {
    if (row < 0 || row >= static_cast<int>(saved_.size())) return;
    const EndpointProfile& profile = saved_[static_cast<size_t>(row)];
    abandonTest();
    shownId_ = profile.id;
    shownHasKey_ = profile.hasKey;
    name_->setText(profile.name);
    baseUrl_->setText(profile.baseUrl);
    caFile_->setText(profile.caFile);
    readTimeoutS_->setValue(profile.readTimeoutS);
    model_->clear();
    model_->setEditText(profile.model);
    apiKey_->clear();
    loadedKey_.clear();
    setKeyForSessionOnly(false);
    setStatus(QString(), false);
    if (!secrets_ || !profile.hasKey) {
        keyPending_ = false;
        setBusy(false);
        return;
    }
    // The keychain answers later (it may even ask the user to unlock it): the form waits for it.
    keyPending_ = true;
    apiKey_->setPlaceholderText(tr("reading from %1…").arg(secrets_->describe()));
    setBusy(false);
    const QString id = profile.id;
    secrets_->readKey(id, [guard = QPointer<ConnectDialog>(this), id](Result<QString> key) {
        if (!guard || guard->shownId_ != id) return;  // closed, or another profile is shown now
        guard->keyPending_ = false;
        guard->apiKey_->setPlaceholderText(tr("none"));
        if (key) {
            guard->loadedKey_ = *key;
            guard->apiKey_->setText(*key);
        } else {
            guard->setStatus(tr("The saved key could not be read: %1").arg(QString::fromStdString(key.error())), true);
        }
        guard->setBusy(false);
        emit guard->keyLoaded();
    });
}

void ConnectDialog::newProfile() {
    {
        const QSignalBlocker blocker(list_);
        list_->setCurrentRow(-1);
        list_->clearSelection();
    }
    abandonTest();
    shownId_.clear();
    shownHasKey_ = false;
    loadedKey_.clear();
    keyPending_ = false;
    setKeyForSessionOnly(false);
    name_->clear();
    baseUrl_->clear();
    apiKey_->clear();
    apiKey_->setPlaceholderText(tr("none"));
    caFile_->clear();
    readTimeoutS_->setValue(120);
    model_->clear();
    setStatus(QString(), false);
    setBusy(false);
    baseUrl_->setFocus();
}

void ConnectDialog::deleteProfile() {
    if (shownId_.isEmpty()) return;
    // Asked first: the saved API key goes with the profile and may exist nowhere else. Not
    // exec(): the question is a child the dialog's tests (and screen readers) can find.
    const QString id = shownId_;
    const bool hadKey = shownHasKey_;
    const QString name = name_->text().trimmed().isEmpty() ? baseUrl_->text() : name_->text().trimmed();
    auto* question = new QMessageBox(QMessageBox::Question, tr("Delete endpoint"),
                                     hadKey ? tr("Delete \"%1\" and its saved API key?").arg(name)
                                            : tr("Delete \"%1\"?").arg(name),
                                     QMessageBox::Yes | QMessageBox::No, this);
    question->setObjectName(QStringLiteral("confirmDeleteEndpoint"));
    question->setDefaultButton(QMessageBox::No);
    question->setAttribute(Qt::WA_DeleteOnClose);
    connect(question, &QMessageBox::finished, this, [this, id, hadKey](int answer) {
        if (answer == QMessageBox::Yes) removeProfile(id, hadKey);
    });
    question->open();
}

void ConnectDialog::removeProfile(const QString& id, bool hadKey) {
    profiles_->remove(id);
    if (secrets_ && hadKey) {
        secrets_->deleteKey(id, [guard = QPointer<ConnectDialog>(this)](Status done) {
            if (guard && !done)
                guard->setStatus(tr("The endpoint was deleted, but its key was not: %1")
                                     .arg(QString::fromStdString(done.error())),
                                 true);
        });
    }
    reloadList(QString());
    if (saved_.empty()) newProfile();
}

void ConnectDialog::browseCaFile() {
    const QString path = QFileDialog::getOpenFileName(this, tr("CA certificate"), caFile_->text(),
                                                      tr("PEM certificates (*.pem *.crt);;All files (*)"));
    if (!path.isEmpty()) caFile_->setText(path);
}

EndpointProfile ConnectDialog::formProfile() const {
    EndpointProfile profile;
    profile.id = shownId_;
    profile.name = name_->text().trimmed();
    profile.baseUrl = baseUrl_->text().trimmed();
    profile.model = model_->currentText().trimmed();
    profile.caFile = caFile_->text().trimmed();
    profile.readTimeoutS = readTimeoutS_->value();
    profile.hasKey = shownHasKey_;
    return profile;
}

void ConnectDialog::testConnection() {
    const EndpointProfile profile = formProfile();
    const auto url = cflow::remote::parse_endpoint_url(profile.baseUrl.toStdString());
    if (!url) {
        setStatus(QString::fromStdString(url.error()), true);
        return;
    }
    cflow::remote::EndpointConfig config = remote_endpoint_config(profile, apiKey_->text());
    // GET /models needs no prefill: a server silent for 15 s is worth reporting even where
    // replies may take longer. The cap also bounds how long a test outlives a closed dialog.
    config.read_timeout_ms = std::min(static_cast<uint32_t>(profile.readTimeoutS) * 1000u, kTestReadTimeoutMs);
    config.retry.max_attempts = 1;  // a test says what the server answers now, at once

    if (testCancel_) testCancel_->cancel();
    testCancel_ = std::make_shared<CancelToken>();
    const quint64 generation = ++testGeneration_;
    setStatus(tr("Testing %1…").arg(profile.baseUrl), false);
    testRunning_ = true;
    testButton_->setText(tr("Testing…"));
    setBusy(false);

    // The transport blocks its thread (qt_network_transport.h): a thread of its own, which
    // deletes itself and outlives the dialog if need be; its answer goes to the GUI thread
    // through qApp and finds the dialog only if it is still there.
    QThread* worker = QThread::create(
        [config, cancel = testCancel_, guard = QPointer<ConnectDialog>(this), generation]() mutable {
            ConnectionTestOutcome outcome = run_connection_test(config, cancel.get());
            QMetaObject::invokeMethod(
                QCoreApplication::instance(),
                [guard = std::move(guard), generation, outcome = std::move(outcome)] {
                    if (guard) guard->finishTest(generation, outcome.connected, outcome.models, outcome.message);
                },
                Qt::QueuedConnection);
        });
    connect(worker, &QThread::finished, worker, &QObject::deleteLater);
    worker->start();
}

void ConnectDialog::abandonTest() {
    if (!testRunning_) return;
    testCancel_->cancel();
    ++testGeneration_;  // its answer is about a form no longer shown
    testRunning_ = false;
    testButton_->setText(tr("&Test connection"));
}

void ConnectDialog::finishTest(quint64 generation, bool connected, const QStringList& models, const QString& message) {
    if (generation != testGeneration_) return;
    testRunning_ = false;
    testButton_->setText(tr("&Test connection"));
    setBusy(false);
    if (!connected) {
        setStatus(message, true);
        emit testFinished(false);
        return;
    }
    const QString typed = model_->currentText().trimmed();
    model_->clear();
    model_->addItems(models);
    const int typedAt = model_->findText(typed);
    if (typedAt >= 0) model_->setCurrentIndex(typedAt);
    else if (!typed.isEmpty()) model_->setEditText(typed);  // kept: the user's choice, even if not listed
    setStatus(models_found_text(models.size()), false);
    emit testFinished(true);
}

void ConnectDialog::connectClicked() {
    EndpointProfile profile = formProfile();
    const auto url = cflow::remote::parse_endpoint_url(profile.baseUrl.toStdString());
    if (!url) {
        setStatus(QString::fromStdString(url.error()), true);
        baseUrl_->setFocus();
        return;
    }
    if (profile.id.isEmpty()) profile.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString key = apiKey_->text();
    if (!secrets_) {
        profile.hasKey = false;
        finishConnect(profile, key);
        return;
    }
    if (keyForSessionOnly_) {
        finishConnect(profile, key);  // the keychain refused it: used now, not saved (hasKey as it was)
        return;
    }
    if (key == loadedKey_ && (profile.hasKey || key.isEmpty())) {
        finishConnect(profile, key);  // the key is as saved: the keychain is not asked again
        return;
    }
    // The key goes to the keychain first: a profile is saved only once its key is where it says.
    setBusy(true);
    const bool saving = !key.isEmpty();
    profile.hasKey = saving;
    auto answered = [guard = QPointer<ConnectDialog>(this), profile, key](Status done) {
        if (!guard) return;
        guard->setBusy(false);
        if (!done) {
            // A keychain that is absent or locked must not keep the user from the server: the
            // next Connect uses the key for this session only, and the button says so.
            guard->setStatus(tr("Not connected: the key could not be saved: %1").arg(QString::fromStdString(done.error())),
                             true);
            guard->setKeyForSessionOnly(true);
            return;
        }
        guard->finishConnect(profile, key);
    };
    if (saving) secrets_->writeKey(profile.id, key, std::move(answered));
    else secrets_->deleteKey(profile.id, std::move(answered));
}

void ConnectDialog::finishConnect(const EndpointProfile& profile, const QString& key) {
    const auto saved = profiles_->save(profile);
    if (!saved) {
        setStatus(tr("Not connected: %1").arg(QString::fromStdString(saved.error())), true);
        return;
    }
    shownId_ = saved->id;
    shownHasKey_ = saved->hasKey;
    loadedKey_ = key;
    chosen_ = EndpointChoice{*saved, key};
    accept();
}

void ConnectDialog::setKeyForSessionOnly(bool sessionOnly) {
    keyForSessionOnly_ = sessionOnly;
    connectButton_->setText(sessionOnly ? tr("Connect &without saving the key") : tr("&Connect"));
}

void ConnectDialog::setStatus(const QString& text, bool problem) {
    status_->setText(text);
    status_->setStyleSheet(problem ? QStringLiteral("color: #b3261e;") : QString());
    status_->setVisible(!text.isEmpty());
}

void ConnectDialog::setBusy(bool busy) {
    const bool waiting = busy || keyPending_;
    connectButton_->setEnabled(!waiting);
    testButton_->setEnabled(!waiting && !testRunning_);
    apiKey_->setEnabled(!keyPending_);
    list_->setEnabled(!busy);
    newButton_->setEnabled(!busy);
    deleteButton_->setEnabled(!busy && !shownId_.isEmpty());  // not under a Connect that is saving it
}

} // namespace cflow::ui
