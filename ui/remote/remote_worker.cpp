// Everything here except stop() and shutdown() runs on the remote worker's thread.
#include "cflow/ui/remote/remote_worker.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include <QElapsedTimer>
#include <QTimer>

#include <spdlog/spdlog.h>

#include "cflow/ui/remote/qt_network_transport.h"

namespace cflow::ui {

cflow::remote::RemoteChatRequest remote_chat_request(const EndpointProfile& profile, const Conversation& conversation,
                                                     const GenerationSettings& settings) {
    cflow::remote::RemoteChatRequest request;
    request.model = profile.model.toStdString();
    for (const ChatTurn& turn : conversation) {
        // A tool result or a call's markup means nothing to a server that was never offered the tools.
        if (turn.role != QLatin1String("system") && turn.role != QLatin1String("user") &&
            turn.role != QLatin1String("assistant"))
            continue;
        request.messages.push_back({turn.role.toStdString(), turn.content.toStdString()});
    }
    const SamplingParams& s = settings.sampling;
    request.sampling.temperature = std::max(0.0f, s.temperature);
    if (s.top_p < 1.0f) request.sampling.top_p = s.top_p;
    if (s.top_k > 0) request.sampling.top_k = s.top_k;
    if (s.min_p > 0.0f) request.sampling.min_p = s.min_p;
    if (s.repeat_penalty != 1.0f) request.sampling.repeat_penalty = s.repeat_penalty;
    request.sampling.seed = s.seed;
    // The server holds the reply to it (response_format), as the engine does with its grammar.
    if (settings.replyFormat.kind == ReplyFormatKind::JsonObject) {
        request.response_format = cflow::remote::RemoteResponseFormat{};
    } else if (settings.replyFormat.kind == ReplyFormatKind::JsonSchema) {
        cflow::remote::RemoteResponseFormat format;
        format.kind = cflow::remote::RemoteResponseFormat::Kind::JsonSchema;
        format.schema_json = settings.replyFormat.schema.toStdString();
        request.response_format = std::move(format);
    }
    // 0 resolves against the local model's context, which the server's model does not share.
    if (settings.maxTokens > 0) request.max_tokens = settings.maxTokens;
    request.stream = true;
    return request;
}

cflow::remote::EndpointConfig remote_endpoint_config(const EndpointProfile& profile, const QString& apiKey) {
    cflow::remote::EndpointConfig config;
    config.base_url = profile.baseUrl.toStdString();
    config.api_key = apiKey.toStdString();
    config.ca_file = profile.caFile.toStdString();
    config.read_timeout_ms = static_cast<uint32_t>(std::max(1, profile.readTimeoutS)) * 1000u;
    // The advice in error messages names the dialog's fields, not the CLI's flags.
    config.hints.api_key = "check the API key in Model > Connect to a server…";
    config.hints.ca_file = "choose the CA certificate that signed it as the endpoint's CA file";
    return config;
}

ReplyStats remote_reply_stats(const cflow::remote::RemoteReply& reply, std::vector<float> arrivalMs) {
    ReplyStats stats;
    stats.remote = true;
    stats.attempts = static_cast<int>(reply.attempts);
    stats.chunks = static_cast<int>(arrivalMs.size());
    stats.timeToFirstTokenMs = std::max(0.0, reply.first_token_ms);
    if (arrivalMs.size() >= 2 && arrivalMs.back() > arrivalMs.front())
        stats.receivedChunksPerS = double(arrivalMs.size() - 1) * 1000.0 / double(arrivalMs.back() - arrivalMs.front());
    stats.cancelled = reply.cancelled;
    if (!reply.complete && !reply.cancelled) stats.cutReason = QString::fromStdString(reply.incomplete_reason);
    stats.stopReason = reply.finish_reason == std::optional<std::string>("length") ? StopReason::MaxTokens
                                                                                   : StopReason::EndOfGeneration;
    if (reply.usage) {
        stats.usagePromptTokens = static_cast<int>(reply.usage->prompt_tokens);
        stats.usageCompletionTokens = static_cast<int>(reply.usage->completion_tokens);
        stats.promptTokens = stats.usagePromptTokens;
        stats.generatedTokens = stats.usageCompletionTokens;
        stats.contextUsed = stats.usagePromptTokens + stats.usageCompletionTokens;
    } else {
        stats.generatedTokens = stats.chunks;
    }
    if (reply.timings) {
        stats.hasServerTimings = true;
        stats.serverPromptTokens = static_cast<int>(reply.timings->prompt_n);
        stats.serverPromptMs = reply.timings->prompt_ms;
        stats.serverPredictedTokens = static_cast<int>(reply.timings->predicted_n);
        stats.serverPredictedMs = reply.timings->predicted_ms;
        stats.serverPredictedPerS = reply.timings->predicted_per_second;
        if (reply.timings->prompt_ms > 0)
            stats.promptTokensPerS = double(reply.timings->prompt_n) * 1000.0 / reply.timings->prompt_ms;
        stats.decodeTokensPerS = reply.timings->predicted_per_second;
    } else {
        stats.decodeTokensPerS = stats.receivedChunksPerS;
    }
    stats.chunkArrivalMs = std::move(arrivalMs);
    return stats;
}

RemoteWorker::RemoteWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<Conversation>("cflow::ui::Conversation");
    qRegisterMetaType<GenerationSettings>("cflow::ui::GenerationSettings");
    qRegisterMetaType<RenderedPrompt>("cflow::ui::RenderedPrompt");
    qRegisterMetaType<ReplyStats>("cflow::ui::ReplyStats");
    qRegisterMetaType<ModelInfo>("cflow::ui::ModelInfo");
    qRegisterMetaType<TokenPieces>("cflow::ui::TokenPieces");
    qRegisterMetaType<WorkerError>("cflow::ui::WorkerError");
    qRegisterMetaType<std::vector<float>>("std::vector<float>");
}

