// greedy_decode_steps: the one timed decode loop (timed_decode.h).
#include "cflow/engine/generation/timed_decode.h"

#include <chrono>

#include "cflow/engine/generation/sampler.h"

namespace cflow {

double DecodeTotals::bytesPerToken() const {
    if (tokens == 0) return 0;
    double all = 0;
    for (double b : bytesByStream) all += b;
    return all / tokens;
}

Status greedy_decode_steps(Session& session, int32_t& next, int count, DecodeTotals* totals,
                           const DecodeStepsOptions& options) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i) {
        if (options.cancel && options.cancel->is_cancelled()) return cancelled_error("decode");
        if (options.wrapAtContextEnd && session.position() + 1 >= session.context_length()) session.reset();
        auto logits = session.step(next);
        if (!logits) return logits.take_error();
        next = greedy_token(*logits);
        if (!totals) continue;
        const TokenTelemetry& t = session.telemetry();
        ++totals->tokens;
        totals->stepUs += t.totalUs;
        for (const LayerRecord& layer : t.layers) {
            totals->computeUs += layer.computeUs;
            totals->expertStallUs += layer.expertWaitUs;
        }
        for (size_t k = 0; k < size_t(Stream::Count_); ++k) totals->bytesByStream[k] += double(t.bytes(Stream(k)));
        totals->expertCacheHits += t.expertCacheHits;
        totals->expertCacheMisses += t.expertCacheMisses;
        totals->expertBytesFromDisk += double(t.expertBytesFromDisk);
        totals->expertBytesSaved += double(t.expertBytesSaved);
        totals->emitted.push_back(next);
    }
    if (totals) totals->seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    return {};
}

} // namespace cflow
