// cflow plan: what a model will cost on this machine before it is loaded: resident memory,
// prefill and decode tok/s, the expert stall share, for the settings asked and for the
// alternatives the user could pick. The arithmetic is the engine's (predict/predictor.h); this
// file resolves the settings as generate would, finds or takes the machine calibration, and prints.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/forward/load_policy.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "cflow/engine/io/expert_cache_budget.h"
#include "cflow/engine/io/system_memory.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/predict/calibrate.h"
#include "cflow/engine/predict/predictor.h"
#include "cflow/formats/model_path_kind.h"
#include "commands.h"
#include "load_args.h"
#include "plan_process_memory.h"

namespace cflow::cli {
namespace {

using json = nlohmann::ordered_json;

constexpr uint64_t kPlanMaxKvBytes = 64ull << 30;  // Session::create's cap on the KV cache

double plan_mib(double bytes) { return bytes / (1024.0 * 1024.0); }

int64_t plan_now_unix() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

PlanLoad plan_load_from(const LoadChoice& choice) {
    if (choice.options.lanes) return PlanLoad::Lanes;
    return choice.options.mode == LoadMode::ReadAnon ? PlanLoad::Read : PlanLoad::Map;
}

json prediction_json(const Prediction& p) {
    return {{"resident_bytes", p.residentBytes},
            {"base_bytes", p.baseBytes},
            {"weights_bytes", p.weightsBytes},
            {"kv_bytes", p.kvBytes},
            {"expert_cache_bytes", p.expertCacheBytes},
            {"scratch_bytes", p.scratchBytes},
            {"decode_tokens_per_second", p.decodeTokPerS},
            {"prefill_tokens_per_second", p.prefillTokPerS},
            {"expert_stall_share", p.expertStallShare},
            {"decode_bytes_per_token", p.decodeBytesPerToken},
            {"disk_bytes_per_token", p.diskBytesPerToken},
            {"bound", p.bound},
            {"calibrated_threads", p.calibratedThreads},
            {"note", p.note}};
}

json settings_json(const PlanSettings& s) {
    return {{"threads", s.threads},
            {"context", s.context},
            {"kv_cache", std::string(kv_cache_type_name(s.kvCache))},
            {"prompt_tokens", s.promptTokens},
            {"decode_tokens", s.decodeTokens},
            {"load", plan_load_name(s.load)},
            {"expert_fetch", std::string(expert_fetch_name(s.expertFetch))},
            {"expert_cache_bytes", s.expertCacheBytes}};
}

// One row of the alternatives: what changes, to what, and the prediction with it.
struct Alternative {
    std::string change;  // "kv_cache", "expert_fetch", "quantisation"
    std::string value;   // "f32", "sync, cache 64 MiB", "q8_0"
    PlanSettings settings;
    Prediction prediction;
};

Result<std::vector<Alternative>> alternatives_for(const ModelFootprint& f, const PlanSettings& asked, const MachineCalibration& m) {
    std::vector<Alternative> rows;
    auto add = [&](const std::string& change, const std::string& value, const ModelFootprint& footprint,
                   const PlanSettings& s) -> Status {
        auto p = predict(footprint, s, m);
        if (!p) return p.take_error();
        rows.push_back({change, value, s, *p});
        return Status::success();
    };
    for (KvCacheType kv : {KvCacheType::F16, KvCacheType::F32}) {
        PlanSettings s = asked;
        s.kvCache = kv;
        if (Status st = add("kv_cache", std::string(kv_cache_type_name(kv)), f, s); !st) return st.take_error();
    }
    if (f.nExperts > 0) {
        for (ExpertFetch arm : {ExpertFetch::Mapped, ExpertFetch::Sync, ExpertFetch::Staged}) {
            const std::vector<double> shares =
                arm == ExpertFetch::Mapped ? std::vector<double>{0.0} : std::vector<double>{0.0, 0.25, 0.5, 1.0};
            for (double share : shares) {
                PlanSettings s = asked;
                s.expertFetch = arm;
                s.expertCacheBytes = uint64_t(share * double(f.expertBankBytes));
                // Streamed experts are mapped where generate would copy the file (load_policy.h).
                if (arm != ExpertFetch::Mapped && s.load != PlanLoad::Read) s.load = PlanLoad::Map;
                std::string value(expert_fetch_name(arm));
                if (arm != ExpertFetch::Mapped) {
                    char buf[64];
                    std::snprintf(buf, sizeof buf, ", cache %.0f MiB (%.0f%% of the bank)", plan_mib(double(s.expertCacheBytes)),
                                  share * 100);
                    value += buf;
                }
                if (Status st = add("expert_fetch", value, f, s); !st) return st.take_error();
            }
        }
    }
    // The converter's quantisation targets (cflow convert --quant), every tile re-typed.
    for (DType q : {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::F16, DType::F32}) {
        PlanSettings s = asked;
        // The lanes copy exists for Q4_0/Q8_0 tiles only (model.h); other types are mapped.
        if (s.load == PlanLoad::Lanes && q != DType::Q4_0 && q != DType::Q8_0) s.load = PlanLoad::Map;
        if (Status st = add("quantisation", std::string(dtype_name(q)), retyped_footprint(f, q), s); !st)
            return st.take_error();
    }
    return rows;
}

void print_prediction(const Prediction& p, const PlanSettings& s) {
    std::printf("  resident memory  %8.1f MiB  (process %.1f, weights %.1f, KV cache %.1f, expert cache %.1f, scratch %.1f)\n",
                plan_mib(double(p.residentBytes)), plan_mib(double(p.baseBytes)), plan_mib(double(p.weightsBytes)),
                plan_mib(double(p.kvBytes)), plan_mib(double(p.expertCacheBytes)), plan_mib(double(p.scratchBytes)));
    std::printf("  decode           %8.2f tok/s  (%s-bound; %.3f MiB read per token; reply of %d tokens after the prompt)\n",
                p.decodeTokPerS, p.bound.c_str(), plan_mib(p.decodeBytesPerToken), s.decodeTokens);
    std::printf("  prefill          %8.2f tok/s  (%d-token prompt)\n", p.prefillTokPerS, s.promptTokens);
    if (s.expertFetch != ExpertFetch::Mapped)
        std::printf("  expert stall     %8.1f %%     (%.3f MiB from disk per token)\n", p.expertStallShare * 100,
                    plan_mib(p.diskBytesPerToken));
    if (!p.note.empty()) std::printf("  note: %s\n", p.note.c_str());
}

// The calibration to use: --calibration FILE as given; else this machine's stored one, measured
// now when missing, from another CPU, damaged or asked for again.
Result<MachineCalibration> find_calibration(const PlanArgs& args, uint64_t baseBytes, bool quiet, std::string& path,
                                            bool& measuredNow) {
    measuredNow = false;
    if (args.calibration) {
        path = *args.calibration;
        auto stored = load_machine_calibration(path, this_cpu_model());
        if (!stored) return make_error(stored.kind(), "option --calibration: " + stored.error());
        return stored;
    }
    path = default_machine_calibration_path();
    if (!args.calibrate) {
        auto stored = load_machine_calibration(path, this_cpu_model());
        if (stored) return stored;
        std::fprintf(stderr, "cflow plan: calibrating this machine (%s); this takes a while\n", stored.error().c_str());
    }
    CalibrateOptions options;
    options.processBaseBytes = baseBytes;
    options.maxThreads = args.session.threads;  // 1, 2, 4, ... and --threads (0: every hardware thread)
    if (!quiet) options.progress = [](const std::string& line) { std::fprintf(stderr, "cflow plan: %s\n", line.c_str()); };
    auto measured = calibrate_machine(options);
    if (!measured) return measured.take_error();
    measuredNow = true;
    if (Status s = store_machine_calibration(path, *measured); !s)
        std::fprintf(stderr, "cflow plan: calibration not stored: %s\n", s.error().c_str());
    return measured;
}

} // namespace

int run_plan(const PlanArgs& args) {
    // The process as it stands before any model: the resident bytes every run starts from.
    const uint64_t baseBytes = plan_process_resident_bytes();
    if (args.positionals.size() != 1) return fail("plan", "expected exactly one MODEL.cflow");
    const std::string path = args.positionals[0];
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path_from_utf8(path), ec))
        return fail("plan", path + ": no such file");
    auto model = Model::load(path);  // mapped: only headers are read
    if (!model) return fail("plan", model.error());
    auto footprint = model_footprint(**model);
    if (!footprint) return fail("plan", footprint.error());
    const ModelFootprint& f = *footprint;
    // What loading this model added beyond its mapped pages: the tokenizer, the segment and tile
    // index, the metadata. Every run of the model has them whatever its load mode. The pages of
    // the mapping the load touched (tile headers: all of a small file) are taken out as the whole
    // file, so for a large file this counts nothing rather than too much.
    const uint64_t afterLoadBytes = plan_process_resident_bytes();
    const uint64_t modelTablesBytes =
        afterLoadBytes > baseBytes + f.fileBytes ? afterLoadBytes - baseBytes - f.fileBytes : 0;

    PlanSettings asked;
    asked.threads = bandwidth_probe_threads(args.session.threads);
    asked.kvCache = args.session.kv_cache;
    asked.promptTokens = args.prompt_tokens;
    asked.decodeTokens = args.tokens;
    asked.expertFetch = args.session.expert_fetch;
    asked.context = plan_context(f, args.session.ctx);
    if (uint64_t(args.prompt_tokens) + uint64_t(args.tokens) > asked.context)
        return fail("plan", "--prompt-tokens " + std::to_string(args.prompt_tokens) + " + --tokens " +
                                std::to_string(args.tokens) + " do not fit in a context of " + std::to_string(asked.context) +
                                " tokens (--ctx)");
    const double kvAtContext = f.kvBytesAt(asked.context, asked.kvCache == KvCacheType::F16 ? 2.0 : 4.0);
    if (kvAtContext > double(kPlanMaxKvBytes))
        return fail("plan", "--ctx " + std::to_string(asked.context) + " needs " + std::to_string(uint64_t(kvAtContext) >> 20) +
                                " MiB of KV cache, over the engine's 64 GiB cap: choose a shorter context");
    const bool streamed = asked.expertFetch != ExpertFetch::Mapped && f.nExperts > 0;
    auto load = parse_load_arg(args.session.load, path, streamed);
    if (!load) return fail("plan", load.error());
    asked.load = plan_load_from(*load);
    if (args.session.cache_mib) {
        auto bytes = expert_cache_bytes_for(*args.session.cache_mib, asked.expertFetch, **model);
        if (!bytes) return fail("plan", bytes.error());
        asked.expertCacheBytes = *bytes;
    }

    std::string calibrationPath;
    bool measuredNow = false;
    auto calibration = find_calibration(args, baseBytes, args.json, calibrationPath, measuredNow);
    if (!calibration) return fail("plan", calibration.error());
    // The process figure is this process's, before the model, plus the model's tables: the same
    // binary as the run being predicted, measured now rather than when the calibration was taken.
    MachineCalibration m = *calibration;
    m.processBaseBytes = baseBytes + modelTablesBytes;
    auto prediction = predict(f, asked, m);
    if (!prediction) return fail("plan", prediction.error());
    auto alternatives = alternatives_for(f, asked, m);
    if (!alternatives) return fail("plan", alternatives.error());
    const ThreadCalibration* at = m.at(asked.threads);
    const int64_t now = plan_now_unix();
    const SystemMemory memory = query_system_memory();

    if (args.json) {
        json out;
        out["model"] = path;
        out["file_bytes"] = f.fileBytes;
        out["expert_bank_bytes"] = f.expertBankBytes;
        out["available_memory_bytes"] = memory.available_bytes;
        out["calibration"] = {{"path", calibrationPath},
                              {"cpu_model", m.cpuModel},
                              {"isa", m.isa},
                              {"measured_at", utc_time_text(m.measuredAtUnixSeconds)},
                              {"age_seconds", now - m.measuredAtUnixSeconds},
                              {"measured_now", measuredNow},
                              {"bandwidth_bytes_per_second", at ? at->bandwidthBytesPerSecond : 0.0},
                              {"disk_bytes_per_second", m.diskBytesPerSecond},
                              {"disk_direct", m.diskDirect}};
        out["settings"] = settings_json(asked);
        out["load_reason"] = load->reason;
        out["prediction"] = prediction_json(*prediction);
        out["fits"] = memory.available_bytes == 0 || prediction->residentBytes <= memory.available_bytes;
        json rows = json::array();
        for (const Alternative& a : *alternatives)
            rows.push_back({{"change", a.change}, {"value", a.value}, {"settings", settings_json(a.settings)},
                            {"prediction", prediction_json(a.prediction)}});
        out["alternatives"] = rows;
        std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
        return 0;
    }

    std::printf("plan for %s (%.1f MiB", path.c_str(), plan_mib(double(f.fileBytes)));
    if (f.nExperts > 0) std::printf(", %u experts top-%u, bank %.1f MiB", f.nExperts, f.topK, plan_mib(double(f.expertBankBytes)));
    std::printf(")\n");
    std::printf("machine: %s, kernel path %s; calibration %s (%s, %s old)%s\n", m.cpuModel.c_str(), m.isa.c_str(),
                calibrationPath.c_str(), utc_time_text(m.measuredAtUnixSeconds).c_str(),
                calibration_age_text(m.measuredAtUnixSeconds, now).c_str(), measuredNow ? ", measured now" : "");
    if (at)
        std::printf("read bandwidth %.1f GB/s at %u threads; disk %.0f MB/s (%s)\n", at->bandwidthBytesPerSecond / 1e9,
                    at->threads, m.diskBytesPerSecond / 1e6, m.diskDirect ? "direct I/O" : "buffered");
    std::printf("as asked: %u threads, context %u, KV %s, load %s (%s), experts %s", asked.threads, asked.context,
                std::string(kv_cache_type_name(asked.kvCache)).c_str(), plan_load_name(asked.load), load->reason.c_str(),
                std::string(expert_fetch_name(asked.expertFetch)).c_str());
    if (streamed) std::printf(", cache %.0f MiB", plan_mib(double(asked.expertCacheBytes)));
    std::printf("\n");
    print_prediction(*prediction, asked);
    if (memory.available_bytes > 0)
        std::printf("  available now    %8.1f MiB%s: %s\n", plan_mib(double(memory.available_bytes)),
                    memory.limit_bytes ? " (cgroup limit counted)" : "",
                    prediction->residentBytes <= memory.available_bytes ? "fits" : "does NOT fit");
    std::printf("\nalternatives (one setting changed; quantisations re-type every tile of the plan):\n");
    std::printf("  %-14s %-38s %12s %12s %12s %7s\n", "change", "to", "resident MiB", "decode tok/s", "prefill tok/s", "stall");
    for (const Alternative& a : *alternatives)
        std::printf("  %-14s %-38s %12.1f %12.2f %12.2f %6.1f%%\n", a.change.c_str(), a.value.c_str(),
                    plan_mib(double(a.prediction.residentBytes)), a.prediction.decodeTokPerS, a.prediction.prefillTokPerS,
                    a.prediction.expertStallShare * 100);
    return 0;
}

} // namespace cflow::cli
