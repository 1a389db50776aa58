#include "cflow/engine/compare/comparison.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <numbers>
#include <span>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/compare/agreement.h"
#include "cflow/engine/compare/speed_bench.h"
#include "cflow/engine/forward/critical_path.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/generation/perplexity.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/tokenizer/tokenizer.h"

namespace cflow {
namespace {

struct MetricInfo {
    std::string_view key;
    std::string_view label;
    bool higherIsBetter;
};

// Indexed by CompareMetric.
constexpr MetricInfo kMetrics[kCompareMetricCount] = {
    {"decode_tok_per_s", "Decode (tok/s)", true},
    {"prefill_tok_per_s", "Prefill (tok/s)", true},
    {"perplexity", "Perplexity", false},
    {"bits_per_byte", "Bits per byte", false},
    {"top1_agreement", "Top-1 agreement", true},
    {"mean_kl_nats", "Mean KL (nats)", false},
    {"bytes_per_token", "Bytes/token", false},
    {"attention_bytes_per_token", "Attention bytes/token", false},
    {"dense_bytes_per_token", "Dense bytes/token", false},
    {"expert_bytes_per_token", "Expert bytes/token", false},
    {"router_bytes_per_token", "Router bytes/token", false},
    {"vocab_bytes_per_token", "Vocab bytes/token", false},
    {"b_naive_mib", "B_naive (MiB/token)", false},
    {"b_critical_mib", "B_critical (MiB/token)", false},
    {"expert_wait_share", "Expert-wait share", false},
    {"time_to_first_token_ms", "First token (ms)", false},
};

// Stream order of the per-stream metrics (telemetry.h's Stream).
constexpr CompareMetric kStreamMetrics[size_t(Stream::Count_)] = {
    CompareMetric::AttentionBytesPerToken, CompareMetric::DenseBytesPerToken, CompareMetric::ExpertBytesPerToken,
    CompareMetric::RouterBytesPerToken, CompareMetric::VocabBytesPerToken};

void set(CompareRow& row, CompareMetric metric, double value) { row.values[size_t(metric)] = value; }

Error for_entry(const CompareRow& row, const Error& error) {
    if (error.kind == ErrorKind::Cancelled) return cancelled_error("comparison");
    return make_error(error.kind, row.displayName + ": " + error.message);
}

// Progress across entries x stages: each stage of each entry is one equal slice.
class ProgressTracker {
public:
    ProgressTracker(const CompareProgress& callback, size_t entries, size_t stagesPerEntry)
        : callback_(callback), entries_(entries), stages_(std::max<size_t>(1, stagesPerEntry)) {}
    void report(size_t entry, size_t stage, std::string_view name, double within = 0) const {
        if (!callback_) return;
        CompareProgressInfo info;
        info.entry = entry;
        info.entries = entries_;
        info.stage = std::string(name);
        info.fraction = std::min(1.0, (double(entry) + (double(stage) + within) / double(stages_)) / double(entries_));
        callback_(info);
    }

