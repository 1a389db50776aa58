// Everything here except stop(), shutdown() and setTelemetrySink() runs on the worker
// thread; the GUI sees only queued signals.
#include "cflow/ui/engine_worker.h"

#include <algorithm>
#include <new>
#include <string_view>

#include <QElapsedTimer>
#include <QFileInfo>

#include <spdlog/spdlog.h>

#include "cflow/engine/forward/load_policy.h"
#include "cflow/engine/io/expert_cache_budget.h"
#include "cflow/engine/io/io_backend.h"


namespace cflow::ui {
namespace {

void register_metatypes() {
    qRegisterMetaType<Conversation>("cflow::ui::Conversation");
    qRegisterMetaType<GenerationSettings>("cflow::ui::GenerationSettings");
    qRegisterMetaType<RenderedPrompt>("cflow::ui::RenderedPrompt");
    qRegisterMetaType<ReplyStats>("cflow::ui::ReplyStats");
    qRegisterMetaType<ModelInfo>("cflow::ui::ModelInfo");
    qRegisterMetaType<TokenPieces>("cflow::ui::TokenPieces");
    qRegisterMetaType<WorkerError>("cflow::ui::WorkerError");
}

} // namespace

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) { register_metatypes(); }

EngineWorker::~EngineWorker() = default;

void EngineWorker::setTelemetrySink(TelemetrySink sink) {
    std::lock_guard lock(sinkMutex_);
    sink_ = std::move(sink);
}

int EngineWorker::stop() {
    stopRequests_.fetch_add(1, std::memory_order_acq_rel);
    cancel_.cancel();
    return tokensGenerated();
}

void EngineWorker::shutdown() {
    shutDown_.store(true);
    cancel_.cancel();
}

void EngineWorker::setModelLoader(ModelLoader loader) {
    std::lock_guard lock(loaderMutex_);
    loader_ = std::move(loader);
}

void EngineWorker::loadModel(const QString& path, unsigned threads, uint64_t loadsAtPost) {
    if (shutDown_.load()) return;
    // A newer load was asked for while this one waited: its model would only be replaced (and
    // shown for a moment), so it is not read at all.
    if (loadsAtPost != kNoLoadCheck && loadRequests_.load(std::memory_order_acquire) != loadsAtPost) {
        spdlog::info("engine: skipped loading '{}': a newer model was asked for", path.toStdString());
        return;
    }
    if (path.isEmpty()) {
        emit loadFailed(path, WorkerError{ErrorKind::InvalidInput, tr("No model file given.")});
        return;
    }
    ModelLoader loader;
    {
        std::lock_guard lock(loaderMutex_);
        loader = loader_ ? loader_ : ModelLoader(&Model::load);
    }
    // The loaded model stays until the new one is ready: a file that fails to load costs nothing.
    // The same default as the CLI's --load auto. Experts count as mapped here: the session starts
    // with mapped experts, and a later switch to sync/staged keeps working from either layout.
    LoadChoice load = choose_load_options(path.toStdString(), false);  // QString::toStdString is UTF-8
    auto loaded = load_model(path.toStdString(), load, loader);
    if (!loaded) {
        spdlog::warn("engine: cannot load '{}': {}", path.toStdString(), loaded.error());
        emit loadFailed(path, worker_error(loaded.take_error()));
        return;
    }
    // The Model panel's rows and card come from this same open: the file is read once per load.
    ModelSummary summary;
    ModelCard card;
    try {
        summary = summarize_model((*loaded)->file());
        card = read_model_card((*loaded)->file(), path);
    } catch (const std::bad_alloc&) {
        // A hostile header can make the summary's containers huge; report instead of crashing the app.
        emit loadFailed(path, WorkerError{ErrorKind::OutOfMemory, path + QStringLiteral(": out of memory while opening the model")});
        return;
    }
    spdlog::info("engine: loaded '{}' as {} ({})", path.toStdString(), load.name, load.reason);
    auto previousModel = std::move(model_);
    auto previousChat = std::move(chat_);
    const QString previousPath = modelPath_;
    model_ = std::move(loaded).value();
    modelPath_ = path;
    // The session is built for the settings a send starts with (GenerationSettings' defaults), so
    // the first reply reuses it instead of rebuilding it for another KV cache type.
    const GenerationSettings defaults;
    if (!ensureSession(threads, defaults.kvCache, defaults.expertFetch, defaults.expertCacheMiB)) {
        model_ = std::move(previousModel);
        chat_ = std::move(previousChat);
        modelPath_ = previousPath;
        return;
    }
    ModelInfo info;
    info.path = path;
    info.name = QString::fromStdString(model_->name());
    info.contextLength = static_cast<int>(chat_->session().context_length());
    info.hasChatTemplate = chat_->has_model_template();
    info.templateNote = QString::fromStdString(chat_->template_note());
    info.fileBytes = model_->file().file_bytes();
    info.model = model_;
    info.summary = std::move(summary);
    info.card = std::move(card);
    spdlog::info("engine: loaded '{}' (context {} tokens, {} threads)", path.toStdString(), info.contextLength,
                 chat_->session().threads());
    emit modelLoaded(info);
}

