#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/model_features.h"
#include "console.h"
#include "commands.h"

namespace cflow::cli {
namespace {

using json = nlohmann::ordered_json;

const char* role_name(SegmentRole role) {
    static constexpr const char* kNames[] = {"attn_norm", "q_norm", "k_norm", "qkv", "qkv_bias", "attn_out",
                                             "ffn_norm", "gate_up", "down", "moe_norm", "router", "expert_table",
                                             "expert_bank", "shared_gate_up", "shared_down", "shared_gate",
                                             "output_norm", "lm_head", "token_embd"};
    auto i = static_cast<size_t>(role);
    return i < std::size(kNames) ? kNames[i] : "unknown";
}

const char* combine_style_name(uint8_t style) {
    static constexpr const char* kNames[] = {"ParallelSqrt2", "DelayedSum", "AsyncExperts", "Sequential",
                                             "DecoupledStreams", "PipelineRegisters", "FixedPoint"};
    return style < std::size(kNames) ? kNames[style] : "unknown";
}

// Metadata values are summarised: arrays by length and first items, long strings cut.
json summarise(const MetaValue& v) {
    return std::visit(
        [](const auto& x) -> json {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::string>) return x.size() > 200 ? x.substr(0, 200) + "…" : x;
            else if constexpr (std::is_same_v<T, std::vector<std::string>> || std::is_same_v<T, std::vector<float>> ||
                               std::is_same_v<T, std::vector<int32_t>>) {
                json head = json::array();
                for (size_t i = 0; i < x.size() && i < 8; ++i) head.push_back(x[i]);
                return json{{"array_length", x.size()}, {"first", head}};
            } else return x;
        },
        v);
}

json describe(const CflowFile& f) {
    const GlobalHeader& h = f.header();
    const ModelParams& p = f.params();
    json j;
    j["file"] = f.path();
    j["file_bytes"] = f.file_bytes();
    j["version"] = h.version;
    const auto architecture = f.metadata().get_string("general.architecture");
    j["architecture"] = architecture ? terminal_safe(*architecture) : std::string("unknown");
    j["geometry"] = {{"d_model", h.d_model}, {"n_layers", h.n_layers}, {"n_heads", h.n_heads},
                     {"n_kv_heads", h.n_kv_heads}, {"head_dim", h.head_dim}, {"d_ff", h.d_ff},
                     {"n_experts", h.n_experts}, {"top_k", h.top_k}, {"expert_d_ff", h.expert_d_ff},
                     {"shared_expert_d_ff", p.shared_expert_d_ff}, {"vocab_size", h.vocab_size},
                     {"max_seq_len", h.max_seq_len}, {"sliding_window", h.sliding_window},
                     {"tile_rows", h.tile_rows}, {"tile_cols", h.tile_cols}};
    j["weight_quant"] = std::string(dtype_name(static_cast<DType>(h.weight_quant)));
    j["schedule"] = {{"combine_style", combine_style_name(h.combine_style)}, {"dense_delay", h.dense_delay},
                     {"expert_delay", h.expert_delay}, {"merge_interval", p.merge_interval},
                     {"n_blocks", p.n_blocks}, {"n_iter", p.n_iter}};
    j["semantics"] = {{"norm_eps", p.norm_eps}, {"rope_theta", p.rope_theta}, {"rope_fraction", p.rope_fraction},
                      {"ffn_activation", p.ffn_activation == 0 ? "swiglu" : "geglu_tanh"},
                      {"router_mode", p.router_mode == 0 ? "softmax_topk" : "softmax_all_no_renorm"},
                      {"feature_flags", h.feature_flags}, {"final_logit_softcap", h.final_logit_softcap},
                      {"attn_logit_softcap", p.attn_logit_softcap}, {"embedding_scale", p.embedding_scale}};
    json features = json::array();
    for (const ModelFeature& feature : describe_features(f)) features.push_back({{"name", feature.name}, {"detail", feature.detail}});
    j["semantics"]["features"] = features;
    j["semantics"]["extended_features"] = p.extended_features;
    j["semantics"]["query_scale"] = p.query_scale;
    j["semantics"]["rope_local_theta"] = p.rope_local_theta;
    j["semantics"]["rope_original_context"] = p.rope_original_context;
    j["semantics"]["rope_attn_factor"] = p.rope_attn_factor;
    if (const auto sliding = f.sliding_layers(); !sliding.empty())
        j["semantics"]["sliding_layers"] = std::vector<int32_t>(sliding.begin(), sliding.end());
    const std::span<const float> divisors = f.rope_freq_factors();
    if (divisors.empty()) {
        j["semantics"]["rope_scaling"] = "none";
    } else {
        const auto [lo, hi] = std::minmax_element(divisors.begin(), divisors.end());
        const char* kind = (p.extended_features & kExtLongRope) ? "longrope (short factors; long ones beyond rope_original_context)"
                           : *lo == *hi                       ? "linear"
                                                              : "per-frequency divisors (Llama 3 or YaRN)";
        j["semantics"]["rope_scaling"] = {{"kind", kind},
                                          {"count", divisors.size()}, {"min", *lo}, {"max", *hi}};
    }
    auto region_json = [](const RegionView& r) {
        json segs = json::array();
        for (const SegmentView& s : r.segments) {
            json seg = {{"role", role_name(s.role)}, {"dtype", std::string(dtype_name(s.dtype))},
                        {"offset", s.offset}, {"bytes", s.bytes}};
            if (!s.parts.empty()) {
                seg["tiles"] = s.tiles.size();
                json parts = json::array();
                for (const TilePart& part : s.parts) {
                    // Payload bytes of the part: its rows times a full row's tiles (headers left out).
                    uint64_t payload = 0;
                    for (uint32_t c = 0; c < s.cols; c += kTileCols)
                        payload += tile_payload_bytes(part.dtype, 1, std::min<uint32_t>(kTileCols, s.cols - c));
                    parts.push_back({{"rows", part.rows}, {"cols", s.cols}, {"dtype", std::string(dtype_name(part.dtype))},
                                     {"payload_bytes", payload * part.rows}});
                }
                seg["parts"] = parts;
            }
            segs.push_back(seg);
        }
        return json{{"index", r.index}, {"offset", r.offset}, {"bytes", r.bytes}, {"segments", segs}};
    };
    json layers = json::array();
    for (const RegionView& r : f.layers()) layers.push_back(region_json(r));
    j["layers"] = layers;
    j["vocab"] = region_json(f.vocab());
    json meta = json::object();
    for (const auto& [key, value] : f.metadata().entries()) meta[key] = summarise(value);
    j["metadata"] = meta;
    return j;
}

void print_inspection_text(const json& j) {
    std::printf("%s\n  %llu bytes, .cflow version %u, weights %s\n", j["file"].get<std::string>().c_str(),
                (unsigned long long)j["file_bytes"].get<uint64_t>(), j["version"].get<unsigned>(),
                j["weight_quant"].get<std::string>().c_str());
    std::printf("geometry:\n");
    for (const auto& [k, v] : j["geometry"].items()) std::printf("  %-20s %s\n", k.c_str(), v.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    std::printf("schedule:\n");
    for (const auto& [k, v] : j["schedule"].items()) std::printf("  %-20s %s\n", k.c_str(), v.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    std::printf("semantics:\n");
    for (const auto& [k, v] : j["semantics"].items())
        if (k != "features") std::printf("  %-20s %s\n", k.c_str(), v.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    std::printf("architecture %s:\n", j["architecture"].get<std::string>().c_str());
    if (j["semantics"]["features"].empty()) std::printf("  a plain pre-norm transformer (no extra features)\n");
    for (const auto& feature : j["semantics"]["features"])
        std::printf("  %-20s %s\n", feature["name"].get<std::string>().c_str(), feature["detail"].get<std::string>().c_str());
    std::printf("layout:\n");
    std::map<std::string, std::pair<uint64_t, uint64_t>> by_role;  // role -> (bytes, tiles)
    auto add = [&](const json& region) {
        for (const auto& s : region["segments"]) {
            auto& e = by_role[s["role"].get<std::string>()];
            e.first += s["bytes"].get<uint64_t>();
            e.second += s.value("tiles", uint64_t(0));
        }
    };
    for (const auto& l : j["layers"]) add(l);
    add(j["vocab"]);
    for (const auto& [role, e] : by_role)
        std::printf("  %-16s %12llu bytes  %8llu tiles\n", role.c_str(), (unsigned long long)e.first,
                    (unsigned long long)e.second);
    // Weight bytes by tile type: a GGUF keeps its mix (Q4_K_M: Q4_K and Q6_K), shown as it runs.
    std::map<std::string, uint64_t> by_dtype;
    auto add_types = [&](const json& region) {
        for (const auto& s : region["segments"])
            if (s.contains("parts"))
                for (const auto& part : s["parts"]) by_dtype[part["dtype"].get<std::string>()] += part["payload_bytes"].get<uint64_t>();
    };
    for (const auto& l : j["layers"]) add_types(l);
    add_types(j["vocab"]);
    std::printf("weight types:\n");
    for (const auto& [dtype, bytes] : by_dtype)
        std::printf("  %-16s %12llu bytes\n", dtype.c_str(), (unsigned long long)bytes);
    std::printf("metadata:\n");
    for (const auto& [k, v] : j["metadata"].items()) {
        std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
        if (text.size() > 100) text = text.substr(0, 100) + "...";
        std::printf("  %-36s %s\n", terminal_safe(k).c_str(), text.c_str());  // values are JSON-escaped already
    }
}

} // namespace

int run_inspect(const InspectArgs& args) {
    if (args.positionals.size() != 1) return fail("inspect", "expected exactly one MODEL.cflow");
    auto file = CflowFile::open(args.positionals[0]);
    if (!file) return fail("inspect", file.error());
    const json j = describe(**file);
    if (args.json) std::printf("%s\n", j.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    else print_inspection_text(j);
    return 0;
}

} // namespace cflow::cli
