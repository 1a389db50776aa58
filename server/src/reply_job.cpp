#include "reply_job.h"

#include "cflow/server/token_logprobs.h"

#include <random>
#include <span>
#include <utility>

namespace cflow::server {
namespace {

using ReplyClock = std::chrono::steady_clock;

double reply_ms_between(ReplyClock::time_point from, ReplyClock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}

uint64_t reply_random_seed() {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    return rng();
}

} // namespace

bool run_reply_job(ReplyJob& job, const ReplyJobHost& host, httplib::DataSink& sink) {
    ChatSession& chat = job.lease.chat();
    ReplyWriter& writer = *job.writer;
    const bool chat_turn = job.request.kind == GenerationRequest::Kind::Chat;
    const uint32_t context = chat.session().context_length();

    ReplyOptions reply;
    reply.sampling = job.request.sampling;
    reply.sampling.seed = job.request.seed.value_or(reply_random_seed());
    const uint32_t room = context > job.turn.ids.size() ? context - uint32_t(job.turn.ids.size()) : 0;
    reply.max_tokens = job.request.max_tokens ? *job.request.max_tokens : int32_t(room);
    reply.stop_sequences = job.request.stop;
    // A max_tokens past the room left: shift the context (drop-oldest / sliding-window) or stop.
    reply.context_policy = host.context_policy;
    reply.grammar = job.grammar;

    CancelToken cancel;
    bool client_gone = false;
    bool first_content = true;
    ReplyClock::time_point first_token_at{};
    const auto write = [&](const std::string& bytes) {
        if (client_gone || bytes.empty()) return;
        if (!sink.write(bytes.data(), bytes.size())) {
            client_gone = true;
            cancel.cancel();
        }
    };
    const unsigned slot = job.lease.index();
    reply.on_step = [&](const TokenTelemetry& step) {
        if (host.stopping && host.stopping->load()) cancel.cancel();
        else if (!client_gone && !sink.is_writable()) {
            client_gone = true;
            cancel.cancel();
        }
        if (host.observer && host.observer->on_step) host.observer->on_step(slot, step);
    };
    size_t text_bytes = 0;  // of the reply so far: the next token's legacy text_offset
    if (job.request.logprobs) {
        const Tokenizer& tokenizer = chat.model().tokenizer();
        const uint32_t top_n = job.request.top_logprobs;
        reply.on_sampled = [&writer, &tokenizer, &text_bytes, top_n](int32_t token, std::span<const float> logits) {
            TokenLogprob entry = token_logprob(tokenizer, token, logits, top_n);
            entry.text_offset = text_bytes;
            writer.token_logprob(std::move(entry));
        };
    }
    write(writer.start());
    const PieceCallback on_piece = [&](const ChatPiece& piece) {
        if (first_content && piece.token >= 0) {
            first_content = false;
            first_token_at = ReplyClock::now();
        }
        if (piece.text.empty()) return;
        text_bytes += piece.text.size();
        write(writer.piece(piece.text));
    };

    ChatTurnOutcome outcome;
    const Status status = chat.reply(job.turn, reply, on_piece, &cancel, outcome);
    job.lease.remember(chat_turn ? job.key + conversation_key({{"assistant", outcome.text, ""}}) : job.key + outcome.text);

    ServedRequest served;
    served.endpoint = job.endpoint;
    served.slot = slot;
    served.stream = writer.streams();
    served.prompt_tokens = uint32_t(job.turn.ids.size());
    served.reused_tokens = uint32_t(job.turn.reused_tokens);
    served.completion_tokens = uint32_t(outcome.tokens.size());
    served.decode_tokens_per_s = outcome.stats.decode_tokens_per_s();
    if (!first_content) served.time_to_first_token_ms = reply_ms_between(job.arrived, first_token_at);
    const Usage usage{served.prompt_tokens, served.completion_tokens};

    if (status.ok()) {
        ReplyEnding ending = writer.finish(outcome, usage);
        served.finish_reason = std::move(ending.finish_reason);
        served.outcome = "ok";
        write(ending.bytes);
    } else if (client_gone) {
        served.outcome = "client disconnected";
    } else {
        const bool stopped = status.kind() == ErrorKind::Cancelled;
        served.outcome = stopped ? "server stopped" : status.error();
        write(writer.failure(stopped ? server_busy("the server is shutting down")
                                     : server_error("generation failed: " + status.error())));
    }
    served.total_ms = reply_ms_between(job.arrived, ReplyClock::now());
    if (!client_gone) sink.done();
    if (host.report) host.report(served);
    return !client_gone;
}

} // namespace cflow::server
