// Moved here from `cflow bench` so the CLI and the comparison wizard time one recipe.
#include "cflow/engine/compare/speed_bench.h"

#include <chrono>
#include <vector>

#include "cflow/engine/generation/sampler.h"
#include "cflow/engine/generation/timed_decode.h"

namespace cflow {
namespace {

using Clock = std::chrono::steady_clock;

// A prompt of P ids that every run feeds the same way: a fixed walk through the vocabulary.
int32_t prompt_token(int i, int32_t vocab) { return int32_t((1000003ull * uint64_t(i + 1)) % uint64_t(vocab)); }

} // namespace

Result<SpeedMeasurement> measure_speed(const std::shared_ptr<const Model>& model, const SpeedPlan& plan,
                                       const CancelToken* cancel) {
    if (plan.promptTokens < 1 || plan.decodeTokens < 1 || plan.warmupTokens < 0)
        return make_error("speed: the prompt and the decode need at least one token each");
    const auto ctx = uint32_t(plan.promptTokens + plan.warmupTokens + plan.decodeTokens + 1);
    SessionOptions options{plan.threads, ctx};
    options.kv_cache = plan.kvCache;
    options.expert_fetch = plan.expertFetch;
    options.expert_cache_bytes = plan.expertCacheBytes;
    auto session = Session::create(model, options);
    if (!session) return session.take_error();
    Session& s = **session;
    const auto vocab = int32_t(model->header().vocab_size);
    SpeedMeasurement m;
    m.threads = s.threads();

    // Prefill: the prompt through Session::prefill (batched in chunks where the model allows),
    // logits only for the last token, as generate does. A first pass warms the caches and page
    // tables; the second is timed.
    std::vector<int32_t> prompt(size_t(plan.promptTokens));
    for (int i = 0; i < plan.promptTokens; ++i) prompt[size_t(i)] = prompt_token(i, vocab);
    std::span<const float> logits;
    for (int pass = 0; pass < 2; ++pass) {
        if (cancel && cancel->is_cancelled()) return cancelled_error("speed");
        s.reset();
        const auto t0 = Clock::now();
        auto r = s.prefill(prompt, true);
        if (!r) return r.take_error();
        logits = *r;
        const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        m.prefillTokPerS = plan.promptTokens / seconds;
    }

    int32_t token = greedy_token(logits);  // greedy: every run decodes the same sequence
    const DecodeStepsOptions steps{false, cancel};
    if (Status st = greedy_decode_steps(s, token, plan.warmupTokens, nullptr, steps); !st) return st.take_error();
    DecodeTotals decode;
    if (Status st = greedy_decode_steps(s, token, plan.decodeTokens, &decode, steps); !st) return st.take_error();
    m.decodeTokPerS = decode.tokens / decode.seconds;
    for (size_t k = 0; k < size_t(Stream::Count_); ++k) m.decodeBytesPerTokenByStream[k] = decode.bytesByStream[k] / decode.tokens;
    m.decodeBytesPerToken = decode.bytesPerToken();
    m.expertWaitShare = decode.stepUs > 0 ? decode.expertStallUs / decode.stepUs : 0;
    return m;
}

} // namespace cflow
