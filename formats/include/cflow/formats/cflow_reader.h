#pragma once
// Opens and validates a .cflow or .vflow file (dispatch on the magic; the .vflow checks are
// listed in formats/docs/vflow-format.md) and gives both the same views: its header,
// parameters, metadata and the zero-copy tile streams of each region. Validation at open
// (every check names the file, the field and its byte offset):
//   magic, version, header/params sizes, file_bytes == actual size, geometry sanity
//   (non-zero dims, n_heads % n_kv_heads == 0, top_k <= n_experts, delays < n_layers,
//   combine style known, tile dims 128x256), layer table in bounds (overflow-safe),
//   each region's header and directory in bounds and inside its region, each segment's
//   role/dtype known, bytes equal to what geometry implies, inside its region, the tile
//   headers of every non-expert tiled segment equal to the plan, the expert table
//   pointing inside the expert bank, and the metadata section parsing.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/mapped_file.h"
#include "cflow/formats/metadata.h"
#include "cflow/base/result.h"
#include "cflow/formats/tile_plan.h"
#include "cflow/formats/vflow_layout.h"

namespace cflow {

// One tile as the kernels consume it: a view into the mapping.
struct TileRef {
    const TileHeader* header;  // 16 bytes, may be unaligned
    const uint8_t* payload;    // tile_payload_bytes(dtype, rows, cols) bytes
    uint32_t row_offset;       // copies of the header fields, validated
    uint32_t col_offset;
    uint16_t rows;
    uint16_t cols;
    uint8_t part;              // index into SegmentView::parts
    DType dtype;               // of the payload: the part's (SegmentEntry::part_dtype)
};

// A contiguous run of tiles for one output stripe of one part: kernels parallelise over these.
struct StripeRef {
    uint32_t first_tile;  // index into SegmentView::tiles
    uint32_t n_tiles;
    uint8_t part;
    uint32_t row_offset;
    uint16_t rows;
};

struct SegmentView {
    SegmentRole role;
    DType dtype;
    uint32_t cols = 0;                   // input dim (raw: elements per row)
    std::vector<TilePart> parts;         // tiled segments
    uint32_t raw_rows = 0;               // raw segments
    uint64_t offset = 0;                 // absolute
    uint64_t bytes = 0;
    const uint8_t* data = nullptr;       // start of the segment in the mapping
    std::vector<TileRef> tiles;          // tiled, non-expert segments
    std::vector<StripeRef> stripes;      // tiled, non-expert segments

    const float* raw_f32() const { return reinterpret_cast<const float*>(data); }  // raw segments (may be unaligned on odd files: reader guarantees 4-byte alignment)
};

struct RegionView {
    uint32_t index = 0;                  // layer index or n_layers for vocab
    uint64_t offset = 0;
    uint64_t bytes = 0;
    std::array<int16_t, static_cast<size_t>(SegmentRole::Count_)> by_role{};  // index into segments or -1
    std::vector<SegmentView> segments;

    const SegmentView* find(SegmentRole role) const {
        int16_t i = by_role[static_cast<size_t>(role)];
        return i < 0 ? nullptr : &segments[static_cast<size_t>(i)];
    }
};

// Tiles of one expert, located through the expert table (computed from the plan,
// so unselected experts are never touched).
struct ExpertView {
    std::vector<TileRef> gate_up;        // parts 0 = gate, 1 = up, interleaved by stripe
    std::vector<StripeRef> gate_up_stripes;
    std::vector<TileRef> down;
    std::vector<StripeRef> down_stripes;
    uint64_t offset = 0;
    uint64_t bytes = 0;
};

namespace reader_detail {
struct FileContext;
} // namespace reader_detail

struct ExpertLocation {
    uint64_t offset = 0;  // in the file
    uint64_t bytes = 0;
};

class CflowFile {
public:
    static Result<std::shared_ptr<CflowFile>> open(const std::string& path, LoadMode mode = LoadMode::Map);

    const std::string& path() const { return file_->path(); }
    const GlobalHeader& header() const { return header_; }
    const ModelParams& params() const { return params_; }
    const Metadata& metadata() const { return metadata_; }
    // [rotary dims / 2] divisors of the rotary frequencies (kFeatureRopeFreqFactors, validated at
    // open); empty when the model has none.
    std::span<const float> rope_freq_factors() const {
        const auto* factors = metadata_.get_floats(kRopeFreqFactorsKey);
        return factors ? std::span<const float>(*factors) : std::span<const float>();
    }
    // [n_layers] 1 = that layer applies no RoPE (kFeatureRopeSkipLayers, validated at open); empty
    // when every layer rotates.
    std::span<const int32_t> rope_skip_layers() const {
        const auto* skip = metadata_.get_ints(kRopeSkipLayersKey);
        return skip ? std::span<const int32_t>(*skip) : std::span<const int32_t>();
    }
    // [rotary dims / 2] LongRoPE's long factors (kExtLongRope, validated at open); empty without.
    std::span<const float> rope_long_factors() const {
        const auto* factors = metadata_.get_floats(kRopeLongFactorsKey);
        return factors ? std::span<const float>(*factors) : std::span<const float>();
    }
    // [n_layers] 1 = that layer attends over the last sliding_window positions only
    // (kExtSlidingLayers, validated at open); empty when sliding_window, if any, applies to every layer.
    std::span<const int32_t> sliding_layers() const {
        const auto* sliding = metadata_.get_ints(kSlidingLayersKey);
        return sliding ? std::span<const int32_t>(*sliding) : std::span<const int32_t>();
    }
    const std::vector<RegionView>& layers() const { return layers_; }  // n_layers entries
    const RegionView& vocab() const { return vocab_; }
    const MappedFile& file() const { return *file_; }
    uint64_t file_bytes() const { return file_->size(); }

    // Which container the file is; the views above are the same for both.
    ContainerFormat container() const { return container_; }
    // .vflow only (zeroed / empty for .cflow): the VFlowHeader and the validated group table.
    const VFlowHeader& vflow_header() const { return vflow_header_; }
    const std::vector<GroupDescriptor>& groups() const { return groups_; }

    // Tiles of expert e in layer l; fails if l/e are out of range or the table entry is corrupt.
    // The tile headers are checked in the mapping, or in `expert_bytes` when given: a copy of the
    // expert's bytes [offset, offset + bytes) read another way (a direct-I/O read of a streamed
    // expert), so that the mapping's pages of that expert are never touched. The refs point into
    // the mapping either way.
    Result<ExpertView> expert(uint32_t layer, uint32_t expert, const uint8_t* expert_bytes = nullptr) const;
    // Where expert e of layer l lies in the file (its ExpertTable entry, checked), without reading
    // its tiles: what a streamed read needs before the bytes arrive.
    Result<ExpertLocation> expert_location(uint32_t layer, uint32_t expert) const;

private:
    Status check_expert_index(uint32_t layer, uint32_t expert, const char* what) const;
    reader_detail::FileContext expert_context() const;

    std::shared_ptr<MappedFile> file_;
    GlobalHeader header_{};
    ModelParams params_{};
    Metadata metadata_;
    std::vector<RegionView> layers_;
    RegionView vocab_;
    ContainerFormat container_ = ContainerFormat::Cflow;
    VFlowHeader vflow_header_{};
    std::vector<GroupDescriptor> groups_;
};

} // namespace cflow
