// run_preflight: open the source as the converter will, plan the output for each
// quantisation, and set what it needs against what this machine has.
#include "cflow/engine/convert/conversion_preflight.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/chat/chat_template.h"
#include "cflow/engine/forward/critical_path.h"
#include "cflow/engine/forward/thread_pool.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "cflow/engine/io/system_memory.h"
#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/gguf.h"
#include "cflow/formats/model_path_kind.h"

namespace cflow {
namespace {

// Working memory beside weights and KV cache: activations, logits, the pool, the allocator.
constexpr uint64_t kRunOverheadBytes = 64ull << 20;
// Room left on the disk beyond the output itself: the file system and other writers need some.
constexpr uint64_t kDiskMarginBytes = 64ull << 20;
constexpr uint32_t kDefaultContextTokens = 4096;

std::string size_text(uint64_t bytes) {
    char buf[32];
    if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(1ull << 30));
    else std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1ull << 20));
    return buf;
}

std::string count_text(uint64_t n) {
    char buf[32];
    if (n >= 1'000'000'000) std::snprintf(buf, sizeof buf, "%.2f B", double(n) / 1e9);
    else if (n >= 1'000'000) std::snprintf(buf, sizeof buf, "%.1f M", double(n) / 1e6);
    else if (n >= 1000) std::snprintf(buf, sizeof buf, "%.1f K", double(n) / 1e3);
    else std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)n);
    return buf;
}

std::string tokenizer_kind_text(TokenizerKind kind) {
    switch (kind) {
        case TokenizerKind::Spm: return "SentencePiece BPE";
        case TokenizerKind::Bpe: return "byte-level BPE";
        case TokenizerKind::WordPiece: return "WordPiece";
    }
    return "tokenizer";
}

void block(PreflightReport& r, std::string message) { r.findings.push_back({true, std::move(message)}); }
void note(PreflightReport& r, std::string message) { r.findings.push_back({false, std::move(message)}); }

std::string percent_text(double fraction) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
    return buf;
}

// What re-quantising costs, said before the user picks it: which of the file's quantised
// matrices change and by how much (ConversionPlan::sampled_weight_change), against keeping them.
void explain_requantising(PreflightReport& r, bool gguf, bool keep_source_types) {
    const auto& changed = r.plan.requantised_tensors;
    if (changed.empty()) return;
    std::string names;
    for (size_t i = 0; i < changed.size() && i < 3; ++i) names += (i ? ", " : "") + changed[i];
    if (changed.size() > 3) names += ", ...";
    if (keep_source_types) {
        note(r, std::to_string(changed.size()) + " of the file's matrices have a type no tile holds and are re-quantised (" +
                    names + "): their weights change by " + percent_text(r.plan.sampled_weight_change) +
                    " RMS; every other matrix keeps its type bit for bit");
        return;
    }
    std::string kept;
    for (const QuantEstimate& e : r.estimates)
        if (e.label == "kept types") kept = "; keeping the file's own types instead gives " + size_text(e.file_bytes) +
                                            (e.weight_change > 0 ? "" : " with nothing changed");
    note(r, std::string("re-quantising changes ") + std::to_string(changed.size()) + " of the " +
                (gguf ? "file's quantised matrices" : "source's quantised matrices") + " (" + names + "): their weights move by " +
                percent_text(r.plan.sampled_weight_change) + " RMS from the file's own values" + kept);
}

