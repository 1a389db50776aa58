// Everything here except stop(), shutdown() and setTelemetrySink() runs on the worker
// thread; the GUI sees only queued signals.
#include "cflow/ui/engine_worker.h"

#include <algorithm>
#include <new>
#include <string_view>

#include <QElapsedTimer>
#include <QFileInfo>

#include <spdlog/spdlog.h>

#include "cflow/engine/generate.h"
#include "cflow/ui/prompt_renderer.h"

namespace cflow::ui {
namespace {

void register_metatypes() {
    qRegisterMetaType<Conversation>("cflow::ui::Conversation");
    qRegisterMetaType<GenerationSettings>("cflow::ui::GenerationSettings");
    qRegisterMetaType<RenderedPrompt>("cflow::ui::RenderedPrompt");
    qRegisterMetaType<ReplyStats>("cflow::ui::ReplyStats");
    qRegisterMetaType<ModelInfo>("cflow::ui::ModelInfo");
    qRegisterMetaType<TokenPieces>("cflow::ui::TokenPieces");
}

} // namespace

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) { register_metatypes(); }

EngineWorker::~EngineWorker() = default;

void EngineWorker::setTelemetrySink(TelemetrySink sink) {
    std::lock_guard lock(sinkMutex_);
    sink_ = std::move(sink);
}

int EngineWorker::stop() {
    cancel_.cancel();
    return tokensGenerated();
}

void EngineWorker::shutdown() {
    shutDown_.store(true);
    cancel_.cancel();
}

void EngineWorker::loadModel(const QString& path, unsigned threads) {
    if (shutDown_.load()) return;
    session_.reset();
    renderer_.reset();
    model_.reset();
    contextTokens_.clear();
    contextText_.clear();
    hasLast_ = false;
    auto loaded = Model::load(path.toStdString());
    if (!loaded) {
        spdlog::warn("engine: cannot load '{}': {}", path.toStdString(), loaded.error());
        emit loadFailed(path, QString::fromStdString(loaded.error()));
        return;
    }
    model_ = std::move(loaded).value();
    renderer_ = std::make_unique<PromptRenderer>(*model_);
    modelPath_ = path;
    if (!ensureSession(threads)) {
        model_.reset();
        renderer_.reset();
        return;
    }
    ModelInfo info;
    info.path = path;
    info.name = QString::fromStdString(model_->name());
    info.contextLength = static_cast<int>(session_->context_length());
    info.hasChatTemplate = !model_->chat_template().empty();
    info.fileBytes = model_->file().file_bytes();
    info.model = model_;
    spdlog::info("engine: loaded '{}' (context {} tokens, {} threads)", path.toStdString(), info.contextLength,
                 session_->threads());
    emit modelLoaded(info);
}

bool EngineWorker::ensureSession(unsigned threads) {
    if (session_ && (threads == 0 || session_->threads() == threads)) return true;
    session_.reset();
    contextTokens_.clear();
    contextText_.clear();
    SessionOptions options;
    options.threads = threads;
    auto created = Session::create(model_, options);
    if (!created) {
        emit loadFailed(modelPath_, QString::fromStdString(created.error()));
        return false;
    }
    session_ = std::move(created).value();
    return true;
}

void EngineWorker::generate(const Conversation& conversation, const GenerationSettings& settings) {
    if (shutDown_.load()) return;
    if (!model_) {
        emit error(tr("No model is loaded."));
        return;
    }
    lastConversation_ = conversation;
    lastSettings_ = settings;
    hasLast_ = true;
    run(renderer_->render(conversation), settings);
}

void EngineWorker::generatePrompt(const QString& promptText, const GenerationSettings& settings) {
    if (shutDown_.load()) return;
    if (!model_) {
        emit error(tr("No model is loaded."));
        return;
    }
    RenderedPrompt prompt;
    prompt.text = promptText;
    prompt.kind = TemplateKind::Fallback;
    prompt.templateNote = QStringLiteral("raw prompt: no chat template applied");
    run(std::move(prompt), settings);
}

void EngineWorker::regenerate() {
    if (shutDown_.load()) return;
    if (!hasLast_ || !model_) {
        emit error(tr("Nothing to regenerate yet."));
        return;
    }
    lastSettings_.sampling.seed += 1;
    run(renderer_->render(lastConversation_), lastSettings_);
}

