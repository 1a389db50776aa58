// The .vflow placement of a conversion (formats/docs/vflow-format.md): headers, group
// table and layer directories first, then the sequential streaming region (per group: the
// attention stage of all its layers, then their dense stage), the random-access expert bank
// and the vocabulary region. Segments keep their bytes; only their offsets differ from .cflow.
#include <cstring>

#include "checked_math.h"
#include "converter_internal.h"

namespace cflow::convert_detail {
namespace {

struct AttentionGeometry {
    uint16_t n_heads, n_kv_heads, head_dim;
    bool operator==(const AttentionGeometry&) const = default;
};

// Vertical groups: maximal runs of consecutive layers with equal attention geometry
// (paper 3.4.1). Every layer of this version has the GlobalHeader's geometry, so this
// yields one group of all layers; the grouping itself is general.
std::vector<GroupDescriptor> plan_groups(const GlobalHeader& h) {
    auto geometry_of = [&](uint32_t) { return AttentionGeometry{h.n_heads, h.n_kv_heads, h.head_dim}; };
    std::vector<GroupDescriptor> groups;
    for (uint32_t l = 0; l < h.n_layers; ++l) {
        const AttentionGeometry g = geometry_of(l);
        if (groups.empty() || !(geometry_of(groups.back().first_layer) == g)) {
            GroupDescriptor d{};
            d.first_layer = l;
            d.n_heads = g.n_heads;
            d.n_kv_heads = g.n_kv_heads;
            d.head_dim = g.head_dim;
            groups.push_back(d);
        }
        ++groups.back().n_layers;
    }
    return groups;
}

class Placer {
public:
    explicit Placer(uint64_t start) : pos_(start) {}
    uint64_t pos() const { return pos_; }
    bool ok() const { return ok_; }
    // Aligns to 64 bytes and reserves `bytes`; returns the start.
    uint64_t place(uint64_t bytes) {
        ok_ = ok_ && checked::align_up(pos_, kSegmentAlignment, &pos_);
        const uint64_t start = pos_;
        ok_ = ok_ && checked::add(pos_, bytes, &pos_);
        return start;
    }
    uint64_t align() { return place(0); }

private:
    uint64_t pos_;
    bool ok_ = true;
};

} // namespace

Result<uint64_t> assign_vflow_offsets(FilePlan& plan) {
    GlobalHeader& h = plan.header;
    plan.groups = plan_groups(h);
    const uint32_t n_layers = h.n_layers;

    // Fixed-size front: VFlowHeader, GlobalHeader, ModelParams, GroupTable, LayerTable.
    plan.header_offset = sizeof(VFlowHeader);
    h.params_offset = plan.header_offset + sizeof(GlobalHeader);
    const uint64_t group_table_offset = h.params_offset + sizeof(ModelParams);
    h.layer_table_offset = group_table_offset + plan.groups.size() * sizeof(GroupDescriptor);
    Placer p(h.layer_table_offset + (uint64_t{n_layers} + 1) * sizeof(RegionEntry));

    // Layer directories: RegionHeader + SegmentEntry list, no data.
    for (uint32_t l = 0; l < n_layers; ++l) {
        RegionPlan& region = plan.regions[l];
        region.bytes = sizeof(RegionHeader) + region.segments.size() * sizeof(SegmentEntry);
        region.offset = p.place(region.bytes);
    }

    // Streaming region: per group, each stage holds its layers in order, each layer's
    // segments of that stage in read order (the directory order).
    VFlowHeader& vh = plan.vflow;
    vh.stream_offset = p.align();
    for (GroupDescriptor& g : plan.groups) {
        auto place_stage = [&](VflowStage stage, uint64_t* offset, uint64_t* bytes) {
            *offset = p.align();
            for (uint32_t l = g.first_layer; l < g.first_layer + g.n_layers; ++l)
                for (SegmentPlan& seg : plan.regions[l].segments)
                    if (vflow_stage(seg.role) == stage) seg.offset = p.place(seg.bytes);
            *bytes = p.pos() - *offset;
        };
        place_stage(VflowStage::Attention, &g.attn_offset, &g.attn_bytes);
        place_stage(VflowStage::Dense, &g.dense_offset, &g.dense_bytes);
        g.offset = g.attn_offset;
        g.bytes = p.pos() - g.offset;
    }
    vh.stream_bytes = p.pos() - vh.stream_offset;

    // Expert bank: per MoE layer its ExpertTable, then its ExpertBank.
    vh.bank_offset = p.align();
    for (uint32_t l = 0; l < n_layers; ++l)
        for (SegmentPlan& seg : plan.regions[l].segments)
            if (vflow_stage(seg.role) == VflowStage::Bank) seg.offset = p.place(seg.bytes);
    vh.bank_bytes = p.pos() - vh.bank_offset;

    // Vocabulary region: a .cflow region (header, directory, segments).
    RegionPlan& vocab = plan.regions[n_layers];
    vocab.offset = p.place(sizeof(RegionHeader) + vocab.segments.size() * sizeof(SegmentEntry));
    for (SegmentPlan& seg : vocab.segments) seg.offset = p.place(seg.bytes);
    vocab.bytes = p.pos() - vocab.offset;
    if (!p.ok()) return make_error("file size overflows 64 bits");

    std::memcpy(vh.magic, kVflowMagic, sizeof(vh.magic));
    vh.version = kVflowVersion;
    vh.n_groups = static_cast<uint32_t>(plan.groups.size());
    vh.cflow_header_offset = plan.header_offset;
    vh.group_table_offset = group_table_offset;
    return p.pos();
}

} // namespace cflow::convert_detail
