#include "cflow/ui/main_window.h"

#include <algorithm>

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QClipboard>
#include <QDialog>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <utility>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QMessageBox>
#include <QMetaObject>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QCloseEvent>
#include <QShowEvent>
#include <QStandardPaths>
#include <QPointer>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>

#include <QCoro/QCoroFuture>
#include <spdlog/spdlog.h>

#include "cflow/formats/model_path_kind.h"
#include "cflow/ui/fixed_font.h"
#include "cflow/ui/app_icon.h"
#include "cflow/ui/chat_controller.h"
#include "cflow/ui/chat_panel.h"
#include "cflow/ui/chat_view.h"
#include "cflow/ui/conversation_sidebar.h"
#include "cflow/ui/compare_wizard.h"
#include "cflow/ui/scorecard_dialog.h"
#include "cflow/ui/default_model.h"
#include "cflow/ui/convert_wizard.h"
#include "cflow/ui/conversation_export.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/inspector/inspector_dock.h"
#include "cflow/ui/inspector/stall_panel.h"
#include "cflow/ui/model_header_view.h"
#include "cflow/ui/model_library.h"
#include "cflow/ui/model_panel.h"
#include "cflow/ui/prompt_panel.h"
#include "cflow/ui/sampling_panel.h"
#include "cflow/ui/server_controller.h"
#include "cflow/ui/server_settings_store.h"
#include "cflow/ui/status_area.h"
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
#include "cflow/ui/remote/connect_dialog.h"
#include "cflow/ui/remote/keychain_secret_store.h"
#endif
#include "cflow/ui/tools/conversation_toolbox.h"
#include "cflow/ui/tools/tools_panel.h"
#include "cflow/ui/server_settings_dialog.h"
#include "cflow/ui/status_area.h"
#include "cflow/ui/telemetry_ring.h"
#include "cflow/ui/load_error_text.h"
#include "cflow/ui/screen_fit.h"

