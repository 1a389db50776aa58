#include "cflow/ui/chat_controller.h"

#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMetaObject>

#include "cflow/ui/conversation_store.h"
#include "cflow/ui/conversation_title.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/sampling_panel.h"
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
#include "cflow/ui/remote/remote_worker.h"
#else
namespace cflow::ui {
// A build without Qt Network (the Windows cross build for now) has no endpoints: nothing makes one.
class RemoteThread {};
} // namespace cflow::ui
#endif

namespace cflow::ui {
namespace {

constexpr int kTitleChars = 48;

QString title_from(const QString& text) { return plain_title(text, kTitleChars); }

QString template_kind_name(TemplateChoice::Kind kind) {
    switch (kind) {
    case TemplateChoice::Kind::Builtin: return QStringLiteral("builtin");
    case TemplateChoice::Kind::Custom: return QStringLiteral("custom");
    case TemplateChoice::Kind::Model: break;
    }
    return QStringLiteral("model");
}

} // namespace

ConversationSetup setup_from_json(const QString& json) {
    const QJsonObject o = QJsonDocument::fromJson(json.toUtf8()).object();
    ConversationSetup setup;
    setup.systemPrompt = o.value(QStringLiteral("system_prompt")).toString();
    setup.mode = o.value(QStringLiteral("mode")).toString() == QLatin1String("completion") ? PromptMode::Completion
                                                                                          : PromptMode::Chat;
    const QString kind = o.value(QStringLiteral("template_kind")).toString();
    setup.templateChoice.kind = kind == QLatin1String("builtin")  ? TemplateChoice::Kind::Builtin
                                : kind == QLatin1String("custom") ? TemplateChoice::Kind::Custom
                                                                  : TemplateChoice::Kind::Model;
    if (setup.templateChoice.kind != TemplateChoice::Kind::Model)
        setup.templateChoice.value = o.value(QStringLiteral("template")).toString().toStdString();
    const QString policy = o.value(QStringLiteral("context_policy")).toString();
    for (ContextPolicy p : {ContextPolicy::Stop, ContextPolicy::DropOldest, ContextPolicy::SlidingWindow})
        if (policy == QLatin1String(context_policy_name(p).data(), qsizetype(context_policy_name(p).size())))
            setup.contextPolicy = p;
    const QString thinking = o.value(QStringLiteral("thinking")).toString();
    if (thinking == QLatin1String("on")) setup.thinking = true;
    if (thinking == QLatin1String("off")) setup.thinking = false;
    setup.replyFormat.kind = reply_format_kind_from_key(o.value(QStringLiteral("reply_format")).toString());
    setup.replyFormat.schema = o.value(QStringLiteral("reply_schema")).toString();
    setup.toolChoice = tool_choice_from_key(o.value(QStringLiteral("tool_choice")).toString());
    return setup;
}

QString setup_into_json(const ConversationSetup& setup, const QString& json) {
    QJsonObject o = QJsonDocument::fromJson(json.toUtf8()).object();
    o.insert(QStringLiteral("system_prompt"), setup.systemPrompt);
    o.insert(QStringLiteral("mode"), setup.mode == PromptMode::Completion ? QStringLiteral("completion") : QStringLiteral("chat"));
    o.insert(QStringLiteral("template_kind"), template_kind_name(setup.templateChoice.kind));
    o.insert(QStringLiteral("template"), QString::fromStdString(setup.templateChoice.value));
    const std::string_view policy = context_policy_name(setup.contextPolicy);
    o.insert(QStringLiteral("context_policy"), QString::fromLatin1(policy.data(), qsizetype(policy.size())));
    if (setup.thinking) o.insert(QStringLiteral("thinking"), *setup.thinking ? QStringLiteral("on") : QStringLiteral("off"));
    else o.remove(QStringLiteral("thinking"));
    o.insert(QStringLiteral("reply_format"), reply_format_key(setup.replyFormat.kind));
    if (setup.replyFormat.schema.isEmpty()) o.remove(QStringLiteral("reply_schema"));
    else o.insert(QStringLiteral("reply_schema"), setup.replyFormat.schema);
    o.insert(QStringLiteral("tool_choice"), tool_choice_key(setup.toolChoice));
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

ChatController::ChatController(EngineWorker* worker, ConversationStore* store, QObject* parent)
    : QObject(parent), worker_(worker), store_(store) {
    // Typing a system prompt asks for a measurement per key: one render and encode per pause is enough.
    measureTimer_.setSingleShot(true);
    measureTimer_.setInterval(kMeasureDelayMs);
    connect(&measureTimer_, &QTimer::timeout, this, &ChatController::measureNow);
    persistTimer_.setSingleShot(true);
    connect(&persistTimer_, &QTimer::timeout, this, [this] {
        if (reply_ && reply_->unpersisted) persistReply();
    });
    connect(worker_, &EngineWorker::modelLoaded, this, [this](const ModelInfo& info) {
        onEndpoint_ = false;  // the engine's model writes the replies again
        onModelLoaded(info);
    });
    connect(worker_, &EngineWorker::loadFailed, this, &ChatController::onLoadFailed);
    connect(worker_, &EngineWorker::promptReady, this, &ChatController::onPrompt);
    connect(worker_, &EngineWorker::measured, this, &ChatController::onMeasured);
    connect(worker_, &EngineWorker::promptProgress, this, &ChatController::promptProgress);
    connect(worker_, &EngineWorker::tokensReady, this, &ChatController::onTokens);
    connect(worker_, &EngineWorker::finished, this, &ChatController::onFinished);
    connect(worker_, &EngineWorker::error, this, &ChatController::onError);
}

ChatController::~ChatController() = default;

bool ChatController::check(const Status& status) {
    if (status) return true;
    emit storeError(QString::fromStdString(status.error()));
    return false;
}

QString ChatController::otherModelPath() const {
    if (conversationId_ == 0) return {};
    QString last;
    for (const ChatEntry& e : entries_)
        if (!e.modelPath.isEmpty()) last = e.modelPath;
    if (last.isEmpty()) {
        auto info = store_->conversation(conversationId_);
        if (info) last = info->modelPath;
    }
    return !last.isEmpty() && last != model_.path ? last : QString();
}

// --- switching -----------------------------------------------------------------------------

bool ChatController::queueIfBusy(Pending pending, const QString& what) {
    if (!isGenerating()) return false;
    pending_ = std::move(pending);  // the newest wish wins
    stopWorker();
    emit switchQueued(what);
    return true;
}

void ChatController::runPending() {
    if (!pending_ || isGenerating()) return;
    const Pending p = *pending_;
    pending_.reset();
    switch (p.kind) {
    case Pending::Kind::Delete: deleteConversation(p.id); break;
    case Pending::Kind::LoadModel: loadModel(p.path, p.threads); break;
    case Pending::Kind::ConnectEndpoint:
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
        connectEndpoint(p.endpoint, p.apiKey);
#endif
        break;
    }
}

void ChatController::stopWorker() {
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    if (onEndpoint_ && remote_) {
        remote_->worker()->stop();
        return;
    }
#endif
    worker_->stop();
}

#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
void ChatController::connectEndpoint(const EndpointProfile& profile, const QString& apiKey) {
    Pending pending{Pending::Kind::ConnectEndpoint, 0, {}, 0, profile, apiKey};
    if (queueIfBusy(std::move(pending), tr("connecting to %1").arg(endpoint_identity_label(endpoint_identity(profile)))))
        return;
    if (!remote_) {
        remote_ = std::make_unique<RemoteThread>();
        RemoteWorker* remote = remote_->worker();
        connect(remote, &RemoteWorker::modelLoaded, this, [this](const ModelInfo& info) {
            onEndpoint_ = true;
            onModelLoaded(info);
        });
        // The same handlers as the engine's: one chat code path for local and remote replies.
        connect(remote, &RemoteWorker::promptReady, this, &ChatController::onPrompt);
        connect(remote, &RemoteWorker::tokensReady, this, &ChatController::onTokens);
        connect(remote, &RemoteWorker::finished, this, &ChatController::onFinished);
        connect(remote, &RemoteWorker::error, this, &ChatController::onError);
        connect(remote, &RemoteWorker::serverMetrics, this, [this](const QString& line) {
            if (onEndpoint_) emit remoteServerMetrics(line);  // not after a switch back to a local model
        });
        connect(remote, &RemoteWorker::chunksArrived, this, [this](const std::vector<float>& arrivalMs) {
            if (!isGenerating()) return;
            emit remoteChunksArrived(arrivalMs, !reply_->remoteChunksSeen);
            reply_->remoteChunksSeen = true;
        });
    }
    const QString identity = endpoint_identity(profile);
    loadingPath_ = identity;
    emit modelLoading(identity);
    RemoteWorker* remote = remote_->worker();
    QMetaObject::invokeMethod(remote, [remote, profile, apiKey] { remote->configure(profile, apiKey); });
}
#endif

void ChatController::loadModel(const QString& path, unsigned threads) {
    if (queueIfBusy({Pending::Kind::LoadModel, 0, path, threads}, tr("opening %1").arg(QFileInfo(path).fileName())))
        return;
    loadingPath_ = path;
    emit modelLoading(path);
    EngineWorker* worker = worker_;
    // Taken now: a newer load asked for before this one starts makes the worker skip it.
    const uint64_t loadsAtPost = worker->postLoadRequest();
    QMetaObject::invokeMethod(worker, [worker, path, threads, loadsAtPost] { worker->loadModel(path, threads, loadsAtPost); });
}

void ChatController::onModelLoaded(const ModelInfo& info) {
    // A load that had started when a newer one was asked for still lands (the engine has it now);
    // the newer one is still loading.
    if (loadingPath_ == info.path) loadingPath_.reset();
    model_ = info;
    // A fresh conversation starts in the mode the model is made for: a model without a chat
    // template is a base model, which continues text rather than answering turns.
    if (conversationId_ == 0 && entries_.empty()) {
        const PromptMode mode = info.hasChatTemplate ? PromptMode::Chat : PromptMode::Completion;
        if (setup_.mode != mode) {
            setup_.mode = mode;
            emit setupChanged();
        }
    }
    emit modelChanged(info);
    remeasure();
}

void ChatController::onLoadFailed(const QString& path, const WorkerError& error) {
    if (loadingPath_ == path) loadingPath_.reset();  // the engine keeps the model it had
    emit modelFailed(path, error);
}

bool ChatController::openConversation(qint64 id) {
    if (id == conversationId_) return true;
    auto info = store_->conversation(id);
    if (!info) return check(info.take_error());
    auto messages = store_->messages(id);
    if (!messages) return check(messages.take_error());
    cancelToolRound();  // calls wait only while their conversation is shown
    conversationId_ = id;
    toolCapReached_ = false;
    entries_.clear();
    for (const StoredMessage& m : *messages) {
        if (m.role == QLatin1String("system")) continue;  // the system prompt lives in the setup
        ChatEntry e;
        e.role = m.role;
        e.content = m.content;
        e.rowId = m.id;
        e.modelPath = m.modelPath;
        e.stopped = m.stopped;
        e.complete = m.complete;
        e.cutReason = m.cutReason;
        e.extraJson = m.extraJson;
        if (m.role == QLatin1String("assistant")) {
            e.versions = m.versions;
            e.version = m.version;
            e.toolCalls = tool_calls_from_extra_json(m.extraJson);
        }
        entries_.push_back(std::move(e));
    }
    replyIndex_ = -1;
    if (reply_ && reply_->conversationId == id) {
        // Back where the reply streams: the row read back is as far as the last store write got
        // (and marked incomplete); the streaming entry is newer.
        for (size_t i = 0; i < entries_.size(); ++i)
            if (entries_[i].rowId == reply_->entry.rowId) {
                entries_[i] = reply_->entry;
                replyIndex_ = static_cast<int>(i);
            }
    }
    setup_ = setup_from_json(info->settingsJson);
    replyFormatError_.clear();
    if (auto grammar = reply_format_grammar(setup_.replyFormat)) {
        replyGrammar_ = std::move(grammar.value());
    } else {
        // A schema this version cannot hold replies to: free text until the user fixes it (the
        // schema text stays, so the Prompt panel can show it with the reason).
        replyFormatError_ = QString::fromStdString(grammar.error());
        setup_.replyFormat.kind = ReplyFormatKind::FreeText;
        replyGrammar_ = nullptr;
    }
    if (settingsSource_) emit samplingRestored(settings_from_json(info->settingsJson, settingsSource_()));
    emit conversationChanged(id);
    emit setupChanged();
    if (replyIndex_ >= 0) {
        visiblePrompt_ = sentPrompt_;
        setContext(reply_->contextUsed);
        emit promptMeasured(visiblePrompt_);
    } else {
        if (isGenerating()) setContext(-1);  // not the streaming conversation's figure: unknown until measured
        remeasure();
    }
    return true;
}

void ChatController::newConversation() {
    cancelToolRound();
    toolCapReached_ = false;
    conversationId_ = 0;
    entries_.clear();
    replyIndex_ = -1;
    // A template belongs to a model: a new conversation starts with the model's own, in the
    // mode the model is made for. The system prompt, the context policy and the thinking choice carry over.
    setup_.templateChoice = {};
    if (model_.model) setup_.mode = model_.hasChatTemplate ? PromptMode::Chat : PromptMode::Completion;
    emit conversationChanged(0);
    emit setupChanged();
    remeasure();
}

bool ChatController::deleteConversation(qint64 id) {
    if (reply_ && id == reply_->conversationId &&
        queueIfBusy({Pending::Kind::Delete, id, {}, 0}, tr("deleting the conversation")))
        return true;
    if (toolRound_ && toolRound_->conversationId == id) cancelToolRound(true);
    if (!check(store_->deleteConversation(id))) return false;
    emit conversationListChanged();
    if (id == conversationId_) newConversation();
    return true;
}

// --- turns ---------------------------------------------------------------------------------

QString ChatController::settingsJson() const {
    const GenerationSettings sampling = settingsSource_ ? settingsSource_() : GenerationSettings{};
    return setup_into_json(setup_, settings_to_json(sampling));
}

void ChatController::saveSetup() {
    if (conversationId_ != 0) check(store_->setSettings(conversationId_, settingsJson()));
}

GenerationSettings ChatController::requestSettings(int seedOffset) const {
    GenerationSettings s = settingsSource_ ? settingsSource_() : GenerationSettings{};
    s.sampling.seed += static_cast<uint64_t>(seedOffset);
    s.mode = setup_.mode;
    s.templateChoice = setup_.templateChoice;
    s.contextPolicy = setup_.contextPolicy;
    s.thinking = setup_.thinking;
    s.grammar = replyGrammar_;
    s.replyFormat = setup_.replyFormat;
    if (setup_.mode == PromptMode::Chat && toolsSource_) s.tools = toolsSource_();
    return s;
}

Conversation ChatController::history(size_t upTo) const {
    Conversation conversation;
    const QString system = setup_.systemPrompt.trimmed();
    if (!system.isEmpty() && setup_.mode == PromptMode::Chat) conversation.push_back({QStringLiteral("system"), system});
    for (size_t i = 0; i < std::min(upTo, entries_.size()); ++i)
        conversation.push_back({entries_[i].role, entries_[i].content, entries_[i].extraJson});
    return conversation;
}

bool ChatController::send(const QString& text) {
    if (!modelReady() || isGenerating() || pending_ || toolRound_ || text.trimmed().isEmpty()) return false;
    if (conversationId_ == 0) {
        auto created = store_->createConversation(title_from(text), model_.path, settingsJson());
        if (!created) return check(created.take_error());
        conversationId_ = *created;
        emit conversationChanged(conversationId_);
        emit conversationListChanged();
    } else {
        check(store_->setSettings(conversationId_, settingsJson()));
        check(store_->setModel(conversationId_, model_.path));  // the conversation goes on with this model
    }
    auto row = store_->addMessage(conversationId_, QStringLiteral("user"), text);
    if (!row) return check(row.take_error());
    ChatEntry user;
    user.role = QStringLiteral("user");
    user.content = text;
    user.rowId = *row;
    entries_.push_back(std::move(user));
    emit entryAdded(static_cast<int>(entries_.size()) - 1);
    toolRounds_ = 0;
    toolCapReached_ = false;
    return startAssistantReply();
}

bool ChatController::startAssistantReply() {
    // The reply row exists before the first token: a crash leaves it with complete = 0.
    auto reply = store_->addMessage(conversationId_, QStringLiteral("assistant"), QString(), false);
    if (!reply) return check(reply.take_error());
    ChatEntry assistant;
    assistant.role = QStringLiteral("assistant");
    assistant.rowId = *reply;
    assistant.modelPath = model_.path;
    assistant.replyFormat = reply_format_mark(setup_.replyFormat);
    entries_.push_back(std::move(assistant));
    emit entryAdded(static_cast<int>(entries_.size()) - 1);
    startReply(static_cast<int>(entries_.size()) - 1, 0);
    return true;
}

void ChatController::startReply(int entryIndex, int seedOffset, const QString& previous) {
    replyIndex_ = entryIndex;
    reply_ = StreamingReply{conversationId_, entries_[static_cast<size_t>(entryIndex)], previous, 0};
    persistTimer_.stop();
    replyStoreWrites_ = 0;
    emit generatingChanged(true);
    emit replyStarted();
    const Conversation conversation = history(static_cast<size_t>(entryIndex));
    GenerationSettings settings = requestSettings(seedOffset);
    // A required call is the first reply's to each message; the answer to the results is free.
    if (toolRounds_ == 0) settings.toolChoice = setup_.toolChoice;
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    if (onEndpoint_ && remote_) {
        RemoteWorker* remote = remote_->worker();
        const uint64_t stops = remote->stopRequests();
        QMetaObject::invokeMethod(remote, [remote, conversation, settings, stops] { remote->generate(conversation, settings, stops); });
        return;
    }
#endif
    EngineWorker* worker = worker_;
    // The stops seen so far travel with the request: a Stop pressed while it waits in the
    // worker's queue then cancels it when it starts.
    const uint64_t stops = worker_->stopRequests();
    QMetaObject::invokeMethod(worker, [worker, conversation, settings, stops] { worker->generate(conversation, settings, stops); });
}

bool ChatController::regenerate() {
    if (!modelReady() || isGenerating() || pending_ || toolRound_ || entries_.empty() ||
        entries_.back().role != QLatin1String("assistant"))
        return false;
    const int index = static_cast<int>(entries_.size()) - 1;
    ChatEntry& reply = entries_.back();
    const QString previous = reply.content;
    reply.content.clear();
    reply.stopped = false;
    reply.cutReason.clear();  // the new version is cut or not on its own
    reply.modelPath = model_.path;
    reply.replyFormat = reply_format_mark(setup_.replyFormat);
    if (!check(store_->updateMessage(reply.rowId, QString(), false))) return false;
    if (!reply.extraJson.isEmpty()) {
        // The calls belonged to the text being replaced; the new version makes its own.
        reply.extraJson.clear();
        reply.toolCalls.clear();
        check(store_->setExtra(reply.rowId, QString()));
    }
    // The rounds already answered for this message count: a reply after tool results is not the
    // message's first, so a required call is not forced on it again, and the cap goes on.
    toolRounds_ = 0;
    for (int i = index - 1; i >= 0 && entries_[static_cast<size_t>(i)].role != QLatin1String("user"); --i)
        if (!entries_[static_cast<size_t>(i)].toolCalls.empty()) ++toolRounds_;
    toolCapReached_ = false;
    emit entryChanged(index);
    // Each version samples with its own seed, so the alternatives differ.
    startReply(index, static_cast<int>(std::max<qsizetype>(1, reply.versions.size())), previous);
    return true;
}

bool ChatController::editAndResend(int index, const QString& text) {
    if (!modelReady() || isGenerating() || pending_ || toolRound_ || text.trimmed().isEmpty()) return false;
    if (index < 0 || index >= static_cast<int>(entries_.size()) ||
        entries_[static_cast<size_t>(index)].role != QLatin1String("user"))
        return false;
    if (!check(store_->deleteMessagesFrom(conversationId_, entries_[static_cast<size_t>(index)].rowId))) return false;
    entries_.resize(static_cast<size_t>(index));
    emit entriesRemoved(index);
    return send(text);
}

void ChatController::stop() {
    if (isGenerating()) stopWorker();
    else cancelToolRound();  // the calls waiting for a decision: none runs, no reply follows
}

QString ChatController::replyConversationTitle(int maxChars) const {
    if (auto info = store_->conversation(replyConversationId()))
        return QStringLiteral("“%1”").arg(plain_title(info->title, maxChars));
    return tr("another conversation");
}

void ChatController::mirrorReply() {
    if (replyIndex_ < 0 || replyIndex_ >= static_cast<int>(entries_.size())) return;
    entries_[static_cast<size_t>(replyIndex_)] = reply_->entry;
    emit entryChanged(replyIndex_);
}

bool ChatController::showVersion(int index, int version) {
    if (index < 0 || index >= static_cast<int>(entries_.size()) || (isGenerating() && index == replyIndex_)) return false;
    ChatEntry& e = entries_[static_cast<size_t>(index)];
    if (version < 0 || version >= e.versions.size() || version == e.version) return false;
    if (!check(store_->setVersions(e.rowId, e.versions, version))) return false;
    e.version = version;
    e.content = e.versions[version];
    emit entryChanged(index);
    remeasure();
    return true;
}

void ChatController::onPrompt(const RenderedPrompt& prompt) {
    if (!isGenerating()) return;
    sentPrompt_ = prompt;
    if (prompt.toolFormat != cflow::ToolCallFormat::None) {
        reply_->callReader.emplace(prompt.toolFormat);
        reply_->shownChars = 0;
    }
    // Said once per conversation, on the reply itself: a banner for every reply of every model
    // without tool calling would only take the transcript's room. Only when the user asked for
    // tools (a required call, or a setup of their own): the default calculator and clock on a
    // model that cannot call them are nothing the user needs to hear about.
    const bool toolsAskedFor =
        setup_.toolChoice.kind != cflow::ToolChoice::Kind::Auto || (toolsChosenSource_ && toolsChosenSource_());
    if (prompt.toolsUnsupported && toolsAskedFor && !toolsNotOfferedSaid_.contains(reply_->conversationId)) {
        toolsNotOfferedSaid_.insert(reply_->conversationId);
        reply_->entry.toolsNote =
            prompt.byServer ? tr("Tools are not sent to a server yet: the conversation's tools were not offered to it.")
                            : tr("This model's chat template cannot call tools: the conversation's tools were not offered to it.");
        mirrorReply();
    }

    reply_->contextUsed = prompt.promptTokens;
    if (replyIndex_ < 0) return;
    visiblePrompt_ = prompt;
    setContext(prompt.promptTokens);
    emit promptMeasured(prompt);
}

void ChatController::onTokens(const QString& text, int tokens, const TokenPieces& pieces) {
    if (!isGenerating()) return;
    ChatEntry& reply = reply_->entry;
    reply.content += text;
    // The newest token's KV position is what the context holds: counting the tokens alone ran
    // past the context once the engine shifted it (a 2000-token reply read 2037 / 512).
    if (!pieces.empty()) reply_->contextUsed = static_cast<int>(pieces.back().position) + 1;
    else reply_->contextUsed += tokens;
    holdBackCalls(text);
    reply_->unpersisted = true;
    if (!reply_->sincePersisted.isValid() || reply_->sincePersisted.elapsed() >= kPersistIntervalMs) persistReply();
    else if (!persistTimer_.isActive())
        persistTimer_.start(std::max<int>(0, kPersistIntervalMs - static_cast<int>(reply_->sincePersisted.elapsed())));
    emit replyProgress(tokens);
    if (replyIndex_ < 0 || replyIndex_ >= static_cast<int>(entries_.size())) return;
    entries_[static_cast<size_t>(replyIndex_)].content = reply.content;
    // A server's chunks are not its tokens: the gauge waits for the usage it reports at the end.
    if (!onEndpoint_) setContext(reply_->contextUsed);
    emit replyStreamed(replyIndex_, text, tokens, pieces);
}

void ChatController::persistReply() {
    check(store_->updateMessage(reply_->entry.rowId, reply_->entry.content, false));
    ++replyStoreWrites_;
    reply_->unpersisted = false;
    reply_->sincePersisted.start();
}

void ChatController::endReply(bool stopped, bool complete) {
    persistTimer_.stop();
    ++replyStoreWrites_;
    reply_->shownChars = -1;  // the whole text from now on (its calls, if any, are taken out already)
    ChatEntry& reply = reply_->entry;
    reply.stopped = stopped;
    reply.complete = complete;
    reply.versions.push_back(reply.content);
    reply.version = static_cast<int>(reply.versions.size()) - 1;
    check(store_->updateMessage(reply.rowId, reply.content, complete));
    check(store_->setVersions(reply.rowId, reply.versions, reply.version));
    check(store_->setReplyDetails(reply.rowId, reply.modelPath, stopped, reply.cutReason));
    if (!reply.extraJson.isEmpty()) check(store_->setExtra(reply.rowId, reply.extraJson));
    mirrorReply();
}

void ChatController::onFinished(const ReplyStats& stats) {
    if (!isGenerating()) return;
    // A stopped reply is not acted on: its calls (if any) stay as the text it wrote.
    const bool cut = !stats.cutReason.isEmpty();
    if (cut) reply_->entry.cutReason = stats.cutReason;
    const bool calls = !stats.cancelled && !cut && takeToolCalls(reply_->entry);
    // A reply cut by its server (gone, silent too long) keeps what came, marked as interrupted.
    endReply(stats.cancelled, !cut);
    lastReplyShown_ = replyIndex_ >= 0;
    const int index = replyIndex_;
    const ChatEntry finished = reply_->entry;
    const qint64 conversation = reply_->conversationId;
    reply_.reset();
    replyIndex_ = -1;
    emit generatingChanged(false);
    if (lastReplyShown_) setContext(stats.contextUsed);
    if (stats.remote) {
        serverCountConversation_ = conversation;
        serverCountTokens_ = stats.contextUsed;
    }
    emit replyFinished(stats);
    if (cut) emit replyFailed(tr("The reply was cut: %1. The text that came is kept.").arg(stats.cutReason));
    emit conversationListChanged();
    if (calls) beginToolRound(index, finished, conversation);
    if (pending_) runPending();
    else remeasure();
}

void ChatController::onError(const WorkerError& error) {
    const QString& message = error.message;
    if (!isGenerating()) {
        lastReplyShown_ = true;  // not a reply's error: the shown conversation's
        emit replyFailed(message);
        return;
    }
    ChatEntry& reply = reply_->entry;
    if (!reply.content.isEmpty()) {
        endReply(false);
    } else if (!reply.versions.isEmpty()) {
        // A regenerate that produced nothing: the version shown before comes back.
        reply.content = reply_->previous;
        reply.complete = true;
        reply_->shownChars = -1;
        check(store_->updateMessage(reply.rowId, reply.content, true));
        mirrorReply();
    } else {
        // Nothing was generated: the empty reply row would only clutter the history.
        check(store_->deleteMessagesFrom(reply_->conversationId, reply.rowId));
        if (replyIndex_ >= 0 && replyIndex_ < static_cast<int>(entries_.size())) {
            entries_.resize(static_cast<size_t>(replyIndex_));
            emit entriesRemoved(replyIndex_);
        }
    }
    lastReplyShown_ = replyIndex_ >= 0;
    reply_.reset();
    replyIndex_ = -1;
    emit generatingChanged(false);
    emit replyFailed(message);
    if (pending_) runPending();
    else remeasure();
}

// --- setup and context ---------------------------------------------------------------------

template <class T>
void ChatController::changeSetup(T ConversationSetup::*field, const T& value) {
    if (setup_.*field == value) return;
    setup_.*field = value;
    saveSetup();
    emit setupChanged();
    remeasure();
}

void ChatController::setSystemPrompt(const QString& text) { changeSetup(&ConversationSetup::systemPrompt, text); }
void ChatController::setMode(PromptMode mode) { changeSetup(&ConversationSetup::mode, mode); }
void ChatController::setTemplateChoice(const TemplateChoice& choice) { changeSetup(&ConversationSetup::templateChoice, choice); }
void ChatController::setContextPolicy(ContextPolicy policy) { changeSetup(&ConversationSetup::contextPolicy, policy); }
void ChatController::setThinking(std::optional<bool> thinking) { changeSetup(&ConversationSetup::thinking, thinking); }

Status ChatController::setReplyFormat(const ReplyFormat& format) {
    if (format == setup_.replyFormat && replyFormatError_.isEmpty()) return {};
    auto grammar = reply_format_grammar(format);
    if (!grammar) return grammar.take_error();
    replyGrammar_ = std::move(grammar.value());
    replyFormatError_.clear();
    setup_.replyFormat = format;
    saveSetup();
    emit setupChanged();
    return {};
}

void ChatController::setContext(int used) {
    contextUsed_ = used;
    emit contextChanged(used, model_.contextLength);
}

void ChatController::remeasure() {
    ++measureSerial_;  // what is in flight is stale from now on
    measureTimer_.start();
}

void ChatController::measureNow() {
    const quint64 serial = ++measureSerial_;
    if (isGenerating() && replyIndex_ >= 0) return;  // the streaming reply's prompt is what the views show
    if (onEndpoint_) {
        // The server renders and counts the prompt: nothing to measure here. The gauge keeps the
        // last reply's usage, as the server counted it.
        visiblePrompt_ = RenderedPrompt{};
        visiblePrompt_.byServer = true;
        setContext(serverCountConversation_ == conversationId_ && !entries_.empty() ? serverCountTokens_ : 0);
        emit promptMeasured(visiblePrompt_);
        return;
    }
    if (isGenerating()) {
        // The engine answers once the reply elsewhere ends; until then the gauge says so instead of
        // showing the other conversation's figure.
        contextUsed_ = -1;
        emit contextChanged(-1, model_.contextLength);
    }
    if (!model_.model || (entries_.empty() && (setup_.systemPrompt.trimmed().isEmpty() || setup_.mode != PromptMode::Chat))) {
        visiblePrompt_ = RenderedPrompt{};
        visiblePrompt_.contextLength = model_.contextLength;
        setContext(0);
        emit promptMeasured(visiblePrompt_);
        return;
    }
    const Conversation conversation = history(entries_.size());
    const GenerationSettings settings = requestSettings(0);
    EngineWorker* worker = worker_;
    QMetaObject::invokeMethod(worker, [worker, serial, conversation, settings] { worker->measure(serial, conversation, settings); });
}

void ChatController::onMeasured(quint64 serial, const RenderedPrompt& prompt) {
    if (serial != measureSerial_ || (isGenerating() && replyIndex_ >= 0)) return;  // stale, or the reply's prompt is shown
    visiblePrompt_ = prompt;
    setContext(prompt.promptTokens);
    emit promptMeasured(prompt);
}

} // namespace cflow::ui
