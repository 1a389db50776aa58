#pragma once
// Low-level GGUF (v2, v3) parsing: header, typed metadata and tensor infos, without
// interpreting the model. read_gguf_model (source_model.h) builds on this; the
// tokenizer reads vocab-only GGUFs through it directly.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/formats/ggml_blocks.h"  // GgmlType codes and their block geometry
#include "cflow/formats/mapped_file.h"
#include "cflow/formats/metadata.h"
#include "cflow/base/result.h"

namespace cflow {

struct GgufTensorInfo {
    std::string name;
    uint32_t ggml_type = 0;
    std::vector<uint64_t> ne;   // GGUF order: ne[0] is the innermost (contiguous) dimension
    uint64_t offset = 0;        // relative to GgufFile::data_offset
    uint64_t bytes = 0;         // payload size; 0 when the type is not one this project reads (not in ggml_block_types())
    uint64_t info_offset = 0;   // absolute byte offset of the tensor-info record (for messages)
};

struct GgufFile {
    std::string path;
    uint32_t version = 0;
    Metadata metadata;                     // every key, arrays as the MetaValue vector kinds
    std::map<std::string, uint64_t> metadata_offsets;  // key -> absolute offset of its key/value record (for messages)
    std::vector<std::string> skipped_keys; // "key (why)": nested arrays, ints past int32 in arrays
    std::vector<GgufTensorInfo> tensors;   // in file order
    uint64_t alignment = 32;               // general.alignment
    uint64_t data_offset = 0;              // absolute start of the (aligned) tensor data section
    std::shared_ptr<MappedFile> file;      // keeps the mapping alive
};

// Parses header, metadata and tensor infos; every count, length and offset is checked
// against the file size. Tensors of types outside ggml_block_types() are listed with
// bytes == 0 and only their offset checked; a tensor of a listed block type whose innermost
// dimension is not a whole number of blocks is refused, naming the tensor, type and dimension.
Result<GgufFile> read_gguf(const std::string& path);

// "F32", "Q4_K", ... for any ggml type code; "type 99" for codes gguf.md does not list.
std::string ggml_type_name(uint32_t ggml_type);

} // namespace cflow
