// The predictor's arithmetic: see predictor.h for the model and why it is shaped so.
#include "cflow/engine/predict/predictor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cflow {
namespace {

constexpr double kPredictorHugePageBytes = 2.0 * 1024 * 1024;

// The calibrated dtype whose kernel prices `dtype`: itself when measured, else the family whose
// kernel walks the same kind of block (K-quant super-blocks, 32-weight blocks, floats).
const KernelCost* predictor_kernel_for(const ThreadCalibration& t, DType dtype, bool& borrowed) {
    auto find = [&](DType d) -> const KernelCost* {
        for (const KernelCost& k : t.kernels)
            if (k.dtype == d) return &k;
        return nullptr;
    };
    borrowed = false;
    if (const KernelCost* k = find(dtype)) return k;
    borrowed = true;
    DType family = DType::Q8_0;
    if (dtype == DType::F32 || dtype == DType::BF16) family = DType::F16;
    else if (is_ggml_tile(dtype)) family = DType::Q4_K;
    if (const KernelCost* k = find(family)) return k;
    return t.kernels.empty() ? nullptr : &t.kernels.front();
}

std::string predictor_dtype_list(const std::vector<DType>& types) {
    std::string out;
    for (DType d : types) out += (out.empty() ? "" : ", ") + std::string(dtype_name(d));
    return out;
}

} // namespace

const char* plan_load_name(PlanLoad load) {
    switch (load) {
        case PlanLoad::Map: return "map";
        case PlanLoad::Read: return "read";
        case PlanLoad::Lanes: return "lanes";
    }
    return "map";
}

uint32_t plan_context(const ModelFootprint& f, uint32_t context) {
    if (context > 0) return context;
    return std::min(f.maxSeqLen > 0 ? f.maxSeqLen : SessionOptions::kDefaultContextCap, SessionOptions::kDefaultContextCap);
}

