#pragma once
// Internals of convert_to_cflow, one concern per file:
//   source_rows.cpp      reading source tensor rows as f32 / as raw ggml blocks
//   converter_validate.cpp  config and tensor checks before anything is written
//   converter_layout.cpp    the whole file layout (headers, regions, segment offsets) up front
//   converter_vflow_layout.cpp  the .vflow placement (groups, stages, expert bank) of that layout
//   tile_stream_writer.cpp  multi-threaded, chunked tile encoding of one tiled segment
//   converter.cpp           orchestration: validate, lay out, write, commit
#include <set>
#include <array>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/source_model.h"
#include "cflow/formats/tile_plan.h"
#include "cflow/formats/vflow_layout.h"
#include "cflow_segment_shapes.h"

namespace cflow::convert_detail {

// Bytes of one ggml block (f16 scale + quants) for Q8_0 / Q4_0.
inline uint64_t ggml_block_bytes(DType t) { return t == DType::Q4_0 ? 18 : 34; }

// The block geometry of a source tensor's type (F32/F16/BF16 as 1-element blocks), or nullptr
// for a GgmlBlock tensor whose ggml_type this project does not read.
const GgmlBlockType* source_block_type(const TensorView& tensor);

// Source bytes of `elements` elements of the tensor's type (elements a multiple of its block).
uint64_t source_bytes(const TensorView& tensor, uint64_t elements);

// The tile type that holds a source tensor's values unchanged, block for block: F32, F16, Q8_0,
// Q4_0, or the ggml-block tile of a GGUF tensor's type (Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_XS,
// Q4_1, Q5_0, Q5_1, IQ4_NL: is_ggml_tile); none for BF16 and other ggml types (Q8_K).
std::optional<DType> native_tile_type(const TensorView& tensor);

// Whether some 2-D tensor of `source` is block-quantised (a llama-quantize output, not an F16 export).
bool has_quantised_matrix(const SourceModel& source);

// A [rows x cols] matrix inside a source tensor (an expert slice of a 3-D bank or a
// whole 2-D tensor), read through an output-row -> source-row map (RoPE permutation).
struct MatrixSource {
    const TensorView* tensor = nullptr;  // nullptr: all zeros (e.g. a missing k/v bias)
    uint64_t first_row = 0;              // rows of the tensor before this matrix (expert e: e * rows)
    uint32_t rows = 0;
    uint32_t cols = 0;
    std::vector<uint32_t> row_map;       // empty = identity

    uint32_t source_row(uint32_t r) const { return row_map.empty() ? r : row_map[r]; }
    // Output rows [row0, row0 + n) as f32 into out [n x cols].
    void read_rows_f32(uint32_t row0, uint32_t n, float* out) const;
    // The ggml blocks of output row r covering columns [col0, col0 + n_cols) (col0, n_cols % 32 == 0).
    const uint8_t* row_blocks(uint32_t r, uint32_t col0) const;
};

// A raw f32 segment built from consecutive source vectors/matrices.
struct RawPiece {
    MatrixSource source;
    std::vector<uint32_t> element_map;  // per-row element permutation (Q/K norm, biases); empty = identity
};

struct SegmentPlan {
    SegmentRole role = SegmentRole::AttnNorm;
    DType dtype = DType::F32;
    segment_shapes::SegmentShape shape;
    std::vector<RawPiece> raw;                          // Raw segments with tensor data
    std::vector<uint8_t> raw_bytes;                     // ExpertTable: contents built from the layout
    std::vector<MatrixSource> parts;                    // Tiled: one per part
    std::vector<std::array<MatrixSource, 3>> experts;   // ExpertBank: gate, up, down of each expert
    std::vector<std::string> tensor_names;              // source tensors consumed (progress, report)
    std::vector<bool> exact_parts;                      // Tiled/ExpertBank: part re-tiled block for block
    uint64_t offset = 0;                                // absolute
    uint64_t bytes = 0;
    uint64_t n_tiles = 0;
    uint64_t expert_gate_up_bytes = 0;
    uint64_t expert_bytes = 0;
};

struct RegionPlan {
    uint32_t index = 0;
    uint64_t offset = 0;  // of the RegionHeader
    uint64_t bytes = 0;   // .cflow: header, directory and data; .vflow layers: header and directory only
    std::vector<SegmentPlan> segments;  // in directory order (= read order, schedule_order.h)
};

struct FilePlan {
    ContainerFormat format = ContainerFormat::Cflow;
    uint64_t header_offset = 0;        // of the GlobalHeader: 0 (.cflow) or after the VFlowHeader (.vflow)
    VFlowHeader vflow{};               // .vflow only
    std::vector<GroupDescriptor> groups;  // .vflow only
    GlobalHeader header{};
    ModelParams params{};
    std::vector<RegionPlan> regions;  // n_layers + 1, vocabulary last
    std::vector<uint8_t> metadata;    // serialized section
    uint64_t tensors_total = 0;
    std::vector<std::string> ignored_tensors;  // "NAME: why": left out, the forward never reads them
    // "V of Qkv: q4_k -> q8_0 (...)": K-quant targets of matrices whose inputs are not whole super-blocks.
    std::vector<std::string> kquant_fallbacks;
};

inline constexpr uint64_t kSegmentAlignment = 64;

// Validates geometry, semantics fields and tensor presence/shapes/sizes.
Status validate_source(const SourceModel& source, const ConvertOptions& options);

// Builds headers, every segment with its sources, and all absolute offsets (.cflow or .vflow
// layout per options.format; the .vflow placement is vflow_layout.cpp).
Result<FilePlan> plan_file(const SourceModel& source, const ConvertOptions& options);

// Records "NAME: Q5_0 -> q8_0" when tensor i of a tiled segment was block-quantised in the source
// and its blocks are not copied (seg.exact_parts false for it: its values change).
void note_requantised(const SourceModel& source, const SegmentPlan& seg, size_t i, std::set<std::string>* out);

// .vflow placement of a FilePlan whose headers and segments are built (offsets unset):
// VFlowHeader, GlobalHeader, ModelParams, GroupTable, LayerTable, layer directories, stream,
// expert bank, vocabulary region; returns the end of the vocabulary region.
Result<uint64_t> assign_vflow_offsets(FilePlan& plan);

// Fills every ExpertTable's contents from the offsets of its layer's ExpertBank.
void fill_expert_tables(FilePlan& plan);

struct TileWriteContext {
    AtomicFileWriter* writer = nullptr;
    unsigned threads = 1;
    const CancelToken* cancel = nullptr;
    uint64_t chunk_bytes = 8ull << 20;  // bound on encoded bytes held in memory at once (tested with a >8 MiB vocabulary)
};

// Encodes and writes the tiles of a Tiled or ExpertBank segment.
Status write_tiled_segment(const TileWriteContext& ctx, const SegmentPlan& seg, uint16_t layer_id);

} // namespace cflow::convert_detail
