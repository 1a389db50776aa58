#pragma once
// The one owner of "the current conversation and model" in the desktop app. Every view — the
// conversation list, the transcript, the context gauge, the raw prompt, the inspector, the
// window title and the status area — shows what this object says and changes it only through
// its methods, so they cannot disagree.
//
// A reply keeps streaming into its own conversation while the user reads or starts another
// (issue 37: switching used to stop it): the views show the other conversation at once, the
// reply goes on into the store, and coming back shows it where it has got to. The engine runs
// one reply at a time, so sending elsewhere waits until it ends or is stopped. Opening another
// model or deleting the reply's conversation stops the reply first (it ends within one token and
// is kept, marked stopped) and runs when the engine reports the end.
//
// Lives on the GUI thread; talks to the EngineWorker only through queued calls and signals.
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <QElapsedTimer>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>
#include <QTimer>

#include "cflow/base/result.h"
#include "cflow/ui/chat_tool_round.h"
#include "cflow/ui/chat_types.h"
#include "cflow/ui/remote/endpoint_profile.h"
#include "cflow/ui/reply_format.h"
#include "cflow/ui/token_spans.h"

namespace cflow::ui {

class ConversationStore;
class EngineWorker;
class RemoteThread;

struct ChatEntry {
    QString role;          // "user", "assistant" or "tool" (a tool call's result)
    QString content;       // the shown text (for a reply: versions[version])
    qint64 rowId = 0;
    QString modelPath;     // replies: the model that wrote it
    bool stopped = false;  // replies: the user stopped it
    bool complete = true;  // false: cut by a crash while it streamed, or by the server that wrote it
    QString cutReason;     // a reply its server cut: the diagnosis, kept in the store ("" otherwise)
    QStringList versions;  // replies: every regenerated text, oldest first
    int version = 0;
    // Replies made in this session: the format they were held to (reply_format_mark; "" for free
    // text and for replies read back from the store, which does not keep it).
    QString replyFormat;
    // ChatMessage::extra_json as stored: a reply's {"tool_calls": [...]}, a tool result's
    // {"tool_call_id", "name"}; "" otherwise.
    QString extraJson;
    std::vector<cflow::ToolCall> toolCalls;  // replies: the calls it made (read from extraJson)
    // Replies made in this session: why the conversation's tools were not offered (the template
    // cannot call tools), on the first such reply of the conversation only; "" otherwise.
    QString toolsNote;
};

// What a conversation is set up with besides sampling; stored with it.
struct ConversationSetup {
    QString systemPrompt;
    PromptMode mode = PromptMode::Chat;
    TemplateChoice templateChoice;
    ContextPolicy contextPolicy = ContextPolicy::DropOldest;
    std::optional<bool> thinking;  // enable_thinking (Qwen3, SmolLM3); unset = the template's default
    ReplyFormat replyFormat;       // free text, one JSON object, or JSON under a schema
    // Auto: the model decides whether to call a tool. Required / Named: the first reply to each
    // message must call (one of) the tools; the replies after the results are free.
    cflow::ToolChoice toolChoice;
};

class ChatController : public QObject {
    Q_OBJECT
public:
    using SettingsSource = std::function<GenerationSettings()>;
    using ToolsSource = std::function<std::vector<cflow::ToolDefinition>()>;
    using ToolsChosenSource = std::function<bool()>;

    ChatController(EngineWorker* worker, ConversationStore* store, QObject* parent = nullptr);
    ~ChatController() override;

    // Sampling, max tokens and threads come from here when a reply starts (the sampling panel).
    void setSettingsSource(SettingsSource source) { settingsSource_ = std::move(source); }
    // The tools each reply offers the model (the conversation's enabled tools), read when it starts.
    void setToolsSource(ToolsSource source);
    // Whether the user set the conversation's tools up (other than the defaults every conversation
    // starts with): only then is a template that cannot call tools worth a note on the reply.
    void setToolsChosenSource(ToolsChosenSource source) { toolsChosenSource_ = std::move(source); }
    // The conversation's tool choice (ConversationSetup::toolChoice), stored with it: a forced
    // reply is sampled under the call grammar in the template's format.
    void setToolChoice(const cflow::ToolChoice& choice);
    const cflow::ToolChoice& toolChoice() const { return setup_.toolChoice; }
    // The tools changed (enabled, disabled, another conversation's): the prompt is measured again.
    void toolsChanged() { remeasure(); }