bool EngineWorker::ensureSession(unsigned threads, KvCacheType kvCache, ExpertFetch expertFetch, int expertCacheMiB) {
    // Mapped has no cache of its own (the page cache is its cache): its size setting changes nothing.
    const int cacheMiB = expertFetch == ExpertFetch::Mapped || model_->header().n_experts == 0 ? 0 : expertCacheMiB;
    if (chat_ && (threads == 0 || chat_->session().threads() == threads) && chat_->session().kv_cache_type() == kvCache &&
        chat_->session().expert_fetch() == expertFetch && sessionCacheMiB_ == cacheMiB)
        return true;
    // A new session has an empty cache: the next turn is prefilled in full.
    const TemplateChoice choice = chat_ ? chat_->template_choice() : TemplateChoice{};
    chat_.reset();
    SessionOptions options;
    options.threads = threads;
    options.kv_cache = kvCache;
    options.expert_fetch = expertFetch;
    options.expert_cache_bytes = cacheMiB == kExpertCacheFit ? expert_cache_fit_bytes(*model_, query_system_memory())
                                                             : uint64_t(std::max(0, cacheMiB)) << 20;
    auto created = Session::create(model_, options);
    if (!created) {
        emit loadFailed(modelPath_, worker_error(created.take_error()));
        return false;
    }
    sessionsCreated_.fetch_add(1, std::memory_order_relaxed);
    chat_ = std::make_unique<ChatSession>(model_, std::move(created).value());
    sessionCacheMiB_ = cacheMiB;
    (void)chat_->set_template(choice);  // it compiled before; prepareTurn sets it again if not
    return true;
}

namespace {

std::vector<ChatMessage> to_messages(const Conversation& conversation) {
    std::vector<ChatMessage> messages;
    messages.reserve(conversation.size());
    for (const ChatTurn& turn : conversation)
        messages.push_back(ChatMessage{turn.role.toStdString(), turn.content.toStdString(), turn.extraJson.toStdString()});
    return messages;
}

} // namespace

Result<PreparedTurn> EngineWorker::prepareTurn(const Conversation& conversation, const GenerationSettings& settings) {
    if (!(chat_->template_choice() == settings.templateChoice))
        if (Status s = chat_->set_template(settings.templateChoice); !s) return s.take_error();
    if (chat_->thinking() != settings.thinking) chat_->set_thinking(settings.thinking);
    chat_->set_template_clock(settings.templateClock);
    PrepareOptions options;
    options.policy = settings.contextPolicy;
    options.reserve_tokens =
        static_cast<uint32_t>(resolved_max_tokens(settings, static_cast<int>(chat_->session().context_length())));
    if (settings.mode == PromptMode::Completion) {
        // The texts as one document, as `cflow generate` continues a prompt (no system prompt).
        std::string text;
        for (const ChatTurn& turn : conversation)
            if (turn.role != QLatin1String("system")) text += turn.content.toStdString();
        return chat_->prepare_raw(text, options);
    }
    // Only a template that can call tools gets them; the others render as before and the
    // prompt says the tools were left out (describe: toolsUnsupported).
    if (chat_->tool_call_format() != ToolCallFormat::None && settings.toolChoice.kind != ToolChoice::Kind::None)
        options.tools = settings.tools;
    return chat_->prepare(to_messages(conversation), options);
}

bool EngineWorker::offersTools(const GenerationSettings& settings) const {
    return settings.mode == PromptMode::Chat && !settings.tools.empty() && settings.toolChoice.kind != ToolChoice::Kind::None;
}