namespace cflow::ui {
namespace {

constexpr int kMaxRecentModels = 8;
constexpr qint64 kMaxLogBytesShown = 1 << 20;
const QString kRecentKey = QStringLiteral("recentModels");
const QString kGeometryKey = QStringLiteral("mainWindow/geometry");
const QString kLastConversationKey = QStringLiteral("session/lastConversation");
const QString kStateKey = QStringLiteral("mainWindow/state");

// The database the options carry, else default_database_path() with the user asked about damage.
OpenedStore open_window_store(QWidget* window, MainWindowOptions& options, bool& quitRequested) {
    if (options.store && options.store->store) return std::move(*options.store);
    DamagedDatabaseAsk ask = options.onDamagedDatabase;
    if (!ask) ask = [window](const QString& path, const QString& problem) { return ask_about_damaged_database(window, path, problem); };
    OpenedStore opened = open_conversation_store(default_database_path(), ask);
    if (opened.store) return opened;
    // Quit: the widgets below still need a store until the event loop ends the application; a
    // scratch file in the temporary folder holds nothing of the user's.
    quitRequested = true;
    QTimer::singleShot(0, qApp, &QCoreApplication::quit);
    auto placeholder = ConversationStore::open(QDir(QDir::tempPath()).filePath(QStringLiteral("cflow-studio-quitting.sqlite")));
    opened.store = placeholder ? std::move(placeholder).value() : nullptr;
    opened.notice = QObject::tr("Closing: the conversation database could not be used.");
    return opened;
}

QString data_size(uint64_t bytes) { return QLocale().formattedDataSize(static_cast<qint64>(bytes)); }

} // namespace

MainWindow::MainWindow(QWidget* parent, MainWindowOptions options)
    : QMainWindow(parent),
      rememberLayout_(options.rememberLayout),
      bundledModelsFolder_(options.bundledModelsFolder ? *options.bundledModelsFolder : bundled_models_folder()),
      confirmStopReply_(options.confirmStopReply) {
    setWindowTitle(tr("cflow studio"));
    setWindowIcon(app_icon());
    OpenedStore opened = open_window_store(this, options, quitRequested_);
    store_ = std::move(opened.store);
    const QString storeNotice = opened.notice;
    ring_ = std::make_unique<TelemetryRing>();
    producer_ = std::make_unique<SharedRingProducer>(*ring_);
    engine_ = std::make_unique<EngineThread>();
    if (options.modelLoader) engine_->worker()->setModelLoader(options.modelLoader);
    // The engine thread and the local server's request threads produce (one at a time, through
    // producer_); the inspector dock is the ring's only consumer.
    engine_->worker()->setTelemetrySink([producer = producer_.get()](const TokenTelemetry& t) { producer->push(t); });
    server_ = new ServerController(this);
    server_->setTelemetrySink([producer = producer_.get()](const TokenTelemetry& t) { producer->push(t); });
    if (rememberLayout_) {
        server_->setSettings(read_server_settings(QSettings()));
    }
    controller_ = new ChatController(engine_->worker(), store_.get(), this);
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    endpointProfiles_ = std::make_unique<EndpointProfileStore>(options.endpointSettingsFile);
    secrets_ = options.secretStore ? options.secretStore : std::shared_ptr<SecretStore>(make_system_secret_store());
#endif
    if (rememberLayout_) {
        serverKey_ = new ServerKeyKeeper(secrets_, QString(), this);
        loadServerKey();
    }
    sampling_ = new SamplingPanel(this);
    controller_->setSettingsSource([sampling = sampling_] { return sampling->settings(); });
    chat_ = new ChatPanel(controller_, this);
    setCentralWidget(chat_);
    modelPanel_ = new ModelPanel(this);
    headerView_ = modelPanel_->headerView();
    sidebar_ = new ConversationSidebar(store_.get(), this);
    prompt_ = new PromptPanel(controller_, this);
    createDocks(options);
    createMenus();
    connect(chat_, &ChatPanel::loadModelRequested, this, [this](const QString& path) { openModel(path); });
    // Clicking a token of a reply streamed in this session marks its column in the routing strip.
    connect(chat_->view(), &ChatView::tokenClicked, inspector_, &InspectorDock::highlightToken);
    // The stall view's arms switch and the sampling panel's "Expert reads" are one setting.
    connect(inspector_->stallPanel(), &StallPanel::expertFetchRequested, this, [this](ExpertFetch fetch) {
        GenerationSettings settings = sampling_->settings();
        settings.expertFetch = fetch;
        sampling_->setSettings(settings);
    });
    connect(sampling_, &SamplingPanel::settingsChanged, this,
            [this] { inspector_->stallPanel()->setExpertFetch(sampling_->settings().expertFetch); });

    status_ = new StatusArea(this);
    statusBar()->addWidget(status_, 1);
    statusBar()->setSizeGripEnabled(true);
    status_->showInfo(tr("No model open. File > Open model… to load a .cflow file."));
    chat_->setStorageNotice(storeNotice);  // stays while this database is in use
    wireController();

    setMinimumSize(kMinimumWidth, kMinimumHeight);
    resize_within_screen(this, QSize(1200, 800));
    defaultState_ = saveState();
    if (rememberLayout_) {
        QSettings settings;
        restoreGeometry(settings.value(kGeometryKey).toByteArray());
        keep_on_screen(this);  // saved on a monitor that is no longer there, or a larger one
        restoredState_ = restoreState(settings.value(kStateKey).toByteArray());
    }
}

void MainWindow::wireController() {
    connect(controller_, &ChatController::modelLoading, this, [this](const QString& path) {
        status_->showInfo(tr("Loading %1…").arg(QDir::toNativeSeparators(path)));
    });
    connect(controller_, &ChatController::modelChanged, this, [this](const ModelInfo& info) {
        // Title, header, inspector and status change together, when the engine has the model.
        if (controller_->onEndpoint()) {
            // An endpoint (issue 34): no file, no header, no local telemetry; the server renders,
            // counts and generates. The local server keeps serving what it served.
            setWindowTitle(tr("%1 — cflow studio").arg(info.name));
            inspector_->setModel(nullptr);
            inspector_->setEndpoint(info.name);
            status_->showMetrics(QString());
            status_->clearActivity();
            status_->showInfo(tr("Connected to %1: replies are written by the server (File > Open model… goes back to a "
                                 "local model)").arg(info.name));
            lastError_.clear();
            currentModel_ = info;
            syncContextLimits();
            serveAction_->setEnabled(server_->isRunning());
            serveAction_->setToolTip(tr("Serves the local engine's model; the chat now uses a server"));
            settleOpen(info.path, true);
            emit engineReady(info);
            return;
        }
        inspector_->setEndpoint(QString());
        setWindowTitle(tr("%1 — cflow studio").arg(QFileInfo(info.path).fileName()));
        modelPanel_->showModel(info.card, info.summary);
        chat_->setModelPurpose(info.card.purpose);
        inspector_->setModel(info.model);
        // The last reply's figures belong to the model before (issue 37: they stayed after a switch).
        status_->showMetrics(QString());
        status_->clearActivity();
        status_->showInfo(tr("%1 ready: context %2 tokens%3")
                              .arg(info.name)
                              .arg(info.contextLength)
                              .arg(info.hasChatTemplate ? QString() : tr(", no chat template (completion mode)")));
        rememberRecent(info.path);
        lastError_.clear();
        currentModel_ = info;
        syncContextLimits();
        serveAction_->setEnabled(ServerController::available());
        if (ServerController::available())
            serveAction_->setToolTip(tr("Answers OpenAI-compatible requests (/v1/chat/completions) with %1").arg(info.name));
        if (server_->isRunning()) setServing(true);  // the server follows the chat to the new model
        if (const qint64 id = std::exchange(reopenConversation_, 0); id != 0 && store_ && store_->conversation(id))
            controller_->openConversation(id);
        settleOpen(info.path, true);
        emit engineReady(info);
    });
    connect(controller_, &ChatController::modelFailed, this, [this](const QString& path, const WorkerError& error) {
        reportError(path, error.message);
        settleOpen(path, false);
    });
    connect(controller_, &ChatController::conversationChanged, this, [this](qint64 id) {
        sidebar_->refresh(id);
        // The charts follow the engine: a reply streaming on in another conversation keeps its history.
        if (!controller_->isGenerating()) inspector_->clearTelemetry();
        if (rememberLayout_ && id != 0) QSettings().setValue(kLastConversationKey, id);
    });
    // A read-only (damaged) database gets nothing written: the tools setup then lives in memory.
    toolbox_ = new ConversationToolbox(store_ && !store_->readOnly() ? store_->path() : QString(), this);
    toolbox_->openConversation(controller_->conversationId());
    connect(controller_, &ChatController::conversationChanged, toolbox_, &ConversationToolbox::openConversation);
    // Each reply offers the shown conversation's enabled tools; its calls run through that registry.
    controller_->setToolsSource([toolbox = toolbox_] {
        return toolbox->registry() ? toolbox->registry()->enabledTools() : std::vector<cflow::ToolDefinition>{};
    });
    controller_->setToolsChosenSource([toolbox = toolbox_] { return !(toolbox->setup() == ConversationToolSetup{}); });
    chat_->setToolRegistrySource([toolbox = toolbox_] { return toolbox->registry(); });
    connect(toolbox_, &ConversationToolbox::setupChanged, controller_, &ChatController::toolsChanged);
    connect(toolbox_, &ConversationToolbox::registryReplaced, controller_, &ChatController::toolsChanged);
    connect(controller_, &ChatController::conversationListChanged, this,
            [this] { sidebar_->refresh(controller_->conversationId()); });
    connect(controller_, &ChatController::switchQueued, this, [this](const QString& what) {
        sidebar_->refresh(controller_->conversationId());  // the list shows what the transcript shows
        status_->showInfo(tr("Stopping the reply before %1…").arg(what));
    });
    connect(controller_, &ChatController::samplingRestored, sampling_, &SamplingPanel::setSettings);
    connect(controller_, &ChatController::storeError, this, [this](const QString& message) {
        spdlog::warn("conversation store: {}", message.toStdString());
        status_->showError(tr("Could not save: %1").arg(message));
    });
    connect(controller_, &ChatController::replyStarted, this, [this] {
        replyTokens_ = 0;
        status_->showInfo(tr("Processing the prompt…"));
    });
    connect(controller_, &ChatController::promptProgress, status_, &StatusArea::showPromptProgress);
    connect(controller_, &ChatController::remoteChunksArrived, inspector_, &InspectorDock::appendRemoteArrivals);
    connect(controller_, &ChatController::remoteServerMetrics, inspector_, &InspectorDock::setServerMetrics);
    connect(controller_, &ChatController::generatingChanged, this,
            [this] { sidebar_->setBusyConversation(controller_->replyConversationId()); });
    connect(controller_, &ChatController::setupChanged, this, &MainWindow::syncContextLimits);
    connect(controller_, &ChatController::replyProgress, this, [this](int tokens) {
        if (replyTokens_ == 0) {
            replyClock_.start();
            status_->showInfo(tr("Generating…"));
        }
        replyTokens_ += tokens;
        const double seconds = double(replyClock_.nsecsElapsed()) / 1e9;
        // The first batch starts the clock: the rate counts the tokens after it.
        status_->showDecoding(replyTokens_, seconds > 0.05 ? double(replyTokens_ - 1) / seconds : 0.0);
    });
    connect(controller_, &ChatController::replyFinished, this, [this](const ReplyStats& stats) {
        if (stats.remote) inspector_->showRemoteReply(stats.chunkArrivalMs, stats.timeToFirstTokenMs);
        status_->clearActivity();
        status_->showInfo(stats.cancelled ? tr("Reply stopped.") : tr("Reply done."));
        showStats(stats);
    });
    connect(controller_, &ChatController::replyFailed, this, [this](const QString& message) {
        status_->clearActivity();
        status_->showError(tr("Generation failed: %1").arg(message));
    });
    connect(sidebar_, &ConversationSidebar::newConversationRequested, controller_, &ChatController::newConversation);
    connect(sidebar_, &ConversationSidebar::conversationActivated, this, [this](qint64 id) {
        controller_->openConversation(id);
        sidebar_->refresh(controller_->conversationId());
    });
    connect(sidebar_, &ConversationSidebar::deleteRequested, controller_, &ChatController::deleteConversation);
    connect(sidebar_, &ConversationSidebar::stopRequested, controller_, [this](qint64 id) {
        if (controller_->replyConversationId() == id) controller_->stop();
    });
}

MainWindow::~MainWindow() {
    // Join the producers (the server's request threads, the engine thread) first, then drop the
    // dock (the consumer), all before the ring they share is destroyed with the members.
    server_->stop();
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    delete findChild<ConnectDialog*>();  // it uses the key store, a member that goes first
#endif
    engine_.reset();
    delete inspector_;
    inspector_ = nullptr;
}

EngineWorker* MainWindow::engine() const { return engine_->worker(); }

void MainWindow::createDocks(const MainWindowOptions& options) {
    auto* left = new QDockWidget(tr("Conversations"), this);
    left->setObjectName(QStringLiteral("conversationsDock"));
    left->setWidget(sidebar_);
    addDockWidget(Qt::LeftDockWidgetArea, left);

    // The inspector and the settings share one tabbed dock, placed beside or below the chat once
    // the window has its size (showEvent, placeInspector).
    InspectorOptions inspectorOptions;
    inspectorOptions.measureBandwidthAtStart = options.measureReadBandwidth;
    inspector_ = new InspectorDock(ring_.get(), this, inspectorOptions);
    inspector_->setObjectName(QStringLiteral("inspectorDock"));
    addDockWidget(Qt::BottomDockWidgetArea, inspector_);
    QDockWidget* previous = inspector_;
    const std::pair<QString, QWidget*> tabs[] = {
        {tr("Prompt"), prompt_}, {tr("Sampling"), sampling_}, {tr("Model"), modelPanel_}};
    const char* names[] = {"promptDock", "samplingDock", "modelDock"};
    for (size_t i = 0; i < std::size(tabs); ++i) {
        auto* dock = new QDockWidget(tabs[i].first, this);
        dock->setObjectName(QString::fromLatin1(names[i]));
        auto* scroll = new QScrollArea(dock);  // a short strip scrolls the panel instead of growing
        scroll->setWidget(tabs[i].second);
        scroll->setWidgetResizable(true);
        scroll->setFrameShape(QFrame::NoFrame);
        dock->setWidget(scroll);
        addDockWidget(Qt::BottomDockWidgetArea, dock);
        tabifyDockWidget(previous, dock);
        previous = dock;
    }
    inspector_->raise();
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    if (dockSizesApplied_) return;
    dockSizesApplied_ = true;
    if (restoredState_) {
        syncPlacementActions();
        return;
    }
    // Placed and sized once the window has its size.
    placeInspector(defaultPlacement());
}

int MainWindow::stripHeight() const {
    // A short window keeps 40% of its height for the transcript; a tall one gives the charts a third.
    return height() < 700 ? height() * 7 / 25 : height() / 3;
}

MainWindow::InspectorPlacement MainWindow::defaultPlacement() const {
    return width() >= kInspectorBesideMinWidth ? InspectorPlacement::Beside : InspectorPlacement::Below;
}

MainWindow::InspectorPlacement MainWindow::inspectorPlacement() const {
    return dockWidgetArea(inspector_) == Qt::RightDockWidgetArea ? InspectorPlacement::Beside : InspectorPlacement::Below;
}

void MainWindow::placeInspector(InspectorPlacement placement) {
    const Qt::DockWidgetArea area = placement == InspectorPlacement::Beside ? Qt::RightDockWidgetArea : Qt::BottomDockWidgetArea;
    // The inspector first, the settings tabbed after it: addDockWidget moves a dock already in the window.
    QList<QDockWidget*> docks{inspector_};
    for (const char* name : {"promptDock", "samplingDock", "modelDock"})
        if (auto* dock = findChild<QDockWidget*>(QString::fromLatin1(name))) docks << dock;
    for (QDockWidget* dock : docks) addDockWidget(area, dock);
    for (qsizetype i = 1; i < docks.size(); ++i) tabifyDockWidget(docks[i - 1], docks[i]);
    inspector_->raise();
    sizeInspector();
    syncPlacementActions();
}

void MainWindow::sizeInspector() {
    // The conversation list a fifth of the width (at most 260 px), first: the inspector's share is
    // taken from what it leaves.
    if (auto* list = findChild<QDockWidget*>(QStringLiteral("conversationsDock")))
        resizeDocks({list}, {std::min(260, width() / 5)}, Qt::Horizontal);
    if (inspectorPlacement() == InspectorPlacement::Below) {
        resizeDocks({inspector_}, {stripHeight()}, Qt::Vertical);
        return;
    }
    // Beside: the chat and the inspector share what the conversation list leaves, half each
    // (at 1366 px the transcript keeps about 540 px, still a readable column).
    int listWidth = 0;
    if (auto* list = findChild<QDockWidget*>(QStringLiteral("conversationsDock")); list && list->isVisible())
        listWidth = list->width();
    resizeDocks({inspector_}, {(width() - listWidth) / 2}, Qt::Horizontal);
}

void MainWindow::syncPlacementActions() {
    if (!besideAction_) return;
    const bool beside = inspectorPlacement() == InspectorPlacement::Beside;
    besideAction_->setChecked(beside);
    belowAction_->setChecked(!beside);
}

void MainWindow::resetLayout() {
    restoreState(defaultState_);
    for (QDockWidget* dock : findChildren<QDockWidget*>()) dock->show();
    placeInspector(defaultPlacement());
}

void MainWindow::saveLayout() const {
    QSettings settings;
    settings.setValue(kGeometryKey, saveGeometry());
    settings.setValue(kStateKey, saveState());
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (rememberLayout_) saveLayout();
    QMainWindow::closeEvent(event);
}

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open model…"), this, &MainWindow::chooseModel);
    open->setShortcut(QKeySequence::Open);
    file->addAction(tr("Open model &folder…"), this, &MainWindow::chooseModelFolder);
    // The trained zoo the package installs (share/cflow-studio/models); a build tree has none.
    QAction* bundled = file->addAction(tr("&Bundled models…"), this, [this] { showModelFolder(bundledModelsFolder_); });
    bundled->setObjectName(QStringLiteral("bundledModelsAction"));
    bundled->setEnabled(!bundledModelsFolder_.isEmpty());
    // A disabled entry says why where the user points at it, not only in the status bar.
    const QString bundledWhy = bundledModelsFolder_.isEmpty()
                                   ? tr("Not available: no bundled models were found beside this program (an installed "
                                        "cflow studio keeps them in share/cflow-studio/models; a build tree in models/ "
                                        "beside the executable)")
                                   : tr("The trained models installed with cflow studio, in %1")
                                         .arg(QDir::toNativeSeparators(bundledModelsFolder_));
    bundled->setStatusTip(bundledWhy);
    bundled->setToolTip(bundledWhy);
    file->setToolTipsVisible(true);
    file->addAction(tr("&Convert model…"), this, [this] { offerConversion(QString()); });
    recentMenu_ = file->addMenu(tr("Recent models"));
    rebuildRecentMenu();
    file->addSeparator();
    file->addAction(tr("Export conversation as &Markdown…"), this, [this] { exportConversation(false); });
    file->addAction(tr("Export conversation as &JSON…"), this, [this] { exportConversation(true); });
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* modelMenu = menuBar()->addMenu(tr("&Model"));
    modelMenu->setObjectName(QStringLiteral("modelMenu"));
    QAction* connectAction = modelMenu->addAction(tr("&Connect to a server…"), this, [this] { showConnectDialog(); });
    connectAction->setObjectName(QStringLiteral("connectServerAction"));
#if !CFLOW_HAVE_QT_NETWORK_TRANSPORT
    connectAction->setEnabled(false);
    connectAction->setToolTip(tr("Not available: this build has no network client (it was built without Qt Network)"));
#endif
    modelMenu->addAction(tr("Use a &local model (Open model…)"), this, &MainWindow::chooseModel);
    modelMenu->setToolTipsVisible(true);