void EngineWorker::run(RenderedPrompt prompt, const GenerationSettings& settings) {
    cancel_.cancelled.store(false);
    tokensGenerated_.store(0, std::memory_order_release);
    if (!ensureSession(settings.threads)) return;

    // KV reuse: when the new prompt text extends the text the cache holds (a follow-up turn
    // with a template that re-renders history identically), only the continuation is
    // tokenized and fed; otherwise the whole prompt is, into an emptied cache.
    std::vector<int32_t> ids;  // [prompt tokens] the whole prompt as the session will hold it
    bool reuse = false;
    try {
        if (!contextTokens_.empty() && !contextText_.isEmpty() && session_->position() == contextTokens_.size() &&
            prompt.text.size() > contextText_.size() && prompt.text.startsWith(contextText_)) {
            const std::vector<int32_t> rest = renderer_->tokenizeContinuation(prompt.text.mid(contextText_.size()));
            if (!rest.empty()) {
                ids = contextTokens_;
                ids.insert(ids.end(), rest.begin(), rest.end());
                reuse = true;
            }
        }
        if (!reuse) ids = renderer_->tokenize(prompt.text);
    } catch (const std::bad_alloc&) {
        emit error(tr("Out of memory while tokenizing the prompt."));
        return;
    }
    const auto contextLength = static_cast<size_t>(session_->context_length());
    prompt.promptTokens = static_cast<int>(ids.size());
    prompt.contextLength = static_cast<int>(contextLength);
    if (ids.empty()) {
        emit error(tr("The prompt is empty."));
        return;
    }
    if (ids.size() >= contextLength) {
        emit promptReady(prompt);
        emit error(tr("The context is full: the conversation needs %1 tokens and the model's context holds %2. "
                      "Start a new conversation or shorten the messages.")
                       .arg(ids.size())
                       .arg(contextLength));
        return;
    }
    if (!reuse) {
        session_->reset();
        contextTokens_.clear();
        contextText_.clear();
    }
    prompt.reusedTokens = static_cast<int>(contextTokens_.size());
    emit promptReady(prompt);

    GenerateRequest request;
    request.prompt.assign(ids.begin() + static_cast<std::ptrdiff_t>(contextTokens_.size()), ids.end());
    request.sampling = settings.sampling;
    request.max_tokens = std::max(1, settings.maxTokens);
    request.stop_at_end_of_generation = !settings.ignoreEos;
    if (!settings.ignoreEos) request.stop_tokens = renderer_->endOfTurnTokens();
    {
        std::lock_guard lock(sinkMutex_);
        request.on_step = sink_;
    }

    std::vector<int32_t> generated;  // [generated tokens] ids emitted this reply
    QString pending;                 // text not yet sent to the GUI
    int pendingTokens = 0;
    TokenPieces pendingPieces;       // [pending tokens (+ flushed tail)] who wrote which part of pending
    uint32_t lastPosition = 0;       // KV position of the newest generated token
    QElapsedTimer sinceEmit;
    sinceEmit.start();
    QString replyText;  // everything decoded this reply
    const size_t ids_size_before_reply = ids.size();
    const TokenCallback onToken = [&](int32_t token, std::string_view text) {
        const QString decoded = QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
        if (token >= 0) {
            generated.push_back(token);
            ++pendingTokens;
            tokensGenerated_.fetch_add(1, std::memory_order_acq_rel);
            // generate() steps the token right after this callback, at the session's current
            // position: the position its telemetry (and the inspector's column) will carry.
            lastPosition = session_->position();
            pendingPieces.push_back({lastPosition, static_cast<int32_t>(decoded.size())});
        } else if (!decoded.isEmpty() && !generated.empty()) {
            // The decoder's flushed tail: bytes of the last tokens that never completed a character.
            pendingPieces.push_back({lastPosition, static_cast<int32_t>(decoded.size())});
        }
        pending += decoded;
        replyText += decoded;
        if (sinceEmit.elapsed() >= kBatchIntervalMs && (!pending.isEmpty() || pendingTokens > 0)) {
            emit tokensReady(pending, pendingTokens, pendingPieces);
            pending.clear();
            pendingTokens = 0;
            pendingPieces.clear();
            sinceEmit.restart();
        }
        return true;
    };

    Result<GenerateStats> result = cflow::generate(*session_, request, onToken, &cancel_);
    if (!pending.isEmpty() || pendingTokens > 0) emit tokensReady(pending, pendingTokens, pendingPieces);
    if (!result) {
        // The cache state is unknown after a failed step: start from scratch next time.
        session_->reset();
        contextTokens_.clear();
        contextText_.clear();
        spdlog::warn("engine: generation failed: {}", result.error());
        emit error(QString::fromStdString(result.error()));
        return;
    }

    // The cache now holds the prompt and the generated tokens that were stepped.
    contextTokens_ = ids;
    contextTokens_.insert(contextTokens_.end(), generated.begin(), generated.end());
    contextTokens_.resize(std::min<size_t>(contextTokens_.size(), session_->position()));
    // Its text: exact only when every emitted token was stepped (not after a callback stop
    // or a full context); otherwise the next turn starts from an empty cache.
    if (contextTokens_.size() == ids_size_before_reply + generated.size())
        contextText_ = prompt.text + replyText;
    else
        contextText_.clear();  // no reuse next time

    const GenerateStats& s = *result;
    ReplyStats stats;
    stats.promptTokens = static_cast<int>(s.prompt_tokens);
    stats.generatedTokens = static_cast<int>(s.generated_tokens);
    stats.timeToFirstTokenMs = s.time_to_first_token_ms;
    stats.promptTokensPerS = s.prompt_tokens_per_s();
    stats.decodeTokensPerS = s.decode_tokens_per_s();
    const std::string_view reason = stop_reason_name(s.stop_reason);
    stats.stopReason = QString::fromLatin1(reason.data(), static_cast<qsizetype>(reason.size()));
    stats.contextUsed = static_cast<int>(session_->position());
    stats.contextLength = static_cast<int>(session_->context_length());
    stats.mappedBytes = model_->file().file().size();
    stats.residentBytes = model_->file().file().resident_bytes();
    emit finished(stats);
}

EngineThread::EngineThread() : worker_(new EngineWorker) {
    thread_.setObjectName(QStringLiteral("cflow-engine"));
    worker_->moveToThread(&thread_);
    QObject::connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    thread_.start();
}

EngineThread::~EngineThread() {
    worker_->shutdown();
    thread_.quit();
    thread_.wait();
}

} // namespace cflow::ui