RenderedPrompt EngineWorker::describe(const PreparedTurn& turn, const GenerationSettings& settings) const {
    RenderedPrompt prompt;
    prompt.text = QString::fromStdString(turn.text);
    prompt.kind = turn.source == PromptSource::Fallback ? TemplateKind::Fallback : TemplateKind::Model;
    prompt.templateNote = QString::fromStdString(turn.note);
    prompt.promptTokens = static_cast<int>(turn.ids.size());
    prompt.reusedTokens = static_cast<int>(turn.reused_tokens);
    prompt.contextLength = static_cast<int>(turn.context_length);
    prompt.droppedMessages = static_cast<int>(turn.dropped_messages);
    prompt.droppedTokens = static_cast<int>(turn.dropped_tokens);
    prompt.systemIgnored = turn.system_ignored;
    prompt.completion = settings.mode == PromptMode::Completion;
    if (offersTools(settings)) {
        prompt.toolFormat = chat_->tool_call_format();
        prompt.toolsUnsupported = prompt.toolFormat == ToolCallFormat::None;
        prompt.toolsOffered = prompt.toolsUnsupported ? 0 : static_cast<int>(settings.tools.size());
    }
    return prompt;
}

void EngineWorker::generate(const Conversation& conversation, const GenerationSettings& settings, uint64_t stopsAtPost) {
    if (shutDown_.load()) return;
    if (!model_) {
        emit error(WorkerError{ErrorKind::InvalidInput, tr("No model is loaded.")});
        return;
    }
    if (!ensureSession(settings.threads, settings.kvCache, settings.expertFetch, settings.expertCacheMiB)) return;
    run(prepareTurn(conversation, settings), settings, stopsAtPost);
}

void EngineWorker::measure(quint64 serial, const Conversation& conversation, const GenerationSettings& settings) {
    if (shutDown_.load() || !model_ || !chat_) return;
    auto turn = prepareTurn(conversation, settings);
    RenderedPrompt prompt;
    if (turn) {
        prompt = describe(*turn, settings);
    } else {
        prompt.templateNote = QString::fromStdString(turn.error());
        prompt.contextLength = static_cast<int>(chat_->session().context_length());
    }
    emit measured(serial, prompt);
}

