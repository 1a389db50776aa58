#pragma once
// One read-bandwidth figure per machine, shared by the conversion preflight, the inspector and
// `cflow bench` / `cflow scorecard`: a small JSON file in the user's cache folder
// (XDG_CACHE_HOME or ~/.cache/cflow/read-bandwidth.json; %LOCALAPPDATA%\cflow\ on Windows)
// holding, per thread count, the figure, the method, the CPU it was measured on and when.
// A consumer uses the stored figure when it is fresh, from this CPU and measured the same way;
// otherwise it measures once (probe_read_bandwidth) and stores it (temp file + rename), so
// every front end prints the same number instead of each probing under its own conditions.
#include <cstdint>
#include <string>

#include "cflow/base/result.h"
#include "cflow/engine/io/bandwidth_probe.h"

namespace cflow {

class ThreadPool;

// What the figure is: a streaming read of an anonymous in-memory buffer (RAM, not a file, so
// neither the page cache nor direct I/O is involved), best of the timed passes. A stored record
// with another method is measured again.
inline constexpr const char* kBandwidthProbeMethod = "anonymous-memory streaming read, every vector width, best pass";

struct StoredBandwidthProbe {
    BandwidthProbeResult result;      // bytesPerSecond, bufferBytes, threads
    int passes = 0;                   // timed passes after one warm-up
    std::string method;               // kBandwidthProbeMethod when measured by this build
    std::string cpuModel;             // this_cpu_model() where it was measured
    unsigned logicalCpus = 0;         // hardware threads of that machine
    int64_t measuredAtUnixSeconds = 0;
};

struct SharedBandwidthProbe {
    StoredBandwidthProbe probe;
    std::string path;             // the shared file read or written
    bool reused = false;          // the stored figure was fresh: nothing was measured now
    std::string remeasureReason;  // why it was measured now ("" when reused): for the log line
    std::string storeError;       // writing the file failed: the figure holds, the next run measures again
};

struct SharedProbeOptions {
    std::string path;                             // "" = default_bandwidth_probe_path()
    int64_t maxAgeSeconds = 30 * 24 * 3600;       // older figures are measured again
    bool measureAgain = false;                    // the user asked for a new measurement
    uint64_t bufferBytes = 256ull << 20;
    int passes = 5;
};

// $XDG_CACHE_HOME/cflow/read-bandwidth.json (else ~/.cache/...; %LOCALAPPDATA%\cflow\... on
// Windows); "" when the OS names no such folder.
std::string default_bandwidth_probe_path();
// The CPU's brand string ("AMD EPYC 9654 96-Core Processor"); "" when the OS does not say.
std::string this_cpu_model();
// The pool size a probe with `threads` (0 = one per hardware thread) runs on, as ThreadPool does.
unsigned bandwidth_probe_threads(unsigned threads);

// The stored figure for `threads` threads if it is usable now; else an error saying why not
// (missing, unreadable or corrupt file, another CPU, another method, older than maxAgeSeconds).
Result<StoredBandwidthProbe> load_shared_bandwidth_probe(const std::string& path, unsigned threads, int64_t nowUnixSeconds,
                                                         int64_t maxAgeSeconds);
// Replaces the record for probe.result.threads (records of another CPU are dropped).
Status store_shared_bandwidth_probe(const std::string& path, const StoredBandwidthProbe& probe);

// The stored figure for pool.size() threads when fresh, else measured on `pool` and stored.
SharedBandwidthProbe shared_read_bandwidth(ThreadPool& pool, const SharedProbeOptions& options = {});

// "2026-12-07 02:51 UTC"
std::string utc_time_text(int64_t unixSeconds);
// "56.6 GB/s with 16 threads (shared probe, measured 2026-12-07 02:51 UTC)": the one line every
// front end prints, so the figure reads the same everywhere.
std::string shared_probe_text(const StoredBandwidthProbe& probe);

} // namespace cflow
