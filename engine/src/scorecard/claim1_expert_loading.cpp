// Claim 1, conditional expert loading: decode on a MoE model with direct-I/O expert reads
// (ExpertFetch::Sync, no expert cache) and compare the bytes the process actually read per token
// (the OS's read counter) with what reading every expert of every MoE layer would cost.
#include <cmath>
#include <cstdio>

#include "cflow/engine/forward/model.h"
#include "scorecard/scorecard_internal.h"

namespace cflow {

namespace {
constexpr const char* kClaim1Title = "Conditional expert loading";
constexpr double kTolerance = 0.10;  // |measured/bank - k/E| <= 10% of k/E: proven
}

ClaimResult scorecard_claim1_expert_loading(const std::string& moe_model, const ScorecardOptions& options) {
    using namespace scorecard;
    std::string method =
        "decode greedy tokens on " + (moe_model.empty() ? std::string("(no MoE model)") : moe_model) +
        " with expert_fetch=sync, io_backend=threads (pread direct-I/O reads of the routed experts only, no "
        "expert cache, everything else mapped); bytes read = the process's OS read counter (/proc/self/io rchar) over the timed steps; bank "
        "bytes = every expert-table entry of every MoE layer; proven if bytes read / bank bytes is within 10% "
        "of k/E, refuted if it is >= 0.9 (nearly the whole bank), else inconclusive";
    if (moe_model.empty()) return not_measurable(1, kClaim1Title, method, "no MoE model was given");
    auto model = Model::load(moe_model);
    if (!model) return not_measurable(1, kClaim1Title, method, model.error());
    const GlobalHeader& h = (*model)->header();
    if (h.n_experts == 0) return not_measurable(1, kClaim1Title, method, moe_model + " has no experts");
    double bank_bytes = 0;  // all experts of all MoE layers: what a dense-bank read costs per token
    for (uint32_t l = 0; l < h.n_layers; ++l) {
        if ((*model)->layers()[l].expert_table == nullptr) continue;
        for (uint32_t e = 0; e < h.n_experts; ++e) {
            auto view = (*model)->file().expert(l, e);
            if (!view) return not_measurable(1, kClaim1Title, method, view.error());
            bank_bytes += double(view->bytes);
        }
    }
    const int tokens = options.quick ? 8 : 32;
    SessionOptions so{options.threads, uint32_t(tokens + 8)};
    so.expert_fetch = ExpertFetch::Sync;
    so.io_backend = IoBackend::Threads;  // pread: io_uring reads never reach the rchar read counter
    auto session = Session::create(model.value(), so);
    if (!session) return not_measurable(1, kClaim1Title, method, session.error());
    int32_t next = 1;
    if (Status s = greedy_decode_steps(**session, next, 2, nullptr, kWrappingDecode); !s) return not_measurable(1, kClaim1Title, method, s.error());
    DecodeTotals totals;
    const int64_t before = process_read_bytes();
    if (Status s = greedy_decode_steps(**session, next, tokens, &totals, kWrappingDecode); !s) return not_measurable(1, kClaim1Title, method, s.error());
    const int64_t after = process_read_bytes();

    ClaimResult r;
    r.claim = 1;
    r.title = kClaim1Title;
    const double k_over_e = double(h.top_k) / double(h.n_experts);
    // A counter that stood still while the engine issued reads is not counting them (wine's
    // GetProcessIoCounters returns zeros): then the engine's own count is the figure, as without one.
    const bool counter_stood_still = after == before && totals.expertBytesFromDisk > 0;
    const bool os_counter = before >= 0 && after >= before && !counter_stood_still;
    const double read_per_token = os_counter ? double(after - before) / totals.tokens : totals.expertBytesFromDisk / totals.tokens;
    if (!os_counter)
        method += counter_stood_still
                      ? "; the OS read counter did not move while the engine read, so bytes read = the engine's own count of direct reads issued"
                      : "; this OS gives no read counter, so bytes read = the engine's own count of direct reads issued";
    r.method = method;
    const double ratio = read_per_token / bank_bytes;
    r.measured = {{"experts", double(h.n_experts), "count"},
                  {"top_k", double(h.top_k), "count"},
                  {"k_over_e", k_over_e, "ratio"},
                  {"bank_bytes_per_token", bank_bytes, "bytes"},
                  {"bytes_read_per_token", read_per_token, "bytes"},
                  {"engine_expert_bytes_per_token", totals.bytes(Stream::Expert) / totals.tokens, "bytes"},
                  {"read_over_bank", ratio, "ratio"},
                  {"reduction", ratio > 0 ? 1.0 / ratio : 0.0, "x"},
                  {"tokens", double(totals.tokens), "count"}};
    char buf[256];
    std::snprintf(buf, sizeof buf, "read %.4f of the bank per token against k/E = %.4f (%+.1f%%)", ratio, k_over_e,
                  100.0 * (ratio - k_over_e) / k_over_e);
    if (std::abs(ratio - k_over_e) <= kTolerance * k_over_e) {
        r.verdict = Verdict::Proven;
        r.reason = std::string(buf) + ": only the routed experts are read";
    } else if (ratio >= 0.9) {
        r.verdict = Verdict::Refuted;
        r.reason = std::string(buf) + ": nearly the whole bank is read";
    } else {
        r.verdict = Verdict::Inconclusive;
        r.reason = std::string(buf) + ": outside the 10% band (sector rounding of small experts, or other reads)";
    }
    return r;
}

} // namespace cflow
