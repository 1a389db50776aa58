// Segment shapes by role (see cflow_segment_shapes.h and formats/docs/cflow-format.md).
#include "cflow_segment_shapes.h"

#include <array>
#include <limits>

#include "checked_math.h"
#include "tile_geometry.h"

namespace cflow::segment_shapes {

const char* role_name(SegmentRole role) {
    static constexpr std::array<const char*, static_cast<size_t>(SegmentRole::Count_)> kNames = {
        "AttnNorm", "QNorm",    "KNorm",       "Qkv",        "QkvBias",      "AttnOut",    "FfnNorm",
        "GateUp",   "Down",     "MoeNorm",     "Router",     "ExpertTable",  "ExpertBank", "SharedGateUp",
        "SharedDown", "SharedGate", "OutputNorm", "LmHead", "TokenEmbd", "AttnPostNorm", "FfnPostNorm",
        "AttnSinks", "AttnOutBias", "RouterBias", "ExpertBias"};
    const auto i = static_cast<size_t>(role);
    return i < kNames.size() ? kNames[i] : "unknown";
}

const char* matrix_name(MatrixId id) {
    static constexpr std::array<const char*, 16> kNames = {
        "Q",          "K",        "V",          "O",          "Gate",       "Up",     "Down",     "Router",
        "ExpertGate", "ExpertUp", "ExpertDown", "SharedGate", "SharedUp", "SharedDown", "LmHead", "TokenEmbd"};
    const auto i = static_cast<size_t>(id);
    return i < kNames.size() ? kNames[i] : "unknown";
}

bool is_vocab_role(SegmentRole role) {
    return role == SegmentRole::OutputNorm || role == SegmentRole::LmHead || role == SegmentRole::TokenEmbd;
}

namespace {

Result<uint32_t> product_u32(uint64_t a, uint64_t b, const char* what) {
    const uint64_t p = a * b;  // both operands < 2^32 here, so the u64 product cannot overflow
    if (p > std::numeric_limits<uint32_t>::max()) return make_error(std::string(what) + " exceeds 32 bits");
    return static_cast<uint32_t>(p);
}

SegmentShape raw(uint32_t rows, uint32_t cols) {
    SegmentShape s;
    s.storage = Storage::Raw;
    s.raw_rows = rows;
    s.cols = cols;
    return s;
}

SegmentShape tiled(std::vector<TilePart> parts, uint32_t cols) {
    SegmentShape s;
    s.storage = Storage::Tiled;
    s.parts = std::move(parts);
    s.cols = cols;
    return s;
}

} // namespace

std::vector<TilePart> expert_gate_up_parts(const SegmentShape& bank) { return {bank.parts[0], bank.parts[1]}; }

std::vector<TilePart> expert_down_parts(const SegmentShape& bank) { return {bank.parts[2]}; }

Result<SegmentShape> segment_shape(const GlobalHeader& h, const ModelParams& p, SegmentRole role) {
    const uint32_t d = h.d_model;
    auto q_rows = product_u32(h.n_heads, h.head_dim, "n_heads * head_dim");
    auto kv_rows = product_u32(h.n_kv_heads, h.head_dim, "n_kv_heads * head_dim");
    if (!q_rows) return q_rows.take_error();
    if (!kv_rows) return kv_rows.take_error();
    switch (role) {
        case SegmentRole::AttnNorm:
        case SegmentRole::AttnPostNorm:
        case SegmentRole::FfnPostNorm:
        case SegmentRole::FfnNorm:
        case SegmentRole::MoeNorm:
        case SegmentRole::SharedGate:
        case SegmentRole::AttnOutBias:
        case SegmentRole::OutputNorm: return raw(1, d);
        case SegmentRole::AttnSinks: return raw(1, h.n_heads);
        case SegmentRole::RouterBias: return raw(1, h.n_experts);
        case SegmentRole::ExpertBias: {
            const uint64_t per_expert = 2 * uint64_t{h.expert_d_ff} + d;
            if (per_expert > std::numeric_limits<uint32_t>::max()) return make_error("expert bias length exceeds 32 bits");
            return raw(h.n_experts, static_cast<uint32_t>(per_expert));
        }
        case SegmentRole::QNorm:
        case SegmentRole::KNorm: return raw(1, h.head_dim);
        case SegmentRole::Qkv:
            return tiled({{MatrixId::Q, *q_rows}, {MatrixId::K, *kv_rows}, {MatrixId::V, *kv_rows}}, d);
        case SegmentRole::QkvBias: {
            const uint64_t total = uint64_t{*q_rows} + 2 * uint64_t{*kv_rows};
            if (total > std::numeric_limits<uint32_t>::max()) return make_error("QKV bias length exceeds 32 bits");
            return raw(1, static_cast<uint32_t>(total));
        }
        case SegmentRole::AttnOut: return tiled({{MatrixId::O, d}}, *q_rows);
        case SegmentRole::GateUp: return tiled({{MatrixId::Gate, h.d_ff}, {MatrixId::Up, h.d_ff}}, d);
        case SegmentRole::Down: return tiled({{MatrixId::Down, d}}, h.d_ff);
        case SegmentRole::Router: return raw(h.n_experts, d);
        case SegmentRole::ExpertTable: return raw(h.n_experts, sizeof(ExpertEntry) / 4);  // four 32-bit words per entry
        case SegmentRole::ExpertBank: {
            SegmentShape s;
            s.storage = Storage::ExpertBank;
            s.parts = {{MatrixId::ExpertGate, h.expert_d_ff, DType::F32},
                       {MatrixId::ExpertUp, h.expert_d_ff, DType::F32},
                       {MatrixId::ExpertDown, d, DType::F32}};
            s.cols = d;
            return s;
        }
        case SegmentRole::SharedGateUp:
            return tiled({{MatrixId::SharedGate, p.shared_expert_d_ff}, {MatrixId::SharedUp, p.shared_expert_d_ff}}, d);
        case SegmentRole::SharedDown: return tiled({{MatrixId::SharedDown, d}}, p.shared_expert_d_ff);
        case SegmentRole::LmHead: return tiled({{MatrixId::LmHead, h.vocab_size}}, d);
        case SegmentRole::TokenEmbd: return tiled({{MatrixId::TokenEmbd, h.vocab_size}}, d);
        case SegmentRole::Count_: break;
    }
    return make_error("unknown segment role " + std::to_string(static_cast<unsigned>(role)));
}

Result<SegmentBytes> segment_bytes(const GlobalHeader& h, const SegmentShape& shape) {
    SegmentBytes out;
    switch (shape.storage) {
        case Storage::Raw:
            if (!checked::mul(uint64_t{shape.raw_rows} * shape.cols, 4, &out.bytes))
                return make_error("raw segment size overflows 64 bits");
            return out;
        case Storage::Tiled: {
            auto size = tile_geometry::segment_size(shape.parts, shape.cols);
            if (!size) return size.take_error();
            out.bytes = size->bytes;
            out.n_tiles = size->n_tiles;
            return out;
        }
        case Storage::ExpertBank: {
            auto gate_up = tile_geometry::segment_size(expert_gate_up_parts(shape), shape.cols);
            if (!gate_up) return make_error(gate_up.kind(), "expert gate/up: " + gate_up.error());
            auto down = tile_geometry::segment_size(expert_down_parts(shape), expert_down_cols(shape));
            if (!down) return make_error(down.kind(), "expert down: " + down.error());
            out.expert_gate_up_bytes = gate_up->bytes;
            uint64_t tiles_per_expert = 0;
            if (!checked::add(gate_up->bytes, down->bytes, &out.expert_bytes) ||
                !checked::mul(out.expert_bytes, h.n_experts, &out.bytes) ||
                !checked::add(gate_up->n_tiles, down->n_tiles, &tiles_per_expert) ||
                !checked::mul(tiles_per_expert, h.n_experts, &out.n_tiles))
                return make_error("expert bank size overflows 64 bits");
            if (out.n_tiles > std::numeric_limits<uint32_t>::max())
                return make_error("expert bank holds more tiles than a u32 can count");
            return out;
        }
    }
    return make_error(ErrorKind::Internal, "unknown storage");
}

} // namespace cflow::segment_shapes
