#pragma once
// Byte-level layout of the .vflow file (stage-major container, paper section 3.4), version 1.
// The normative description is formats/docs/vflow-format.md; this header is its
// machine-readable twin. A .vflow file reuses the .cflow v5 structures (GlobalHeader,
// ModelParams, RegionEntry, RegionHeader, SegmentEntry, TileHeader, ExpertEntry; see
// cflow_layout.h) and differs in where the segment bytes lie:
//
// File = VFlowHeader (64 B) @0
//      | GlobalHeader (88 B) @VFlowHeader::cflow_header_offset (magic "CFLOW", version 6)
//      | ModelParams (128 B) @GlobalHeader::params_offset
//      | GroupTable: n_groups x GroupDescriptor @VFlowHeader::group_table_offset
//      | LayerTable: (n_layers + 1) x RegionEntry @GlobalHeader::layer_table_offset
//      | layer directories: RegionHeader + SegmentEntry[n] per layer (no data)
//      | sequential streaming region: per group, the attention stage (attention segments of
//          all its layers, layer by layer), then the dense stage (dense FFN, MoE norm, router,
//          shared expert of all its layers)
//      | expert bank: per layer, its ExpertTable then its ExpertBank (O(1) (layer, expert) lookup)
//      | vocabulary region (a .cflow region: RegionHeader + SegmentEntry[n] + data)
//      | metadata section @ModelParams::metadata_offset
#include <cstddef>
#include <cstdint>

#include "cflow/formats/cflow_layout.h"

namespace cflow {

// Which container a conversion writes / a CflowFile was opened from.
enum class ContainerFormat : uint8_t { Cflow = 0, Vflow = 1 };

inline constexpr char kVflowMagic[8] = {'V', 'F', 'L', 'O', 'W', '\0', '\0', '\0'};
inline constexpr uint32_t kVflowVersion = 1;

#pragma pack(push, 1)
struct VFlowHeader {
    char magic[8];                 // "VFLOW\0\0\0"
    uint32_t version;              // kVflowVersion
    uint32_t n_groups;             // vertical groups, 1..n_layers
    uint64_t cflow_header_offset;  // embedded GlobalHeader (which points at ModelParams and the LayerTable)
    uint64_t group_table_offset;   // n_groups x GroupDescriptor
    uint64_t stream_offset;        // sequential streaming region (all groups' stages)
    uint64_t stream_bytes;
    uint64_t bank_offset;          // expert bank region (ExpertTable + ExpertBank of every MoE layer)
    uint64_t bank_bytes;           // 0 for dense models
};
static_assert(sizeof(VFlowHeader) == 64, "VFlowHeader must be 64 bytes");

// One vertical group: consecutive layers that share one attention geometry.
struct GroupDescriptor {
    uint32_t first_layer;   // groups cover layers 0..n_layers-1 in order, each exactly once
    uint32_t n_layers;      // >= 1
    uint16_t n_heads;       // the group's attention geometry
    uint16_t n_kv_heads;
    uint16_t head_dim;
    uint16_t reserved0;     // 0
    uint64_t offset;        // absolute start of the group's sequential data (== attn_offset)
    uint64_t bytes;         // through the end of its dense stage (== dense_offset + dense_bytes - offset)
    uint64_t attn_offset;   // attention stage: AttnNorm, QNorm, KNorm, Qkv, QkvBias, AttnSinks, AttnOut, AttnOutBias, AttnPostNorm of every layer
    uint64_t attn_bytes;
    uint64_t dense_offset;  // dense stage: FfnNorm, GateUp, Down, FfnPostNorm, MoeNorm, Router, RouterBias, ExpertBias, Shared* of every layer
    uint64_t dense_bytes;
};
static_assert(sizeof(GroupDescriptor) == 64, "GroupDescriptor must be 64 bytes");
#pragma pack(pop)

enum class VflowStage : uint8_t { Attention, Dense, Bank, Vocab };

// Where a segment role's bytes live in a .vflow file.
constexpr VflowStage vflow_stage(SegmentRole role) {
    switch (role) {
        case SegmentRole::AttnNorm:
        case SegmentRole::QNorm:
        case SegmentRole::KNorm:
        case SegmentRole::Qkv:
        case SegmentRole::QkvBias:
        case SegmentRole::AttnSinks:
        case SegmentRole::AttnOut:
        case SegmentRole::AttnOutBias:
        case SegmentRole::AttnPostNorm: return VflowStage::Attention;
        case SegmentRole::ExpertTable:
        case SegmentRole::ExpertBank: return VflowStage::Bank;
        case SegmentRole::OutputNorm:
        case SegmentRole::LmHead:
        case SegmentRole::TokenEmbd: return VflowStage::Vocab;
        default: return VflowStage::Dense;
    }
}

} // namespace cflow
