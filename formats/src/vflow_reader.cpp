// The .vflow container checks of CflowFile::open: the VFlowHeader, the group table and the
// order of the sections (formats/docs/vflow-format.md section 7). Segment, tile and expert
// checks are shared with .cflow (cflow_region_reader.cpp); this file only adds where the
// segment bytes of a .vflow file must lie.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "cflow_reader_internal.h"
#include "cflow_segment_shapes.h"
#include "checked_math.h"

namespace cflow::reader_detail {
namespace {

std::string decimal(uint64_t v) { return std::to_string(v); }

// Built by appending: GCC 12 reports a false -Wrestrict for "literal" + std::string&& here.
std::string range(uint64_t begin, uint64_t end) {
    std::string out = "[";
    out += decimal(begin);
    out += ", ";
    out += decimal(end);
    out += ")";
    return out;
}

#define CFLOW_VH(field) "VFlowHeader." #field, offsetof(VFlowHeader, field)

// Checks [offset, offset + bytes) for overflow and against the file size.
Status check_inside(const FileContext& ctx, const char* field, uint64_t field_offset, const std::string& what,
                    uint64_t offset, uint64_t bytes) {
    uint64_t end = 0;
    if (!checked::add(offset, bytes, &end))
        return located(ctx, field, field_offset, what + " offset " + decimal(offset) + " + " + decimal(bytes) + " bytes overflows 64 bits");
    if (end > ctx.size)
        return located(ctx, field, field_offset, what + " " + range(offset, end) + " past end of file (" + decimal(ctx.size) + " bytes)");
    return {};
}

// Sections follow each other in the documented order; `start` must not lie before `previous_end`.
Status check_after(const FileContext& ctx, const std::string& field, uint64_t field_offset, uint64_t start,
                   const std::string& previous, uint64_t previous_end) {
    if (start >= previous_end) return {};
    return located(ctx, field, field_offset,
                   "starts at " + decimal(start) + ", before the end of the " + previous + " (" + decimal(previous_end) + ")");
}

Status check_group(const FileContext& ctx, const VFlowHeader& vh, uint32_t index, const GroupDescriptor& g,
                   uint32_t expected_first, uint64_t previous_end) {
    const GlobalHeader& h = ctx.header;
    const uint64_t at = vh.group_table_offset + uint64_t{index} * sizeof(GroupDescriptor);
    const std::string name = "GroupTable[" + decimal(index) + "].";
    auto fail = [&](const char* field, size_t field_offset, const std::string& problem,
                    ErrorKind kind = ErrorKind::InvalidInput) {
        return located(ctx, name + field, at + field_offset, problem, kind);
    };
    if (g.first_layer != expected_first)
        return fail("first_layer", offsetof(GroupDescriptor, first_layer),
                    "is " + decimal(g.first_layer) + ", expected " + decimal(expected_first) +
                        " (groups cover the layers in order, each exactly once)");
    if (g.n_layers == 0 || g.n_layers > h.n_layers - g.first_layer)
        return fail("n_layers", offsetof(GroupDescriptor, n_layers),
                    "group of " + decimal(g.n_layers) + " layers starting at layer " + decimal(g.first_layer) + " does not fit the " +
                        decimal(h.n_layers) + " layers of the file (needs 1.." + decimal(h.n_layers - g.first_layer) + ")");
    // This version has one attention geometry per file (the GlobalHeader's); every group repeats it.
    struct GeometryField {
        const char* name;
        size_t offset;
        uint16_t group_value, file_value;
    };
    for (const GeometryField& f : {GeometryField{"n_heads", offsetof(GroupDescriptor, n_heads), g.n_heads, h.n_heads},
                                   GeometryField{"n_kv_heads", offsetof(GroupDescriptor, n_kv_heads), g.n_kv_heads, h.n_kv_heads},
                                   GeometryField{"head_dim", offsetof(GroupDescriptor, head_dim), g.head_dim, h.head_dim}})
        if (f.group_value != f.file_value)
            return fail(f.name, f.offset,
                        "is " + decimal(f.group_value) + ", the file's attention geometry has " + decimal(f.file_value) +
                            " (this version stores one attention geometry per file)",
                        ErrorKind::Unsupported);
    if (g.reserved0 != 0) return fail("reserved0", offsetof(GroupDescriptor, reserved0), "must be 0");
    uint64_t group_end = 0, attn_end = 0, dense_end = 0;
    if (!checked::add(g.offset, g.bytes, &group_end) || !checked::add(g.attn_offset, g.attn_bytes, &attn_end) ||
        !checked::add(g.dense_offset, g.dense_bytes, &dense_end))
        return fail("bytes", offsetof(GroupDescriptor, bytes), "an offset + bytes pair overflows 64 bits");
    const uint64_t stream_end = vh.stream_offset + vh.stream_bytes;  // checked by the caller
    if (g.offset < previous_end || group_end > stream_end)
        return fail("offset", offsetof(GroupDescriptor, offset),
                    "group " + range(g.offset, group_end) + " lies outside the streaming region after the previous group " +
                        range(previous_end, stream_end));
    if (g.attn_offset != g.offset)
        return fail("attn_offset", offsetof(GroupDescriptor, attn_offset),
                    "is " + decimal(g.attn_offset) + ", expected the group's offset " + decimal(g.offset) +
                        " (the attention stage comes first)");
    if (g.dense_offset < attn_end)
        return fail("dense_offset", offsetof(GroupDescriptor, dense_offset),
                    "dense stage at " + decimal(g.dense_offset) + " starts inside the attention stage " +
                        range(g.attn_offset, attn_end));
    if (dense_end != group_end)
        return fail("dense_bytes", offsetof(GroupDescriptor, dense_bytes),
                    "dense stage " + range(g.dense_offset, dense_end) + " does not end where the group ends (" +
                        decimal(group_end) + ")");
    return {};
}

} // namespace

DataSpan VflowLayout::span(uint32_t layer, SegmentRole role) const {
    const uint32_t g = group_of_layer[layer];
    const GroupDescriptor& d = groups[g];
    switch (vflow_stage(role)) {
        case VflowStage::Attention:
            return {d.attn_offset, d.attn_offset + d.attn_bytes, "group " + decimal(g) + " attention stage"};
        case VflowStage::Dense: return {d.dense_offset, d.dense_offset + d.dense_bytes, "group " + decimal(g) + " dense stage"};
        case VflowStage::Bank: return {header.bank_offset, header.bank_offset + header.bank_bytes, "the expert bank"};
        case VflowStage::Vocab: break;  // rejected before (vocabulary roles do not belong in layer regions)
    }
    return {0, 0, "no layer data span"};
}

Result<VFlowHeader> read_vflow_header(const std::string& path, const uint8_t* data, uint64_t size) {
    auto fail = [&](const std::string& field, uint64_t offset, const std::string& problem,
                    ErrorKind kind = ErrorKind::InvalidInput) {
        return make_error(kind, path + ": " + field + " at offset " + decimal(offset) + ": " + problem);
    };
    if (size < sizeof(VFlowHeader))
        return fail("VFlowHeader", 0,
                    "file is " + decimal(size) + " bytes, smaller than the " + decimal(sizeof(VFlowHeader)) + "-byte header");
    VFlowHeader vh;
    std::memcpy(&vh, data, sizeof(vh));
    if (vh.version != kVflowVersion)
        return fail(
            CFLOW_VH(version),
            "unsupported version " + decimal(vh.version) + " (this build reads .vflow version " + decimal(kVflowVersion) + ")",
            ErrorKind::Unsupported);
    if (vh.cflow_header_offset < sizeof(VFlowHeader))
        return fail(CFLOW_VH(cflow_header_offset),
                    "embedded GlobalHeader at " + decimal(vh.cflow_header_offset) + " overlaps the 64-byte VFlowHeader");
    if (!checked::range_inside(vh.cflow_header_offset, sizeof(GlobalHeader), size))
        return fail(CFLOW_VH(cflow_header_offset),
                    "embedded GlobalHeader (" + decimal(sizeof(GlobalHeader)) + " bytes) at " + decimal(vh.cflow_header_offset) +
                        " past end of file (" + decimal(size) + " bytes)");
    return vh;
}

Result<VflowLayout> read_vflow_layout(const FileContext& ctx, const VFlowHeader& vh) {
    const GlobalHeader& h = ctx.header;
    if (vh.n_groups == 0 || vh.n_groups > h.n_layers)
        return located(ctx, CFLOW_VH(n_groups), "is " + decimal(vh.n_groups) + ", must be 1..n_layers (" + decimal(h.n_layers) + ")");
    const uint64_t table_bytes = uint64_t{vh.n_groups} * sizeof(GroupDescriptor);  // n_groups <= 65,535
    if (Status s = check_inside(ctx, CFLOW_VH(group_table_offset), "group table", vh.group_table_offset, table_bytes); !s)
        return s.take_error();
    if (Status s = check_inside(ctx, CFLOW_VH(stream_offset), "streaming region", vh.stream_offset, vh.stream_bytes); !s)
        return s.take_error();
    if (Status s = check_inside(ctx, CFLOW_VH(bank_offset), "expert bank", vh.bank_offset, vh.bank_bytes); !s)
        return s.take_error();

    // Section order: VFlowHeader, GlobalHeader, ModelParams, GroupTable, LayerTable, directories, stream, bank.
    const uint64_t layer_table_end = h.layer_table_offset + (uint64_t{h.n_layers} + 1) * sizeof(RegionEntry);  // checked
    const uint64_t group_table_end = vh.group_table_offset + table_bytes;
    const uint64_t stream_end = vh.stream_offset + vh.stream_bytes;
    for (Status s : {check_after(ctx, "GlobalHeader.params_offset", ctx.header_offset + offsetof(GlobalHeader, params_offset),
                                 h.params_offset, "embedded GlobalHeader", ctx.header_offset + sizeof(GlobalHeader)),
                     check_after(ctx, CFLOW_VH(group_table_offset), vh.group_table_offset, "ModelParams",
                                 h.params_offset + sizeof(ModelParams)),
                     check_after(ctx, "GlobalHeader.layer_table_offset",
                                 ctx.header_offset + offsetof(GlobalHeader, layer_table_offset), h.layer_table_offset,
                                 "group table", group_table_end),
                     check_after(ctx, CFLOW_VH(stream_offset), vh.stream_offset, "LayerTable", layer_table_end),
                     check_after(ctx, CFLOW_VH(bank_offset), vh.bank_offset, "streaming region", stream_end)})
        if (!s) return s.take_error();

    VflowLayout layout;
    layout.header = vh;
    layout.groups.resize(vh.n_groups);
    layout.group_of_layer.reserve(h.n_layers);
    uint32_t next_layer = 0;
    uint64_t previous_end = vh.stream_offset;
    for (uint32_t i = 0; i < vh.n_groups; ++i) {
        GroupDescriptor& g = layout.groups[i];
        std::memcpy(&g, ctx.data + vh.group_table_offset + uint64_t{i} * sizeof(GroupDescriptor), sizeof(g));
        if (Status s = check_group(ctx, vh, i, g, next_layer, previous_end); !s) return s.take_error();
        if (i == 0 && g.offset != vh.stream_offset)
            return located(ctx, "GroupTable[0].offset", vh.group_table_offset + offsetof(GroupDescriptor, offset),
                           "is " + decimal(g.offset) + ", expected the start of the streaming region " + decimal(vh.stream_offset));
        next_layer += g.n_layers;
        previous_end = g.offset + g.bytes;
        layout.group_of_layer.insert(layout.group_of_layer.end(), g.n_layers, i);
    }
    if (next_layer != h.n_layers)
        return located(ctx, "GroupTable", vh.group_table_offset,
                       "the " + decimal(vh.n_groups) + " groups cover " + decimal(next_layer) + " of the " + decimal(h.n_layers) + " layers");
    if (previous_end != stream_end)
        return located(ctx, CFLOW_VH(stream_bytes),
                       "streaming region ends at " + decimal(stream_end) + " but its last group ends at " + decimal(previous_end));
    return layout;
}

Status check_vflow_order(const FileContext& ctx, const std::vector<RegionView>& layers, const RegionView& vocab) {
    const GlobalHeader& h = ctx.header;
    const VflowLayout& v = *ctx.vflow;
    const uint64_t layer_table_end = h.layer_table_offset + (uint64_t{h.n_layers} + 1) * sizeof(RegionEntry);
    const uint64_t bank_end = v.header.bank_offset + v.header.bank_bytes;
    auto table_field = [&](uint32_t index) {
        return std::make_pair("LayerTable[" + decimal(index) + "].offset", h.layer_table_offset + uint64_t{index} * sizeof(RegionEntry));
    };

    struct Piece {
        uint64_t begin, end;
        std::string label;
    };
    std::vector<Piece> pieces;
    for (const RegionView& r : layers) {
        if (r.offset < layer_table_end || r.offset + r.bytes > v.header.stream_offset) {
            auto [field, at] = table_field(r.index);
            return located(ctx, field, at,
                           "layer directory " + range(r.offset, r.offset + r.bytes) +
                               " lies outside the directory area between the LayerTable and the streaming region " +
                               range(layer_table_end, v.header.stream_offset));
        }
        pieces.push_back({r.offset, r.offset + r.bytes, "layer " + decimal(r.index) + " directory"});
        for (const SegmentView& s : r.segments)
            pieces.push_back({s.offset, s.offset + s.bytes,
                              "layer " + decimal(r.index) + " segment " + segment_shapes::role_name(s.role)});
    }
    if (vocab.offset < bank_end || vocab.offset + vocab.bytes > ctx.params.metadata_offset) {
        auto [field, at] = table_field(h.n_layers);
        return located(ctx, field, at,
                       "vocabulary region " + range(vocab.offset, vocab.offset + vocab.bytes) +
                           " must lie between the end of the expert bank (" + decimal(bank_end) + ") and the metadata section (" +
                           decimal(ctx.params.metadata_offset) + ")");
    }

    // No two layer segments or directories share a byte (each layer's own were checked per region).
    std::sort(pieces.begin(), pieces.end(),
              [](const Piece& a, const Piece& b) { return a.begin != b.begin ? a.begin < b.begin : a.label < b.label; });
    for (size_t i = 1; i < pieces.size(); ++i)
        if (pieces[i].begin < pieces[i - 1].end)
            return located(ctx, pieces[i].label, pieces[i].begin,
                           range(pieces[i].begin, pieces[i].end) + " overlaps " + pieces[i - 1].label + " " +
                               range(pieces[i - 1].begin, pieces[i - 1].end));

    // Inside each stage the layers follow each other: a sequential read meets layer l's
    // weights before layer l + 1's.
    for (size_t g = 0; g < v.groups.size(); ++g) {
        const GroupDescriptor& group = v.groups[g];
        for (VflowStage stage : {VflowStage::Attention, VflowStage::Dense}) {
            const char* stage_name = stage == VflowStage::Attention ? "attention" : "dense";
            uint64_t previous_end = 0;
            for (uint32_t l = group.first_layer; l < group.first_layer + group.n_layers; ++l) {
                uint64_t layer_end = previous_end;
                for (const SegmentView& s : layers[l].segments) {
                    if (vflow_stage(s.role) != stage) continue;
                    if (s.offset < previous_end)
                        return located(ctx, "layer " + decimal(l) + " segment " + segment_shapes::role_name(s.role), s.offset,
                                       "lies before the end of layer " + decimal(l - 1) + "'s data in group " + decimal(g) + " " +
                                           stage_name + " stage (" + decimal(previous_end) +
                                           "): a stage holds its layers in layer order");
                    layer_end = std::max(layer_end, s.offset + s.bytes);
                }
                previous_end = layer_end;
            }
        }
    }
    return {};
}

#undef CFLOW_VH

} // namespace cflow::reader_detail