    QMenu* chat = menuBar()->addMenu(tr("&Chat"));
    chat->addAction(tr("&New conversation"), controller_, &ChatController::newConversation)->setShortcut(QKeySequence::New);
    chat->addAction(tr("&Stop"), controller_, &ChatController::stop)->setShortcut(Qt::Key_Escape);
    chat->addAction(tr("&Regenerate"), controller_, &ChatController::regenerate)->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    chat->addAction(tr("Show raw &prompt"), chat_, &ChatPanel::showRawPrompt);

    QMenu* serverMenu = menuBar()->addMenu(tr("&Server"));
    serveAction_ = serverMenu->addAction(tr("&Serve the loaded model (OpenAI API)"));
    serveAction_->setObjectName(QStringLiteral("serveAction"));
    serveAction_->setCheckable(true);
    serveAction_->setEnabled(false);  // until a model is loaded
    // A disabled entry says why where the user points at it.
    serveAction_->setToolTip(ServerController::available()
                                 ? tr("Not available yet: open a model first (File > Open model…); the server answers "
                                      "OpenAI-compatible requests with the loaded model")
                                 : tr("Not available: this build has no server (it was built without cpp-httplib)"));
    serverMenu->setToolTipsVisible(true);
    connect(serveAction_, &QAction::triggered, this, &MainWindow::setServing);
    serverMenu->addAction(tr("Server s&ettings…"), this, &MainWindow::editServerSettings)
        ->setObjectName(QStringLiteral("serverSettingsAction"));
    serverMenu->addAction(tr("&Copy server URL"), this, [this] {
        if (server_->isRunning()) QApplication::clipboard()->setText(server_->url());
    });
    connect(server_, &ServerController::requestServed, this, [this] { showServerStatus(); });
    connect(server_, &ServerController::runningChanged, this, [this](bool running) {
        serveAction_->setChecked(running);
        showServerStatus();
    });

