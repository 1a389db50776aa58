#pragma once
// Greedy decode steps timed the one way every speed figure is taken: `cflow bench` and the
// comparison's speed workload (compare/speed_bench.h), the paper scorecard's claims and `cflow bench
// experts`. Greedy, so every run and every arm decodes the same tokens and the figures compare.
#include <array>
#include <cstdint>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/forward/telemetry.h"

namespace cflow {

// What timed decode steps cost and read, summed over every call that was given these totals.
struct DecodeTotals {
    int tokens = 0;
    double seconds = 0;          // wall time of the timed calls (the argmax and this bookkeeping included)
    double stepUs = 0;           // TokenTelemetry::totalUs summed
    double computeUs = 0;        // LayerRecord::computeUs summed (expert waits excluded)
    double expertStallUs = 0;    // LayerRecord::expertWaitUs summed
    std::array<double, size_t(Stream::Count_)> bytesByStream{};  // weight bytes read, per stream
    uint64_t expertCacheHits = 0;    // routed experts served from the expert cache
    uint64_t expertCacheMisses = 0;  // ... and read from storage
    double expertBytesFromDisk = 0;  // TokenTelemetry::expertBytesFromDisk
    double expertBytesSaved = 0;     // TokenTelemetry::expertBytesSaved
    std::vector<int32_t> emitted;    // the greedy tokens, in order

    double bytes(Stream s) const { return bytesByStream[size_t(s)]; }
    double bytesPerToken() const;    // every stream, per timed token (0 before any)
};

struct DecodeStepsOptions {
    // Start again from an empty KV cache when the next step would not fit in the context (long
    // alternating runs of the scorecard); off: such a step fails as Session::step does.
    bool wrapAtContextEnd = false;
    const CancelToken* cancel = nullptr;  // checked before every step
};

// `count` greedy steps from `next`, which is updated to the token to feed next. With `totals`
// the steps are timed and added to it; without, they are a warm-up.
Status greedy_decode_steps(Session& session, int32_t& next, int count, DecodeTotals* totals,
                           const DecodeStepsOptions& options = {});

} // namespace cflow
