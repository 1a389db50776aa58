// Measuring this machine for the predictor: see calibrate.h for what is timed and why.
#include "cflow/engine/predict/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/compare/speed_bench.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/thread_pool.h"
#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/predict/model_footprint.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/synth/synth_model.h"
#include "io/aligned_bytes.h"
#include "io/direct_reader.h"

namespace cflow {
namespace {

using CalibrateClock = std::chrono::steady_clock;

// The dtypes calibrated: the converter's quantisation targets with a kernel of their own
// (Q5_K shares the K-quant super-block walk with Q4_K/Q6_K; F32 the float walk with F16).
constexpr DType kCalibratedTypes[] = {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q6_K, DType::F16};

// Prompt lengths and reply of the timed runs: short and long enough apart that attention's
// share changes measurably, small enough that a run takes well under a second.
constexpr int kShortPrompt = 64;
constexpr int kLongPrompt = 320;
constexpr int kWarmupTokens = 4;
constexpr int kDecodeTokens = 48;
constexpr int kRunsPerModel = 3;
// Three models per dtype: a small deep one (d 128, 6 layers: many passes, little work, as the
// shipped models) and a large shallow one (d 768, 2 layers), so per-pass cost and matvec rate
// separate; and a small MoE. K-quant tiles are 256 wide, so their small models are d 256.
enum class CalibrationModel { Small, Large, Moe };

SynthSpec calibration_spec(CalibrationModel which, DType dtype) {
    const uint32_t narrow = is_kquant(dtype) ? 256 : 128;
    const uint32_t d = which == CalibrationModel::Large ? 768 : narrow;
    SynthSpec s;
    s.name = "calibration";
    s.d_model = d;
    s.n_layers = which == CalibrationModel::Small ? 6 : 2;
    s.n_heads = d / 64;
    s.n_kv_heads = d / 64;
    s.d_ff = 3 * d;
    s.vocab = 512;
    s.max_seq_len = 1024;
    s.seed = 7;
    if (which == CalibrationModel::Moe) {  // Mixtral-style: 8 experts, top-2, no dense FFN
        s.d_ff = 0;
        s.n_experts = 8;
        s.top_k = 2;
        s.expert_d_ff = 2 * d;
    }
    return s;
}

// Writes a synthetic model of width d whose tiles are `dtype` (Q4_0 re-tiled from its own blocks;
// the others converted from Q8_0 blocks).
Result<std::string> write_calibration_model(CalibrationModel which, DType dtype, const std::filesystem::path& folder,
                                            const CancelToken* cancel) {
    SynthSpec spec = calibration_spec(which, dtype);
    spec.quant = dtype == DType::Q4_0 ? DType::Q4_0 : DType::Q8_0;
    auto model = make_synth_model(spec, 0, cancel);
    if (!model) return model.take_error();
    ConvertOptions options;
    options.weight_quant = dtype;
    const std::string path = utf8_from_path(folder / ("calibration-" + std::to_string(int(which)) + "-" +
                                                      std::string(dtype_name(dtype)) + ".cflow"));
    auto converted = convert_to_cflow(model->source, path, options, {}, cancel);
    if (!converted) return converted.take_error();
    return path;
}

// One timed run of a loaded calibration model, as the fit wants it.
struct CalibrationTiming {
    CalibrationRun decode, prefill;
};

Result<CalibrationTiming> time_calibration_model(const std::shared_ptr<const Model>& model, const ModelFootprint& f,
                                                 unsigned threads, int prompt, const CancelToken* cancel) {
    SpeedPlan plan;
    plan.threads = threads;
    plan.promptTokens = prompt;
    plan.warmupTokens = kWarmupTokens;
    plan.decodeTokens = kDecodeTokens;
    plan.kvCache = KvCacheType::F16;
    // Best of a few runs: on a busy machine the fastest run is the one least disturbed by others,
    // and a prediction is for the machine, not for its neighbours of the moment.
    SpeedMeasurement best;
    for (int run = 0; run < kRunsPerModel; ++run) {
        auto m = measure_speed(model, plan, cancel);
        if (!m) return m.take_error();
        best.decodeTokPerS = std::max(best.decodeTokPerS, m->decodeTokPerS);
        best.prefillTokPerS = std::max(best.prefillTokPerS, m->prefillTokPerS);
    }
    const SpeedMeasurement* m = &best;
    if (!(m->decodeTokPerS > 0) || !(m->prefillTokPerS > 0)) return make_error("calibration: a run timed nothing");
    CalibrationTiming t;
    t.decode.weights = t.prefill.weights = f.perToken.totalWeights() + f.routedPerToken.totalWeights();
    t.decode.passes = t.prefill.passes = f.passes + 1.0;
    t.decode.attnWidth = t.prefill.attnWidth = double(f.passes) * f.nHeads * f.headDim;
    t.decode.meanPosition = prompt + kWarmupTokens + 0.5 * kDecodeTokens;
    t.prefill.meanPosition = 0.5 * prompt;
    t.decode.secondsPerToken = 1.0 / m->decodeTokPerS;
    t.prefill.secondsPerToken = 1.0 / m->prefillTokPerS;
    return t;
}

// Sequential direct-I/O reads of a file written for the purpose: best of two passes.
void measure_disk(const std::filesystem::path& folder, uint64_t bytes, MachineCalibration& c) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    const std::filesystem::path file = folder / "disk-read-probe.bin";
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        std::vector<char> block(1 << 20);
        for (size_t i = 0; i < block.size(); ++i) block[i] = char((i * 2654435761u) >> 13);  // not all zeros: no sparse tricks
        for (uint64_t written = 0; out && written < bytes; written += block.size()) out.write(block.data(), std::streamsize(block.size()));
        if (!out) {
            std::filesystem::remove(file, ec);
            return;
        }
    }
    auto reader = DirectReader::open(utf8_from_path(file));
    if (reader) {
        constexpr uint64_t kChunk = 4ull << 20;
        auto buffer = AlignedBytes::allocate((*reader)->alignment(), kChunk);
        const uint64_t total = (*reader)->file_bytes() / kChunk * kChunk;
        double best = 0;
        for (int pass = 0; pass < 2 && buffer && total > 0; ++pass) {
            const auto t0 = CalibrateClock::now();
            bool ok = true;
            for (uint64_t at = 0; at < total && ok; at += kChunk) ok = bool((*reader)->read(at, kChunk, buffer->data()));
            const double seconds = std::chrono::duration<double>(CalibrateClock::now() - t0).count();
            if (ok && seconds > 0) best = std::max(best, double(total) / seconds);
        }
        c.diskBytesPerSecond = best;
        c.diskDirect = (*reader)->direct();
    }
    std::filesystem::remove(file, ec);
}

} // namespace

