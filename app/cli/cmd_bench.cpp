// cflow bench: prefill and decode speed of a model, from a file mapping, from anonymous memory
// and with its matrices rearranged into the lanes layout (LoadOptions::lanes), each compared in
// the same run with the machine's measured streaming-read bandwidth. With --json: one JSON
// object on one line (the anonymous-memory run; the mapped and lanes runs nested).
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cflow/engine/compare/speed_bench.h"
#include "cflow/engine/forward/load_policy.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "cflow/engine/kernels/kernels.h"
#include "commands.h"
#include "peak_rss.h"

namespace cflow::cli {
namespace {

// The timing recipe lives in the engine (measure_speed), shared with the comparison wizard.
// lanesKept: whether the loaded model holds a lanes copy (a lanes load of a K-quant model does not).
Result<SpeedMeasurement> measure(const std::string& path, const LoadOptions& load, const SpeedPlan& plan, bool& lanesKept) {
    auto model = Model::load(path, load);
    if (!model) return model.take_error();
    lanesKept = (*model)->lanes_base() != nullptr;
    return measure_speed(model.value(), plan);
}

nlohmann::json speed_json(const SpeedMeasurement& m, double bandwidth) {
    return {{"prefill_tokens_per_second", m.prefillTokPerS},
            {"decode_tokens_per_second", m.decodeTokPerS},
            {"decode_bytes_per_token", m.decodeBytesPerToken},
            {"decode_bandwidth_ratio", m.decodeTokPerS * m.decodeBytesPerToken / bandwidth}};
}

} // namespace

int run_bench(const BenchArgs& args) {
    if (args.positionals.size() != 1) return fail("bench", "expected exactly one MODEL.cflow");
    const std::string path = args.positionals[0];
    const bool json = args.json;

    ThreadPool pool{args.session.threads};
    const SpeedPlan plan{pool.size(), args.prompt_tokens, args.warmup, args.tokens, args.session.kv_cache};
    const std::string isa(isa_name(selected_isa()));
    constexpr int kArms = 3;
    SpeedMeasurement results[kArms];
    LoadOptions loads[kArms];
    loads[0].mode = LoadMode::Map;
    loads[1].mode = LoadMode::ReadAnon;
    loads[2].mode = LoadMode::Map;
    loads[2].lanes = true;
    const char* names[kArms] = {"map (page cache)", "read (anonymous memory)", "lanes (rearranged copy)"};
    bool lanesKept = false;
    for (int m = 0; m < kArms; ++m) {
        auto r = measure(path, loads[m], plan, lanesKept);
        if (!r) return fail("bench", r.error());  // before anything is printed: one line on stderr
        results[m] = *r;
    }
    if (!lanesKept) names[2] = "lanes (no copy: mapped)";
    // The machine's figure the inspector and the conversion preflight show too (stored once per
    // machine and thread count); measured here only when none is stored or it went stale, and
    // after the model ran: a model that does not load fails on one line without a probe first.
    const SharedBandwidthProbe shared = shared_read_bandwidth(pool);
    if (!shared.reused) std::fprintf(stderr, "cflow bench: measured the read bandwidth (%s)\n", shared.remeasureReason.c_str());
    if (!shared.storeError.empty()) std::fprintf(stderr, "cflow bench: read bandwidth not stored: %s\n", shared.storeError.c_str());
    const BandwidthProbeResult probe = shared.probe.result;
    LoadChoice defaultLoad = choose_load_options(path, false);  // what generate/chat/the app load it as
    if (defaultLoad.options.lanes && !lanesKept) note_no_lanes_copy(defaultLoad);
    const uint64_t peak = peak_rss_bytes();
    if (!json)
        std::printf("kernel path %s%s, %u threads, %s KV cache; read bandwidth: %s, %llu MiB buffer\n",
                    isa.c_str(), amx_enabled() ? " (AMX prefill)" : "", plan.threads, std::string(kv_cache_type_name(plan.kvCache)).c_str(),
                    shared_probe_text(shared.probe).c_str(), (unsigned long long)(probe.bufferBytes >> 20));
    for (int m = 0; m < kArms && !json; ++m) {
        const SpeedMeasurement* r = &results[m];
        const double achieved = r->decodeTokPerS * r->decodeBytesPerToken;
        std::printf("%-24s prefill %8.2f tok/s (%d-token prompt)  decode %8.2f tok/s  %8.3f MiB/token  %7.2f GB/s  "
                    "ratio achieved/measured = %.3f\n",
                    names[m], r->prefillTokPerS, plan.promptTokens, r->decodeTokPerS,
                    r->decodeBytesPerToken / (1 << 20), achieved / 1e9, achieved / probe.bytesPerSecond);
    }
    if (json) {
        nlohmann::json out = speed_json(results[1], probe.bytesPerSecond);
        out["read_bandwidth_bytes_per_second"] = probe.bytesPerSecond;
        out["read_bandwidth_source"] = shared_probe_text(shared.probe);
        out["peak_rss_bytes"] = peak;
        out["isa"] = isa;
        out["threads"] = plan.threads;
        out["kv_cache"] = std::string(kv_cache_type_name(plan.kvCache));
        out["prompt_tokens"] = plan.promptTokens;
        out["decode_tokens"] = plan.decodeTokens;
        out["load"] = "read";
        out["default_load"] = defaultLoad.name;
        out["amx"] = amx_enabled();  // AMX tiles under the batched prefill
        out["mapped"] = speed_json(results[0], probe.bytesPerSecond);
        out["lanes"] = speed_json(results[2], probe.bytesPerSecond);
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    std::printf("ratio read/map decode speed = %.3f; lanes/read = %.3f; peak resident memory %.1f MiB; "
                "generate/chat/the app load it as %s (%s)\n",
                results[1].decodeTokPerS / results[0].decodeTokPerS, results[2].decodeTokPerS / results[1].decodeTokPerS,
                double(peak) / (1 << 20), defaultLoad.name.c_str(), defaultLoad.reason.c_str());
    return 0;
}

} // namespace cflow::cli
