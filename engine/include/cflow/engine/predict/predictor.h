#pragma once
// Predicted resident memory and speed of a model under given settings, before it is loaded:
// `cflow plan`. Built from a footprint (model_footprint.h: exact bytes and weights per token from
// the tile plan) and this machine's calibration (machine_calibration.h). The model is kept simple
// on purpose, so a user can follow a figure back to its inputs:
//
//   decode seconds/token = max(bytes / bandwidth(T), matvec + attention) + passes x passSeconds
//                          + MoE passes x moePassSeconds + expert stall
//     bytes     = tiles and f32 vectors every token reads + the top_k routed experts read from
//                 memory + the KV cache read at the mean position of the reply
//     matvec    = sum over dtypes of weights / rate(dtype, T)   (a mixed file pays each type's rate)
//     attention = passes x heads x head_dim x mean position x attnSecondsPerElem
//     The max: reads and arithmetic overlap (the kernels prefetch), so the slower of the two is the
//     floor; the per-pass cost (hand-offs, norms, RoPE) does not overlap with either.
//   prefill seconds/token = passes x prefillPassSeconds + weights / prefillRate + attention at
//                           half the prompt: a batch reuses every weight read for many tokens, so
//                           the reads are not the limit there. Where Session::prefill does not
//                           batch (pipeline combine styles, streamed experts) each prompt token is
//                           a decode step at half the prompt's positions, less the LM head.
//   expert stall (sync/staged): experts not in the RAM cache are read from disk; with uniform
//     routing an LRU cache of C bytes over a bank of B bytes hits C / B of the time. Sync waits
//     for every read; staged overlaps them with the matvec work of the layers in between, so only
//     what exceeds that work is a stall.
//   resident memory = the process before a model (cflow plan: its own, plus what loading the
//     model's tables added) + weights (mapped: the pages a token touches, i.e.
//     the file less the embedding table it reads one row of, and less the expert bank when experts
//     are read with direct I/O; read: the whole file copied, rounded up to 2 MiB huge pages;
//     lanes: mapped + a rearranged copy of the file, rounded the same way) + the KV cache at the context (its pages are touched as positions fill: the figure
//     is for a full context) + the expert cache and staging buffers + the session's scratch.
#include <cstdint>
#include <string>

#include "cflow/engine/forward/session.h"
#include "cflow/engine/predict/machine_calibration.h"
#include "cflow/engine/predict/model_footprint.h"

namespace cflow {

enum class PlanLoad : uint8_t { Map, Read, Lanes };
const char* plan_load_name(PlanLoad load);  // "map", "read", "lanes" as --load spells them

struct PlanSettings {
    unsigned threads = 1;
    uint32_t context = 0;          // KV positions held (0: the model's, capped as Session does)
    KvCacheType kvCache = KvCacheType::F16;
    int promptTokens = 64;         // the prompt the prefill figure is for, and where the reply starts
    int decodeTokens = 64;         // the reply the decode figure averages over
    PlanLoad load = PlanLoad::Map;
    ExpertFetch expertFetch = ExpertFetch::Mapped;
    uint64_t expertCacheBytes = 0; // sync/staged only
};

struct Prediction {
    // Resident memory, bytes.
    uint64_t baseBytes = 0;         // the process before a model (calibration)
    uint64_t weightsBytes = 0;      // weights mapped and/or copied
    uint64_t kvBytes = 0;           // KV cache at the context
    uint64_t expertCacheBytes = 0;  // cache + staging buffers of sync/staged
    uint64_t scratchBytes = 0;      // session buffers: logits, activations, attention scores, prefill batch
    uint64_t residentBytes = 0;     // the sum
    // Speed.
    double decodeTokPerS = 0;
    double prefillTokPerS = 0;
    double expertStallShare = 0;    // of decode time, waiting for expert reads
    double decodeBytesPerToken = 0; // weights + KV read per decoded token from memory
    double diskBytesPerToken = 0;   // expert bytes read from disk per decoded token
    double memorySecondsPerToken = 0, computeSecondsPerToken = 0, overheadSecondsPerToken = 0, stallSecondsPerToken = 0;
    std::string bound;              // "memory", "compute" or "disk": what decode time is set by
    unsigned calibratedThreads = 0; // the thread count whose calibration was used
    std::string note;               // dtypes priced with another dtype's rate, a missing calibration
};

// Positions the KV cache holds for `settings.context` (0: the model's, capped as Session::create does).
uint32_t plan_context(const ModelFootprint& f, uint32_t context);

// The prediction; fails when the calibration has no thread record or no kernel rate at all.
Result<Prediction> predict(const ModelFootprint& f, const PlanSettings& settings, const MachineCalibration& machine);

} // namespace cflow
