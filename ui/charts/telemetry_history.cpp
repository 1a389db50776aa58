#include "cflow/ui/inspector/telemetry_history.h"

#include <algorithm>

#include "cflow/engine/forward/model.h"

namespace cflow::ui {

InspectorGeometry geometry_of(const Model& model) {
    InspectorGeometry g;
    const GlobalHeader& h = model.header();
    g.layers = model.effective_layers();
    g.experts = h.n_experts;
    g.topK = h.top_k;
    g.denseDelay = h.dense_delay;
    g.expertDelay = h.expert_delay;
    g.modelName = model.name();
    g.fromModel = true;
    return g;
}

TelemetryHistory::TelemetryHistory(size_t windowTokens, size_t maxSessionTokens)
    : windowTokens_(std::max<size_t>(1, windowTokens)), maxSessionTokens_(maxSessionTokens) {}

void TelemetryHistory::append(TokenTelemetry token) {
    for (const LayerRecord& r : token.layers) {
        observedLayers_ = std::max<uint32_t>(observedLayers_, uint32_t(r.layer) + 1);
        const uint32_t n = std::min<uint32_t>(r.nSelected, kMaxTopK);
        for (uint32_t i = 0; i < n; ++i) observedExperts_ = std::max<uint32_t>(observedExperts_, uint32_t(r.experts[i]) + 1);
    }
    if (token.tokens == 1 && token.expertFetch < kExpertFetchArms) {
        ArmTotals& arm = arms_[token.expertFetch];
        ++arm.tokens;
        for (const LayerRecord& r : token.layers) {
            arm.computeUs += std::max(0.0f, r.computeUs);
            arm.stallUs += std::max(0.0f, r.expertWaitUs);
        }
        arm.totalUs += std::max(0.0f, token.totalUs);
        arm.cacheHits += token.expertCacheHits;
        arm.cacheMisses += token.expertCacheMisses;
    }
    if (session_.size() < maxSessionTokens_) session_.push_back(token);
    else ++notKept_;
    window_.push_back(std::move(token));
    while (window_.size() > windowTokens_) window_.pop_front();
    ++revision_;
}

void TelemetryHistory::clear() {
    window_.clear();
    session_.clear();
    notKept_ = 0;
    for (ArmTotals& arm : arms_) arm = ArmTotals{};
    observedLayers_ = 0;
    observedExperts_ = 0;
    ++revision_;
}

BandwidthSummary summarize_bandwidth(const TelemetryHistory& history, uint32_t layers) {
    BandwidthSummary s;
    s.layers.resize(layers);
    std::vector<double> bytes(layers, 0.0), seconds(layers, 0.0);  // [layers] sums over the window
    double tokenBytes = 0, tokenSeconds = 0;
    for (const TokenTelemetry& t : history.window()) {
        ++s.tokens;
        s.vocabBytesPerToken += double(t.vocabBytes);
        tokenBytes += double(t.vocabBytes);
        tokenSeconds += double(t.totalUs) * 1e-6;
        for (const LayerRecord& r : t.layers) {
            tokenBytes += [&] { double b = 0; for (uint64_t v : r.bytesRead) b += double(v); return b; }();
            if (r.layer >= layers) continue;
            LayerBandwidth& lb = s.layers[r.layer];
            for (size_t k = 0; k < size_t(Stream::Count_); ++k) {
                lb.bytesPerToken[k] += double(r.bytesRead[k]);
                bytes[r.layer] += double(r.bytesRead[k]);
            }
            seconds[r.layer] += (double(r.computeUs) + double(r.expertWaitUs)) * 1e-6;
        }
    }
    if (s.tokens == 0) return s;
    const double n = double(s.tokens);
    s.vocabBytesPerToken /= n;
    s.tokenBytesPerSecond = tokenSeconds > 0 ? tokenBytes / tokenSeconds : 0;
    for (uint32_t l = 0; l < layers; ++l) {
        for (double& b : s.layers[l].bytesPerToken) b /= n;
        s.layers[l].achievedBytesPerSecond = seconds[l] > 0 ? bytes[l] / seconds[l] : 0;
    }
    return s;
}

uint32_t RoutingCounts::maxCount() const {
    return counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
}

RoutingCounts count_routing(const TelemetryHistory& history, uint32_t layers, uint32_t experts) {
    RoutingCounts c;
    c.layers = layers;
    c.experts = experts;
    c.counts.assign(size_t(layers) * experts, 0);
    for (const TokenTelemetry& t : history.window()) {
        bool routed = false;
        for (const LayerRecord& r : t.layers) {
            if (r.layer >= layers) continue;
            const uint32_t n = std::min<uint32_t>(r.nSelected, kMaxTopK);
            for (uint32_t i = 0; i < n; ++i) {
                if (r.experts[i] >= experts) continue;
                ++c.counts[size_t(r.layer) * experts + r.experts[i]];
                routed = true;
            }
        }
        if (routed) ++c.tokens;
    }
    return c;
}

std::vector<TokenStall> token_stalls(const TelemetryHistory& history, size_t lastTokens) {
    const auto& w = history.window();
    const size_t first = w.size() > lastTokens ? w.size() - lastTokens : 0;
    std::vector<TokenStall> out;
    out.reserve(w.size() - first);
    for (size_t i = first; i < w.size(); ++i) {
        TokenStall s;
        s.position = w[i].position;
        s.grammarAllowedTokens = w[i].grammarAllowedTokens;
        s.grammarVocabTokens = w[i].grammarVocabTokens;
        for (const LayerRecord& r : w[i].layers) {
            s.computeUs += r.computeUs;
            s.expertWaitUs += r.expertWaitUs;
        }
        out.push_back(s);
    }
    return out;
}

} // namespace cflow::ui
