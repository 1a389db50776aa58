// The read-bandwidth probe (the speed of light of cflow bench and the GUI's bandwidth chart):
// it reports what it measured, over the pool it was given, and the same kind of figure whatever
// kernel path the process selected (it reads with every vector width the CPU has and keeps the
// fastest). No speed is asserted.
#include <gtest/gtest.h>

#include "cflow/engine/forward/thread_pool.h"
#include "cflow/engine/io/bandwidth_probe.h"

namespace cflow {
namespace {

TEST(BandwidthProbe, ReportsBufferThreadsAndAPositiveRate) {
    ThreadPool pool(2);
    const BandwidthProbeResult r = probe_read_bandwidth(pool, 8ull << 20, 2);
    EXPECT_EQ(r.bufferBytes, 8ull << 20);
    EXPECT_EQ(r.threads, 2u);
    EXPECT_GT(r.bytesPerSecond, 1e8) << "8 MiB read in more than 80 ms: the probe measured something else";
    EXPECT_LT(r.bytesPerSecond, 1e13);
}

} // namespace
} // namespace cflow