    QMenu* tools = menuBar()->addMenu(tr("&Tools"));
    tools->setObjectName(QStringLiteral("toolsMenu"));
    tools->addAction(tr("&Compare models…"), this, &MainWindow::showComparison)->setObjectName(QStringLiteral("compareModelsAction"));
    tools->addAction(tr("C&onvert model…"), this, [this] { offerConversion(QString()); });
    tools->addAction(tr("Paper &scorecard…"), this, [this] {
        auto* dialog = new ScorecardDialog(this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->show();
    })->setObjectName(QStringLiteral("scorecardAction"));
    tools->addSeparator();
    tools->addAction(tr("C&hat tools…"), this, &MainWindow::showChatTools)->setObjectName(QStringLiteral("chatToolsAction"));

    viewMenu_ = menuBar()->addMenu(tr("&View"));
    viewMenu_->setObjectName(QStringLiteral("viewMenu"));
    for (const char* name : {"conversationsDock", "promptDock", "samplingDock", "modelDock", "inspectorDock"})
        if (auto* dock = findChild<QDockWidget*>(QString::fromLatin1(name))) viewMenu_->addAction(dock->toggleViewAction());
    viewMenu_->addSeparator();
    auto* placements = new QActionGroup(viewMenu_);
    besideAction_ = viewMenu_->addAction(tr("Inspector &beside the chat"), this,
                                         [this] { placeInspector(InspectorPlacement::Beside); });
    besideAction_->setObjectName(QStringLiteral("inspectorBesideAction"));
    belowAction_ = viewMenu_->addAction(tr("Inspector b&elow the chat"), this,
                                        [this] { placeInspector(InspectorPlacement::Below); });
    belowAction_->setObjectName(QStringLiteral("inspectorBelowAction"));
    for (QAction* action : {besideAction_, belowAction_}) {
        action->setCheckable(true);
        placements->addAction(action);
    }
    syncPlacementActions();
    viewMenu_->addSeparator();
    viewMenu_->addAction(tr("&Reset layout"), this, &MainWindow::resetLayout);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("View &log"), this, &MainWindow::showLog);
    help->addAction(tr("&About cflow studio"), this, &MainWindow::showAbout);
}

