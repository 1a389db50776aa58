#pragma once
// The studio's main window: conversation sidebar (left), chat (centre), sampling and the
// opened model's header (right), run metrics in the status bar. Opening a model (a QCoro task)
// asks the engine thread to load it: the worker opens and validates the file once and hands up
// the header summary and card with the model (ModelInfo); the window never blocks on it.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <QElapsedTimer>
#include <QMainWindow>
#include <QPromise>
#include <QString>

#include <QCoro/QCoroTask>

#include "cflow/engine/forward/load_policy.h"
#include "cflow/ui/chat_types.h"
#include "cflow/ui/database_recovery.h"

class QAction;
class QLabel;
class QMenu;

namespace cflow::ui {

class ChatController;
class ChatPanel;
class ModelPanel;
class PromptPanel;
class StatusArea;
class ConversationSidebar;
class ConversationStore;
class EngineThread;
class EngineWorker;
class InspectorDock;
class ModelLibrary;
class ModelHeaderView;
class SamplingPanel;
class TelemetryRing;
class SharedRingProducer;
class ServerController;
class ServerKeyKeeper;
class ConversationToolbox;
class EndpointProfileStore;
class SecretStore;

struct MainWindowOptions {
    // Measure the machine's read bandwidth for the inspector at the first start. The app
    // turns it on; tests and the self-test leave it off (the probe saturates memory).
    bool measureReadBandwidth = false;
    // Restore the window's size, docks and their sizes from QSettings and save them on close.
    // The app turns it on; tests and the self-test start from the default layout.
    bool rememberLayout = false;
    // The folder File > Bundled models… lists (ModelLibrary): nullopt looks up the installed
    // zoo beside the executable (default_model.h, bundled_models_folder()); an empty string
    // disables the entry.
    std::optional<QString> bundledModelsFolder;
    // The conversation database, opened before the window (main() does, so that Quit in the
    // damaged-database question ends the app before a window exists). Null: the window opens
    // default_database_path() itself, asking onDamagedDatabase (empty: the message box); Quit
    // there opens nothing usable, so the window then closes the application (quitRequested()).
    std::shared_ptr<OpenedStore> store;
    DamagedDatabaseAsk onDamagedDatabase;
    // Opening a model while a reply streams asks first (issue 37): true stops the reply and opens
    // modelPath. Empty: a message box.
    std::function<bool(const QString& conversationTitle, const QString& modelPath)> confirmStopReply;
    // Model > Connect to a server… (issue 34): where API keys are kept. Null: the system keychain
    // (make_system_secret_store); tests pass a MemorySecretStore.
    std::shared_ptr<SecretStore> secretStore;
    // The endpoint profiles' settings file ("" = the app's QSettings; tests pass an ini of their own).
    QString endpointSettingsFile;
    // What the engine opens model files with (empty: Model::load); tests count the opens through it.
    ModelLoader modelLoader;
};

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr, MainWindowOptions options = {});
    ~MainWindow() override;

    // Has the engine load path (it opens and validates the file once) and shows its header, card
    // and title when it is ready (modelOpened, engineReady); on failure reports the reader's message
    // (openFailed, lastError(), a non-blocking message box) and keeps the model before. Resolves to
    // whether this call's model is now shown (false also when a later openModel call superseded it
    // or the window closed).
    QCoro::Task<bool> openModel(QString path);

    const QString& lastError() const { return lastError_; }
    ModelHeaderView* headerView() const { return headerView_; }
    ChatPanel* chatPanel() const { return chat_; }
    ChatController* controller() const { return controller_; }
    PromptPanel* promptPanel() const { return prompt_; }
    StatusArea* statusArea() const { return status_; }
    ConversationSidebar* sidebar() const { return sidebar_; }
    SamplingPanel* samplingPanel() const { return sampling_; }
    InspectorDock* inspector() const { return inspector_; }
    ServerController* server() const { return server_; }
    // The server's key in the keychain (with rememberLayout; null otherwise: the key is typed per session).
    ServerKeyKeeper* serverKey() const { return serverKey_; }
    QAction* serveAction() const { return serveAction_; }
    EngineWorker* engine() const;
    ConversationStore* store() const { return store_.get(); }
    // The shown conversation's tools (issue 33): what the chat offers the model and runs.
    ConversationToolbox* toolbox() const { return toolbox_; }
    // Tools > Chat tools…: the Tools panel in a window of its own (one at a time).
    void showChatTools();
    // Model > Connect to a server…: the Connect dialog (one at a time, not modal to the app);
    // accepting it connects the chat to the chosen endpoint. Null in a build without Qt Network.
    QDialog* showConnectDialog();
    // The user chose Quit when asked about a damaged conversation database.
    bool quitRequested() const { return quitRequested_; }
    QString metricsText() const;
    void setLogPath(const QString& path) { logPath_ = path; }
    // Docks back where a first start puts them (View > Reset layout).
    void resetLayout();
    // Where the inspector (tabbed with Prompt, Sampling and Model) sits: a full-height column
    // beside the chat, or a strip below it. A first start puts it beside the chat in a window at
    // least kInspectorBesideMinWidth wide (issue 37: a ~200 px strip at 1366x768), below in a
    // narrower one; View > Inspector beside/below the chat moves it, and the choice is kept with
    // the layout.
    enum class InspectorPlacement { Beside, Below };
    void placeInspector(InspectorPlacement placement);
    InspectorPlacement inspectorPlacement() const;
    static constexpr int kInspectorBesideMinWidth = 1200;
    // What a start without a model argument opens: with rememberLayout, the model used last
    // (when it still exists), whose last conversation then reopens once it is loaded; else, and
    // on a first start, `fallback` (the bundled default model). Issue 37: a restart reopened neither.
    QString startupModel(const QString& fallback);
    static constexpr int kMinimumWidth = 800;  // the window stays usable down to 800 x 600
    static constexpr int kMinimumHeight = 600;
    // The .cflow/.vflow files of folder in a ModelLibrary dialog (File > Open model folder…,
    // File > Bundled models…); a folder without any offers conversion. Returns the library
    // (owned by its dialog), nullptr for an empty folder name.
    ModelLibrary* showModelFolder(const QString& folder);
    // What File > Bundled models… lists; empty when this build has no bundled zoo.
    const QString& bundledModelsFolder() const { return bundledModelsFolder_; }

