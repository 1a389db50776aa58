// cflow scorecard: the paper's eight claims (Table 1.1) measured on this machine, each with its
// figures, method and verdict (engine/include/cflow/engine/scorecard/scorecard.h), then Table 4.1
// at our scale from the trained zoo (resources/training/RESULTS.md). The synthetic models the
// claims need (a MoE with an expert delay, a dense model as .cflow and .vflow) are generated here
// with the synth code into a temporary folder that is removed afterwards.
// --json: one JSON array of the eight claim objects on stdout (nothing else on stdout).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#ifdef _WIN32
#include <process.h>
#define getpid _getpid
#else
#include <unistd.h>
#endif

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/thread_pool.h"
#include "cflow/engine/install/default_model.h"
#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/scorecard/scorecard.h"
#include "cflow/formats/converter.h"
#include "commands.h"
#include "interrupt.h"
#include "synth_model.h"
#include "synth_spec.h"

namespace cflow::cli {
namespace {

namespace fs = std::filesystem;

// The MoE for claims 1 and 7: DelayedSum dd 1 de 2 like arch2_4_combined, experts large enough
// that 4 KiB sector rounding of direct reads stays below 1% of an expert.
SynthSpec moe_spec(bool quick) {
    SynthSpec s;
    s.name = "scorecard-moe";
    s.d_model = quick ? 256 : 512;
    s.n_layers = 4;
    s.n_heads = 8;
    s.n_kv_heads = 8;
    s.d_ff = quick ? 512 : 1024;
    s.n_experts = 8;
    s.top_k = 2;
    s.expert_d_ff = quick ? 512 : 1024;
    s.vocab = 1024;
    s.max_seq_len = 512;
    s.dense_delay = 1;
    s.expert_delay = 2;
    s.combine_style = CombineStyle::DelayedSum;
    s.seed = 7;
    return s;
}

// The dense model for claims 6 and 8: larger than the last-level cache (about 60 MiB at Q4_0).
SynthSpec dense_spec(bool quick) {
    SynthSpec s;
    s.name = "scorecard-dense";
    s.d_model = quick ? 256 : 1024;
    s.n_layers = quick ? 4 : 8;
    s.n_heads = quick ? 4 : 16;
    s.n_kv_heads = quick ? 4 : 16;
    s.d_ff = quick ? 768 : 2816;
    s.vocab = quick ? 1024 : 8192;
    s.max_seq_len = 512;
    s.seed = 8;
    return s;
}

Status write_synth(const SynthSpec& spec, const std::vector<std::pair<std::string, ContainerFormat>>& outputs,
                   unsigned threads, const CancelToken& cancel) {
    auto model = make_synth_model(spec, threads, &cancel);
    if (!model) return model.take_error();
    for (const auto& [path, format] : outputs) {
        ConvertOptions options;
        options.weight_quant = spec.quant;
        options.format = format;
        options.threads = threads;
        auto converted = convert_to_cflow(model->source, path, options, {}, &cancel);
        if (!converted) return converted.take_error();
    }
    return {};
}

// The folder holding default-model.cflow, models/ and training/: --resources, else the default
// model's folder.
std::string resources_dir(const ScorecardArgs& args) {
    if (args.resources) return *args.resources;
    if (auto model = default_model_path()) return fs::path(*model).parent_path().string();
    return "";
}

// The Table 4.1 block of RESULTS.md: its heading line and the markdown table under it.
std::string table_4_1(const std::string& results_md) {
    std::ifstream in(results_md);
    if (!in) return "";
    std::string line, out;
    bool in_table = false;
    while (std::getline(in, line)) {
        if (!line.empty() && line[0] == '|') {
            out += line + "\n";
            in_table = true;
        } else if (in_table) {
            break;
        }
    }
    return out;
}

std::string format_value(double v) {
    char b[64];
    if (v != 0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-3)) std::snprintf(b, sizeof b, "%.4g", v);
    else std::snprintf(b, sizeof b, "%.3f", v);
    return b;
}

nlohmann::json claim_json(const ClaimResult& r) {
    nlohmann::json measured = nlohmann::json::array();
    for (const Figure& f : r.measured) measured.push_back({{"name", f.name}, {"value", f.value}, {"unit", f.unit}});
    return {{"claim", r.claim},           {"title", r.title},   {"measured", measured},
            {"method", r.method},         {"verdict", std::string(verdict_name(r.verdict))},
            {"reason", r.reason}};
}

} // namespace

