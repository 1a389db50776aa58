#pragma once
// Engine-internal helpers shared by the scorecard claims: a decode loop, A/B verdicts, a
// synthetic tiled Q4_0 matrix, and the platform probes (one file per OS under platform/).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cflow/engine/forward/session.h"
#include "cflow/engine/generation/timed_decode.h"
#include "cflow/engine/scorecard/scorecard.h"

namespace cflow::scorecard {

// The claims' decode runs alternate arms for many rounds: they start again from an empty KV cache
// when the context is full (greedy_decode_steps, generation/timed_decode.h).
inline constexpr DecodeStepsOptions kWrappingDecode{true, nullptr};

// Claimed-better arm B against A over rounds: ratios[i] = B_i / A_i (higher = B better).
// Proven: median >= 1 + threshold and every round > 1. Refuted: every round below 1 + threshold.
// Otherwise inconclusive (the rounds disagree more than the effect).
struct AbVerdict {
    double median = 0, min = 0, max = 0;
    Verdict verdict = Verdict::Inconclusive;
    std::string reason;
};
AbVerdict ab_verdict(const std::vector<double>& ratios, double threshold, const std::string& better_arm);

double median(std::vector<double> v);

// A [rows x cols] Q4_0 matrix with seeded random nibbles and scales, as 128x256 tiles in
// stripe-major order (the .cflow layout) and as the same blocks row-major (each row's
// 256-column pieces one after another, a 1-row "tile" each). rows % 128 == 0, cols % 256 == 0.
struct Q4Matrix {
    uint32_t rows = 0, cols = 0;
    std::vector<uint8_t> tiled;     // [rows/128 stripes x cols/256 tiles] payloads of 128x256
    std::vector<uint8_t> rowMajor;  // [rows x cols/256] payloads of 1x256
    uint64_t tileBytes = 0;         // one 128x256 payload
    uint64_t pieceBytes = 0;        // one 1x256 payload
};
Q4Matrix make_q4_matrix(uint32_t rows, uint32_t cols, uint64_t seed);
std::vector<float> random_vector(uint32_t n, uint64_t seed);  // [n] in [-1, 1)

// L1-d read misses of the calling thread (perf_event_open on Linux). open() fails with the
// OS's reason where the kernel or the machine (no PMU, a VM without one) does not allow it.
class CacheMissCounter {
public:
    static Result<std::unique_ptr<CacheMissCounter>> open();
    virtual ~CacheMissCounter() = default;
    virtual void start() = 0;
    virtual uint64_t stop() = 0;  // misses since start()
};

// Bytes this process has read through read/pread calls so far (Linux /proc/self/io rchar,
// Windows ReadTransferCount); -1 where the OS does not say.
int64_t process_read_bytes();

// Drops the file's pages from the page cache (write back, then evict: posix_fadvise
// DONTNEED on POSIX); Unsupported where the OS offers no per-file eviction.
Status drop_file_cache(const std::string& path);
// Share of the file's pages in the page cache now (mincore), 0..1; -1 where unknown.
double file_cache_residency(const std::string& path);

ClaimResult not_measurable(int claim, std::string title, std::string method, std::string reason);

} // namespace cflow::scorecard
