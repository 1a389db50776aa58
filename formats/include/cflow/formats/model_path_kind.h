#pragma once
// What a model path holds: the one rule the converter, the CLI and the desktop app use to pick a
// reader or an action. The leading bytes decide where the format has a magic (GGUF "GGUF", .cflow
// "CFLOW", .vflow "VFLOW", llama2.c v1 "ak42"), else the name does (case-insensitive: *.gguf,
// *.safetensors, model.safetensors.index.json, *.cflow, *.vflow, *.bin); a folder is a Hugging
// Face model folder. Paths are UTF-8 (cflow/base/utf8_path.h).
#include <cstdint>
#include <string>

namespace cflow {

enum class ModelPathKind : uint8_t {
    Missing,      // nothing at the path, or it cannot be inspected
    Unknown,      // a file that neither its bytes nor its name place
    HfFolder,     // a folder: config.json + safetensors shards + tokenizer files
    Safetensors,  // a *.safetensors file or model.safetensors.index.json, standing for its folder
    Gguf,
    Llama2c,      // a llama2.c checkpoint: the v1 export's magic, or *.bin (the legacy export has none)
    Cflow,
    Vflow,
};

// Looks at the path on disk: a folder, or a file's first 8 bytes, then its name.
ModelPathKind sniff_model_path(const std::string& path);

// The name part of the rule alone, for a path that need not exist (an output file's name).
ModelPathKind model_kind_from_name(const std::string& path);

// The checkpoints open_source_model converts: HfFolder, Safetensors, Gguf, Llama2c.
bool is_convertible_source(ModelPathKind kind);

// The files CflowFile::open and the engine load: Cflow, Vflow.
bool is_cflow_container(ModelPathKind kind);

// A converted model's general.source_format: "gguf", "safetensors" or "llama2c"; "" for the rest.
const char* source_format_name(ModelPathKind kind);

} // namespace cflow