void fit_kernel_cost(const CalibrationRun& small, const CalibrationRun& largeShort, const CalibrationRun& largeLong,
                     bool decode, KernelCost& cost) {
    // Attention: what the longer prompt added to the larger model, per cached element.
    double attn = 0;
    const double positions = largeLong.meanPosition - largeShort.meanPosition;
    if (positions > 0 && largeShort.attnWidth > 0)
        attn = std::max(0.0, (largeLong.secondsPerToken - largeShort.secondsPerToken) / (largeShort.attnWidth * positions));
    // What is left: passes x o + weights / rate for the two widths, solved for o and 1/rate.
    const double uS = small.secondsPerToken - small.attnWidth * small.meanPosition * attn;
    const double uL = largeShort.secondsPerToken - largeShort.attnWidth * largeShort.meanPosition * attn;
    const double det = small.passes * largeShort.weights - largeShort.passes * small.weights;
    double pass = 0, secondsPerWeight = 0;
    if (det != 0) {
        pass = (uS * largeShort.weights - uL * small.weights) / det;
        secondsPerWeight = (small.passes * uL - largeShort.passes * uS) / det;
    }
    if (!(secondsPerWeight > 0) || !(pass >= 0)) {  // noise reversed the two: all of it counts as matvec work
        pass = 0;
        secondsPerWeight = largeShort.weights > 0 ? std::max(0.0, uL) / largeShort.weights : 0;
    }
    const double rate = secondsPerWeight > 0 ? 1.0 / secondsPerWeight : 0;
    if (decode) {
        cost.decodeWeightsPerSecond = rate;
        cost.decodePassSeconds = pass;
        cost.decodeAttnSecondsPerElem = attn;
    } else {
        cost.prefillWeightsPerSecond = rate;
        cost.prefillPassSeconds = pass;
        cost.prefillAttnSecondsPerElem = attn;
    }
}

double fit_moe_pass_seconds(const CalibrationRun& moe, double moePasses, double weightsPerSecond, double passSeconds,
                            double attnSecondsPerElem) {
    if (moePasses <= 0) return 0;
    const double dense = moe.passes * passSeconds + (weightsPerSecond > 0 ? moe.weights / weightsPerSecond : 0) +
                         moe.attnWidth * moe.meanPosition * attnSecondsPerElem;
    return std::max(0.0, (moe.secondsPerToken - dense) / moePasses);
}

