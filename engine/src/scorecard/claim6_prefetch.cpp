// Claim 6, explicit PREFETCHT0: decode speed of one session with the kernels' explicit
// prefetch hints on and off (set_explicit_prefetch), alternating token blocks so drift on a
// shared machine hits both arms alike.
#include <cstdio>

#include "cflow/engine/forward/model.h"
#include "scorecard/scorecard_internal.h"

namespace cflow {

namespace {
constexpr const char* kClaim6Title = "Explicit PREFETCHT0 prefetch";
constexpr double kPrefetchGainThreshold = 0.03;  // prefetch on must decode >= 3% faster than off
}

ClaimResult scorecard_claim6_prefetch(const std::string& dense_model, const ScorecardOptions& options) {
    using namespace scorecard;
    const int rounds = options.quick ? 3 : 8, block = options.quick ? 4 : 12;
    std::string method = "greedy decode on " + (dense_model.empty() ? std::string("(no model)") : dense_model) +
                         " (mapped, page-cache warm), " + std::to_string(rounds) + " rounds of " + std::to_string(block) +
                         " tokens per arm, arms alternating (on/off, then off/on); ratio = tok/s on / tok/s off per "
                         "round; proven if the median ratio >= 1.03 and every round > 1, refuted if every round < 1.03, "
                         "else inconclusive";
    if (dense_model.empty()) return not_measurable(6, kClaim6Title, method, "no model was given");
    auto model = Model::load(dense_model);
    if (!model) return not_measurable(6, kClaim6Title, method, model.error());
    auto session = Session::create(model.value(), SessionOptions{options.threads, uint32_t(2 * rounds * block + 16)});
    if (!session) return not_measurable(6, kClaim6Title, method, session.error());
    Session& s = **session;
    const std::string isa(isa_name(s.isa()));
    method += "; kernel " + isa + ", " + std::to_string(s.threads()) + " threads";
    if (!isa_issues_explicit_prefetch(s.isa()))
        return not_measurable(6, kClaim6Title, method,
                              "the kernel path here (" + isa + ") issues no explicit prefetch, so there is nothing to switch off");
    int32_t next = 1;
    if (Status st = greedy_decode_steps(s, next, 4, nullptr, kWrappingDecode); !st) return not_measurable(6, kClaim6Title, method, st.error());
    std::vector<double> ratios;
    DecodeTotals on_all, off_all;
    for (int round = 0; round < rounds; ++round) {
        DecodeTotals on, off;
        for (int arm = 0; arm < 2; ++arm) {
            const bool prefetch = (arm == 0) == (round % 2 == 0);
            set_explicit_prefetch(prefetch);
            Status st = greedy_decode_steps(s, next, block, prefetch ? &on : &off, kWrappingDecode);
            if (!st) {
                set_explicit_prefetch(true);
                return not_measurable(6, kClaim6Title, method, st.error());
            }
        }
        ratios.push_back((on.tokens / on.seconds) / (off.tokens / off.seconds));
        on_all.tokens += on.tokens;
        on_all.seconds += on.seconds;
        off_all.tokens += off.tokens;
        off_all.seconds += off.seconds;
    }
    set_explicit_prefetch(true);
    const AbVerdict ab = ab_verdict(ratios, kPrefetchGainThreshold, "prefetch on");
    ClaimResult r;
    r.claim = 6;
    r.title = kClaim6Title;
    r.method = method;
    r.measured = {{"decode_prefetch_on", on_all.tokens / on_all.seconds, "tok/s"},
                  {"decode_prefetch_off", off_all.tokens / off_all.seconds, "tok/s"},
                  {"median_ratio_on_over_off", ab.median, "x"},
                  {"min_round_ratio", ab.min, "x"},
                  {"max_round_ratio", ab.max, "x"},
                  {"model_bytes", double((*model)->file().file_bytes()), "bytes"}};
    r.verdict = ab.verdict;
    r.reason = ab.reason;
    return r;
}

} // namespace cflow