signals:
    void modelOpened(const QString& path);  // an openModel call's model is shown (before engineReady)
    void openFailed(const QString& path, const QString& message);
    void engineReady(const cflow::ui::ModelInfo& info);

private slots:
    void chooseModel();
    // Shows the .cflow/.vflow files of a folder (ModelLibrary); a folder without any offers conversion.
    void chooseModelFolder();
    // Opens the ConvertWizard for a .gguf / HF folder / llama2.c .bin; the result is opened on success.
    void offerConversion(const QString& sourcePath);
    // Tools > Compare models…: the CompareWizard, offering the loaded (else the default) model first.
    void showComparison();
    void showAbout();
    void showLog();
    void exportConversation(bool asJson);

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void createMenus();
    void wireController();
    void saveLayout() const;
    int stripHeight() const;
    void sizeInspector();  // the inspector's share of the window where it now sits
    InspectorPlacement defaultPlacement() const;  // a first start's: beside when the window is wide enough
    void syncPlacementActions();
    QAction* besideAction_ = nullptr;
    QAction* belowAction_ = nullptr;
    void createDocks(const MainWindowOptions& options);
    void reportError(const QString& path, const QString& message);
    // The engine answered for path (shown: it is the model now): resolves the waiting openModel
    // call when the answer is its own, or when nothing else is loading any more.
    void settleOpen(const QString& path, bool shown);
    // Whether opening modelPath may stop the streaming reply (asked only while one streams).
    bool mayStopReplyFor(const QString& modelPath);
    void syncContextLimits();  // the sampling panel's max tokens against the context and its policy
    void rememberRecent(const QString& path);
    void rebuildRecentMenu();
    void showStats(const ReplyStats& stats);
    static QString expertFetchText(const ReplyStats& stats);  // " · experts staged, cache 64 MiB: 93.5% hits"; "" for dense
    // Server menu: start/stop serving the loaded model, and the settings dialog.
    void setServing(bool on);
    void editServerSettings();
    void showServerStatus();
    void loadServerKey();  // from the keychain (moving an older build's plain key there)

    std::unique_ptr<ConversationStore> store_;
    std::unique_ptr<EndpointProfileStore> endpointProfiles_;  // Model > Connect to a server…
    std::shared_ptr<SecretStore> secrets_;                     // null: keys are typed per session
    bool quitRequested_ = false;
    std::unique_ptr<TelemetryRing> ring_;      // engine thread -> inspector; outlives both
    std::unique_ptr<SharedRingProducer> producer_;  // the engine thread and the server's threads push through it
    ServerController* server_ = nullptr;
    ServerKeyKeeper* serverKey_ = nullptr;
    bool serveWhenKeyRead_ = false;  // Serve was chosen while the keychain was still being read
    ConversationToolbox* toolbox_ = nullptr;
    QAction* serveAction_ = nullptr;
    ModelInfo currentModel_;                   // what the engine has loaded (the server serves it)
    std::unique_ptr<EngineThread> engine_;
    ChatController* controller_ = nullptr;
    PromptPanel* prompt_ = nullptr;
    StatusArea* status_ = nullptr;
    QMenu* viewMenu_ = nullptr;
    QByteArray defaultState_;        // the docks as first laid out, for Reset layout
    bool rememberLayout_ = false;
    QString bundledModelsFolder_;
    bool restoredState_ = false;     // docks came from QSettings: keep their sizes
    qint64 reopenConversation_ = 0;  // the last session's conversation, opened with its model
    bool dockSizesApplied_ = false;
    ModelPanel* modelPanel_ = nullptr;
    QElapsedTimer replyClock_;        // from the first streamed batch of the current reply
    int replyTokens_ = 0;
    InspectorDock* inspector_ = nullptr;
    ModelHeaderView* headerView_ = nullptr;
    ChatPanel* chat_ = nullptr;
    ConversationSidebar* sidebar_ = nullptr;
    SamplingPanel* sampling_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    QString lastError_;
    QString logPath_;
    uint64_t openRequest_ = 0;  // id of the newest openModel call; older results are dropped
    // The newest openModel call waits on this until the engine answers (settleOpen); destroyed with
    // the window, it cancels, and the call resolves to false.
    std::unique_ptr<QPromise<void>> openAnswered_;
    QString openPath_;
    bool openShown_ = false;
    std::function<bool(const QString&, const QString&)> confirmStopReply_;
};

} // namespace cflow::ui
