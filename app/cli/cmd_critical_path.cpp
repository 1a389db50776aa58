// cflow critical-path: the paper's critical-path weight bandwidth (4.5) of a .cflow file or
// of a geometry given on the command line, as a per-layer table or one JSON object.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cflow/engine/forward/critical_path.h"
#include "cflow/formats/cflow_reader.h"
#include "combine_style_arg.h"
#include "commands.h"

namespace cflow::cli {
namespace {

using json = nlohmann::ordered_json;

uint32_t value_or(const std::optional<long long>& value, long long fallback) {
    return static_cast<uint32_t>(value.value_or(fallback));
}

// The geometry from the options (their ranges checked by the parser) and the fallbacks that
// depend on other options.
Result<CriticalPathGeometry> geometry_from_args(const CriticalPathArgs& a) {
    if (!a.d) return make_error("option --d is required without MODEL.cflow");
    if (!a.heads) return make_error("option --heads is required without MODEL.cflow");
    const bool fixed_point = a.blocks || a.iters;
    if (fixed_point && !(a.blocks && a.iters)) return make_error("options --blocks and --iters go together (FixedPoint)");
    if (!fixed_point && !a.layers) return make_error("option --layers is required without MODEL.cflow");

    CriticalPathGeometry g;
    g.d_model = value_or(a.d, 0);
    g.d_ff = value_or(a.d_ff, 0);
    g.n_experts = value_or(a.experts, 0);
    g.top_k = value_or(a.top_k, 0);
    g.expert_d_ff = value_or(a.expert_hidden, 0);
    g.n_heads = value_or(a.heads, 0);
    g.n_kv_heads = value_or(a.kv_heads, g.n_heads);
    g.shared_expert_d_ff = value_or(a.shared_expert_hidden, 0);
    g.dense_delay = value_or(a.dense_delay, 0);
    g.expert_delay = value_or(a.expert_delay, 0);
    if (!a.head_dim && g.d_model % g.n_heads != 0)
        return make_error("option --head-dim is required: --d " + std::to_string(g.d_model) +
                          " is not a multiple of --heads " + std::to_string(g.n_heads));
    g.head_dim = value_or(a.head_dim, g.d_model / g.n_heads);

    g.combine_style = fixed_point ? CombineStyle::FixedPoint : CombineStyle::DelayedSum;
    if (a.combine_style) {
        auto style = parse_combine_style(*a.combine_style);
        if (!style) return style.take_error();
        if (fixed_point && *style != CombineStyle::FixedPoint)
            return make_error("options --blocks/--iters need --combine-style FixedPoint (6), got " + *a.combine_style);
        g.combine_style = *style;
    }
    if (fixed_point) {
        g.n_blocks = value_or(a.blocks, 0);
        g.n_iter = value_or(a.iters, 0);
        // FixedPoint stores its unique blocks as its layers (cflow_layout.h).
        g.n_layers = value_or(a.layers, g.n_blocks);
        if (g.n_layers != g.n_blocks)
            return make_error("option --layers " + std::to_string(g.n_layers) + " must equal --blocks " +
                              std::to_string(g.n_blocks) + " for FixedPoint (or be omitted)");
    } else {
        g.n_layers = value_or(a.layers, 0);
    }
    return g;
}

double to_mib(double bytes) { return bytes / kBytesPerMiB; }

json layers_json(const std::vector<LayerStreams>& rows) {
    json out = json::array();
    for (const LayerStreams& s : rows)
        out.push_back({{"pass", s.layer}, {"block", s.block}, {"attn_bytes", s.attn_bytes},
                       {"dense_bytes", s.dense_bytes}, {"expert_bytes", s.expert_bytes},
                       {"router_bytes", s.router_bytes}, {"naive_bytes", s.naive_bytes},
                       {"critical_bytes", s.critical_bytes}, {"serial_bytes", s.serial_bytes}});
    return out;
}

json totals_json(const CriticalPathTotals& t) {
    return {{"b_naive_mib", to_mib(t.b_naive_bytes)}, {"b_critical_mib", to_mib(t.b_critical_bytes)},
            {"reduction", t.reduction}, {"b_serial_mib", to_mib(t.b_serial_bytes)},
            {"b_critical_unique_blocks_mib", to_mib(t.b_critical_unique_blocks_bytes)},
            {"b_naive_bytes", t.b_naive_bytes}, {"b_critical_bytes", t.b_critical_bytes},
            {"b_serial_bytes", t.b_serial_bytes}};
}

json report_json(const CriticalPathReport& r, const std::string& source) {
    const CriticalPathGeometry& g = r.geometry;
    json j;
    j["source"] = source;
    j["units"] = "MiB per token (2^20 bytes)";
    j["geometry"] = {{"d_model", g.d_model}, {"d_ff", g.d_ff}, {"n_layers", g.n_layers},
                     {"n_experts", g.n_experts}, {"top_k", g.top_k}, {"expert_d_ff", g.expert_d_ff},
                     {"n_heads", g.n_heads}, {"n_kv_heads", g.n_kv_heads}, {"head_dim", g.head_dim},
                     {"shared_expert_d_ff", g.shared_expert_d_ff}};
    j["schedule"] = {{"combine_style", combine_style_label(g.combine_style)}, {"dense_delay", g.dense_delay},
                     {"expert_delay", g.expert_delay}, {"effective_dense_delay", r.effective_dense_delay},
                     {"effective_expert_delay", r.effective_expert_delay}, {"n_blocks", g.n_blocks},
                     {"n_iter", g.n_iter}, {"passes", r.n_passes}};
    j["ideal"] = totals_json(r.ideal_totals);
    j["ideal"]["bytes_per_weight"] = kIdealBytesPerWeight;
    j["ideal"]["layers"] = layers_json(r.ideal);
    if (r.has_actual) {
        j["actual"] = totals_json(r.actual_totals);
        j["actual"]["layers"] = layers_json(r.actual);
    }
    j["note"] = r.note;
    return j;
}

void print_table(const char* title, const std::vector<LayerStreams>& rows, const CriticalPathTotals& t) {
    std::printf("%s (MiB per token)\n", title);
    std::printf("  %5s %5s %10s %10s %10s %10s %10s %10s\n", "pass", "block", "attn", "dense", "expert", "router",
                "naive", "critical");
    for (const LayerStreams& s : rows)
        std::printf("  %5u %5u %10.4f %10.4f %10.4f %10.4f %10.4f %10.4f\n", s.layer, s.block, to_mib(s.attn_bytes),
                    to_mib(s.dense_bytes), to_mib(s.expert_bytes), to_mib(s.router_bytes), to_mib(s.naive_bytes),
                    to_mib(s.critical_bytes));
    std::printf("  B_naive     %8.2f MiB/token (%.0f bytes)\n", to_mib(t.b_naive_bytes), t.b_naive_bytes);
    std::printf("  B_critical  %8.2f MiB/token (%.0f bytes)\n", to_mib(t.b_critical_bytes), t.b_critical_bytes);
    std::printf("  reduction   %8.2fx\n", t.reduction);
    std::printf("  B_serial    %8.2f MiB/token (every stream back-to-back)\n", to_mib(t.b_serial_bytes));
}

void print_report_text(const CriticalPathReport& r, const std::string& source) {
    const CriticalPathGeometry& g = r.geometry;
    std::printf("critical-path bandwidth of %s\n", source.c_str());
    std::printf("  d %u, d_ff %u, layers %u, heads %u/%u x %u", g.d_model, g.d_ff, g.n_layers, g.n_heads,
                g.n_kv_heads, g.head_dim);
    if (g.n_experts > 0) std::printf(", experts %u top-%u hidden %u", g.n_experts, g.top_k, g.expert_d_ff);
    if (g.shared_expert_d_ff > 0) std::printf(", shared expert %u", g.shared_expert_d_ff);
    std::printf("\n  %s, dense delay %u, expert delay %u (effective %u, %u), %u passes", combine_style_label(g.combine_style),
                g.dense_delay, g.expert_delay, r.effective_dense_delay, r.effective_expert_delay, r.n_passes);
    if (g.combine_style == CombineStyle::FixedPoint) std::printf(" (%u blocks x %u iterations)", g.n_blocks, g.n_iter);
    std::printf("\n");
    print_table("ideal streams at 0.5 byte/weight", r.ideal, r.ideal_totals);
    if (g.combine_style == CombineStyle::FixedPoint)
        std::printf("  B_critical, each block streamed once: %.2f MiB/token\n",
                    to_mib(r.ideal_totals.b_critical_unique_blocks_bytes));
    if (r.has_actual) print_table("actual segment bytes of the file", r.actual, r.actual_totals);
    std::printf("note: %s\n", r.note.c_str());
}

} // namespace

int run_critical_path(const CriticalPathArgs& args) {
    if (args.positionals.size() > 1) return fail("critical-path", "expected at most one MODEL.cflow");

    std::optional<Result<CriticalPathReport>> report;
    std::string source;
    if (args.positionals.size() == 1) {
        if (!args.given_geometry.empty())
            return fail("critical-path", "option " + args.given_geometry.front() +
                                             " is not allowed with MODEL.cflow (the header gives the geometry)");
        source = args.positionals[0];
        auto file = CflowFile::open(source);
        if (!file) return fail("critical-path", file.error());
        report.emplace(analyze_file(**file));
    } else {
        auto geometry = geometry_from_args(args);
        if (!geometry) return fail("critical-path", geometry.error());
        source = "the given geometry";
        report.emplace(analyze_geometry(*geometry));
    }
    if (!*report) return fail("critical-path", report->error());
    if (args.json)
        std::printf("%s\n", report_json(report->value(), source).dump(2, ' ', false, json::error_handler_t::replace).c_str());
    else
        print_report_text(report->value(), source);
    return 0;
}

} // namespace cflow::cli
