#pragma once
// The GGUF metadata of a synth model: general.*, the llama.* hyperparameters and tokenizer.ggml.*,
// each with the exact type llama.cpp reads it as (u32 counts and token ids, f32 epsilon and RoPE
// base, bool add_bos). The .cflow gets the same keys (gguf_metadata_view), as `cflow convert`
// of the GGUF would give it.
#include <vector>

#include "cflow/formats/gguf_writer.h"
#include "cflow/formats/synth/synth_spec.h"

namespace cflow {

inline constexpr float kSynthNormEps = 1e-5f;

std::vector<GgufKeyValue> synth_gguf_metadata(const SynthSpec& spec);

} // namespace cflow