    // --- model
    // Loads path into the engine (after stopping a streaming reply). The current model stays
    // until the new one is ready; modelChanged or modelFailed follows.
    void loadModel(const QString& path, unsigned threads);
    bool modelReady() const { return (model_.model != nullptr || onEndpoint_) && !loadingPath_; }
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    // The remote counterpart of loadModel (issue 34): later replies are written by the endpoint,
    // through the same transcript, store and exports, each recording endpoint_identity(profile)
    // as its model path. Stops a streaming reply first; loadModel switches back to the engine.
    void connectEndpoint(const EndpointProfile& profile, const QString& apiKey);
#endif
    // Replies go to an endpoint (model().path is its identity, model().model is null).
    bool onEndpoint() const { return onEndpoint_; }
    bool isModelLoading() const { return loadingPath_.has_value(); }
    const ModelInfo& model() const { return model_; }

    // --- conversation
    qint64 conversationId() const { return conversationId_; }
    const std::vector<ChatEntry>& entries() const { return entries_; }
    const ConversationSetup& setup() const { return setup_; }
    // The model the shown conversation was last used with, when it is not the loaded one.
    QString otherModelPath() const;

    bool openConversation(qint64 id);  // false: no such conversation (storeError says why)
    void newConversation();
    bool deleteConversation(qint64 id);
    // False when no model is ready, a reply is streaming or a switch waits, or text is empty.
    bool send(const QString& text);
    bool regenerate();  // a new version of the last reply; the old ones stay browsable
    // Replaces user message index with text, dropping every later message, and replies.
    bool editAndResend(int index, const QString& text);
    void stop();
    bool showVersion(int index, int version);  // which regenerated text of reply index is shown

    void setSystemPrompt(const QString& text);
    void setMode(PromptMode mode);
    void setTemplateChoice(const TemplateChoice& choice);
    void setContextPolicy(ContextPolicy policy);
    void setThinking(std::optional<bool> thinking);
    // Builds the format's grammar first: a schema it cannot express is refused (the setup keeps
    // its format) with the engine's message, which names the JSON pointer of the keyword.
    Status setReplyFormat(const ReplyFormat& format);
    // The grammar replies are sampled under (null: free text), built once per format choice.
    const std::shared_ptr<const Grammar>& replyGrammar() const { return replyGrammar_; }
    // Why a conversation's stored format could not be used when it was opened ("" when it could).
    const QString& replyFormatError() const { return replyFormatError_; }

