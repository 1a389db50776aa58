#pragma once
// A synth model in memory: every tensor generated once, directly in its final type, into one
// MemoryFile (the only copy of the weights), viewed as a SourceModel for the converter and as
// GGUF tensors and metadata for write_gguf.
#include <cstdint>
#include <string>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/formats/gguf_writer.h"
#include "cflow/formats/source_model.h"
#include "cflow/formats/synth/synth_spec.h"

namespace cflow {

struct SynthModel {
    SourceModel source;                      // config, metadata (the GGUF keys as read back), tensors
    std::vector<GgufKeyValue> gguf_metadata;
    std::vector<std::string> tensor_order;   // token_embd, blk.0 ... blk.N-1, output_norm, output
    uint64_t weight_count = 0;               // elements of all tensors
    uint64_t weight_bytes = 0;               // their bytes (quantised blocks + f32 vectors)
};

// Tensors (shapes as source_model.h names them; Q/K rows in the GGUF llama RoPE order, as
// llama.cpp expects, with rope_interleaved set so the converter permutes them for .cflow):
//   token_embd, output: std 1 and 1/sqrt(d); Q, K, V, gate, up, expert gate/up: 1/sqrt(fan_in);
//   attn_output, ffn_down, expert down: 1/sqrt(fan_in) / sqrt(2 * layers), so the residual stream
//   stays near unit RMS through every layer; norms: uniform in [0.9375, 1.0625); router: f32 with
//   std 1/sqrt(d). A MoE layer without a dense FFN normalises with ffn_norm (llama GGUF naming).
// Generation runs on `threads` threads (0 = all cores) in chunks with their own seeds.
Result<SynthModel> make_synth_model(const SynthSpec& spec, unsigned threads, const CancelToken* cancel);

} // namespace cflow