void EngineWorker::run(Result<PreparedTurn> prepared, const GenerationSettings& settings, uint64_t stopsAtPost) {
    cancel_.reset();
    // Stopped while still queued: the reply ends before its first token (reported as cancelled).
    if (stopsAtPost != kNoStopCheck && stopRequests_.load(std::memory_order_acquire) != stopsAtPost) cancel_.cancel();
    tokensGenerated_.store(0, std::memory_order_release);
    if (!prepared) {
        emit error(WorkerError{prepared.kind(), prepared.kind() == ErrorKind::OutOfMemory
                                                    ? tr("Out of memory while preparing the prompt.")
                                                    : QString::fromStdString(prepared.error())});
        return;
    }
    const PreparedTurn& turn = *prepared;
    emit promptReady(describe(turn, settings));
    if (!turn.fits()) {
        emit error(WorkerError{ErrorKind::ContextFull,
                               tr("The context is full: the conversation needs %1 tokens and the model's context "
                                  "holds %2. Start a new conversation or shorten the messages.")
                                   .arg(turn.ids.size())
                                   .arg(turn.context_length)});
        return;
    }

    ReplyOptions options;
    options.sampling = settings.sampling;
    options.max_tokens = resolved_max_tokens(settings, static_cast<int>(turn.context_length));
    options.ignore_end_of_turn = settings.ignoreEos;
    options.grammar = settings.grammar;  // the reply format: free text (null), a JSON object, a schema
    const ToolChoice::Kind choice = settings.toolChoice.kind;
    if ((choice == ToolChoice::Kind::Required || choice == ToolChoice::Kind::Named) && offersTools(settings) &&
        chat_->tool_call_format() != ToolCallFormat::None) {
        // A call is required: the reply is one (or more) calls in the template's own syntax. The
        // caps keep a small model's arguments closable (a string it never ends would never parse).
        JsonSchemaLimits limits;
        limits.max_string_chars = kToolArgumentMaxChars;
        limits.max_array_items = kToolArgumentMaxItems;
        auto grammar = tool_call_grammar(chat_->tool_call_format(), settings.tools, settings.toolChoice, limits);
        if (!grammar) {
            emit error(WorkerError{grammar.kind(), tr("The tools cannot be forced on this model: %1")
                                                       .arg(QString::fromStdString(grammar.error()))});
            return;
        }
        options.grammar = std::move(grammar.value());
    }
    options.context_policy = settings.contextPolicy;  // drop-oldest / sliding-window: a full context shifts, the reply goes on
    TelemetrySink sink;
    {
        std::lock_guard lock(sinkMutex_);
        sink = sink_;
    }
    // Prompt progress comes from the steps' telemetry: each prefill chunk records its tokens.
    const int promptToFeed = static_cast<int>(turn.ids.size() - std::min(turn.ids.size(), turn.reused_tokens));
    int promptFed = 0;
    bool promptDone = false;
    QElapsedTimer sinceProgress;
    sinceProgress.start();
    uint64_t cacheHits = 0, cacheMisses = 0;  // this reply's, for its stats line
    options.on_step = [&](const TokenTelemetry& t) {
        if (sink) sink(t);
        cacheHits += t.expertCacheHits;
        cacheMisses += t.expertCacheMisses;
        if (promptDone) return;
        promptFed = std::min(promptToFeed, promptFed + static_cast<int>(std::max<uint32_t>(1, t.tokens)));
        promptDone = promptFed >= promptToFeed;
        if (promptDone || sinceProgress.elapsed() >= kBatchIntervalMs) {
            emit promptProgress(promptFed, promptToFeed);
            sinceProgress.restart();
        }
    };

    QString pending;                 // text not yet sent to the GUI
    int pendingTokens = 0;
    TokenPieces pendingPieces;       // [pending tokens (+ flushed tail)] who wrote which part of pending
    uint32_t lastPosition = 0;       // KV position of the newest generated token
    bool anyToken = false;
    QElapsedTimer sinceEmit;
    sinceEmit.start();
    const PieceCallback onPiece = [&](const ChatPiece& piece) {
        const QString decoded = QString::fromUtf8(piece.text.data(), static_cast<qsizetype>(piece.text.size()));
        if (piece.token >= 0) {
            anyToken = true;
            ++pendingTokens;
            tokensGenerated_.fetch_add(1, std::memory_order_acq_rel);
            lastPosition = piece.position;
            pendingPieces.push_back({lastPosition, static_cast<int32_t>(decoded.size())});
        } else if (!decoded.isEmpty() && anyToken) {
            // The decoder's flushed tail: bytes of the last tokens that never completed a character.
            pendingPieces.push_back({lastPosition, static_cast<int32_t>(decoded.size())});
        }
        pending += decoded;
        if (sinceEmit.elapsed() >= kBatchIntervalMs && (!pending.isEmpty() || pendingTokens > 0)) {
            emit tokensReady(pending, pendingTokens, pendingPieces);
            pending.clear();
            pendingTokens = 0;
            pendingPieces.clear();
            sinceEmit.restart();
        }
    };

    ChatTurnOutcome outcome;
    const Status status = chat_->reply(turn, options, onPiece, &cancel_, outcome);
    if (!pending.isEmpty() || pendingTokens > 0) emit tokensReady(pending, pendingTokens, pendingPieces);
    const bool cancelled = !status && status.kind() == ErrorKind::Cancelled;
    if (!status && !cancelled) {
        spdlog::warn("engine: generation failed: {}", status.error());
        emit error(WorkerError{status.kind(), status.kind() == ErrorKind::OutOfMemory
                                                  ? tr("Out of memory while generating the reply.")
                                                  : QString::fromStdString(status.error())});
        return;
    }

    const GenerateStats& s = outcome.stats;
    ReplyStats stats;
    stats.promptTokens = static_cast<int>(s.prompt_tokens);
    stats.generatedTokens = static_cast<int>(s.generated_tokens);
    stats.timeToFirstTokenMs = s.time_to_first_token_ms;
    stats.promptTokensPerS = s.prompt_tokens_per_s();
    stats.decodeTokensPerS = s.decode_tokens_per_s();
    stats.stopReason = s.stop_reason;
    stats.cancelled = cancelled;
    stats.contextShifts = static_cast<int>(s.context_shifts);
    stats.shiftDroppedTokens = static_cast<int>(s.shift_dropped_tokens);
    stats.contextUsed = static_cast<int>(outcome.context_used);
    stats.contextLength = static_cast<int>(turn.context_length);
    const std::string_view kv = kv_cache_type_name(chat_->session().kv_cache_type());
    stats.kvCache = QString::fromLatin1(kv.data(), static_cast<qsizetype>(kv.size()));
    if (model_->header().n_experts > 0) {
        const std::string_view fetch = expert_fetch_name(chat_->session().expert_fetch());
        stats.expertFetch = QString::fromLatin1(fetch.data(), static_cast<qsizetype>(fetch.size()));
        if (const auto backend = chat_->session().io_backend()) {
            const std::string_view name = io_backend_name(*backend);
            stats.ioBackend = QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()));
        }
        stats.expertCacheBytes = chat_->session().expert_cache_bytes();
        stats.expertCacheHits = cacheHits;
        stats.expertCacheMisses = cacheMisses;
    }
    stats.mappedBytes = model_->file().file().size();
    stats.residentBytes = model_->file().file().resident_bytes();
    stats.lanesCopyBytes = model_->lanes_base() ? stats.mappedBytes : 0;  // the copy spans the whole file
    emit finished(stats);
}

} // namespace cflow::ui