void MainWindow::setServing(bool on) {
    if (!on) {
        server_->stop();
        status_->showInfo(tr("The local server stopped"));
        return;
    }
    if (!currentModel_.model) {
        serveAction_->setChecked(false);
        status_->showError(tr("Open a model before starting the server"));
        return;
    }
    if (serverKey_ && serverKey_->pending()) {
        // Starting now would serve without the key the user set; start when the keychain answers.
        serveWhenKeyRead_ = true;
        status_->showInfo(tr("The server starts once its API key is read from the keychain"));
        return;
    }
    if (serverKey_ && serverKey_->readFailed()) {
        serveAction_->setChecked(false);
        status_->showError(tr("The server did not start: %1").arg(serverKey_->note()));
        return;
    }
    if (Status started = server_->start(currentModel_.model, currentModel_.path); !started) {
        serveAction_->setChecked(false);
        status_->showError(tr("The server did not start: %1").arg(QString::fromStdString(started.error())));
        return;
    }
    status_->showInfo(tr("Serving %1 at %2 (OpenAI API; Server > Copy server URL)").arg(server_->modelId(), server_->url()));
}

void MainWindow::showServerStatus() {
    if (!server_->isRunning()) {
        status_->showServer(QString());
        return;
    }
    const quint64 served = server_->requestsServed();
    QString text = served == 1 ? tr("Server %1 · 1 request").arg(server_->url())
                               : tr("Server %1 · %2 requests").arg(server_->url(), QString::number(served));
    if (!server_->lastRequestSummary().isEmpty()) text += tr(" · last: %1").arg(server_->lastRequestSummary());
    status_->showServer(text);
}

