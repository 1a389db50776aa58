#pragma once
// Measuring this machine for the predictor (machine_calibration.h). Runs for tens of seconds:
// `cflow plan --calibrate`, or the first `cflow plan` on a machine.
//
// How (and why so): the kernels' cost is not one number. A decoded token pays a fixed cost per
// layer pass (thread hand-offs, norms, RoPE) beside its matvec work, and attention grows with
// the position. So per dtype and thread count three synthetic models runs are timed end to end
// with the very code a session runs (measure_speed): a small deep model (d 128, 6 layers) and a
// large shallow one (d 768, 2 layers) at a short prompt, and the large one at a long prompt. The long-vs-short difference gives
// the attention cost per cached element; the small-vs-large difference, with the attention taken
// out, gives the matvec rate (weights per second); what is left of the small model is the
// per-pass cost. A fourth run, a small MoE model, gives what a MoE pass costs beyond that (its
// residual over its MoE passes). Prefill is fitted the same way from the same runs' timed prompts.
// Bandwidth is the shared probe (bandwidth_probe_cache.h) at 1..N threads; the disk figure is a
// direct-I/O read of a file written in the cache folder (the disk the user's files are likely on).
#include <cstdint>
#include <functional>
#include <string>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/engine/predict/machine_calibration.h"

namespace cflow {

struct CalibrateOptions {
    unsigned maxThreads = 0;        // 0: one per hardware thread; calibrates 1, 2, 4, ... and maxThreads
    std::string scratchFolder;      // synthetic models go here ("": the system temp folder)
    std::string diskProbeFolder;    // the disk-read file goes here ("": beside the calibration file)
    uint64_t diskProbeBytes = 64ull << 20;
    uint64_t processBaseBytes = 0;  // the caller's resident bytes before any model (the CLI measures it)
    std::function<void(const std::string&)> progress;  // one line per step, may be empty
    const CancelToken* cancel = nullptr;
};

// The fit of one dtype from three timed runs (calibrate.cpp; a function of its own so tests can
// check the arithmetic on hand-made timings).
struct CalibrationRun {
    double weights = 0;       // tiled weights per token of the model
    double passes = 0;        // layer passes per token, plus one for the LM head stage
    double attnWidth = 0;     // passes x heads x head_dim
    double meanPosition = 0;  // mean cached positions of the timed tokens
    double secondsPerToken = 0;
};
// Fills the three decode or prefill fields of `cost` from small@short, large@short, large@long;
// `decode` picks which fields. A negative attention or rate (noise) falls back to what can be fitted.
void fit_kernel_cost(const CalibrationRun& small, const CalibrationRun& largeShort, const CalibrationRun& largeLong,
                     bool decode, KernelCost& cost);

// The per-MoE-pass cost left in `moe` after the dense fit in `cost` (never negative).
double fit_moe_pass_seconds(const CalibrationRun& moe, double moePasses, double weightsPerSecond, double passSeconds,
                            double attnSecondsPerElem);

Result<MachineCalibration> calibrate_machine(const CalibrateOptions& options);

} // namespace cflow
