#pragma once
// Prefill and decode speed of one session configuration, with the weight bytes the engine read
// per decoded token per stream and the share of decode time spent waiting for experts: what
// `cflow bench` prints and what the comparison wizard puts side by side. Runs on the caller's
// thread; never throws.
#include <array>
#include <cstdint>
#include <memory>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/forward/telemetry.h"

namespace cflow {

struct SpeedPlan {
    unsigned threads = 0;           // 0 = hardware concurrency
    int promptTokens = 64;
    int warmupTokens = 8;
    int decodeTokens = 64;
    KvCacheType kvCache = KvCacheType::F32;
    ExpertFetch expertFetch = ExpertFetch::Mapped;
    uint64_t expertCacheBytes = 0;  // Staged / Sync only
};

struct SpeedMeasurement {
    double prefillTokPerS = 0;
    double decodeTokPerS = 0;
    double decodeBytesPerToken = 0;  // weight bytes the engine read per decoded token, all streams
    std::array<double, size_t(Stream::Count_)> decodeBytesPerTokenByStream{};
    // Time blocked on expert data over the whole step time of the decoded tokens (0 for mapped
    // experts and dense models: nothing is waited for there).
    double expertWaitShare = 0;
    unsigned threads = 0;            // as the session resolved them
};

// A prompt of promptTokens ids (a fixed walk through the vocabulary, so every run feeds the same)
// through Session::prefill twice, the second timed; then warmupTokens greedy steps and
// decodeTokens timed greedy steps. Cancellation is checked between tokens.
Result<SpeedMeasurement> measure_speed(const std::shared_ptr<const Model>& model, const SpeedPlan& plan,
                                       const CancelToken* cancel = nullptr);

} // namespace cflow