void RemoteWorker::stop() {
    stopRequests_.fetch_add(1, std::memory_order_acq_rel);
    cancel_.cancel();
}

void RemoteWorker::shutdown() {
    shutDown_.store(true);
    cancel_.cancel();
}

void RemoteWorker::configure(const EndpointProfile& profile, const QString& apiKey) {
    if (shutDown_.load()) return;
    profile_ = profile;
    apiKey_ = apiKey;
    configured_ = true;
    metricsAbsent_ = false;
    ModelInfo info;
    info.path = endpoint_identity(profile);
    info.name = endpoint_identity_label(info.path);
    info.contextLength = 0;        // the server's business; usage tells after each reply
    info.hasChatTemplate = true;   // the server renders the conversation with its own template
    emit modelLoaded(info);
}

void RemoteWorker::generate(const Conversation& conversation, const GenerationSettings& settings, uint64_t stopsAtPost) {
    if (shutDown_.load()) return;
    if (!configured_) {
        emit error(WorkerError{ErrorKind::InvalidInput, tr("No server is connected.")});
        return;
    }
    // Copies: configure() may run inside the stream below (see the header).
    const EndpointProfile profile = profile_;
    cancel_.reset();
    if (stopsAtPost != kNoStopCheck && stopRequests_.load(std::memory_order_acquire) != stopsAtPost) cancel_.cancel();

    const cflow::remote::RemoteChatRequest request = remote_chat_request(profile, conversation, settings);
    RenderedPrompt prompt;
    prompt.byServer = true;
    prompt.text = QString::fromStdString(cflow::remote::chat_request_json(request));
    prompt.toolsUnsupported = settings.mode == PromptMode::Chat && !settings.tools.empty();
    prompt.completion = settings.mode == PromptMode::Completion;
    emit promptReady(prompt);

    cflow::remote::RemoteClient client(remote_endpoint_config(profile, apiKey_), make_qt_network_transport(&cancel_));
    QString pending;
    int pendingChunks = 0;
    std::vector<float> arrivalMs;
    size_t arrivalsSent = 0;  // of arrivalMs, sent with chunksArrived so far
    QElapsedTimer sinceStart;
    sinceStart.start();
    QElapsedTimer sinceEmit;
    sinceEmit.start();
    const auto flush = [&] {
        if (pending.isEmpty()) return;
        // No pieces: a server's chunks have no KV positions here, so no token links to telemetry.
        emit tokensReady(pending, pendingChunks, TokenPieces{});
        if (arrivalsSent < arrivalMs.size()) {
            emit chunksArrived(std::vector<float>(arrivalMs.begin() + std::ptrdiff_t(arrivalsSent), arrivalMs.end()));
            arrivalsSent = arrivalMs.size();
        }
        pending.clear();
        pendingChunks = 0;
        sinceEmit.restart();
    };
    // The transport's event loop runs this thread's timers: a chunk followed by a pause reaches
    // the transcript within one batch interval, not with the next chunk.
    QTimer flushTimer;
    flushTimer.setInterval(kBatchIntervalMs);
    QObject::connect(&flushTimer, &QTimer::timeout, &flushTimer, flush);
    flushTimer.start();
    const cflow::remote::TokenCallback onText = [&](std::string_view text) {
        if (arrivalMs.size() < kMaxArrivals) arrivalMs.push_back(float(double(sinceStart.nsecsElapsed()) / 1e6));
        pending += QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
        ++pendingChunks;
        if (sinceEmit.elapsed() >= kBatchIntervalMs) flush();
    };
    auto reply = client.stream_chat(request, onText, &cancel_);
    flushTimer.stop();
    flush();
    if (!reply) {
        if (reply.kind() == ErrorKind::Cancelled) {
            // Stopped before any text: an empty stopped reply, as the engine reports one.
            ReplyStats stats;
            stats.remote = true;
            stats.cancelled = true;
            emit finished(stats);
            return;
        }
        spdlog::warn("remote: {}", reply.error());
        emit error(worker_error(reply.take_error()));
        return;
    }
    if (!reply->complete && !reply->cancelled) spdlog::warn("remote: reply cut: {}", reply->incomplete_reason);
    emit finished(remote_reply_stats(*reply, std::move(arrivalMs)));
    if (!reply->cancelled) reportServerMetrics(client);
}

// After finished(): the chat is free again while this thread asks (at most
// RemoteClient::kMetricsTimeoutMs); a next request waits behind it.
void RemoteWorker::reportServerMetrics(cflow::remote::RemoteClient& client) {
    if (metricsAbsent_ || shutDown_.load()) return;
    auto metrics = client.fetch_metrics(&cancel_);
    if (!metrics) {
        if (metrics.kind() == ErrorKind::Cancelled) return;
        metricsAbsent_ = true;  // one failure is reported; asking after every reply would only repeat it
        spdlog::info("remote: no server metrics: {}", metrics.error());
        emit serverMetrics(tr("Server metrics could not be read: %1").arg(QString::fromStdString(metrics.error())));
        return;
    }
    if (!*metrics) {
        metricsAbsent_ = true;
        emit serverMetrics(tr("The server reports no metrics on /metrics (vLLM does; llama.cpp's server with --metrics)."));
        return;
    }
    emit serverMetrics(QString::fromStdString(cflow::remote::server_metrics_text(**metrics)));
}

} // namespace cflow::ui