void MainWindow::loadServerKey() {
    serverKey_->load([self = QPointer<MainWindow>(this)](Status loaded) {
        if (!self) return;
        ServerSettings settings = self->server_->settings();
        settings.apiKey = self->serverKey_->key();
        self->server_->setSettings(settings);
        if (!loaded) self->status_->showError(QString::fromStdString(loaded.error()));
        if (std::exchange(self->serveWhenKeyRead_, false)) self->setServing(true);
    });
}

void MainWindow::editServerSettings() {
    ServerSettingsDialog dialog(server_->settings(), this);
    const bool keyPending = serverKey_ && serverKey_->pending();
    if (serverKey_) {
        dialog.setKeyNote(serverKey_->note());
        dialog.setKeyPending(keyPending);
    }
    if (dialog.exec() != QDialog::Accepted) return;
    ServerSettings chosen = dialog.settings();
    // A key field shown before the keychain answered holds no key: the one read meanwhile stands.
    if (keyPending) chosen.apiKey = server_->settings().apiKey;
    // After a failed read, OK with the field as it is chooses that key (or none) afresh.
    const bool keyChosen =
        serverKey_ && !keyPending && (chosen.apiKey != server_->settings().apiKey || serverKey_->readFailed());
    if (chosen == server_->settings() && !keyChosen) return;
    server_->setSettings(chosen);
    if (rememberLayout_) {
        QSettings stored;
        write_server_settings(stored, chosen);
    }
    if (keyChosen) {
        serverKey_->save(chosen.apiKey, [self = QPointer<MainWindow>(this)](Status saved) {
            if (self && !saved) self->status_->showError(self->serverKey_->note());
        });
    }
    if (server_->isRunning()) setServing(true);  // restart with the new address, key or slots
}

void MainWindow::chooseModel() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open model"), QString(),
                                                      tr("cflow models (*.cflow *.vflow);;Convertible checkpoints "
                                                         "(*.gguf *.bin *.safetensors);;All files (*)"));
    if (path.isEmpty()) return;
    // A checkpoint (by its magic or name, formats' rule) goes through the converter first.
    if (is_convertible_source(sniff_model_path(path.toStdString()))) {
        offerConversion(path);
        return;
    }
    // Fire and forget: the task runs to completion on its own and reports through signals.
    openModel(path);
}

void MainWindow::chooseModelFolder() {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Open model folder"));
    if (folder.isEmpty()) return;
    showModelFolder(folder);
}

ModelLibrary* MainWindow::showModelFolder(const QString& folder) {
    if (folder.isEmpty()) return nullptr;  // QDir("") would list the working directory
    auto* dialog = new QDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("Models in %1").arg(QDir::toNativeSeparators(folder)));
    auto* library = new ModelLibrary(dialog);
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(library);
    dialog->resize(900, 360);
    connect(library, &ModelLibrary::openRequested, this, [this, dialog](const QString& path) {
        dialog->close();
        openModel(path);
    });
    connect(library, &ModelLibrary::scanFinished, this, [this, dialog, folder](int rows) {
        if (rows > 0) return;
        dialog->close();
        const auto answer = QMessageBox::question(
            this, tr("No cflow models"),
            tr("%1 holds no .cflow or .vflow file. Convert a checkpoint (Hugging Face folder, .gguf, llama2.c .bin) "
               "to .cflow?")
                .arg(QDir::toNativeSeparators(folder)));
        if (answer == QMessageBox::Yes) offerConversion(folder);
    });
    library->setFolder(folder);
    dialog->show();
    return library;
}