Result<Prediction> predict(const ModelFootprint& f, const PlanSettings& s, const MachineCalibration& machine) {
    const ThreadCalibration* t = machine.at(s.threads);
    if (!t || t->kernels.empty() || !(t->bandwidthBytesPerSecond > 0))
        return make_error("the machine calibration holds no figures for " + std::to_string(s.threads) +
                          " threads (run cflow plan --calibrate)");
    Prediction p;
    p.calibratedThreads = t->threads;
    if (t->threads != s.threads)
        p.note = "no calibration at " + std::to_string(s.threads) + " threads: priced at " + std::to_string(t->threads) + ". ";

    const bool streamed = s.expertFetch != ExpertFetch::Mapped && f.nExperts > 0;
    const uint32_t context = plan_context(f, s.context);
    const double kvElemBytes = s.kvCache == KvCacheType::F16 ? 2.0 : 4.0;

    // Matvec work: each dtype at its own kernel's rate; the per-pass and attention costs are the
    // kernel path's of the dtype that holds most of the bytes (they do not depend on the weights).
    double decodeMatvec = 0, prefillMatvec = 0;
    std::vector<DType> borrowedTypes;
    for (size_t d = 0; d < kFootprintDTypes; ++d) {
        const double weights = f.perToken.weights[d] + f.routedPerToken.weights[d];
        if (weights <= 0) continue;
        bool borrowed = false;
        const KernelCost* k = predictor_kernel_for(*t, DType(d), borrowed);
        if (borrowed) borrowedTypes.push_back(DType(d));
        if (k->decodeWeightsPerSecond > 0) decodeMatvec += weights / k->decodeWeightsPerSecond;
        if (k->prefillWeightsPerSecond > 0) prefillMatvec += weights / k->prefillWeightsPerSecond;
    }
    if (!borrowedTypes.empty())
        p.note += "not calibrated, priced with the nearest calibrated kernel: " + predictor_dtype_list(borrowedTypes) + ". ";
    WeightsByType all = f.perToken;
    for (size_t d = 0; d < kFootprintDTypes; ++d) all.add(DType(d), f.routedPerToken.weights[d], f.routedPerToken.bytes[d]);
    bool unused = false;
    const KernelCost& main = *predictor_kernel_for(*t, all.dominant(), unused);
    const double attnWidth = double(f.passes) * f.nHeads * f.headDim;  // elements per cached position
    const double stages = double(f.passes) + 1.0;                       // the LM head stage counts as one pass

    // Decode.
    const double meanPosition = double(s.promptTokens) + 0.5 * s.decodeTokens;
    const double kvRead = f.kvBytesAt(uint32_t(std::min<double>(meanPosition, context)), kvElemBytes);
    p.decodeBytesPerToken = f.perToken.totalBytes() + f.rawBytesPerToken + f.routedPerToken.totalBytes() + kvRead;
    p.memorySecondsPerToken = p.decodeBytesPerToken / t->bandwidthBytesPerSecond;
    p.computeSecondsPerToken = decodeMatvec + attnWidth * meanPosition * main.decodeAttnSecondsPerElem;
    p.overheadSecondsPerToken = stages * main.decodePassSeconds + double(f.moePasses) * main.decodeMoePassSeconds;

    // Experts from disk (sync/staged): LRU over uniformly routed experts hits cache / bank.
    const uint64_t cacheBytes = streamed ? std::min<uint64_t>(s.expertCacheBytes, f.expertBankBytes) : 0;
    const double hitRate = streamed && f.expertBankBytes > 0 ? double(cacheBytes) / double(f.expertBankBytes) : 0.0;
    if (streamed) {
        p.diskBytesPerToken = f.routedPerToken.totalBytes() * (1.0 - hitRate);
        const double diskSeconds = machine.diskBytesPerSecond > 0 ? p.diskBytesPerToken / machine.diskBytesPerSecond : 0.0;
        if (s.expertFetch == ExpertFetch::Sync) {
            p.stallSecondsPerToken = diskSeconds;
        } else {
            // Staged: the reads run while the layers up to the injection layer compute.
            const double perPass = (p.computeSecondsPerToken + p.overheadSecondsPerToken) / std::max(1.0, stages);
            const double overlap = perPass * (f.expertDelay + 1.0) * f.moePasses;
            p.stallSecondsPerToken = std::max(0.0, diskSeconds - overlap);
        }
        if (machine.diskBytesPerSecond <= 0) p.note += "no disk figure in the calibration: expert reads priced at 0. ";
    }
    const double core = std::max(p.memorySecondsPerToken, p.computeSecondsPerToken);
    const double decodeSeconds = core + p.overheadSecondsPerToken + p.stallSecondsPerToken;
    p.decodeTokPerS = decodeSeconds > 0 ? 1.0 / decodeSeconds : 0.0;
    p.expertStallShare = decodeSeconds > 0 ? p.stallSecondsPerToken / decodeSeconds : 0.0;
    p.bound = p.stallSecondsPerToken > core ? "disk" : p.memorySecondsPerToken > p.computeSecondsPerToken ? "memory" : "compute";

    double prefillSeconds = 0;
    if (f.batchedPrefill && !streamed) {
        // Batched: weights are reused across the batch, so the work and the per-pass cost set it.
        prefillSeconds = stages * main.prefillPassSeconds + double(f.moePasses) * main.prefillMoePassSeconds + prefillMatvec +
                         attnWidth * 0.5 * s.promptTokens * main.prefillAttnSecondsPerElem;
    } else {
        // One step per prompt token (pipeline styles, streamed experts): a decode step at half the
        // prompt's positions, without the LM head (only the last prompt token needs logits).
        double headMatvec = 0;
        for (size_t d = 0; d < kFootprintDTypes; ++d) {
            if (f.lmHead.weights[d] <= 0) continue;
            bool borrowed = false;
            const KernelCost* k = predictor_kernel_for(*t, DType(d), borrowed);
            if (k->decodeWeightsPerSecond > 0) headMatvec += f.lmHead.weights[d] / k->decodeWeightsPerSecond;
        }
        const double position = 0.5 * s.promptTokens;
        const double bytes = f.perToken.totalBytes() - f.lmHead.totalBytes() + f.rawBytesPerToken + f.routedPerToken.totalBytes() +
                             f.kvBytesAt(uint32_t(position), kvElemBytes);
        const double compute = decodeMatvec - headMatvec + attnWidth * position * main.decodeAttnSecondsPerElem;
        prefillSeconds = std::max(bytes / t->bandwidthBytesPerSecond, compute) + double(f.passes) * main.decodePassSeconds +
                         double(f.moePasses) * main.decodeMoePassSeconds + p.stallSecondsPerToken;
    }
    p.prefillTokPerS = prefillSeconds > 0 ? 1.0 / prefillSeconds : 0.0;

    // Resident memory.
    p.baseBytes = machine.processBaseBytes;
    const double file = double(f.fileBytes);
    double mapped = file - double(f.untouchedEmbeddingBytes) - (streamed ? double(f.expertBankBytes) : 0.0);
    mapped = std::max(0.0, mapped);
    // An anonymous copy is rounded up to 2 MiB so the kernel can back it with huge pages
    // (mapped_file_posix.cpp), and a huge page is resident whole: a 200 KB model costs 2 MiB.
    const double copy = std::ceil(file / kPredictorHugePageBytes) * kPredictorHugePageBytes;
    switch (s.load) {
        case PlanLoad::Map: p.weightsBytes = uint64_t(mapped); break;
        case PlanLoad::Read: p.weightsBytes = uint64_t(copy); break;
        case PlanLoad::Lanes: p.weightsBytes = uint64_t(mapped + copy); break;  // the load reads the mapping to copy it
    }
    p.kvBytes = uint64_t(f.kvBytesAt(context, kvElemBytes));
    if (streamed) p.expertCacheBytes = cacheBytes + uint64_t(f.topK) * (f.expertDelay + 1ull) * f.expertBytes;
    const double d = f.dModel, hidden = f.widestHidden, qdim = double(f.nHeads) * f.headDim;
    // Session buffers (session.cpp): logits, attention scores over the context, a few d-wide
    // vectors; the prefill chunk's rows of the same.
    const double scratchFloats = f.vocab + double(f.nHeads) * context + 12.0 * d + 2.0 * hidden + 3.0 * qdim +
                                 Session::kPrefillChunk * (8.0 * d + 2.0 * hidden + 3.0 * qdim);
    p.scratchBytes = uint64_t(scratchFloats * sizeof(float));
    p.residentBytes = p.baseBytes + p.weightsBytes + p.kvBytes + p.expertCacheBytes + p.scratchBytes;
    if (!p.note.empty() && p.note.back() == ' ') p.note.pop_back();
    return p;
}

} // namespace cflow