int run_scorecard(const ScorecardArgs& args) {
    const bool json = args.json, quick = args.quick;

    ScorecardOptions options;
    options.threads = args.threads;
    options.quick = quick;
    if (args.claim) options.claims = {args.claim};
    ScorecardInputs inputs;
    const std::string resources = resources_dir(args);
    if (!resources.empty() && fs::exists(fs::path(resources) / kDefaultModelFileName))
        inputs.trained_model = (fs::path(resources) / kDefaultModelFileName).string();
    if (!inputs.trained_model.empty()) inputs.layout_models.push_back(inputs.trained_model);
    std::error_code ec;
    std::vector<std::string> zoo;
    for (const auto& entry : fs::directory_iterator(fs::path(resources) / "models", ec))
        if (entry.path().extension() == ".cflow") zoo.push_back(entry.path().string());
    std::sort(zoo.begin(), zoo.end());
    inputs.layout_models.insert(inputs.layout_models.end(), zoo.begin(), zoo.end());

    CancelToken cancel;
    InterruptGuard guard(cancel);
    const fs::path work = fs::temp_directory_path(ec) / ("cflow-scorecard-" + std::to_string(getpid()));
    fs::create_directories(work, ec);
    if (ec) return fail("scorecard", work.string() + ": " + ec.message());
    struct Cleanup {
        fs::path dir;
        ~Cleanup() {
            std::error_code e;
            fs::remove_all(dir, e);
        }
    } cleanup{work};
    inputs.moe_model = (work / "moe.cflow").string();
    inputs.dense_cflow = (work / "dense.cflow").string();
    inputs.dense_vflow = (work / "dense.vflow").string();
    std::fprintf(stderr, "scorecard: generating synthetic models in %s\n", work.string().c_str());
    if (Status s = write_synth(moe_spec(quick), {{inputs.moe_model, ContainerFormat::Cflow}}, options.threads, cancel); !s)
        return fail("scorecard", "synthetic MoE: " + s.error());
    if (Status s = write_synth(dense_spec(quick), {{inputs.dense_cflow, ContainerFormat::Cflow}, {inputs.dense_vflow, ContainerFormat::Vflow}},
                               options.threads, cancel); !s)
        return fail("scorecard", "synthetic dense model: " + s.error());
    inputs.layout_models.push_back(inputs.moe_model);
    inputs.layout_models.push_back(inputs.dense_cflow);

    auto results = run_scorecard(inputs, options, [&](int n, int done, int total) {
        std::fprintf(stderr, "scorecard: claim %d (%d/%d)\n", n, done + 1, total);
        return !cancel.is_cancelled();
    }, &cancel);
    if (!results) return fail("scorecard", results.error());

    if (json) {
        nlohmann::json out = nlohmann::json::array();
        for (const ClaimResult& r : *results) out.push_back(claim_json(r));
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    ThreadPool pool{options.threads};
    const SharedBandwidthProbe shared = shared_read_bandwidth(pool);  // the figure bench and the GUI show
    if (!shared.reused) std::fprintf(stderr, "scorecard: measuring the read bandwidth (%s)\n", shared.remeasureReason.c_str());
    if (!shared.storeError.empty()) std::fprintf(stderr, "scorecard: read bandwidth not stored: %s\n", shared.storeError.c_str());
    std::printf("cflow scorecard: the paper's eight claims measured here (kernel path %s, %u threads, read bandwidth "
                "%s)%s\n\n",
                std::string(isa_name(selected_isa())).c_str(), pool.size(), shared_probe_text(shared.probe).c_str(),
                quick ? " [--quick: small sizes]" : "");
    for (const ClaimResult& r : *results) {
        std::printf("Claim %d  %s: %s\n", r.claim, r.title.c_str(), std::string(verdict_name(r.verdict)).c_str());
        for (const Figure& f : r.measured)
            std::printf("    %-40s %14s %s\n", f.name.c_str(), format_value(f.value).c_str(), f.unit.c_str());
        std::printf("  why:    %s\n  method: %s\n\n", r.reason.c_str(), r.method.c_str());
    }
    const std::string results_md = (fs::path(resources) / "training" / "RESULTS.md").string();
    const std::string table = table_4_1(results_md);
    if (table.empty())
        std::printf("Table 4.1 at our scale: %s not found (pass --resources DIR, the folder with training/RESULTS.md)\n",
                    results_md.c_str());
    else
        std::printf("Table 4.1 at our scale (trained zoo, %s):\n%s", results_md.c_str(), table.c_str());
    return 0;
}

} // namespace cflow::cli