    // Loading comes before any measuring, so it stays at the start whichever entry loads.
    void loading(size_t entry) const {
        if (callback_) callback_(CompareProgressInfo{entry, entries_, "loading", 0.0});
    }

private:
    const CompareProgress& callback_;
    size_t entries_, stages_;
};

Status check_request(const CompareRequest& request) {
    const size_t n = request.entries.size();
    if (n < CompareRequest::kMinEntries || n > CompareRequest::kMaxEntries)
        return make_error("comparison: choose 1 to 8 models or configurations (got " + std::to_string(n) + ")");
    for (const CompareEntry& e : request.entries)
        if (e.modelPath.empty()) return make_error("comparison: an entry has no model file");
    const CompareWorkloads& w = request.workloads;
    if (!w.speed && !w.perplexity && !w.agreement && !w.streamBytes && !w.criticalPath && !w.expertWait)
        return make_error("comparison: choose at least one workload");
    if (w.agreement && request.referenceEntry >= n)
        return make_error("comparison: the reference entry " + std::to_string(request.referenceEntry) +
                          " is not one of the " + std::to_string(n) + " entries");
    if ((w.speed || w.streamBytes || w.expertWait) && (request.promptTokens < 1 || request.decodeTokens < 1))
        return make_error("comparison: the speed run needs at least one prompt and one decoded token");
    if ((w.perplexity || w.agreement) && request.contextTokens < 2)
        return make_error("comparison: the perplexity window must hold at least 2 tokens");
    return {};
}

// Whitespace, as split_documents trims it.
constexpr const char* kCompareSpace = " \t\r\n\f\v";

// The first `bytes` bytes of the documents, whole words only: documents whole while they fit, then
// the one that does not cut after its last word that ends at or before the budget.
std::vector<std::string> compare_documents_prefix(const std::vector<std::string>& documents, uint64_t bytes) {
    std::vector<std::string> prefix;
    uint64_t left = bytes;
    for (const std::string& doc : documents) {
        if (doc.size() <= left) {
            prefix.push_back(doc);
            left -= doc.size();
            continue;
        }
        // A whitespace at byte `left` ends a word of doc[0, left); with none, no word ends in it.
        const size_t space = doc.find_last_of(kCompareSpace, size_t(left));
        const size_t last = space == std::string::npos || space == 0 ? std::string::npos
                                                                     : doc.find_last_not_of(kCompareSpace, space - 1);
        if (last != std::string::npos) prefix.push_back(doc.substr(0, last + 1));
        break;
    }
    return prefix;
}

} // namespace

std::string_view compare_metric_key(CompareMetric metric) { return kMetrics[size_t(metric)].key; }
std::string_view compare_metric_label(CompareMetric metric) { return kMetrics[size_t(metric)].label; }
bool compare_metric_higher_is_better(CompareMetric metric) { return kMetrics[size_t(metric)].higherIsBetter; }
std::optional<CompareMetric> parse_compare_metric(std::string_view key) {
    for (size_t i = 0; i < kCompareMetricCount; ++i)
        if (kMetrics[i].key == key) return CompareMetric(i);
    return std::nullopt;
}

std::string compare_entry_display_name(const CompareEntry& entry) {
    if (!entry.label.empty()) return entry.label;
    std::string name = utf8_from_path(path_from_utf8(entry.modelPath).filename());
    name += " (" + std::string(expert_fetch_name(entry.expertFetch));
    if (entry.threads) name += ", " + std::to_string(entry.threads) + (entry.threads == 1 ? " thread" : " threads");
    if (entry.kvCache != KvCacheType::F32) name += ", " + std::string(kv_cache_type_name(entry.kvCache)) + " KV";
    return name + ")";
}

CompareMetric compare_quality_metric(const CompareReport& report) {
    return report.tokenizersDiffer ? CompareMetric::BitsPerByte : CompareMetric::Perplexity;
}

std::vector<size_t> rank_compare_rows(const CompareReport& report, CompareMetric metric) {
    std::vector<size_t> order;
    for (size_t i = 0; i < report.rows.size(); ++i)
        if (report.rows[i].value(metric)) order.push_back(i);
    const bool higher = compare_metric_higher_is_better(metric);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const double va = *report.rows[a].value(metric), vb = *report.rows[b].value(metric);
        return higher ? va > vb : va < vb;
    });
    return order;
}

std::vector<std::string> common_scored_documents(const std::vector<const Tokenizer*>& tokenizers,
                                                 const std::vector<std::string>& documents, uint64_t max_scored_tokens) {
    if (max_scored_tokens == 0) return documents;
    // Targets of the longest stream any tokenizer makes of these documents (ids[0] is no target).
    auto most_targets = [&](const std::vector<std::string>& docs) {
        uint64_t most = 0;
        for (const Tokenizer* tokenizer : tokenizers) {
            const size_t ids = tokenize_documents(*tokenizer, docs).size();
            most = std::max<uint64_t>(most, ids ? ids - 1 : 0);
        }
        return most;
    };
    if (most_targets(documents) <= max_scored_tokens) return documents;
    uint64_t total_bytes = 0;
    for (const std::string& d : documents) total_bytes += d.size();
    // The largest byte count whose prefix every tokenizer encodes in at most max_scored_tokens
    // targets: a doubling search from a few bytes a token, then bisection (a longer prefix never
    // encodes in fewer tokens).
    uint64_t fits = 0, too_long = total_bytes;
    for (uint64_t probe = std::min(total_bytes, max_scored_tokens * 2); probe < too_long; probe *= 2) {
        if (most_targets(compare_documents_prefix(documents, probe)) > max_scored_tokens) {
            too_long = probe;
            break;
        }
        fits = probe;
    }
    while (too_long - fits > 1) {
        const uint64_t mid = fits + (too_long - fits) / 2;
        if (most_targets(compare_documents_prefix(documents, mid)) <= max_scored_tokens) fits = mid;
        else too_long = mid;
    }
    std::vector<std::string> cut = compare_documents_prefix(documents, fits);
    const std::string& first = documents.front();
    if (cut.empty()) cut = compare_documents_prefix(documents, std::min(first.size(), first.find_first_of(kCompareSpace)));  // a word at least
    return cut;
}