void check_tokenizer_and_template(const SourceModel& source, PreflightReport& r) {
    auto tokenizer = Tokenizer::from_metadata(source.metadata);
    if (!tokenizer) {
        block(r, "tokenizer: " + tokenizer.error() +
                     " (a Hugging Face folder needs tokenizer.json or tokenizer.model; a llama2.c checkpoint needs "
                     "its tokenizer.bin)");
    } else {
        r.tokenizer = tokenizer_kind_text((*tokenizer)->kind()) + ", " + std::to_string((*tokenizer)->vocab_size()) + " tokens";
        if ((*tokenizer)->vocab_size() != source.config.vocab_size)
            block(r, "tokenizer: " + std::to_string((*tokenizer)->vocab_size()) + " tokens, but the model's vocabulary has " +
                         std::to_string(source.config.vocab_size) + " rows");
    }
    const auto chat_template = source.metadata.get_string("tokenizer.chat_template");
    r.has_chat_template = chat_template.has_value() && !chat_template->empty();
    if (!r.has_chat_template) {
        note(r, "no chat template in the checkpoint: chat will use the plain \"role: content\" fallback "
                "(a template can be chosen later in the chat settings)");
    } else if (auto compiled = ChatTemplate::compile(*chat_template); !compiled) {
        note(r, "chat template does not compile (" + compiled.error() + "): chat will use the fallback");
    } else if (Status probe = probe_chat_template(*compiled, TemplateOptions{}); !probe) {
        note(r, "chat template was refused (" + probe.error() + "): chat will use the fallback");
    }
}

void count_tensor_types(const SourceModel& source, PreflightReport& r) {
    std::map<std::string, uint64_t> counts;
    for (const auto& [name, t] : source.tensors)
        ++counts[t.dtype == DType::GgmlBlock ? ggml_type_name(t.ggml_type) : std::string(dtype_name(t.dtype))];
    for (const auto& [type, n] : counts) r.source_tensor_types.push_back(type + " x " + std::to_string(n));
}

// A sliding-window layer keeps its window plus one prefill chunk (Session's KV rings).
uint64_t kv_cache_bytes(const ModelConfig& c, uint32_t tokens) {
    uint64_t positions = 0;  // summed over layers
    for (uint32_t l = 0; l < c.n_layers; ++l) {
        const bool sliding = c.sliding_window > 0 && (c.sliding_layers.empty() || (l < c.sliding_layers.size() && c.sliding_layers[l]));
        positions += sliding ? std::min<uint64_t>(tokens, uint64_t{c.sliding_window} + Session::kPrefillChunk - 1) : tokens;
    }
    return 2ull /* K and V */ * c.n_kv_heads * c.head_dim * positions * 2 /* f16 */;
}

void critical_path(const ModelConfig& c, PreflightReport& r) {
    r.pipeline_native = (c.combine_style == CombineStyle::DelayedSum || c.combine_style == CombineStyle::AsyncExperts) &&
                        (c.dense_delay > 0 || c.expert_delay > 0);
    CriticalPathGeometry g;
    g.d_model = c.d_model;
    g.d_ff = c.d_ff;
    g.n_layers = c.n_layers;
    g.n_experts = c.n_experts;
    g.top_k = c.top_k;
    g.expert_d_ff = c.expert_d_ff;
    g.n_heads = c.n_heads;
    g.n_kv_heads = c.n_kv_heads;
    g.head_dim = c.head_dim;
    g.shared_expert_d_ff = c.shared_expert_d_ff;
    g.dense_delay = c.dense_delay;
    g.expert_delay = c.expert_delay;
    g.combine_style = c.combine_style;
    g.n_blocks = c.n_blocks;
    g.n_iter = c.n_iter;
    if (auto analysis = analyze_geometry(g)) {
        r.b_naive_mib = analysis->ideal_totals.b_naive_bytes / kBytesPerMiB;
        r.b_critical_mib = analysis->ideal_totals.b_critical_bytes / kBytesPerMiB;
    }
}

QuantEstimate estimate(const std::string& label, const ConversionPlan& plan, double bandwidth) {
    QuantEstimate e;
    e.label = label;
    e.file_bytes = plan.file_bytes;
    e.decode_bytes_per_token = plan.decode_bytes_per_token;
    e.weight_change = plan.sampled_weight_change;
    e.requantised_tensors = plan.requantised_tensors.size();
    if (bandwidth > 0 && plan.decode_bytes_per_token > 0) e.decode_tokens_per_second = bandwidth / double(plan.decode_bytes_per_token);
    return e;
}

} // namespace

