// run_paper_scorecard: the synthetic models into a temporary folder, the inputs, the claims.
#include "cflow/engine/scorecard/paper_scorecard.h"

#include <algorithm>
#include <filesystem>
#include <random>
#include <sstream>
#include <utility>

#include "cflow/engine/install/default_model.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/synth/synth_model.h"
#include "cflow/formats/synth/synth_spec.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

// Removes the folder on every way out of the run, so a cancelled or failed run leaves nothing.
struct TemporaryFolder {
    fs::path path;
    TemporaryFolder() = default;
    TemporaryFolder(const TemporaryFolder&) = delete;
    TemporaryFolder& operator=(const TemporaryFolder&) = delete;
    ~TemporaryFolder() {
        std::error_code ec;
        if (!path.empty()) fs::remove_all(path, ec);
    }
};

// A fresh folder under parent: a random name, so two runs (the CLI and the desktop) never share one.
Status make_temporary_folder(const std::string& parent, TemporaryFolder& folder) {
    std::error_code ec;
    const fs::path base = parent.empty() ? fs::temp_directory_path(ec) : fs::path(parent);
    if (ec) return make_error(ErrorKind::Io, "scorecard: no temporary folder: " + ec.message());
    std::random_device entropy;
    for (int attempt = 0; attempt < 8; ++attempt) {
        std::ostringstream name;
        name << "cflow-scorecard-" << std::hex << entropy() << entropy();
        const fs::path candidate = base / name.str();
        if (fs::create_directory(candidate, ec)) {
            folder.path = candidate;
            return {};
        }
        if (ec) return make_error(ErrorKind::Io, "scorecard: cannot create " + candidate.string() + ": " + ec.message());
    }
    return make_error(ErrorKind::Io, "scorecard: no unused folder name under " + base.string());
}

Status write_synth(const SynthSpec& spec, const std::vector<std::pair<std::string, ContainerFormat>>& outputs,
                   unsigned threads, const CancelToken* cancel) {
    auto model = make_synth_model(spec, threads, cancel);
    if (!model) return model.take_error();
    for (const auto& [path, format] : outputs) {
        ConvertOptions options;
        options.weight_quant = spec.quant;
        options.format = format;
        options.threads = threads;
        auto converted = convert_to_cflow(model->source, path, options, {}, cancel);
        if (!converted) return converted.take_error();
    }
    return {};
}

void add_layout_models(const std::string& resources_dir, ScorecardInputs& inputs) {
    if (resources_dir.empty()) return;
    std::error_code ec;
    const fs::path trained = fs::path(resources_dir) / kDefaultModelFileName;
    if (fs::exists(trained, ec)) {
        inputs.trained_model = trained.string();
        inputs.layout_models.push_back(inputs.trained_model);
    }
    std::vector<std::string> zoo;
    for (const auto& entry : fs::directory_iterator(fs::path(resources_dir) / "models", ec))
        if (entry.path().extension() == ".cflow") zoo.push_back(entry.path().string());
    std::sort(zoo.begin(), zoo.end());
    inputs.layout_models.insert(inputs.layout_models.end(), zoo.begin(), zoo.end());
}

} // namespace

// The MoE for claims 1 and 7: DelayedSum dd 1 de 2 like arch2_4_combined, experts large enough
// that 4 KiB sector rounding of direct reads stays below 1% of an expert.
SynthSpec scorecard_moe_spec(bool quick) {
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
SynthSpec scorecard_dense_spec(bool quick) {
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

Result<std::vector<ClaimResult>> run_paper_scorecard(const PaperScorecardSetup& setup,
                                                     const PaperScorecardProgress& progress,
                                                     const CancelToken* cancel) {
    const ScorecardOptions& options = setup.options;
    const int total = options.claims.empty() ? 8 : static_cast<int>(options.claims.size());
    const auto cancelled = [&] { return cancel && cancel->is_cancelled(); };
    const auto report = [&](PaperScorecardStep step) { return !progress || progress(step); };

    ScorecardInputs inputs;
    add_layout_models(setup.resources_dir, inputs);
    TemporaryFolder work;
    if (Status s = make_temporary_folder(setup.temp_parent, work); !s) return s.take_error();
    inputs.moe_model = (work.path / "moe.cflow").string();
    inputs.dense_cflow = (work.path / "dense.cflow").string();
    inputs.dense_vflow = (work.path / "dense.vflow").string();

    if (!report({0, 0, total, "generating the synthetic MoE in " + work.path.string()}) || cancelled())
        return make_error(ErrorKind::Cancelled, "scorecard: cancelled");
    if (Status s = write_synth(scorecard_moe_spec(options.quick), {{inputs.moe_model, ContainerFormat::Cflow}},
                               options.threads, cancel);
        !s)
        return make_error(s.kind(), "scorecard: synthetic MoE (" + inputs.moe_model + "): " + s.error());
    if (!report({0, 0, total, "generating the synthetic dense model"}) || cancelled())
        return make_error(ErrorKind::Cancelled, "scorecard: cancelled");
    if (Status s = write_synth(scorecard_dense_spec(options.quick),
                               {{inputs.dense_cflow, ContainerFormat::Cflow}, {inputs.dense_vflow, ContainerFormat::Vflow}},
                               options.threads, cancel);
        !s)
        return make_error(s.kind(), "scorecard: synthetic dense model (" + inputs.dense_cflow + "): " + s.error());
    inputs.layout_models.push_back(inputs.moe_model);
    inputs.layout_models.push_back(inputs.dense_cflow);

    return run_scorecard(
        inputs, options,
        [&](int claim, int done, int all) { return report({claim, done, all, "claim " + std::to_string(claim)}); },
        cancel);
}

std::string results_table_4_1(std::string_view results_markdown) {
    std::string heading, table;
    bool in_table = false;
    size_t start = 0;
    while (start <= results_markdown.size()) {
        size_t end = results_markdown.find('\n', start);
        if (end == std::string_view::npos) end = results_markdown.size();
        std::string_view line = results_markdown.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (heading.empty() && !line.empty() && line.front() == '#') heading = line;
        if (!line.empty() && line.front() == '|') {
            table.append(line).push_back('\n');
            in_table = true;
        } else if (in_table) {
            break;
        }
        start = end + 1;
    }
    if (table.empty()) return {};
    return heading.empty() ? table : heading + "\n\n" + table;
}

} // namespace cflow
