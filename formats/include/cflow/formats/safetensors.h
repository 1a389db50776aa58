#pragma once
// One .safetensors file: u64 header length, JSON header, byte buffer. read_safetensors_model
// (source_model.h) assembles HF folders from these; tests and tools use it directly.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cflow/formats/mapped_file.h"
#include "cflow/base/result.h"
#include "cflow/formats/source_model.h"

namespace cflow {

inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100ull << 20;  // 100 MiB

struct SafetensorsEntry {
    std::string dtype;              // as written: "F32", "BF16", "I32", ...
    std::vector<uint64_t> shape;    // outermost first
    uint64_t begin = 0;             // data_offsets, relative to the byte buffer
    uint64_t end = 0;
};

struct SafetensorsFile {
    std::string path;
    std::shared_ptr<MappedFile> file;
    uint64_t data_offset = 0;       // 8 + header length
    std::map<std::string, SafetensorsEntry> entries;  // "__metadata__" excluded

    // A view of one tensor (name kept as written). Fails for an unknown name and for
    // dtypes other than F32 / F16 / BF16, naming the tensor and its dtype.
    Result<TensorView> view(const std::string& name) const;
};

// Parses and checks the header: length bounds, JSON, every entry's dtype/shape/data_offsets
// (begin <= end <= buffer size; end - begin == product(shape) * element size for known dtypes).
Result<SafetensorsFile> read_safetensors_file(const std::string& path);

} // namespace cflow