bool PreflightReport::blocked() const {
    return std::any_of(findings.begin(), findings.end(), [](const PreflightFinding& f) { return f.blocking; });
}

Result<PreflightReport> run_preflight(const PreflightRequest& request, const CancelToken* cancel) {
    PreflightReport r;
    r.source_path = request.source_path;
    r.output_path = request.output_path;
    const ModelPathKind kind = sniff_model_path(request.source_path);
    r.source_format = source_format_name(kind);
    if (kind == ModelPathKind::Missing) {
        block(r, request.source_path + ": nothing there (or it cannot be read)");
        return r;
    }
    if (is_cflow_container(kind)) {
        block(r, request.source_path + ": already a converted cflow model; open it in the model library instead");
        return r;
    }
    auto source = open_source_model(request.source_path, request.tokenizer_path);
    if (!source) {
        block(r, source.error());
        return r;
    }
    if (cancel && cancel->is_cancelled()) return cancelled_error("preflight");
    r.config = source->config;
    r.model_name = source->metadata.get_string("general.name").value_or("");
    count_tensor_types(*source, r);
    check_tokenizer_and_template(*source, r);
    critical_path(source->config, r);

    auto plan = plan_conversion(*source, request.options);
    if (!plan) {
        block(r, plan.error());
        return r;
    }
    r.source_opened = true;
    r.plan = *plan;

    if (request.probe_bandwidth) {
        // The figure the inspector and `cflow bench` show too: stored once per machine.
        ThreadPool pool(request.threads);
        const SharedBandwidthProbe shared = shared_read_bandwidth(pool);
        r.read_bandwidth_bytes_per_second = shared.probe.result.bytesPerSecond;
        r.probe_threads = shared.probe.result.threads;
        r.read_bandwidth_source = shared_probe_text(shared.probe);
        if (!shared.reused) note(r, "read bandwidth measured now (" + shared.remeasureReason + ")");
        if (!shared.storeError.empty()) note(r, "the read bandwidth was not stored for next time: " + shared.storeError);
    }
    const double bandwidth = r.read_bandwidth_bytes_per_second;
    for (DType q : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0}) {
        if (cancel && cancel->is_cancelled()) return cancelled_error("preflight");
        ConvertOptions uniform = request.options;
        uniform.keep_source_types = false;
        uniform.weight_quant = q;
        for (TensorClass c : kTensorClasses) set_quant_for(uniform, c, q);
        if (auto p = plan_conversion(*source, uniform)) r.estimates.push_back(estimate(std::string(dtype_name(q)), *p, bandwidth));
    }
    const bool gguf = r.source_format == "gguf";
    // Only a GGUF with quantised matrices has types of its own worth keeping as an option.
    const bool quantised = std::any_of(source->tensors.begin(), source->tensors.end(), [](const auto& named) {
        return named.second.dtype == DType::GgmlBlock || is_block_quant(named.second.dtype);
    });
    const bool keeps = quantised && request.options.keep_source_types;
    if (gguf && quantised && !keeps) {
        ConvertOptions kept = request.options;
        kept.keep_source_types = true;
        if (auto p = plan_conversion(*source, kept)) r.estimates.push_back(estimate("kept types", *p, bandwidth));
    }
    r.estimates.push_back(estimate(keeps ? "kept types" : "chosen", r.plan, bandwidth));
    explain_requantising(r, gguf, request.options.keep_source_types);

    const uint32_t trained = source->config.max_seq_len;
    r.context_tokens = request.context_tokens ? request.context_tokens
                                              : (trained ? std::min(trained, kDefaultContextTokens) : kDefaultContextTokens);
    r.kv_cache_bytes = kv_cache_bytes(source->config, r.context_tokens);
    r.run_memory_bytes = r.plan.file_bytes + r.kv_cache_bytes + kRunOverheadBytes;
    r.available_memory_bytes = query_system_memory().available_bytes;
    if (r.available_memory_bytes > 0 && r.run_memory_bytes > r.available_memory_bytes) {
        std::string advice = source->config.n_experts > 0
                                 ? "; experts can stay on disk (expert reads: staged), only the routed ones are read"
                                 : "; choose a smaller quantisation or context";
        note(r, "running it needs about " + size_text(r.run_memory_bytes) + " but " + size_text(r.available_memory_bytes) +
                    " of memory is available now" + advice);
    }

    if (!request.output_path.empty()) {
        std::error_code ec;
        std::filesystem::path out = path_from_utf8(request.output_path);
        std::filesystem::path folder = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
        if (!std::filesystem::is_directory(folder, ec)) {
            block(r, request.output_path + ": the output folder '" + folder.string() + "' does not exist");
        } else {
            const auto space = std::filesystem::space(folder, ec);
            if (!ec) {
                r.output_free_bytes = space.available;
                // An existing output is replaced only after the new file is complete: both exist at once.
                if (r.plan.file_bytes + kDiskMarginBytes > space.available)
                    block(r, request.output_path + ": the output needs " + size_text(r.plan.file_bytes) + " but only " +
                                 size_text(space.available) + " is free at '" + folder.string() + "'");
            }
            const ModelPathKind out_kind = model_kind_from_name(request.output_path);
            if (out_kind != ModelPathKind::Cflow && out_kind != ModelPathKind::Vflow)
                block(r, request.output_path + ": the output name must end in .cflow or .vflow");
        }
    }
    return r;
}