    // --- state
    // A streaming reply's text reaches the store at most this often (and this long after it
    // arrived, at the latest), not at every ~30 ms batch: a crash loses at most the last second.
    static constexpr int kPersistIntervalMs = 1000;
    // Writes of the streaming text to the store in the reply streaming or streamed last (its
    // final write included).
    int replyStoreWrites() const { return replyStoreWrites_; }
    bool isGenerating() const { return reply_.has_value(); }
    // The conversation the streaming reply writes into (0 when none streams), and its index in
    // entries() when that conversation is the shown one (else -1).
    qint64 replyConversationId() const { return reply_ ? reply_->conversationId : 0; }
    int replyIndex() const { return replyIndex_; }
    // How much of the streaming reply's text to show (-1: all): a tool call it is writing is held
    // back (its card shows once the reply ends), the text before it shows as it streams.
    int replyShownChars() const { return reply_ ? reply_->shownChars : -1; }
    // The streaming reply's conversation title as the list shows it (plain_title, cut at maxChars;
    // 0: whole), quoted; "another conversation" when there is none.
    QString replyConversationTitle(int maxChars = 0) const;
    bool isReplyShown() const { return replyIndex_ >= 0; }
    // Whether the reply that ended last (replyFinished / replyFailed) was in the shown conversation.
    bool lastReplyWasShown() const { return lastReplyShown_; }
    bool switchPending() const { return pending_.has_value(); }
    // --- tool calls (chat_controller_tools.cpp)
    // A reply's calls wait for the user: Send and Regenerate wait too; Stop cancels them.
    bool toolCallsPending() const { return toolRound_.has_value(); }
    // The entry whose calls wait (-1 when none does), and the waiting round's serial.
    int toolRoundIndex() const;
    quint64 toolRoundSerial() const { return toolRound_ ? toolRound_->serial : 0; }
    // Whether call callId of entry index still waits for a decision.
    bool toolCallWaiting(int index, const std::string& callId) const;
    // A card's decision (the tool's result, an error, or denied_tool_call_text()). Once every call
    // of the round has one, each becomes a "tool" message and the next reply starts (at most
    // kMaxToolRounds rounds per user message). A stale serial (the round ended) is ignored.
    void resolveToolCall(quint64 serial, const std::string& callId, const ToolResult& result);
    // A card's call was approved and runs: if the round is stopped before its result, the model is
    // told it may have run (interrupted_tool_call_text), not that it did not.
    void toolCallStarted(quint64 serial, const std::string& callId);
    // For the chat's notices: the model kept calling tools past kMaxToolRounds ("" otherwise).
    QString toolNotice() const;
    int contextUsed() const { return contextUsed_; }
    int contextLength() const { return model_.contextLength; }
    // The shown conversation rendered as the next reply would see it (re-measured on every
    // change); while a reply streams, the prompt it was started with.
    const RenderedPrompt& visiblePrompt() const { return visiblePrompt_; }
    // The prompt of the reply streaming or last streamed.
    const RenderedPrompt& lastSentPrompt() const { return sentPrompt_; }

signals:
    void modelLoading(const QString& path);
    void modelChanged(const cflow::ui::ModelInfo& info);
    void modelFailed(const QString& path, const cflow::ui::WorkerError& error);
    void conversationChanged(qint64 id);  // the shown conversation is another one (entries reset)
    void entryAdded(int index);
    void entryChanged(int index);          // content, versions or the stopped mark
    void entriesRemoved(int from);         // entries from index `from` on are gone
    // Tokens of a reply in the shown conversation (index: its entry).
    void replyStreamed(int index, const QString& text, int tokens, const cflow::ui::TokenPieces& pieces);
    // Every streamed batch, shown or not (the status bar's rate).
    void replyProgress(int tokens);
    // A reply written by an endpoint: its newest chunks' arrivals (ms from the request's start),
    // with each batch; firstBatch: the reply's first (the inspector's latency timeline).
    void remoteChunksArrived(const std::vector<float>& arrivalMs, bool firstBatch);
    // The endpoint's /metrics after a reply, in one line (RemoteWorker::serverMetrics).
    void remoteServerMetrics(const QString& line);
    void generatingChanged(bool generating);
    void contextChanged(int used, int length);
    void promptMeasured(const cflow::ui::RenderedPrompt& prompt);
    void promptProgress(int processed, int total);
    void replyStarted();
    void replyFinished(const cflow::ui::ReplyStats& stats);
    void replyFailed(const QString& message);
    void switchQueued(const QString& what);
    void toolRoundChanged();  // calls began waiting, or the round ended (answered or cancelled)  // a model switch or delete waits for the streaming reply to stop
    void setupChanged();
    // An opened conversation brings back the sampling settings it was last used with.
    void samplingRestored(const cflow::ui::GenerationSettings& settings);
    void conversationListChanged();  // created, deleted or reordered (a reply moved it to the top)
    void storeError(const QString& message);

private:
    struct Pending {
        enum class Kind { Delete, LoadModel, ConnectEndpoint } kind;
        qint64 id = 0;
        QString path;
        unsigned threads = 0;
        EndpointProfile endpoint = {};
        QString apiKey = {};
    };
    // Stops the streaming reply on whichever worker writes it (the engine or the endpoint).
    void stopWorker();
    bool queueIfBusy(Pending pending, const QString& what);
    void runPending();
    // The reply streaming in the background or in view: the store and, when shown, entries_ follow it.
    struct StreamingReply {
        qint64 conversationId = 0;
        ChatEntry entry;
        QString previous;     // regenerate: the version shown before, restored if nothing came
        int contextUsed = 0;  // prompt + reply tokens, as the engine counts them
        // Tools offered: reads the calls as they stream, so the view shows only the text before them.
        std::optional<cflow::ToolCallStreamParser> callReader;
        QByteArray released;  // the reader's content so far (a prefix of the reply's UTF-8)
        bool callSeen = false;
        int shownChars = -1;
        bool remoteChunksSeen = false;  // remoteChunksArrived was emitted for this reply
        QElapsedTimer sincePersisted;   // since the text was last written to the store
        bool unpersisted = false;       // text arrived after that write
    };
    void persistReply();  // writes the streaming text to the store now
    void holdBackCalls(const QString& batch);  // updates reply_->shownChars
    void startReply(int entryIndex, int seedOffset, const QString& previous = QString());
    // Adds the empty assistant row and entry for the next reply and starts it.
    bool startAssistantReply();
    // --- tool rounds (chat_controller_tools.cpp)
    // The finished reply's calls (in the format its prompt was rendered for) go into its entry:
    // its content loses the call markers. True when it made calls.
    bool takeToolCalls(ChatEntry& reply) const;
    void beginToolRound(int entryIndex, const ChatEntry& reply, qint64 conversationId);
    // Every call answered: the tool messages are added and the model goes on (under the cap).
    void finishToolRound();
    // Stop, another conversation shown, or the reply's conversation was not shown when it ended:
    // undecided calls get cancelled_tool_call_text() and nothing more runs. deleting: its
    // conversation goes, so nothing is written.
    void cancelToolRound(bool deleting = false);
    // Adds one "tool" message per call of round (its result) to the store and, when shown, entries_.
    void addToolResults(const ToolRound& round);
    void mirrorReply();  // entries_[replyIndex_] = the streaming entry, entryChanged
    Conversation history(size_t upTo) const;
    GenerationSettings requestSettings(int seedOffset) const;
    void remeasure();   // soon (coalesced)
    void measureNow();
    void setContext(int used);
    void saveSetup();
    template <class T>
    void changeSetup(T ConversationSetup::*field, const T& value);
    bool check(const Status& status);

