#include "cflow/ui/remote/compare_endpoint.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>
#include <unordered_map>
#include <utility>

#include "cflow/engine/generation/perplexity.h"
#include "cflow/engine/generation/sampler.h"
#include "cflow/engine/tokenizer/tokenizer.h"

namespace cflow::ui {
namespace {

using Clock = std::chrono::steady_clock;

void set_note(CompareRow& row, CompareMetric metric, std::string note) { row.notes[size_t(metric)] = std::move(note); }

// Each token's bytes -> the reference's ids with exactly those bytes (control tokens left out).
class VocabularyLookup {
public:
    explicit VocabularyLookup(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {
        for (size_t id = 0; id < tokenizer.vocab_size(); ++id)
            if (!tokenizer.is_control(int32_t(id))) ids_[tokenizer.token_bytes(int32_t(id))].push_back(int32_t(id));
    }
    // The one reference token spelling `bytes`; where several do (a byte token and a piece), the
    // one the reference's own tokenizer picks for them, else the lowest id. nullopt: none does.
    std::optional<int32_t> find(const std::string& bytes) const {
        const auto it = ids_.find(bytes);
        if (it == ids_.end()) return std::nullopt;
        if (it->second.size() > 1) {
            const std::vector<int32_t> encoded = tokenizer_.encode(bytes, false);
            if (encoded.size() == 1 && std::find(it->second.begin(), it->second.end(), encoded[0]) != it->second.end())
                return encoded[0];
        }
        return it->second.front();
    }

private:
    const Tokenizer& tokenizer_;
    std::unordered_map<std::string, std::vector<int32_t>> ids_;
};

std::string shown_token(const std::string& text) {
    std::string shown = text.size() > 24 ? text.substr(0, 24) + "..." : text;
    return "'" + shown + "'";
}

// KL(p || q) over the endpoint's top-k: p the reference's softmax and q the endpoint's
// probabilities, both renormalised over the same k tokens.
std::optional<double> truncated_kl(std::span<const float> reference_logits, const std::vector<std::pair<int32_t, double>>& top) {
    if (top.empty()) return std::nullopt;
    double max_ref = -std::numeric_limits<double>::infinity(), max_end = max_ref;
    for (const auto& [id, logprob] : top) {
        max_ref = std::max(max_ref, double(reference_logits[size_t(id)]));
        max_end = std::max(max_end, logprob);
    }
    double sum_ref = 0, sum_end = 0;
    for (const auto& [id, logprob] : top) {
        sum_ref += std::exp(double(reference_logits[size_t(id)]) - max_ref);
        sum_end += std::exp(logprob - max_end);
    }
    double kl = 0;
    for (const auto& [id, logprob] : top) {
        const double log_p = double(reference_logits[size_t(id)]) - max_ref - std::log(sum_ref);
        const double log_q = logprob - max_end - std::log(sum_end);
        kl += std::exp(log_p) * (log_p - log_q);
    }
    return std::max(0.0, kl);  // rounding can leave -1e-17 for equal distributions
}

} // namespace

EndpointAgreement teacher_force_endpoint_tokens(ChatSession& reference, const std::vector<remote::RemoteMessage>& prompt,
                                                const std::vector<remote::RemoteTokenLogprob>& tokens, const CancelToken* cancel) {
    EndpointAgreement result;
    if (tokens.empty()) {
        result.notMeasured = "the endpoint returned no tokens";
        return result;
    }
    const Tokenizer& tokenizer = reference.model().tokenizer();
    const VocabularyLookup lookup(tokenizer);
    std::vector<int32_t> ids;
    for (size_t k = 0; k < tokens.size(); ++k) {
        const auto id = lookup.find(tokens[k].chosen.bytes);
        if (!id) {
            result.notMeasured = "not measured: the endpoint's token " + std::to_string(k) + " " + shown_token(tokens[k].chosen.token) +
                                 " is not one token of the reference's vocabulary (the tokenizers differ)";
            return result;
        }
        ids.push_back(*id);
    }
    std::vector<ChatMessage> messages;
    for (const remote::RemoteMessage& m : prompt) messages.push_back({m.role, m.content, ""});
    reference.forget();  // fed below outside the chat's own bookkeeping, so forgotten again after
    auto turn = reference.prepare(messages);
    if (!turn) {
        result.notMeasured = "not measured: the reference cannot render the prompt: " + turn.error();
        return result;
    }
    Session& session = reference.session();
    const size_t room = session.context_length() > turn->ids.size() ? session.context_length() - turn->ids.size() : 0;
    const size_t positions = std::min(ids.size(), room);
    if (positions == 0) {
        result.notMeasured = "not measured: the prompt fills the reference's context";
        return result;
    }
    auto logits = session.prefill(turn->ids);
    AgreementStats stats;
    bool kl_everywhere = true;
    for (size_t k = 0; k < positions && logits; ++k) {
        if (cancel && cancel->is_cancelled()) {
            reference.forget();
            result.notMeasured = "cancelled";
            return result;
        }
        const std::span<const float> row = logits.value();
        ++stats.positions;
        if (greedy_token(row) == ids[k]) ++stats.top1Matches;
        std::vector<std::pair<int32_t, double>> top;
        for (const remote::RemoteLogprobCandidate& c : tokens[k].top) {
            const auto id = lookup.find(c.bytes);
            const bool seen = id && std::any_of(top.begin(), top.end(), [&](const auto& t) { return t.first == *id; });
            if (id && !seen) top.emplace_back(*id, c.logprob);
        }
        if (const auto kl = truncated_kl(row, top)) stats.totalKlNats += *kl;
        else kl_everywhere = false;
        if (k + 1 < positions) logits = session.step(ids[k]);
    }
    reference.forget();
    if (!logits) {
        result.notMeasured = "not measured: the reference failed: " + logits.error();
        return result;
    }
    result.stats = stats;
    result.klMeasured = kl_everywhere;
    return result;
}

Result<CompareRow> run_endpoint_entry(const EndpointCompareEntry& entry, std::shared_ptr<remote::HttpTransport> transport,
                                      const EndpointCompareInputs& inputs, const CancelToken* cancel) {
    CompareRow row;
    row.entry.label = entry.label;
    row.displayName = entry.label;
    row.modelName = entry.model;
    const CompareWorkloads& w = inputs.workloads;
    // What an endpoint cannot give, whatever it is.
    const std::string local_only = "local models only (the endpoint's weights are not read here)";
    if (w.streamBytes)
        for (CompareMetric m : {CompareMetric::BytesPerToken, CompareMetric::AttentionBytesPerToken, CompareMetric::DenseBytesPerToken,
                                CompareMetric::ExpertBytesPerToken, CompareMetric::RouterBytesPerToken, CompareMetric::VocabBytesPerToken})
            set_note(row, m, local_only);
    if (w.criticalPath) {
        set_note(row, CompareMetric::BNaiveMiB, local_only);
        set_note(row, CompareMetric::BCriticalMiB, local_only);
    }
    if (w.expertWait) set_note(row, CompareMetric::ExpertWaitShare, local_only);
    if (w.speed) set_note(row, CompareMetric::PrefillTokPerS, "inside the endpoint's first-token time (not reported apart)");
    if (w.perplexity) {
        const std::string why = inputs.scoredDocuments.empty() ? "no text to score" : "not measured";
        set_note(row, CompareMetric::Perplexity, why);
        set_note(row, CompareMetric::BitsPerByte, why);
    }

    remote::RemoteChatRequest request;
    request.model = entry.model;
    request.messages = inputs.prompt;
    request.sampling.temperature = 0;  // greedy: agreement compares argmaxes
    request.max_tokens = inputs.decodeTokens;
    request.logprobs = w.agreement;
    if (w.agreement) request.top_logprobs = inputs.topLogprobs;
    remote::RemoteClient client(entry.config, std::move(transport));
    const auto started = Clock::now();
    auto reply = client.stream_chat(request, {}, cancel);
    const double total_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    if (!reply && reply.kind() == ErrorKind::Cancelled) return cancelled_error(entry.label);
    if (reply && reply->cancelled) return cancelled_error(entry.label);
    if (!reply || !reply->complete) {
        row.failure = reply ? reply->incomplete_reason : reply.error();
        for (std::string& note : row.notes) note.clear();
        for (CompareMetric m : {CompareMetric::DecodeTokPerS, CompareMetric::TimeToFirstTokenMs, CompareMetric::Top1Agreement,
                                CompareMetric::MeanKlNats})
            set_note(row, m, "failed: " + row.failure);
        return row;
    }

    const int64_t completion_tokens = reply->usage ? reply->usage->completion_tokens
                                                   : reply->logprobs ? int64_t(reply->logprobs->size()) : -1;
    const bool generated = !(completion_tokens == 0 || (completion_tokens < 0 && reply->text.empty()));
    if (!generated) {
        // Nothing to time or compare (the model ended its turn at once): say so rather than "not reported".
        const std::string why = "the endpoint generated no tokens for this prompt";
        for (CompareMetric m : {CompareMetric::DecodeTokPerS, CompareMetric::TimeToFirstTokenMs, CompareMetric::Top1Agreement,
                                CompareMetric::MeanKlNats})
            set_note(row, m, why);
    }
    // The stream time after the first content; a request retried after a 429/503 counts its waits
    // in total_ms, so such a run reads slower than the stream was (first_token_ms is the last try's).
    if (w.speed && generated) {
        if (reply->first_token_ms >= 0) row.values[size_t(CompareMetric::TimeToFirstTokenMs)] = reply->first_token_ms;
        const int64_t tokens = reply->usage ? reply->usage->completion_tokens
                                            : reply->logprobs ? int64_t(reply->logprobs->size()) : 0;
        const double after_first_ms = total_ms - reply->first_token_ms;
        if (tokens > 1 && reply->first_token_ms >= 0 && after_first_ms > 0)
            row.values[size_t(CompareMetric::DecodeTokPerS)] = double(tokens - 1) * 1000.0 / after_first_ms;
        else
            set_note(row, CompareMetric::DecodeTokPerS, tokens <= 1 ? "the endpoint sent fewer than 2 tokens"
                                                                    : "the endpoint reported no token count");
    }
    if (w.perplexity && !inputs.scoredDocuments.empty()) {
        // vLLM's prompt_logprobs; the others (cflow serve, llama.cpp, OpenAI) answer without them.
        double nll = 0;
        uint64_t scored = 0, text_bytes = 0;
        std::string why;
        for (const std::string& document : inputs.scoredDocuments) {
            auto logprobs = client.score_prompt(entry.model, document, cancel);
            if (!logprobs && logprobs.kind() == ErrorKind::Cancelled) return cancelled_error(entry.label);
            if (!logprobs) {
                why = "failed: " + logprobs.error();
                break;
            }
            if (!*logprobs) {
                why = "the endpoint gives no log probabilities of a given text (only vLLM's prompt_logprobs does)";
                break;
            }
            for (double logprob : **logprobs) nll -= logprob;
            scored += (*logprobs)->size();
            text_bytes += document.size();
        }
        if (why.empty() && scored > 0) {
            row.values[size_t(CompareMetric::Perplexity)] = std::exp(nll / double(scored));
            row.values[size_t(CompareMetric::BitsPerByte)] = nll / std::numbers::ln2 / double(text_bytes);
            const std::string how = "through prompt_logprobs, per the endpoint's own " + std::to_string(scored) + " tokens";
            set_note(row, CompareMetric::Perplexity, how);
            set_note(row, CompareMetric::BitsPerByte, how);
        } else {
            if (why.empty()) why = "the endpoint scored no tokens";
            set_note(row, CompareMetric::Perplexity, why);
            set_note(row, CompareMetric::BitsPerByte, why);
        }
    }
    if (w.agreement && generated) {
        if (!reply->logprobs) {
            set_note(row, CompareMetric::Top1Agreement, std::string(kNotReportedByEndpoint));
            set_note(row, CompareMetric::MeanKlNats, std::string(kNotReportedByEndpoint));
        } else if (!inputs.reference) {
            set_note(row, CompareMetric::Top1Agreement, "no local reference entry to compare with");
            set_note(row, CompareMetric::MeanKlNats, "no local reference entry to compare with");
        } else {
            EndpointAgreement agreement = teacher_force_endpoint_tokens(*inputs.reference, inputs.prompt, *reply->logprobs, cancel);
            if (cancel && cancel->is_cancelled()) return cancelled_error(entry.label);
            if (!agreement.stats) {
                set_note(row, CompareMetric::Top1Agreement, agreement.notMeasured);
                set_note(row, CompareMetric::MeanKlNats, agreement.notMeasured);
            } else {
                row.values[size_t(CompareMetric::Top1Agreement)] = agreement.stats->top1Agreement();
                set_note(row, CompareMetric::Top1Agreement,
                         "over the endpoint's " + std::to_string(agreement.stats->positions) + " greedy tokens, teacher-forced");
                if (agreement.klMeasured) {
                    row.values[size_t(CompareMetric::MeanKlNats)] = agreement.stats->meanKlNats();
                    set_note(row, CompareMetric::MeanKlNats, "truncated: over the endpoint's top " +
                                                                 std::to_string(inputs.topLogprobs) + " tokens only, renormalised");
                } else {
                    set_note(row, CompareMetric::MeanKlNats, "the endpoint sent no top_logprobs");
                }
            }
        }
    }
    return row;
}

std::vector<remote::RemoteMessage> endpoint_compare_prompt() {
    // A request every chat model answers at some length (the scored text's first paragraph as a
    // user message made the bundled story model end its turn at once: nothing to compare).
    return {{"user", "Tell me a story about a cat."}};
}

Result<CompareReport> run_comparison_with_endpoints(const CompareRequest& local, const std::vector<EndpointCompareEntry>& endpoints,
                                                    const std::function<std::shared_ptr<remote::HttpTransport>()>& make_transport,
                                                    const CompareProgress& progress, const CancelToken* cancel) {
    const auto started = Clock::now();
    const size_t local_count = local.entries.size(), all = local_count + endpoints.size();
    // Progress: each entry, local or endpoint, one equal share.
    const double local_share = all ? double(local_count) / double(all) : 1.0;
    auto report = run_comparison(local, [&](const CompareProgressInfo& p) {
        if (!progress) return;
        CompareProgressInfo scaled = p;
        scaled.entries = all;
        scaled.fraction = p.fraction * local_share;
        progress(scaled);
    }, cancel);
    if (!report) return report;
    if (endpoints.empty()) return report;

    std::unique_ptr<ChatSession> reference;
    std::string reference_note;
    if (local.workloads.agreement && local.referenceEntry < local_count) {
        SessionOptions options;
        const CompareEntry& entry = local.entries[local.referenceEntry];
        options.threads = entry.threads;
        options.kv_cache = entry.kvCache;
        auto model = Model::load(entry.modelPath);
        if (!model) {
            reference_note = "not measured: the reference cannot be loaded again: " + model.error();
        } else if (auto session = Session::create(model.value(), options); !session) {
            reference_note = "not measured: the reference's session cannot be made: " + session.error();
        } else {
            reference = std::make_unique<ChatSession>(model.value(), std::move(session).value());
        }
    }
    EndpointCompareInputs inputs;
    if (local.workloads.perplexity) {
        // The same documents the local entries scored (their bytes are report->scoredTextBytes).
        std::vector<std::shared_ptr<const Model>> models;
        std::vector<const Tokenizer*> tokenizers;
        for (const CompareEntry& e : local.entries)
            if (auto m = Model::load(e.modelPath)) {
                models.push_back(m.value());
                tokenizers.push_back(&models.back()->tokenizer());
            }
        inputs.scoredDocuments = common_scored_documents(tokenizers, split_documents(local.text), local.maxScoredTokens);
    }
    inputs.prompt = endpoint_compare_prompt();
    inputs.decodeTokens = local.decodeTokens;
    inputs.workloads = local.workloads;
    inputs.reference = reference.get();
    for (size_t k = 0; k < endpoints.size(); ++k) {
        if (progress) progress(CompareProgressInfo{local_count + k, all, "endpoint", double(local_count + k) / double(all)});
        auto row = run_endpoint_entry(endpoints[k], make_transport(), inputs, cancel);
        if (!row) return row.take_error();
        if (!reference_note.empty() && !row->value(CompareMetric::Top1Agreement) && row->failure.empty()) {
            row->notes[size_t(CompareMetric::Top1Agreement)] = reference_note;
            row->notes[size_t(CompareMetric::MeanKlNats)] = reference_note;
        }
        report->rows.push_back(std::move(row).value());
    }
    if (progress) progress(CompareProgressInfo{all - 1, all, "done", 1.0});
    report->elapsedSeconds = std::chrono::duration<double>(Clock::now() - started).count();
    return report;
}

} // namespace cflow::ui
