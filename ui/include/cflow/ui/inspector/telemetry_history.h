#pragma once
// The inspector's record of a session's telemetry, fed with the tokens drained from the
// TelemetryRing: every token of the session (for export, up to a cap) and a sliding window
// of the most recent ones that the panels chart. Lives on the GUI thread; no Qt.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "cflow/engine/forward/telemetry.h"

namespace cflow {
class Model;
}

namespace cflow::ui {

// What the panels need to know about the loaded model (or, without one, what the records show).
struct InspectorGeometry {
    uint32_t layers = 0;       // effective layers (FixedPoint: blocks * iterations)
    uint32_t experts = 0;      // 0 = dense
    uint32_t topK = 0;
    uint32_t denseDelay = 0;
    uint32_t expertDelay = 0;
    std::string modelName;
    bool fromModel = false;    // false: inferred from the records

    bool dense() const { return experts == 0; }
    bool delayed() const { return denseDelay > 0 || expertDelay > 0; }
};

InspectorGeometry geometry_of(const Model& model);

// Decode steps of one expert-fetch arm (TokenTelemetry::expertFetch) over the whole session:
// what the stall view compares when the user switches arms mid-conversation. Prefill chunks
// are left out (one record covers many tokens: its time is no token's).
struct ArmTotals {
    uint64_t tokens = 0;
    double computeUs = 0;    // layer compute, expert wait excluded
    double stallUs = 0;      // waiting for expert reads
    double totalUs = 0;      // the whole steps (LM head included)
    uint64_t cacheHits = 0;  // routed experts served from the expert cache
    uint64_t cacheMisses = 0;
    double msPerToken() const { return tokens ? totalUs / 1000.0 / double(tokens) : 0; }
    double computeMsPerToken() const { return tokens ? computeUs / 1000.0 / double(tokens) : 0; }
    double stallMsPerToken() const { return tokens ? stallUs / 1000.0 / double(tokens) : 0; }
    double hitRate() const { return cacheHits + cacheMisses ? double(cacheHits) / double(cacheHits + cacheMisses) : 0; }
};
inline constexpr size_t kExpertFetchArms = 3;  // ExpertFetch: 0 mapped, 1 staged, 2 sync

class TelemetryHistory {
public:
    static constexpr size_t kDefaultWindowTokens = 64;
    static constexpr size_t kDefaultMaxSessionTokens = 200000;  // about 1 KB per token at 6 layers

    explicit TelemetryHistory(size_t windowTokens = kDefaultWindowTokens,
                              size_t maxSessionTokens = kDefaultMaxSessionTokens);

    void append(TokenTelemetry token);
    void clear();

    const std::deque<TokenTelemetry>& window() const { return window_; }    // oldest first
    const std::vector<TokenTelemetry>& session() const { return session_; }  // oldest first
    size_t windowTokens() const { return windowTokens_; }
    uint64_t sessionTokensNotKept() const { return notKept_; }  // beyond maxSessionTokens
    // Largest layer index + 1 and expert id + 1 seen in any record (geometry without a model).
    uint32_t observedLayers() const { return observedLayers_; }
    uint32_t observedExperts() const { return observedExperts_; }
    // [ExpertFetch] decode-step totals of this session (kept past maxSessionTokens too).
    const ArmTotals& armTotals(size_t arm) const { return arms_[arm < kExpertFetchArms ? arm : 0]; }
    // Bumped by every change, so the panels redraw only when there is something new.
    uint64_t revision() const { return revision_; }

private:
    size_t windowTokens_;
    size_t maxSessionTokens_;
    std::deque<TokenTelemetry> window_;
    std::vector<TokenTelemetry> session_;
    uint64_t notKept_ = 0;
    ArmTotals arms_[kExpertFetchArms];
    uint32_t observedLayers_ = 0;
    uint32_t observedExperts_ = 0;
    uint64_t revision_ = 0;
};

// Per-layer averages over the window, for the bandwidth chart.
struct LayerBandwidth {
    double bytesPerToken[size_t(Stream::Count_)] = {};  // mean bytes read per token, by stream
    double achievedBytesPerSecond = 0;                  // all streams / (compute + expert wait)
};
struct BandwidthSummary {
    std::vector<LayerBandwidth> layers;  // [geometry layers]
    double vocabBytesPerToken = 0;       // embedding row + LM head, outside the layers
    double tokenBytesPerSecond = 0;      // all bytes of a token / its total time
    size_t tokens = 0;                   // tokens averaged
};
BandwidthSummary summarize_bandwidth(const TelemetryHistory& history, uint32_t layers);

// Selection counts over the window: counts[layer * experts + expert].
struct RoutingCounts {
    uint32_t layers = 0;
    uint32_t experts = 0;
    uint32_t tokens = 0;            // tokens in the window that had MoE records
    std::vector<uint32_t> counts;   // [layers x experts]
    uint32_t at(uint32_t layer, uint32_t expert) const { return counts[size_t(layer) * experts + expert]; }
    uint32_t maxCount() const;
};
RoutingCounts count_routing(const TelemetryHistory& history, uint32_t layers, uint32_t experts);

// Compute vs expert wait summed over one token's layers.
struct TokenStall {
    uint32_t position = 0;
    double computeUs = 0;
    double expertWaitUs = 0;
    uint32_t grammarAllowedTokens = 0;  // a grammar masked the sampling: tokens it allowed of
    uint32_t grammarVocabTokens = 0;    // this many (0 / 0: no grammar)
};
std::vector<TokenStall> token_stalls(const TelemetryHistory& history, size_t lastTokens);

} // namespace cflow::ui