void MainWindow::offerConversion(const QString& sourcePath) {
    auto* wizard = new ConvertWizard(sourcePath, this);
    wizard->setAttribute(Qt::WA_DeleteOnClose);
    connect(wizard, &ConvertWizard::converted, this, [this](const QString& output) { openModel(output); });
    wizard->show();
}

void MainWindow::showComparison() {
    auto* wizard = new CompareWizard(this);
    wizard->setAttribute(Qt::WA_DeleteOnClose);
    // The saved endpoints can be entries (the window owns both and outlives its child wizard).
    wizard->setEndpointSources(endpointProfiles_.get(), secrets_.get());
    const QString first = !currentModel_.path.isEmpty() ? currentModel_.path : default_model_path();
    if (!first.isEmpty()) wizard->setInitialModels({first});
    wizard->show();
}

void MainWindow::showAbout() {
    QMessageBox::about(this, tr("About cflow studio"),
                       tr("<b>cflow studio</b> %1<br>Chat with local language models on the CPU and watch the "
                          "inference: tile-native .cflow weights, conditional expert loading and a delay-aware "
                          "scheduler.<br>Built with Qt %2.")
                           .arg(QApplication::applicationVersion(), QString::fromLatin1(qVersion())));
}

void MainWindow::showLog() {
    auto* dialog = new QDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("Log — %1").arg(QDir::toNativeSeparators(logPath_)));
    auto* text = new QPlainTextEdit(dialog);
    text->setReadOnly(true);
    text->setFont(fixed_pitch_font());
    QFile log(logPath_);
    if (logPath_.isEmpty() || !log.open(QIODevice::ReadOnly)) {
        text->setPlainText(tr("No log file: the log goes to stderr."));
    } else {
        // Only the tail of a large log: the newest lines are the interesting ones.
        if (log.size() > kMaxLogBytesShown) log.seek(log.size() - kMaxLogBytesShown);
        text->setPlainText(QString::fromUtf8(log.readAll()));
        text->moveCursor(QTextCursor::End);
    }
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(text);
    dialog->resize(800, 500);
    dialog->show();
}

void MainWindow::exportConversation(bool asJson) {
    const qint64 id = chat_->conversationId();
    if (id == 0) {
        status_->showInfo(tr("No conversation to export."));
        return;
    }
    auto info = store_->conversation(id);
    const QString suggested = suggested_export_file_name(info ? info->title : QString(), asJson);
    const QString chosen = QFileDialog::getSaveFileName(
        this, tr("Export conversation"),
        QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation)).filePath(suggested),
        asJson ? tr("JSON (*.json)") : tr("Markdown (*.md)"));
    if (chosen.isEmpty()) return;
    const QString path = with_export_extension(chosen, asJson);
    const Status status = asJson ? store_->exportJson(id, path) : store_->exportMarkdown(id, path);
    if (status) status_->showInfo(tr("Exported to %1").arg(QDir::toNativeSeparators(path)));
    else status_->showError(QString::fromStdString(status.error()));
}

QString MainWindow::startupModel(const QString& fallback) {
    if (!rememberLayout_) return fallback;
    QSettings settings;
    const QStringList recent = settings.value(kRecentKey).toStringList();
    if (recent.isEmpty() || !QFileInfo(recent.front()).isFile()) return fallback;
    reopenConversation_ = settings.value(kLastConversationKey).toLongLong();
    return recent.front();
}

void MainWindow::rememberRecent(const QString& path) {
    QSettings settings;
    QStringList recent = settings.value(kRecentKey).toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecentModels) recent.removeLast();
    settings.setValue(kRecentKey, recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    recentMenu_->clear();
    const QStringList recent = QSettings().value(kRecentKey).toStringList();
    for (const QString& path : recent)
        recentMenu_->addAction(QDir::toNativeSeparators(path), this, [this, path] { openModel(path); });
    recentMenu_->setEnabled(!recent.isEmpty());
    recentMenu_->menuAction()->setToolTip(recent.isEmpty() ? tr("Not available yet: the models you open are listed here")
                                                           : tr("The models opened last, newest first"));
}

QDialog* MainWindow::showConnectDialog() {
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    if (auto* open = findChild<ConnectDialog*>(); open && open->isVisible()) {
        open->raise();
        open->activateWindow();
        return open;
    }
    auto* dialog = new ConnectDialog(endpointProfiles_.get(), secrets_.get(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        const EndpointChoice choice = dialog->chosen();
        controller_->connectEndpoint(choice.profile, choice.apiKey);
    });
    dialog->show();
    return dialog;
#else
    return nullptr;
#endif
}

void MainWindow::showStats(const ReplyStats& stats) {
    if (stats.remote) {
        // The local-only figures (KV cache, mapping, experts) belong to the engine, not to a server.
        status_->showMetrics(remote_reply_metrics_text(stats));
        return;
    }
    status_->showMetrics(tr("TTFT %1 ms · prompt %2 tok/s · decode %3 tok/s · %4 tokens (%5) · KV %8 · mapped %6, resident %7")
                          .arg(stats.timeToFirstTokenMs, 0, 'f', 0)
                          .arg(stats.promptTokensPerS, 0, 'f', 1)
                          .arg(stats.decodeTokensPerS, 0, 'f', 1)
                          .arg(stats.generatedTokens)
                          .arg(reply_end_name(stats))
                          .arg(data_size(stats.mappedBytes), data_size(stats.residentBytes), stats.kvCache) +
                      (stats.lanesCopyBytes > 0 ? tr(" + lanes copy %1").arg(data_size(stats.lanesCopyBytes)) : QString()) +
                      expertFetchText(stats));
}

