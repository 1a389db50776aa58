#pragma once
// gpt-oss's stacked expert tensors (model.layers.N.mlp.experts.*) -> the canonical per-layer
// banks the GGUF reader produces (ffn_{gate,up,down}_exps.{weight,bias}); internal to formats/.
#include <cstdint>
#include <map>
#include <string>

#include "cflow/base/result.h"
#include "cflow/formats/safetensors.h"
#include "cflow/formats/source_model.h"

namespace cflow::hf {

// part ("gate_up_proj_blocks", "down_proj_bias", ...) -> the shard holding
// model.layers.<layer>.mlp.experts.<part>, for each layer.
using GptOssExpertParts = std::map<uint32_t, std::map<std::string, const SafetensorsFile*>>;

// A checkpoint stores, per layer, either the released MXFP4 form
//   gate_up_proj_blocks u8 [E, 2 ff, d / 32, 16], gate_up_proj_scales u8 [E, 2 ff, d / 32],
//   down_proj_blocks u8 [E, d, ff / 32, 16], down_proj_scales u8 [E, d, ff / 32]
// (rows are output features; element 2i of a block in the low nibble of byte i, 2i + 1 in the
// high one; the scale is an E8M0 exponent) or the dequantised form
//   gate_up_proj [E, d, 2 ff], down_proj [E, ff, d] (F32 / F16 / BF16, inputs first),
// and always gate_up_proj_bias [E, 2 ff], down_proj_bias [E, d]. Gate and up are interleaved
// (gate = feature 2j, up = 2j + 1). Each is repacked into memory owned by `model`: MXFP4 as ggml's
// 17-byte blocks (scale byte, then element j low / j + 16 high), float matrices transposed to
// [E, rows, cols] in their own dtype. Every layer 0..n_layers-1 must be complete; a missing, extra
// or misshapen part is refused by name.
Status add_gpt_oss_experts(const GptOssExpertParts& parts, const ModelConfig& config, SourceModel& model);

} // namespace cflow::hf
