#pragma once
// Pieces of CflowFile::open and CflowFile::expert, split by concern: header checks
// (cflow_reader.cpp), region/segment/tile checks (cflow_region_reader.cpp) and the
// .vflow container checks (vflow_reader.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/vflow_layout.h"

namespace cflow::reader_detail {

// A byte range segment data must lie in, and how messages name it.
struct DataSpan {
    uint64_t begin = 0;
    uint64_t end = 0;   // exclusive
    std::string name;   // "its region's data", "group 0 attention stage", "the expert bank"
};

// The validated .vflow facts the region checks need: where each layer's segments must lie.
struct VflowLayout {
    VFlowHeader header{};
    std::vector<GroupDescriptor> groups;
    std::vector<uint32_t> group_of_layer;  // [n_layers]

    // The span segments of `role` in layer `layer` must lie in (attention stage, dense stage of
    // the layer's group, or the expert bank).
    DataSpan span(uint32_t layer, SegmentRole role) const;
};

// The validated file-level facts every region check needs.
struct FileContext {
    const std::string& path;
    const uint8_t* data;  // whole file
    uint64_t size;        // bytes
    const GlobalHeader& header;
    const ModelParams& params;
    uint64_t header_offset;          // of the GlobalHeader: 0 in .cflow, VFlowHeader::cflow_header_offset in .vflow
    const VflowLayout* vflow;        // nullptr for .cflow
};

// "path: <field> at offset <n>: <problem>". Most problems are a corrupt file (InvalidInput); a
// version or feature this build does not read passes Unsupported.
Error located(const FileContext& ctx, const std::string& field, uint64_t offset, const std::string& problem,
              ErrorKind kind = ErrorKind::InvalidInput);

// Index of the first nonzero byte of a reserved field, for "must be 0" messages at its offset.
inline std::optional<size_t> first_nonzero(const uint8_t* bytes, size_t count) {
    for (size_t i = 0; i < count; ++i)
        if (bytes[i] != 0) return i;
    return std::nullopt;
}

// Reads and validates region `index` (n_layers = vocabulary) from its LayerTable entry.
// .cflow regions (and the .vflow vocabulary region) hold their segment data after their
// directory; .vflow layer regions are directories only, their segments lie in ctx.vflow's spans.
Result<RegionView> read_region(const FileContext& ctx, uint32_t index);

// Tiles of one expert, computed from the plan and the layer's ExpertTable entry; the tile headers
// are read from `expert_bytes` (a copy of the expert) when it is not null, else from ctx.data.
Result<ExpertView> read_expert(const FileContext& ctx, const RegionView& layer, uint32_t expert,
                               const uint8_t* expert_bytes = nullptr);

// The layer's ExpertTable entry of `expert`, checked against the bank.
Result<ExpertLocation> read_expert_location(const FileContext& ctx, const RegionView& layer, uint32_t expert);

// .vflow: the VFlowHeader at offset 0 (magic already matched): version, sizes, and that the
// embedded GlobalHeader lies inside the file.
Result<VFlowHeader> read_vflow_header(const std::string& path, const uint8_t* data, uint64_t size);

// .vflow: the group table and the stream/bank sections, checked against the (validated)
// GlobalHeader: groups cover the layers exactly once and in order, each group's attention
// geometry is the file's, stages lie inside their group, groups inside the stream, the
// stream before the bank, both after the LayerTable.
Result<VflowLayout> read_vflow_layout(const FileContext& ctx, const VFlowHeader& vh);

// .vflow, after every region was read: directories lie between the LayerTable and the stream,
// the vocabulary region after the bank and before the metadata, no two segments or directories
// overlap, and inside each stage the layers' segments appear in layer order.
Status check_vflow_order(const FileContext& ctx, const std::vector<RegionView>& layers, const RegionView& vocab);

} // namespace cflow::reader_detail
