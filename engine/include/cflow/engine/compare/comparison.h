#pragma once
// The comparison behind Tools > Compare models…: 2-8 entries (models, or one model under several
// configurations) measured on the chosen workloads, one row of metrics per entry. Plain C++ for
// the GUI's worker thread (and any front end); never throws, reports progress, honours a
// CancelToken between tokens.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/engine/forward/session.h"

namespace cflow {

class Tokenizer;

// One column of the results. Keys are stable (saved runs, CSV headers); labels carry units.
enum class CompareMetric : uint8_t {
    DecodeTokPerS,
    PrefillTokPerS,
    Perplexity,              // per token: comparable only between entries of one tokenizer
    BitsPerByte,             // per UTF-8 byte of the scored text: comparable across tokenizers
    Top1Agreement,           // share of positions, 0..1
    MeanKlNats,              // KL(reference || entry)
    BytesPerToken,           // weight bytes read per decoded token, all streams
    AttentionBytesPerToken,
    DenseBytesPerToken,
    ExpertBytesPerToken,
    RouterBytesPerToken,
    VocabBytesPerToken,
    BNaiveMiB,               // critical-path bandwidth of the file (paper 4.5), MiB per token
    BCriticalMiB,
    ExpertWaitShare,         // 0..1 of decode time
    TimeToFirstTokenMs,      // an endpoint entry's first streamed token, as received (request to first content)
    Count_
};
inline constexpr size_t kCompareMetricCount = size_t(CompareMetric::Count_);
std::string_view compare_metric_key(CompareMetric metric);    // "decode_tok_per_s", ...
std::string_view compare_metric_label(CompareMetric metric);  // "Decode (tok/s)", ...
std::optional<CompareMetric> parse_compare_metric(std::string_view key);
bool compare_metric_higher_is_better(CompareMetric metric);

struct CompareEntry {
    std::string label;       // shown in the table; "" = the file name with the configuration
    std::string modelPath;   // .cflow or .vflow
    unsigned threads = 0;    // 0 = hardware concurrency
    ExpertFetch expertFetch = ExpertFetch::Mapped;
    KvCacheType kvCache = KvCacheType::F32;
};
// "name.cflow (staged, 2 threads)": what an entry without a label is called.
std::string compare_entry_display_name(const CompareEntry& entry);

struct CompareWorkloads {
    bool speed = true;        // prefill and decode tok/s
    bool perplexity = true;   // on CompareRequest::text
    bool agreement = false;   // top-1 agreement and mean KL against the reference entry
    bool streamBytes = true;  // bytes per decoded token, all streams and per stream
    bool criticalPath = true; // B_naive / B_critical of the file
    bool expertWait = true;   // share of decode time waiting for experts
};

struct CompareRequest {
    // One local entry is a comparison too: beside endpoint entries, measured outside the engine
    // (the desktop wizard's compare_endpoint.h) and merged into the report. The wizard still asks
    // for kMinEntriesInAll entries, local and endpoint together.
    static constexpr size_t kMinEntries = 1;
    static constexpr size_t kMinEntriesInAll = 2;
    static constexpr size_t kMaxEntries = 8;
    std::vector<CompareEntry> entries;
    CompareWorkloads workloads;
    int promptTokens = 64;           // speed: the timed prefill
    int warmupTokens = 4;
    int decodeTokens = 32;
    std::string text;                // perplexity and agreement: the text to score
    std::string textName;            // where it came from (a sample's name or a file path)
    uint32_t contextTokens = 128;    // perplexity window (capped by each model's context)
    uint64_t maxScoredTokens = 256;  // perplexity and agreement: tokens scored / positions compared
    size_t referenceEntry = 0;       // agreement: the entry the others are compared with
};

struct CompareRow {
    CompareEntry entry;
    std::string displayName;
    std::array<std::optional<double>, kCompareMetricCount> values{};  // nullopt: not measured
    std::string modelName;           // general.name of the file
    unsigned threads = 0;            // as resolved by the session
    // Why a value is absent where that is worth saying ("not reported by the endpoint"); "" else.
    std::array<std::string, kCompareMetricCount> notes{};
    // An entry that could not be measured (an endpoint that refused): the diagnosis; the other
    // entries still finish. "" when it ran.
    std::string failure;
    std::optional<double> value(CompareMetric m) const { return values[size_t(m)]; }
    const std::string& note(CompareMetric m) const { return notes[size_t(m)]; }
};

struct CompareReport {
    std::vector<CompareRow> rows;    // in the request's order
    std::string textName;
    uint64_t textTokens = 0;         // the scored text's token stream (reference tokenizer)
    // UTF-8 bytes of the text every entry scored for perplexity (the same text for all, see
    // run_comparison); 0 without perplexity or in a run saved before it was recorded.
    uint64_t scoredTextBytes = 0;
    // Some entry's tokenizer differs from the first entry's: perplexities are then per different
    // tokens and do not compare; compare_quality_metric() says BitsPerByte.
    bool tokenizersDiffer = false;
    std::string referenceName;       // agreement's reference (display name), "" without agreement
    std::string isa;                 // kernel path of the runs
    double elapsedSeconds = 0;
};

struct CompareProgressInfo {
    size_t entry = 0;                // index of the entry being measured
    size_t entries = 0;
    std::string stage;               // "loading", "speed", "perplexity", "agreement", "critical path"
    double fraction = 0;             // of the whole comparison, 0..1
};
using CompareProgress = std::function<void(const CompareProgressInfo&)>;

// The metric that ranks the entries' quality: bits per byte when their tokenizers differ (a
// 512-token vocabulary predicts smaller pieces and so scores a lower perplexity without being a
// better model), perplexity otherwise.
CompareMetric compare_quality_metric(const CompareReport& report);
// Indices of the rows that have metric, best first (ties in the rows' order).
std::vector<size_t> rank_compare_rows(const CompareReport& report, CompareMetric metric);

// The text every entry scores for perplexity, so that bits per byte divide by the same bytes: the
// documents whole when every tokenizer encodes them in at most max_scored_tokens targets, else their
// longest prefix that every tokenizer does, cut after a whole word (the last target is then the
// EOS after the cut). Tokenizers: one per entry. max_scored_tokens 0 = no cut.
std::vector<std::string> common_scored_documents(const std::vector<const Tokenizer*>& tokenizers,
                                                 const std::vector<std::string>& documents, uint64_t max_scored_tokens);

// Checks the request (1-8 entries, a reference in range, a text with at least 2 tokens when
// perplexity or agreement are chosen, one tokenizer across all entries for agreement), loads every
// model, then measures entry by entry. Perplexity and bits per byte: every entry scores all of
// common_scored_documents(the text's documents, request.maxScoredTokens) with its own tokenizer.
// Errors: InvalidInput for a bad request or a tokenizer
// mismatch (naming both entries), the engine's errors prefixed with the entry, Cancelled.
Result<CompareReport> run_comparison(const CompareRequest& request, const CompareProgress& progress = {},
                                     const CancelToken* cancel = nullptr);

} // namespace cflow
