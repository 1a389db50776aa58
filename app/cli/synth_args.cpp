// SynthSpec from `cflow synth`'s command line: preset, overrides, then the spec's own checks.
#include "synth_args.h"

#include <optional>

#include "combine_style_arg.h"

namespace cflow::cli {
namespace {

// An option's value into `out` when it is given.
template <class T>
void take(const std::optional<long long>& value, T& out) {
    if (value) out = static_cast<T>(*value);
}

void read_geometry(const SynthArgs& a, SynthSpec& s) {
    take(a.d, s.d_model);
    take(a.layers, s.n_layers);
    take(a.heads, s.n_heads);
    if (a.heads && !a.kv_heads && s.name == "custom") s.n_kv_heads = s.n_heads;  // no GQA by default
    take(a.kv_heads, s.n_kv_heads);
    take(a.d_ff, s.d_ff);
    take(a.experts, s.n_experts);
    take(a.top_k, s.top_k);
    take(a.expert_hidden, s.expert_d_ff);
    take(a.vocab, s.vocab);
    take(a.dense_delay, s.dense_delay);
    take(a.expert_delay, s.expert_delay);
}

Status read_format_options(const SynthArgs& a, SynthSpec& s) {
    if (const auto& q = a.quant) {
        if (*q == "q4_0" || *q == "Q4_0") s.quant = DType::Q4_0;
        else if (*q == "q8_0" || *q == "Q8_0") s.quant = DType::Q8_0;
        else if (*q == "q4_k_m" || *q == "Q4_K_M") s.quant = DType::Q4_K;
        else if (*q == "q4_1" || *q == "Q4_1") s.quant = DType::Q4_1;
        else if (*q == "q5_0" || *q == "Q5_0") s.quant = DType::Q5_0;
        else if (*q == "q5_1" || *q == "Q5_1") s.quant = DType::Q5_1;
        else if (*q == "iq4_nl" || *q == "IQ4_NL") s.quant = DType::IQ4_NL;
        else return make_error("option --quant: '" + *q + "' is not " + std::string(kSynthQuantNames) + " (synth writes ggml blocks only)");
    }
    if (a.combine_style) {
        auto style = parse_combine_style(*a.combine_style);
        if (!style) return style.take_error();
        s.combine_style = *style;
    }
    s.seed = static_cast<uint64_t>(a.seed);
    s.router_skew = a.router_skew;
    return {};
}

} // namespace

Result<SynthSpec> synth_spec_from_args(const SynthArgs& args) {
    SynthSpec s;
    if (const auto& name = args.preset) {
        auto p = synth_preset(*name);
        if (!p) return make_error("option --preset: '" + *name + "' is not one of " + synth_preset_names());
        s = *p;
    } else {
        if (!args.d) return make_error("option --d is required without --preset");
        if (!args.layers) return make_error("option --layers is required without --preset");
        if (!args.heads) return make_error("option --heads is required without --preset");
        if (!args.d_ff && !args.experts)
            return make_error("option --d-ff or --experts is required without --preset");
    }
    read_geometry(args, s);
    if (Status st = read_format_options(args, s); !st) return st.take_error();
    if (s.n_experts == 0) {
        // A preset's expert settings lapse with --experts 0; given explicitly they are a mistake.
        if (args.top_k) return make_error("option --top-k needs --experts N (N > 0)");
        if (args.expert_hidden) return make_error("option --expert-hidden needs --experts N (N > 0)");
        s.top_k = 0;
        s.expert_d_ff = 0;
    }
    if (Status st = check_synth_spec(s); !st) return st.take_error();
    return s;
}

} // namespace cflow::cli
