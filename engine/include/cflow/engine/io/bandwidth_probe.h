#pragma once
// A short streaming-read probe of the machine's memory bandwidth: the "speed of light" that
// decode bandwidth is compared against. Front ends take it through bandwidth_probe_cache.h,
// which measures it once per machine and thread count for all of them.
#include <cstdint>

namespace cflow {

class ThreadPool;

struct BandwidthProbeResult {
    double bytesPerSecond = 0;  // best of the timed passes
    uint64_t bufferBytes = 0;
    unsigned threads = 0;
};

// Reads a buffer_bytes anonymous buffer `passes` times after one warm-up pass, split over
// the pool's threads, and reports the fastest pass.
BandwidthProbeResult probe_read_bandwidth(ThreadPool& pool, uint64_t buffer_bytes = 256ull << 20, int passes = 5);

} // namespace cflow
