#include "cflow/engine/io/bandwidth_probe.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/forward/thread_pool.h"

namespace cflow {

BandwidthProbeResult probe_read_bandwidth(ThreadPool& pool, uint64_t buffer_bytes, int passes) {
    const size_t n = size_t(buffer_bytes / sizeof(float));
    std::vector<float> buffer(n, 1.0f);  // [n] f32, written once so every page is backed
    constexpr size_t kChunk = 1 << 16;   // floats per work item
    const size_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<float> sink(chunks);
    auto pass = [&](const Kernels& k) {
        const auto t0 = std::chrono::steady_clock::now();
        pool.parallel_for(chunks, [&](size_t begin, size_t end) {
            for (size_t c = begin; c < end; ++c) {
                const size_t first = c * kChunk, len = std::min(kChunk, n - first);
                // dot(x, x) reads each cache line once from memory; the second operand hits L1.
                sink[c] = k.dot(buffer.data() + first, buffer.data() + first, len);
            }
        });
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    // The fastest read any vector width achieves: the rate the engine's kernels are measured
    // against must not depend on the kernel path a process happens to run (on one EPYC the
    // AVX-512 loop read at half the AVX2 loop's rate).
    double best = 1e300;
    for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Scalar}) {
        if (!isa_supported(isa) || (isa == Isa::Scalar && best < 1e300)) continue;  // scalar only without SIMD
        const Kernels& k = kernels_for(isa);
        pass(k);
        for (int i = 0; i < passes; ++i) best = std::min(best, pass(k));
    }
    BandwidthProbeResult r;
    r.bufferBytes = n * sizeof(float);
    r.bytesPerSecond = double(r.bufferBytes) / best;
    r.threads = pool.size();
    return r;
}

} // namespace cflow