QString MainWindow::expertFetchText(const ReplyStats& stats) {
    if (stats.expertFetch.isEmpty()) return {};
    QString text = tr(" · experts %1").arg(stats.expertFetch);
    if (!stats.ioBackend.isEmpty()) text += tr(" via %1").arg(stats.ioBackend);
    const uint64_t lookups = stats.expertCacheHits + stats.expertCacheMisses;
    if (stats.expertCacheBytes > 0)
        text += lookups > 0 ? tr(", cache %1: %2% hits").arg(data_size(stats.expertCacheBytes)).arg(100.0 * stats.expertCacheHits / lookups, 0, 'f', 1)
                            : tr(", cache %1").arg(data_size(stats.expertCacheBytes));
    return text;
}

QString MainWindow::metricsText() const { return status_->metrics(); }

bool MainWindow::mayStopReplyFor(const QString& modelPath) {
    if (!controller_->isGenerating()) return true;
    const QString title = controller_->replyConversationTitle();
    if (confirmStopReply_) return confirmStopReply_(title, modelPath);
    QMessageBox box(QMessageBox::Question, tr("Stop the reply?"),
                    tr("A reply is being written in %1. Opening %2 stops it (what it has written so far is kept).")
                        .arg(title, QFileInfo(modelPath).fileName()),
                    QMessageBox::NoButton, this);
    box.setObjectName(QStringLiteral("stopReplyForModelBox"));
    QPushButton* open = box.addButton(tr("Stop and open"), QMessageBox::AcceptRole);
    box.addButton(tr("Keep writing"), QMessageBox::RejectRole);
    box.setDefaultButton(open);
    box.exec();
    return box.clickedButton() == open;
}

void MainWindow::syncContextLimits() {
    sampling_->setContextLimits(controller_->contextLength(), controller_->setup().contextPolicy);
}

QCoro::Task<bool> MainWindow::openModel(QString path) {
    // Asked before anything is read: the answer decides whether this call does anything.
    if (!mayStopReplyFor(path)) {
        status_->showInfo(tr("Kept writing the reply; %1 was not opened.").arg(QFileInfo(path).fileName()));
        co_return false;
    }
    const uint64_t request = ++openRequest_;
    QPointer<MainWindow> self(this);
    status_->showInfo(tr("Opening %1…").arg(QDir::toNativeSeparators(path)));
    spdlog::info("opening model '{}'", path.toStdString());

    // One open per user open: the engine reads and validates the file and hands up its summary
    // and card (ModelInfo); nothing here reads it. An open still waiting is superseded (its call
    // resolves to false; the engine skips its load if it has not started it).
    if (openAnswered_) openAnswered_->finish();
    openAnswered_ = std::make_unique<QPromise<void>>();
    openAnswered_->start();
    openPath_ = path;
    openShown_ = false;
    // A named local, awaited without a lambda: with GCC 12, temporaries inside a co_await
    // expression corrupted the frame's `path` (the known GCC coroutine bugs).
    QFuture<void> answered = openAnswered_->future();
    controller_->loadModel(path, sampling_->settings().threads);
    co_await answered;

    if (!self) co_return false;                    // the window closed while the engine loaded
    if (request != openRequest_) co_return false;  // a newer openModel call owns the view now
    co_return openShown_;  // false: reported by modelFailed (reportError)
}

void MainWindow::settleOpen(const QString& path, bool shown) {
    if (!openAnswered_) return;
    // Another model's news (a load that had already started when this one was asked for) while
    // this one still loads: keep waiting.
    if (path != openPath_ && controller_->isModelLoading()) return;
    openShown_ = shown && path == openPath_;
    openAnswered_->finish();
    openAnswered_.reset();
    if (openShown_) emit modelOpened(path);
}

void MainWindow::showChatTools() {
    if (auto* open = findChild<QDialog*>(QStringLiteral("chatToolsDialog"))) {
        open->raise();
        open->activateWindow();
        return;
    }
    auto* dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("chatToolsDialog"));
    dialog->setWindowTitle(tr("Chat tools"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(new ToolsPanel(toolbox_, dialog));
    dialog->resize(640, 420);
    dialog->show();
}

void MainWindow::reportError(const QString& path, const QString& message) {
    lastError_ = message;
    const QString plain = plain_load_error(path, message);
    status_->showError(tr("Could not open %1: %2").arg(QFileInfo(path).fileName(), plain));
    spdlog::warn("cannot open model '{}': {}", path.toStdString(), message.toStdString());

    // open() rather than exec(): window-modal without a nested event loop, so nothing
    // (a test, a queued open) blocks on the dialog. Plain words first; the reader's exact
    // message (offsets, field names) in the disclosure.
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Cannot open model"),
                                tr("%1 could not be opened.").arg(QFileInfo(path).fileName()), QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("openErrorBox"));
    box->setInformativeText(plain);
    box->setDetailedText(message);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
    emit openFailed(path, message);
}

} // namespace cflow::ui
