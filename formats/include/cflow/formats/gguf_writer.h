#pragma once
// GGUF v3 writer (gguf.md): metadata in the caller's order, tensor infos, then every tensor's
// data at a multiple of general.alignment; written to a temporary file that is renamed into
// place only when complete. read_gguf (gguf.h) reads what this writes.
//
//   std::vector<GgufKeyValue> kv = {{"general.architecture", std::string("llama")},
//                                   {"llama.block_count", uint32_t{22}}};
//   Status s = write_gguf("model.gguf", kv, {gguf_tensor(view), ...});
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/formats/dtype.h"
#include "cflow/formats/gguf.h"
#include "cflow/formats/metadata.h"
#include "cflow/formats/source_model.h"

namespace cflow {

// A metadata value whose C++ type is its GGUF type (uint32_t -> UINT32, float -> FLOAT32,
// std::vector<int32_t> -> ARRAY of INT32, ...). The caller names the exact type because readers
// such as llama.cpp reject a key stored with another type than they expect (a u64 block_count,
// an i32 bos_token_id), so the writer must not widen or guess.
using GgufValue = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               uint64_t, int64_t, double, std::vector<std::string>, std::vector<float>,
                               std::vector<int32_t>>;

struct GgufKeyValue {
    std::string key;
    GgufValue value;
};

struct GgufTensorData {
    std::string name;               // at most 63 bytes (ggml's GGML_MAX_NAME includes the NUL)
    uint32_t ggml_type = kGgmlF32;  // any type of ggml_block_types() (ggml_blocks.h)
    std::vector<uint64_t> shape;    // outermost first, as TensorView; written reversed as GGUF's ne
    const uint8_t* data = nullptr;  // bytes, alive for the duration of write_gguf
    uint64_t bytes = 0;             // must equal what shape and type imply
};

struct GgufWriteOptions {
    // general.alignment: a power of two, a multiple of 8 (gguf.md), at most 1 MiB. Written as a
    // u32 key when the metadata lacks it; a caller's key must be a u32 of the same value.
    uint64_t alignment = 32;
};

// Checks everything first (keys non-empty, unique and at most 65535 bytes; tensor names unique
// and short enough; 1..4 non-zero dims; byte sizes; quant rows whole blocks), so a bad
// request creates no file (ErrorKind::InvalidInput / Unsupported). OS failures (missing folder,
// full disk, rename) are ErrorKind::Io naming the path; a set `cancel` stops between tensors
// (ErrorKind::Cancelled). The target is never left half-written.
Status write_gguf(const std::string& path, const std::vector<GgufKeyValue>& metadata,
                  const std::vector<GgufTensorData>& tensors, const GgufWriteOptions& options = {},
                  const CancelToken* cancel = nullptr);

// The ggml type code of a source dtype (F32 -> 0, F16 -> 1, Q4_0 -> 2, Q8_0 -> 8, BF16 -> 30);
// kGgmlNoType for GgmlBlock, whose code is in TensorView::ggml_type (write_gguf refuses it).
inline constexpr uint32_t kGgmlNoType = 0xFFFFFFFFu;
uint32_t ggml_type_of(DType dtype);

// A TensorView as a tensor to write: same name, shape, type and bytes.
GgufTensorData gguf_tensor(const TensorView& view);

// `metadata` as read_gguf reports it after a round trip: integers and bools of every width as
// int64/bool, floats as double, arrays as the Metadata vector kinds (integer arrays as int32).
Metadata gguf_metadata_view(const std::vector<GgufKeyValue>& metadata);

} // namespace cflow