Result<MachineCalibration> calibrate_machine(const CalibrateOptions& options) {
    auto say = [&](const std::string& line) {
        if (options.progress) options.progress(line);
    };
    MachineCalibration c;
    c.cpuModel = this_cpu_model();
    c.logicalCpus = std::max(1u, std::thread::hardware_concurrency());
    c.isa = std::string(isa_name(selected_isa()));
    c.measuredAtUnixSeconds =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    c.processBaseBytes = options.processBaseBytes;
    const unsigned maxThreads = options.maxThreads ? options.maxThreads : c.logicalCpus;

    std::error_code ec;
    const std::filesystem::path scratch =
        (options.scratchFolder.empty() ? std::filesystem::temp_directory_path(ec) : path_from_utf8(options.scratchFolder)) /
        ("cflow-calibration-" + std::to_string(c.measuredAtUnixSeconds) + "-" +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000));
    std::filesystem::create_directories(scratch, ec);
    if (ec) return make_error(ErrorKind::Io, utf8_from_path(scratch) + ": cannot create the calibration folder: " + ec.message());
    struct RemoveFolder {
        std::filesystem::path path;
        ~RemoveFolder() {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        }
    } cleanup{scratch};

    // The models, loaded once (mapped, so nothing is copied) and timed at every thread count.
    struct Loaded {
        DType dtype;
        std::shared_ptr<const Model> small, large, moe;
        ModelFootprint smallF, largeF, moeF;
    };
    std::vector<Loaded> models;
    for (DType dtype : kCalibratedTypes) {
        Loaded l{dtype, nullptr, nullptr, nullptr, {}, {}, {}};
        for (CalibrationModel which : {CalibrationModel::Small, CalibrationModel::Large, CalibrationModel::Moe}) {
            auto path = write_calibration_model(which, dtype, scratch, options.cancel);
            if (!path) {
                say("skipped " + std::string(dtype_name(dtype)) + ": " + path.error());
                break;
            }
            auto model = Model::load(*path);
            if (!model) return model.take_error();
            auto f = model_footprint(**model);
            if (!f) return f.take_error();
            (which == CalibrationModel::Small ? l.small : which == CalibrationModel::Large ? l.large : l.moe) = *model;
            (which == CalibrationModel::Small ? l.smallF : which == CalibrationModel::Large ? l.largeF : l.moeF) = *f;
        }
        if (l.small && l.large && l.moe) models.push_back(std::move(l));
    }
    if (models.empty()) return make_error("calibration: no synthetic model could be written in " + utf8_from_path(scratch));

    // 1, 2, 4, ... and maxThreads itself: a many-core machine is calibrated in minutes, not hours;
    // a count between two measured ones is priced at the nearest (the prediction says so).
    std::vector<unsigned> counts;
    for (unsigned n = 1; n < maxThreads; n *= 2) counts.push_back(n);
    counts.push_back(maxThreads);
    for (unsigned threads : counts) {
        ThreadCalibration t;
        t.threads = threads;
        {
            ThreadPool pool{threads};
            const SharedBandwidthProbe probe = shared_read_bandwidth(pool);
            t.bandwidthBytesPerSecond = probe.probe.result.bytesPerSecond;
            say("read bandwidth: " + shared_probe_text(probe.probe));
        }
        for (const Loaded& l : models) {
            auto small = time_calibration_model(l.small, l.smallF, threads, kShortPrompt, options.cancel);
            if (!small) return small.take_error();
            auto largeShort = time_calibration_model(l.large, l.largeF, threads, kShortPrompt, options.cancel);
            if (!largeShort) return largeShort.take_error();
            auto largeLong = time_calibration_model(l.large, l.largeF, threads, kLongPrompt, options.cancel);
            if (!largeLong) return largeLong.take_error();
            KernelCost cost;
            cost.dtype = l.dtype;
            fit_kernel_cost(small->decode, largeShort->decode, largeLong->decode, true, cost);
            fit_kernel_cost(small->prefill, largeShort->prefill, largeLong->prefill, false, cost);
            auto moe = time_calibration_model(l.moe, l.moeF, threads, kShortPrompt, options.cancel);
            if (!moe) return moe.take_error();
            cost.decodeMoePassSeconds = fit_moe_pass_seconds(moe->decode, l.moeF.moePasses, cost.decodeWeightsPerSecond,
                                                             cost.decodePassSeconds, cost.decodeAttnSecondsPerElem);
            cost.prefillMoePassSeconds = fit_moe_pass_seconds(moe->prefill, l.moeF.moePasses, cost.prefillWeightsPerSecond,
                                                              cost.prefillPassSeconds, cost.prefillAttnSecondsPerElem);
            char line[200];
            std::snprintf(line, sizeof line, "%s, %u threads: decode %.2f Gweights/s + %.1f us/pass + %.1f us/MoE pass; prefill %.2f Gweights/s",
                          std::string(dtype_name(l.dtype)).c_str(), threads, cost.decodeWeightsPerSecond / 1e9,
                          cost.decodePassSeconds * 1e6, cost.decodeMoePassSeconds * 1e6, cost.prefillWeightsPerSecond / 1e9);
            say(line);
            t.kernels.push_back(cost);
        }
        c.threads.push_back(std::move(t));
    }

    const std::filesystem::path diskFolder = options.diskProbeFolder.empty()
                                                 ? path_from_utf8(default_machine_calibration_path()).parent_path()
                                                 : path_from_utf8(options.diskProbeFolder);
    measure_disk(diskFolder.empty() ? scratch : diskFolder, options.diskProbeBytes, c);
    char line[120];
    std::snprintf(line, sizeof line, "disk read: %.0f MB/s (%s)", c.diskBytesPerSecond / 1e6,
                  c.diskDirect ? "direct I/O" : "buffered: the file system refused direct I/O");
    say(line);
    return c;
}

} // namespace cflow