Result<CompareReport> run_comparison(const CompareRequest& request, const CompareProgress& progress,
                                     const CancelToken* cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    if (Status s = check_request(request); !s) return s.take_error();
    const CompareWorkloads& w = request.workloads;
    const size_t n = request.entries.size();
    const bool decode = w.speed || w.streamBytes || w.expertWait;
    const bool scoring = w.perplexity || w.agreement;
    const size_t stages = size_t(decode) + size_t(w.perplexity) + size_t(w.agreement) + size_t(w.criticalPath);
    const ProgressTracker tracker(progress, n, stages);

    CompareReport report;
    report.textName = request.textName;
    report.isa = std::string(isa_name(selected_isa()));
    std::vector<std::shared_ptr<const Model>> models(n);
    for (size_t i = 0; i < n; ++i) {
        CompareRow row;
        row.entry = request.entries[i];
        row.displayName = compare_entry_display_name(row.entry);
        tracker.loading(i);
        auto model = Model::load(row.entry.modelPath);
        if (!model) return for_entry(row, model.take_error());
        models[i] = model.value();
        row.modelName = models[i]->name();
        report.rows.push_back(std::move(row));
    }
    if (cancel && cancel->is_cancelled()) return cancelled_error("comparison");

    const size_t ref = request.referenceEntry;
    if (w.agreement) {
        report.referenceName = report.rows[ref].displayName;
        for (size_t i = 0; i < n; ++i) {
            const std::string diff = tokenizer_difference(models[ref]->tokenizer(), models[i]->tokenizer());
            if (!diff.empty())
                return make_error("comparison: top-1 agreement and KL need one tokenizer, but " + report.rows[i].displayName +
                                  " and the reference " + report.referenceName + " differ: " + diff);
        }
    }
    // One token stream for every entry: tokenised by each model's own tokenizer for perplexity
    // (they may differ when agreement is off), by the reference's for agreement.
    std::vector<std::string> documents;
    if (scoring) {
        documents = split_documents(request.text);
        if (documents.empty()) return make_error("comparison: the text to score is empty");
    }
    std::vector<int32_t> reference_ids;
    if (w.agreement) reference_ids = tokenize_documents(models[ref]->tokenizer(), documents);
    if (scoring) report.textTokens = tokenize_documents(models[w.agreement ? ref : 0]->tokenizer(), documents).size();
    for (size_t i = 1; i < n; ++i)
        if (!tokenizer_difference(models[0]->tokenizer(), models[i]->tokenizer()).empty()) report.tokenizersDiffer = true;
    // Perplexity's text, one for every entry whatever its tokenizer, so that bits per byte divide
    // each entry's loss by the same bytes.
    std::vector<std::string> scored_documents;
    if (w.perplexity) {
        std::vector<const Tokenizer*> tokenizers;
        for (const auto& model : models) tokenizers.push_back(&model->tokenizer());
        scored_documents = common_scored_documents(tokenizers, documents, request.maxScoredTokens);
        for (const std::string& d : scored_documents) report.scoredTextBytes += d.size();
    }

    for (size_t i = 0; i < n; ++i) {
        CompareRow& row = report.rows[i];
        const CompareEntry& entry = row.entry;
        size_t stage = 0;
        if (decode) {
            tracker.report(i, stage, "speed");
            SpeedPlan plan;
            plan.threads = entry.threads;
            plan.promptTokens = request.promptTokens;
            plan.warmupTokens = request.warmupTokens;
            plan.decodeTokens = request.decodeTokens;
            plan.kvCache = entry.kvCache;
            plan.expertFetch = entry.expertFetch;
            auto speed = measure_speed(models[i], plan, cancel);
            if (!speed) return for_entry(row, speed.take_error());
            row.threads = speed->threads;
            if (w.speed) {
                set(row, CompareMetric::DecodeTokPerS, speed->decodeTokPerS);
                set(row, CompareMetric::PrefillTokPerS, speed->prefillTokPerS);
            }
            if (w.streamBytes) {
                set(row, CompareMetric::BytesPerToken, speed->decodeBytesPerToken);
                for (size_t k = 0; k < size_t(Stream::Count_); ++k)
                    set(row, kStreamMetrics[k], speed->decodeBytesPerTokenByStream[k]);
            }
            if (w.expertWait) set(row, CompareMetric::ExpertWaitShare, speed->expertWaitShare);
            ++stage;
        }
        SessionOptions options;
        options.threads = entry.threads;
        options.expert_fetch = entry.expertFetch;
        options.kv_cache = entry.kvCache;
        if (w.perplexity) {
            tracker.report(i, stage, "perplexity");
            const uint32_t trained = models[i]->header().max_seq_len;
            options.context_length = trained ? std::min(request.contextTokens, trained) : request.contextTokens;
            auto session = Session::create(models[i], options);
            if (!session) return for_entry(row, session.take_error());
            row.threads = (*session)->threads();
            const auto ids = tokenize_documents(models[i]->tokenizer(), scored_documents);
            PerplexityOptions po;  // every token of the common text: max_scored_tokens was applied by the cut
            auto stats = perplexity(**session, ids, po, [&](uint64_t done, uint64_t total) {
                tracker.report(i, stage, "perplexity", total ? double(done) / double(total) : 0);
                return true;
            }, cancel);
            if (!stats) return for_entry(row, stats.take_error());
            set(row, CompareMetric::Perplexity, stats->perplexity());
            // Over the common text's own bytes, the same for every entry, rather than stats->scored_bytes
            // (what the scored tokens decode to): a vocabulary that cannot spell a character (one
            // without "▁", say) spells it in byte tokens that decode to other bytes. A stream's first
            // token is never scored, so a vocabulary without BOS leaves out its first token's bytes.
            uint64_t text_bytes = report.scoredTextBytes;
            if (!ids.empty() && !models[i]->tokenizer().is_control(ids[0]))
                text_bytes -= std::min<uint64_t>(text_bytes, token_text_bytes(models[i]->tokenizer(), std::span(ids).first(1))[0]);
            if (text_bytes) set(row, CompareMetric::BitsPerByte, stats->total_nll / std::numbers::ln2 / double(text_bytes));
            ++stage;
        }
        if (w.agreement) {
            tracker.report(i, stage, "agreement");
            if (i == ref) {
                // The reference against itself: the same session configuration gives the same
                // logits, so agreement is exact by construction.
                set(row, CompareMetric::Top1Agreement, 1.0);
                set(row, CompareMetric::MeanKlNats, 0.0);
            } else {
                SessionOptions ref_options = options;
                const CompareEntry& ref_entry = report.rows[ref].entry;
                ref_options.threads = ref_entry.threads;
                ref_options.expert_fetch = ref_entry.expertFetch;
                ref_options.kv_cache = ref_entry.kvCache;
                uint32_t ctx = request.contextTokens;
                for (const auto* m : {&models[i], &models[ref]})
                    if ((*m)->header().max_seq_len) ctx = std::min(ctx, (*m)->header().max_seq_len);
                ref_options.context_length = options.context_length = ctx;
                auto ref_session = Session::create(models[ref], ref_options);
                if (!ref_session) return for_entry(report.rows[ref], ref_session.take_error());
                auto session = Session::create(models[i], options);
                if (!session) return for_entry(row, session.take_error());
                auto stats = compare_next_token_distributions(**ref_session, **session, reference_ids, request.maxScoredTokens,
                                                              [&](uint64_t done, uint64_t total) {
                                                                  if (done % 16 == 0 || done == total)
                                                                      tracker.report(i, stage, "agreement", double(done) / double(total));
                                                                  return true;
                                                              }, cancel);
                if (!stats) return for_entry(row, stats.take_error());
                set(row, CompareMetric::Top1Agreement, stats->top1Agreement());
                set(row, CompareMetric::MeanKlNats, stats->meanKlNats());
            }
            ++stage;
        }
        if (w.criticalPath) {
            tracker.report(i, stage, "critical path");
            auto path = analyze_file(models[i]->file());
            if (!path) return for_entry(row, path.take_error());
            const CriticalPathTotals& totals = path->has_actual ? path->actual_totals : path->ideal_totals;
            set(row, CompareMetric::BNaiveMiB, totals.b_naive_bytes / kBytesPerMiB);
            set(row, CompareMetric::BCriticalMiB, totals.b_critical_bytes / kBytesPerMiB);
            ++stage;
        }
        if (cancel && cancel->is_cancelled()) return cancelled_error("comparison");
    }
    if (progress) progress(CompareProgressInfo{n ? n - 1 : 0, n, "done", 1.0});
    report.elapsedSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

} // namespace cflow
