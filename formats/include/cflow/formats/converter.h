#pragma once
// SourceModel -> .cflow or .vflow (ConvertOptions::format). Multi-threaded tile encoding, progress and cancellation,
// written to a temporary file and renamed on success (the target is never left half-written).
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/formats/dtype.h"
#include "cflow/base/result.h"
#include "cflow/formats/source_model.h"
#include "cflow/formats/vflow_layout.h"

namespace cflow {

// The classes of weight matrices a quantisation can be chosen for separately.
enum class TensorClass : uint8_t {
    Embeddings,  // token embedding table
    Attention,   // Q, K, V, O
    DenseFfn,    // gate, up, down of the dense FFN
    Experts,     // routed experts and the shared expert
    Output,      // LM head (absent when tied to the embeddings)
};
inline constexpr TensorClass kTensorClasses[] = {TensorClass::Embeddings, TensorClass::Attention, TensorClass::DenseFfn,
                                                 TensorClass::Experts, TensorClass::Output};
std::string_view tensor_class_name(TensorClass c);  // "embeddings", "attention", "ffn", "experts", "output"
std::optional<TensorClass> parse_tensor_class(std::string_view name);

struct ConvertOptions {
    DType weight_quant = DType::Q4_0;    // F32, F16, Q8_0, Q4_0, Q4_K, Q5_K or Q6_K for the weight tiles
    std::optional<DType> embedding_quant;  // token embedding, and the LM head unless output_quant; unset = weight_quant
    // Per-class overrides of weight_quant (unset = weight_quant; output: embedding_quant, else weight_quant).
    std::optional<DType> attention_quant;
    std::optional<DType> ffn_quant;
    std::optional<DType> expert_quant;
    std::optional<DType> output_quant;
    unsigned threads = 0;                // 0 = hardware concurrency
    // Block-quantized source tensors whose type equals the target are re-tiled block by block (bit-exact).
    bool retile_exact = true;
    // Every quantised weight matrix whose source type a tile holds (Q8_0, Q4_0, and a GGUF's Q4_K,
    // Q5_K, Q6_K, Q2_K, Q3_K, IQ4_XS, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4) keeps that type, re-tiled
    // bit-exactly: a Q4_K_M or Q3_K_M file stays its own mix. Other quantised types (Q8_K, which
    // no model file uses) get their class's quant and are listed in ConvertReport::requantised_tensors.
    // Unquantised matrices (F32, F16, BF16) keep F16 / F32 (BF16 as F32) where the source has some
    // block-quantised matrix (the recipe left them so), and get their class's quant where it has
    // none (an F16 export). Front ends set it for GGUF sources unless asked to re-quantise.
    bool keep_source_types = false;
    // Which tile types keep_source_types keeps (bit 1 << DType, as the engine's dtype_bit); 0 keeps
    // every one above. A quantised source type outside the mask becomes the nearest kept type that
    // loses nothing of its precision (Q2_K / Q3_K / IQ4_XS -> Q6_K, Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 -> Q8_0),
    // else the class's target, and is listed in requantised_tensors. Front ends pass the engine's
    // kNativeSpeedTileDtypes: the types it has fast kernels for.
    uint32_t keep_dtype_mask = 0;
    // Container: per-layer regions (.cflow, cflow-format.md) or stage-major groups (.vflow, vflow-format.md).
    ContainerFormat format = ContainerFormat::Cflow;
    // Runs on the finished temporary file before it replaces the output: a front end passes
    // the engine's own loader here, so a conversion never ends "successfully" with a file the
    // engine refuses (formats cannot call the engine itself). An error keeps the output as it was.
    std::function<Status(const std::string& written_path)> verify_output;
};

struct ConvertProgress {
    uint64_t tensors_done = 0;
    uint64_t tensors_total = 0;
    uint64_t bytes_written = 0;
    std::string current;                 // tensor being written
};

using ProgressFn = std::function<void(const ConvertProgress&)>;

struct ConvertReport {
    uint64_t file_bytes = 0;
    uint64_t tiles = 0;
    uint64_t tensors = 0;
    uint64_t retiled_exact_tensors = 0;  // copied block-for-block from the source
    // "NAME: Q5_0 -> q8_0" for block-quantised source matrices whose blocks were re-quantised
    // (the values changed): each costs some of the quality the source file had.
    std::vector<std::string> requantised_tensors;
    // "NAME: why" for source tensors left out because the forward never reads them (a stored LM
    // head the config ties to the embeddings); any other unread tensor fails the conversion.
    std::vector<std::string> ignored_tensors;
    // "V of Qkv: q4_k -> q8_0 (288 inputs are not whole 256-weight super-blocks)", once per
    // segment: a K-quant target its matrices' input dimension cannot take.
    std::vector<std::string> kquant_fallbacks;
    // Temp files of this output left by earlier killed conversions (AtomicFileWriter): removed
    // when untouched for an hour, else only listed (another conversion may still be writing).
    std::vector<std::string> removed_stale_temp_files;
    std::vector<std::string> recent_temp_files;
};

// The tile type a class of matrices gets under these options (the fallbacks above applied).
DType quant_for(const ConvertOptions& options, TensorClass c);
// Sets the override of one class (Embeddings sets embedding_quant).
void set_quant_for(ConvertOptions& options, TensorClass c, DType quant);

// Validates the config (dims, heads, known combine style, delays < layers, top_k <= E, tensor
// presence and shapes) and refuses an output that is one of the source's own files before
// writing anything.
Result<ConvertReport> convert_to_cflow(const SourceModel& source, const std::string& out_path,
                                       const ConvertOptions& options, const ProgressFn& progress = {},
                                       const CancelToken* cancel = nullptr);

} // namespace cflow