std::string preflight_text(const PreflightReport& r) {
    std::string s;
    auto line = [&](const std::string& key, const std::string& value) { s += key + ": " + value + "\n"; };
    line("source", r.source_path + (r.source_format.empty() ? "" : " (" + r.source_format + ")"));
    if (r.source_opened) {
        const ModelConfig& c = r.config;
        line("architecture", c.architecture + (r.model_name.empty() ? "" : ", \"" + r.model_name + "\""));
        std::string geometry = "d " + std::to_string(c.d_model) + ", " + std::to_string(c.n_layers) + " layers, " +
                               std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " heads of " +
                               std::to_string(c.head_dim);
        if (c.d_ff) geometry += ", FFN " + std::to_string(c.d_ff);
        if (c.n_experts) geometry += ", " + std::to_string(c.n_experts) + " experts of " + std::to_string(c.expert_d_ff) +
                                     " (top " + std::to_string(c.top_k) + ")";
        geometry += ", vocabulary " + std::to_string(c.vocab_size);
        line("geometry", geometry);
        line("parameters", count_text(r.plan.parameters_total) + " total, " + count_text(r.plan.parameters_active) +
                               " active per token");
        std::string types;
        for (const auto& t : r.source_tensor_types) types += (types.empty() ? "" : ", ") + t;
        line("source tensors", types);
        line("tokenizer", r.tokenizer.empty() ? "none found" : r.tokenizer);
        line("chat template", r.has_chat_template ? "yes" : "none (fallback)");
        for (const QuantEstimate& e : r.estimates) {
            std::string value = size_text(e.file_bytes) + ", " + size_text(e.decode_bytes_per_token) + " read per token";
            if (e.decode_tokens_per_second > 0) {
                char buf[64];
                std::snprintf(buf, sizeof buf, ", at most %.1f tok/s here", e.decode_tokens_per_second);
                value += buf;
            }
            if (e.weight_change > 0) value += ", weights change " + percent_text(e.weight_change) + " RMS";
            line("output " + e.label, value);
        }
        if (r.read_bandwidth_bytes_per_second > 0) {
            line("read bandwidth", r.read_bandwidth_source + "; decode tok/s is at most this / bytes per token");
        }
        line("memory to run", size_text(r.run_memory_bytes) + " (weights + F16 KV cache of " +
                                  std::to_string(r.context_tokens) + " tokens " + size_text(r.kv_cache_bytes) + " + 64 MiB)" +
                                  (r.available_memory_bytes ? "; " + size_text(r.available_memory_bytes) + " available" : ""));
        if (r.pipeline_native) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "B_naive %.2f MiB, B_critical %.2f MiB per token (%.2fx)", r.b_naive_mib,
                          r.b_critical_mib, r.b_critical_mib > 0 ? r.b_naive_mib / r.b_critical_mib : 0.0);
            line("critical path", buf);
        }
        if (!r.output_path.empty())
            line("output", r.output_path + (r.output_free_bytes ? " (" + size_text(r.output_free_bytes) + " free)" : ""));
    }
    for (const PreflightFinding& f : r.findings) line(f.blocking ? "blocked" : "note", f.message);
    line("verdict", r.blocked() ? "cannot convert" : "ready to convert");
    return s;
}

