#pragma once
// Everything a person should know before a conversion writes a byte: can this checkpoint be
// converted (and if not, why and what would be needed), what it holds (architecture,
// parameters, tokenizer, chat template), what the output will cost (its exact size per
// quantisation, the disk space at the output, the memory to run it) and what this machine
// can make of it (decode speed from the probed read bandwidth; B_naive / B_critical for
// pipeline-native models). Shared by `cflow convert --preflight` and the conversion wizard.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/formats/conversion_plan.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/source_model.h"

namespace cflow {

struct PreflightRequest {
    std::string source_path;      // HF folder / safetensors, GGUF, llama2.c .bin
    std::string tokenizer_path;   // llama2.c: tokenizer.bin; else "" (found beside / inside the source)
    std::string output_path;      // "" = no output chosen yet (no disk check)
    ConvertOptions options;       // the quantisation chosen per class, the container
    uint32_t context_tokens = 0;  // for the memory estimate; 0 = min(the model's context, 4096)
    bool probe_bandwidth = true;  // measure the read bandwidth (~0.2 s) for the speed estimate
    unsigned threads = 0;         // probe threads; 0 = hardware concurrency
};

struct PreflightFinding {
    bool blocking = false;        // the conversion cannot go ahead (the wizard disables Next)
    std::string message;          // what, where, and what would be needed
};

struct QuantEstimate {
    std::string label;            // "f32", "f16", "q8_0", "q4_0", "kept types" (a GGUF's own), "chosen"
    uint64_t file_bytes = 0;
    double weight_change = 0;     // ConversionPlan::sampled_weight_change: 0 = nothing re-quantised
    size_t requantised_tensors = 0;  // block-quantised source matrices whose values change
    uint64_t decode_bytes_per_token = 0;
    double decode_tokens_per_second = 0;  // bandwidth / bytes per token; 0 without a probe
};

struct PreflightReport {
    std::string source_path;
    std::string output_path;
    std::string source_format;    // "gguf", "safetensors", "llama2c"; "" when unknown
    bool source_opened = false;   // read and passed the converter's checks
    ModelConfig config;
    std::string model_name;       // general.name, if any
    std::string tokenizer;        // "SentencePiece BPE, 32000 tokens"; "" when none was found
    bool has_chat_template = false;
    std::vector<std::string> source_tensor_types;  // "q4_K x 154", ... by count
    ConversionPlan plan;          // with the chosen options (valid when source_opened)
    std::vector<QuantEstimate> estimates;  // every class at f32, f16, q8_0, q4_0, a GGUF's kept types, the chosen mix
    uint64_t output_free_bytes = 0;        // at the output's folder; 0 when unknown
    uint32_t context_tokens = 0;
    uint64_t kv_cache_bytes = 0;           // F16 cache at context_tokens
    uint64_t run_memory_bytes = 0;         // weights + KV cache + working memory
    uint64_t available_memory_bytes = 0;   // now, on this machine
    double read_bandwidth_bytes_per_second = 0;
    unsigned probe_threads = 0;
    std::string read_bandwidth_source;     // shared_probe_text(): the figure, threads, when measured
    bool pipeline_native = false;          // a delayed schedule: B_naive / B_critical below apply
    double b_naive_mib = 0, b_critical_mib = 0;  // per token at 0.5 byte/weight (critical_path.h)
    std::vector<PreflightFinding> findings;

    bool blocked() const;
};

// Never fails for a bad source: that is a blocking finding. An Error only for a cancel.
Result<PreflightReport> run_preflight(const PreflightRequest& request, const CancelToken* cancel = nullptr);

// Human-readable, one fact a line (the CLI prints it; the wizard shows the same lines).
std::string preflight_text(const PreflightReport& report);
// One JSON object (keys as the fields above; sizes in bytes, speeds in tokens/s).
std::string preflight_json(const PreflightReport& report);

} // namespace cflow