    void onModelLoaded(const ModelInfo& info);
    void onLoadFailed(const QString& path, const WorkerError& error);
    void onPrompt(const RenderedPrompt& prompt);
    void onMeasured(quint64 serial, const RenderedPrompt& prompt);
    void onTokens(const QString& text, int tokens, const TokenPieces& pieces);
    void onFinished(const ReplyStats& stats);
    void onError(const WorkerError& error);
    void endReply(bool stopped, bool complete = true);
    QString settingsJson() const;

    EngineWorker* worker_;
    std::unique_ptr<RemoteThread> remote_;  // made at the first connectEndpoint
    bool onEndpoint_ = false;               // replies go to remote_ (set when it answers configure)
    // The server's usage after its last reply (prompt + reply tokens) and the conversation it was in.
    qint64 serverCountConversation_ = 0;
    int serverCountTokens_ = 0;
    ConversationStore* store_;
    SettingsSource settingsSource_;
    ModelInfo model_;
    std::optional<QString> loadingPath_;
    qint64 conversationId_ = 0;
    std::vector<ChatEntry> entries_;
    ConversationSetup setup_;
    std::shared_ptr<const Grammar> replyGrammar_;  // built for setup_.replyFormat
    QString replyFormatError_;
    std::optional<StreamingReply> reply_;  // set while a reply streams
    int replyIndex_ = -1;                  // entry of reply_ in entries_, -1 when another conversation is shown
    bool lastReplyShown_ = true;
    std::optional<Pending> pending_;
    quint64 measureSerial_ = 0;
    QTimer measureTimer_;
    QTimer persistTimer_;  // writes the text a reply's last batches brought, kPersistIntervalMs after the write before
    int replyStoreWrites_ = 0;
    static constexpr int kMeasureDelayMs = 120;
    int contextUsed_ = 0;
    ToolsSource toolsSource_;
    ToolsChosenSource toolsChosenSource_;
    std::optional<ToolRound> toolRound_;
    quint64 toolRoundSerial_ = 0;
    int toolRounds_ = 0;          // rounds answered since the last user message
    bool toolCapReached_ = false; // the last message's replies stopped at kMaxToolRounds
    QSet<qint64> toolsNotOfferedSaid_;  // conversations told their template cannot call tools
    RenderedPrompt visiblePrompt_;
    RenderedPrompt sentPrompt_;
};

// The conversation's stored settings JSON <-> its setup (other keys are left alone).
ConversationSetup setup_from_json(const QString& json);
QString setup_into_json(const ConversationSetup& setup, const QString& json);

} // namespace cflow::ui