std::string preflight_json(const PreflightReport& r) {
    nlohmann::json j;
    j["source"] = r.source_path;
    j["source_format"] = r.source_format;
    j["output"] = r.output_path;
    j["source_opened"] = r.source_opened;
    j["blocked"] = r.blocked();
    nlohmann::json findings = nlohmann::json::array();
    for (const PreflightFinding& f : r.findings) findings.push_back({{"blocking", f.blocking}, {"message", f.message}});
    j["findings"] = findings;
    if (r.source_opened) {
        const ModelConfig& c = r.config;
        j["architecture"] = c.architecture;
        j["name"] = r.model_name;
        j["geometry"] = {{"d_model", c.d_model}, {"n_layers", c.n_layers}, {"n_heads", c.n_heads},
                         {"n_kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim}, {"d_ff", c.d_ff},
                         {"n_experts", c.n_experts}, {"top_k", c.top_k}, {"expert_d_ff", c.expert_d_ff},
                         {"vocab_size", c.vocab_size}, {"max_seq_len", c.max_seq_len}};
        j["parameters_total"] = r.plan.parameters_total;
        j["parameters_active"] = r.plan.parameters_active;
        j["source_tensor_types"] = r.source_tensor_types;
        j["tokenizer"] = r.tokenizer;
        j["has_chat_template"] = r.has_chat_template;
        j["output_bytes"] = r.plan.file_bytes;
        j["bytes_by_class"] = {{"embeddings", r.plan.embedding_bytes}, {"attention", r.plan.attention_bytes},
                               {"ffn", r.plan.dense_ffn_bytes}, {"experts", r.plan.expert_bank_bytes},
                               {"shared_expert", r.plan.shared_expert_bytes}, {"output", r.plan.output_bytes},
                               {"other", r.plan.other_bytes}};
        nlohmann::json estimates = nlohmann::json::array();
        for (const QuantEstimate& e : r.estimates)
            estimates.push_back({{"quant", e.label}, {"file_bytes", e.file_bytes},
                                 {"decode_bytes_per_token", e.decode_bytes_per_token},
                                 {"decode_tokens_per_second", e.decode_tokens_per_second},
                                 {"weight_change", e.weight_change}, {"requantised_tensors", e.requantised_tensors}});
        j["estimates"] = estimates;
        j["output_free_bytes"] = r.output_free_bytes;
        j["context_tokens"] = r.context_tokens;
        j["kv_cache_bytes"] = r.kv_cache_bytes;
        j["run_memory_bytes"] = r.run_memory_bytes;
        j["available_memory_bytes"] = r.available_memory_bytes;
        j["read_bandwidth_bytes_per_second"] = r.read_bandwidth_bytes_per_second;
        j["probe_threads"] = r.probe_threads;
        j["read_bandwidth_source"] = r.read_bandwidth_source;
        j["pipeline_native"] = r.pipeline_native;
        if (r.pipeline_native) {
            j["b_naive_mib"] = r.b_naive_mib;
            j["b_critical_mib"] = r.b_critical_mib;
        }
    }
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace cflow
