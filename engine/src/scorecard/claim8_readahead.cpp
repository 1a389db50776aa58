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

constexpr const char* kClaim8Title = "Stage-major .vflow readahead";
constexpr double kReadaheadGainThreshold = 0.05;      // .vflow must read >= 5% faster than .cflow
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
        "map it and touch every 4 KiB page of its non-expert weights, once in the file's own order (ranges by "
        "offset: what an executor built for that layout reads; the verdict's figures) and once in this engine's "
        "layer-major read order; throughput = weight bytes / time; " + std::to_string(rounds) +
        " rounds, files alternating; a round counts only if <= 5% of the file was still cached; proven if .vflow/.cflow "
        "throughput >= 1.05 in every round, refuted if < 1.05 in every round, else inconclusive";
    if (cflow_path.empty() || vflow_path.empty()) return not_measurable(8, kClaim8Title, method, "the .cflow/.vflow pair was not given");
    auto cflow_order = forward_read_order(cflow_path);
    if (!cflow_order) return not_measurable(8, kClaim8Title, method, cflow_order.error());
    auto vflow_order = forward_read_order(vflow_path);
    if (!vflow_order) return not_measurable(8, kClaim8Title, method, vflow_order.error());
    // Two orders per file: its own storage order (the ranges sorted by offset: what an executor
    // built for that layout reads, the fair test of the layout) and the engine's layer-major order.
    const auto sorted = [](std::vector<ReadSpan> v) {
        std::sort(v.begin(), v.end(), [](const ReadSpan& a, const ReadSpan& b) { return a.offset < b.offset; });
        return v;
    };
    const std::vector<ReadSpan>* orders[4];
    const std::vector<ReadSpan> cflow_sorted = sorted(*cflow_order), vflow_sorted = sorted(*vflow_order);
    orders[0] = &cflow_sorted;   // cflow, file order
    orders[1] = &vflow_sorted;   // vflow, file order
    orders[2] = &*cflow_order;   // cflow, engine order
    orders[3] = &*vflow_order;   // vflow, engine order
    std::vector<double> ratios, engine_ratios, rates[4];
    double worst_residency = 0;
    for (int round = 0; round < rounds; ++round) {
        double rate[4] = {0, 0, 0, 0};
        bool cold = true;
        for (int i = 0; i < 4; ++i) {
            const int a = round % 2 == 0 ? i : 3 - i;  // alternate which file goes first
            auto read = cold_read(a % 2 == 0 ? cflow_path : vflow_path, *orders[a]);
            if (!read) return not_measurable(8, kClaim8Title, method, "the page cache cannot be dropped here: " + read.error());
            rate[a] = double(read->bytes) / read->seconds;
            worst_residency = std::max(worst_residency, read->residentBefore);
            if (read->residentBefore < 0 || read->residentBefore > kColdResidency) cold = false;
        }
        if (!cold) continue;
        for (int a = 0; a < 4; ++a) rates[a].push_back(rate[a]);
        ratios.push_back(rate[1] / rate[0]);
        engine_ratios.push_back(rate[3] / rate[2]);
    }
    ClaimResult r;
    r.claim = 8;
    r.title = kClaim8Title;
    r.method = method;
    r.measured = {{"cflow_cold_read_file_order", median(rates[0]) / 1e6, "MB/s"},
                  {"vflow_cold_read_file_order", median(rates[1]) / 1e6, "MB/s"},
                  {"cflow_cold_read_engine_order", median(rates[2]) / 1e6, "MB/s"},
                  {"vflow_cold_read_engine_order", median(rates[3]) / 1e6, "MB/s"},
                  {"median_ratio_vflow_over_cflow_engine_order", median(engine_ratios), "x"},
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
    const AbVerdict ab = ab_verdict(ratios, kReadaheadGainThreshold, ".vflow");
    r.measured.push_back({"median_ratio_vflow_over_cflow_file_order", ab.median, "x"});
    r.verdict = ab.verdict;
    r.reason = ab.reason;
    if (vflow_check.backward_jumps > cflow_check.backward_jumps)
        r.reason += "; in this engine's layer-major order the .vflow reads jump back " +
                    std::to_string(vflow_check.backward_jumps) + " times (" + std::to_string(cflow_check.backward_jumps) +
                    " on the .cflow) and run at " + std::to_string(median(engine_ratios)).substr(0, 5) +
                    "x the .cflow: the layout needs a stage-major executor, which this engine does not have";
    return r;
}

} // namespace cflow
