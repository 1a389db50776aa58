// Claim 8, stage-major .vflow vs per-layer .cflow readahead: the same model in both containers,
// each file's pages evicted from the page cache, then its weights faulted in through a fresh
// mapping in the order the forward pass consumes them (claim 5's read order), timed; rounds
// alternate the files.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cflow/formats/mapped_file.h"
#include "scorecard/scorecard_internal.h"

namespace cflow {

namespace {

constexpr const char* kTitle = "Stage-major .vflow readahead";
constexpr double kThreshold = 0.05;      // .vflow must read >= 5% faster than .cflow
constexpr double kColdResidency = 0.05;  // a round counts only if <= 5% of the file stayed cached

using Clock = std::chrono::steady_clock;

volatile uint64_t g_sink = 0;

struct ColdRead {
    double seconds = 0;
    double residentBefore = -1;
    uint64_t bytes = 0;
};

// One byte per 4 KiB page of every range, in order: what the forward pass's first token faults in.
Result<ColdRead> cold_read(const std::string& path, const std::vector<ReadSpan>& order) {
    using namespace scorecard;
    if (Status s = drop_file_cache(path); !s) return s.take_error();
    ColdRead out;
    out.residentBefore = file_cache_residency(path);
    auto file = MappedFile::open(path, LoadMode::Map);
    if (!file) return file.take_error();
    const uint8_t* data = (*file)->data();
    const auto t0 = Clock::now();
    uint64_t sum = 0;
    for (const ReadSpan& span : order) {
        for (uint64_t off = span.offset; off < span.offset + span.bytes; off += 4096) sum += data[off];
        sum += data[span.offset + span.bytes - 1];
        out.bytes += span.bytes;
    }
    out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    g_sink = sum;  // keeps the loads from being optimised away
    return out;
}

} // namespace

ClaimResult scorecard_claim8_readahead(const std::string& cflow_path, const std::string& vflow_path,
                                       const ScorecardOptions& options) {
    using namespace scorecard;
    const int rounds = options.quick ? 2 : 4;
    const std::string method =
        "the same synthetic model as .cflow and .vflow (" + (cflow_path.empty() ? std::string("(none)") : cflow_path) +
        "); per round and file: evict the file from the page cache (fsync + posix_fadvise DONTNEED, no root needed), "
        "map it and touch every 4 KiB page of its non-expert weights in the forward pass's read order; throughput = "
        "weight bytes / time; " + std::to_string(rounds) +
        " rounds, files alternating; a round counts only if <= 5% of the file was still cached; proven if .vflow/.cflow "
        "throughput >= 1.05 in every round, refuted if < 1.05 in every round, else inconclusive";
    if (cflow_path.empty() || vflow_path.empty()) return not_measurable(8, kTitle, method, "the .cflow/.vflow pair was not given");
    auto cflow_order = forward_read_order(cflow_path);
    if (!cflow_order) return not_measurable(8, kTitle, method, cflow_order.error());
    auto vflow_order = forward_read_order(vflow_path);
    if (!vflow_order) return not_measurable(8, kTitle, method, vflow_order.error());
    std::vector<double> ratios, cflow_rates, vflow_rates;
    double worst_residency = 0;
    for (int round = 0; round < rounds; ++round) {
        double rate[2] = {0, 0};
        bool cold = true;
        for (int i = 0; i < 2; ++i) {
            const int f = round % 2 == 0 ? i : 1 - i;
            auto read = cold_read(f == 0 ? cflow_path : vflow_path, f == 0 ? *cflow_order : *vflow_order);
            if (!read) return not_measurable(8, kTitle, method, "the page cache cannot be dropped here: " + read.error());
            rate[f] = double(read->bytes) / read->seconds;
            worst_residency = std::max(worst_residency, read->residentBefore);
            if (read->residentBefore < 0 || read->residentBefore > kColdResidency) cold = false;
        }
        if (!cold) continue;
        cflow_rates.push_back(rate[0]);
        vflow_rates.push_back(rate[1]);
        ratios.push_back(rate[1] / rate[0]);
    }
    ClaimResult r;
    r.claim = 8;
    r.title = kTitle;
    r.method = method;
    r.measured = {{"cflow_cold_read", median(cflow_rates) / 1e6, "MB/s"},
                  {"vflow_cold_read", median(vflow_rates) / 1e6, "MB/s"},
                  {"cold_rounds", double(ratios.size()), "count"},
                  {"max_resident_share_after_drop", worst_residency, "ratio"},
                  {"weight_bytes", double([&] {
                       uint64_t b = 0;
                       for (const ReadSpan& s : *cflow_order) b += s.bytes;
                       return b;
                   }()), "bytes"}};
    // Why a layout wins or loses here: how sequential each file is in the engine's (layer-major) read order.
    const ReadOrderCheck cflow_check = check_read_order(*cflow_order), vflow_check = check_read_order(*vflow_order);
    r.measured.push_back({"cflow_backward_jumps_in_read_order", double(cflow_check.backward_jumps), "count"});
    r.measured.push_back({"vflow_backward_jumps_in_read_order", double(vflow_check.backward_jumps), "count"});
    r.measured.push_back({"vflow_backward_bytes_in_read_order", double(vflow_check.backward_bytes), "bytes"});
    if (ratios.empty()) {
        r.verdict = Verdict::NotMeasurable;
        r.reason = "no round started cold: the page cache kept more than 5% of the file after eviction";
        return r;
    }
    const AbVerdict ab = ab_verdict(ratios, kThreshold, ".vflow");
    r.measured.push_back({"median_ratio_vflow_over_cflow", ab.median, "x"});
    r.verdict = ab.verdict;
    r.reason = ab.reason;
    if (vflow_check.backward_jumps > cflow_check.backward_jumps)
        r.reason += "; the engine executes layer by layer, so on the stage-major file its reads jump back " +
                    std::to_string(vflow_check.backward_jumps) + " times (" + std::to_string(cflow_check.backward_jumps) +
                    " on the .cflow): the layout would pay off only under a stage-major executor";
    return r;
}

} // namespace cflow
