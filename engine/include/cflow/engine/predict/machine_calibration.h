#pragma once
// What the predictor (predictor.h) knows about this machine, measured once and stored per
// machine next to the shared read-bandwidth figure (bandwidth_probe_cache.h: the same folder,
// file machine-calibration.json, JSON written to a temp file and renamed over the old one).
// `cflow plan --calibrate` measures it again; otherwise a stored one is reused while it was taken
// on this CPU model with this build's method (another CPU model or method invalidates it).
#include <cstdint>
#include <string>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/formats/dtype.h"

namespace cflow {

// Bump when what is measured, or how, changes: older files are measured again.
inline constexpr int kMachineCalibrationFormat = 1;
inline constexpr const char* kMachineCalibrationMethod =
    "end-to-end greedy decode and batched prefill of synthetic models (d 128 x 6 layers and d 768 x 2 dense, a small MoE) per "
    "kernel dtype, fitted to per-pass overhead + weights / rate + attention per position + per-MoE-pass cost; best of 3 runs each";

// One kernel path's fitted costs at one thread count (calibrate.h says how they are fitted).
// Seconds per token of a model = passes x passSeconds + weights / weightsPerSecond
//                                + passes x heads x head_dim x mean position x attnSecondsPerElem.
struct KernelCost {
    DType dtype = DType::Q4_0;           // the matrices' dtype of the calibration models
    double decodeWeightsPerSecond = 0;    // matvec weights per second, one token at a time
    double decodePassSeconds = 0;         // fixed cost of one layer pass of one decoded token
    double decodeAttnSecondsPerElem = 0;  // per cached position x head x head-dim element
    double prefillWeightsPerSecond = 0;   // batched prefill, weights x tokens per second
    double prefillPassSeconds = 0;        // per pass per prompt token
    double prefillAttnSecondsPerElem = 0;
    // What a pass through a MoE layer costs beyond its matvec work (routing, top-k, one matvec
    // launch per selected expert; in prefill, grouping the chunk's tokens by expert).
    double decodeMoePassSeconds = 0;
    double prefillMoePassSeconds = 0;
};

struct ThreadCalibration {
    unsigned threads = 0;
    double bandwidthBytesPerSecond = 0;   // the shared read-bandwidth probe at these threads
    std::vector<KernelCost> kernels;      // one per calibrated dtype
};

struct MachineCalibration {
    std::string method = kMachineCalibrationMethod;
    std::string cpuModel;                 // this_cpu_model()
    unsigned logicalCpus = 0;
    std::string isa;                      // the kernel path measured (isa_name(selected_isa()))
    int64_t measuredAtUnixSeconds = 0;
    double diskBytesPerSecond = 0;        // sequential direct-I/O reads of a file in the cache folder
    bool diskDirect = false;              // false: the file system refused direct I/O (the figure is buffered)
    uint64_t processBaseBytes = 0;        // resident bytes of the cflow process before a model loads
    std::vector<ThreadCalibration> threads;  // 1, 2, 4, ... and N

    // The record for `threads` threads, else the nearest measured count (nullptr when none).
    const ThreadCalibration* at(unsigned threads) const;
};

// $XDG_CACHE_HOME/cflow/machine-calibration.json, beside default_bandwidth_probe_path(); "" when
// the OS names no cache folder.
std::string default_machine_calibration_path();

// The stored calibration when it is usable on this machine (cpuModel: this_cpu_model()), else an
// error saying why not (missing, damaged, another format or method, another CPU model).
Result<MachineCalibration> load_machine_calibration(const std::string& path, const std::string& cpuModel);
// Writes `c` to `path` (temp file + rename; the folder is created).
Status store_machine_calibration(const std::string& path, const MachineCalibration& c);

// "3.2 h" / "5 days": how old a calibration taken at `measuredAt` is at `now`.
std::string calibration_age_text(int64_t measuredAtUnixSeconds, int64_t nowUnixSeconds);

} // namespace cflow
