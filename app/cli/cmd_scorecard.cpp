// cflow scorecard: the paper's eight claims (Table 1.1) measured on this machine, each with its
// figures, method and verdict (engine/include/cflow/engine/scorecard/scorecard.h), then Table 4.1
// at our scale from the trained zoo (resources/training/RESULTS.md). The run, synthetic models
// included, is the engine's run_paper_scorecard (the desktop dialog runs the same in-process).
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

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/thread_pool.h"
#include "cflow/engine/install/default_model.h"
#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/scorecard/paper_scorecard.h"
#include "commands.h"
#include "interrupt.h"

namespace cflow::cli {
namespace {

namespace fs = std::filesystem;

// The folder holding default-model.cflow, models/ and training/: --resources, else the default
// model's folder.
std::string resources_dir(const ScorecardArgs& args) {
    if (args.resources) return *args.resources;
    if (auto model = default_model_path()) return fs::path(*model).parent_path().string();
    return "";
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
    PaperScorecardSetup setup;
    setup.options = options;
    setup.resources_dir = resources_dir(args);
    CancelToken cancel;
    InterruptGuard guard(cancel);
    auto results = run_paper_scorecard(setup, [&](const PaperScorecardStep& step) {
        if (step.claim == 0) std::fprintf(stderr, "scorecard: %s\n", step.what.c_str());
        else std::fprintf(stderr, "scorecard: claim %d (%d/%d)\n", step.claim, step.done + 1, step.total);
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
    const std::string results_md = (fs::path(setup.resources_dir) / "training" / "RESULTS.md").string();
    std::ifstream results_in(results_md, std::ios::binary);
    std::ostringstream results_text;
    results_text << results_in.rdbuf();
    const std::string table = results_in ? results_table_4_1(results_text.str()) : std::string();
    if (table.empty())
        std::printf("Table 4.1 at our scale: %s not found (pass --resources DIR, the folder with training/RESULTS.md)\n",
                    results_md.c_str());
    else
        std::printf("Table 4.1 at our scale (trained zoo, %s):\n%s", results_md.c_str(), table.c_str());
    return 0;
}

} // namespace cflow::cli
