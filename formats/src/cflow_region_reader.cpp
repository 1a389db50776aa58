// Region, segment and tile validation of .cflow files, and the per-expert tile view.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "cflow_reader_internal.h"
#include "cflow_segment_shapes.h"
#include "checked_math.h"
#include "tile_geometry.h"

namespace cflow::reader_detail {
namespace {

using segment_shapes::role_name;
using segment_shapes::Storage;

std::string region_label(const FileContext& ctx, uint32_t index) {
    return index == ctx.header.n_layers ? std::string("vocabulary region") : "layer " + std::to_string(index);
}

std::string u(uint64_t v) { return std::to_string(v); }

// Checks the TileHeaders of a planned tile run starting at `base` and fills TileRefs.
Status check_tiles(const FileContext& ctx, const std::string& label, const std::vector<PlannedTile>& plan,
                   const std::vector<TilePart>& parts, const uint8_t* base, uint64_t base_offset, uint16_t layer_id, uint8_t expert_id, uint32_t tile_index0, std::vector<TileRef>* tiles,
                   std::vector<StripeRef>* stripes, const uint8_t* header_source) {
    // The headers are read from header_source (a copy of base's bytes) when given; refs point into base.
    const uint8_t* headers = header_source ? header_source : base;
    const size_t first_ref = tiles->size();
    for (size_t i = 0; i < plan.size(); ++i) {
        const PlannedTile& t = plan[i];
        TileHeader th;
        std::memcpy(&th, headers + t.offset, sizeof(th));
        const uint64_t at = base_offset + t.offset;
        const MatrixId matrix = parts[t.part].matrix;
        const uint16_t quant_group = tile_quant_group(parts[t.part].dtype);
        // Compare first, build messages only on failure: this runs for every tile of the file.
        struct Field {
            const char* name;
            size_t offset;
            uint64_t actual, wanted;
        };
        const Field fields[] = {
            {"layer_id", offsetof(TileHeader, layer_id), th.layer_id, layer_id},
            {"matrix_id", offsetof(TileHeader, matrix_id), th.matrix_id, static_cast<uint8_t>(matrix)},
            {"expert_id", offsetof(TileHeader, expert_id), th.expert_id, expert_id},
            {"row_offset", offsetof(TileHeader, row_offset), th.row_offset, t.row_offset},
            {"col_offset", offsetof(TileHeader, col_offset), th.col_offset, t.col_offset},
            {"tile_rows", offsetof(TileHeader, tile_rows), th.tile_rows, t.rows},
            {"tile_cols", offsetof(TileHeader, tile_cols), th.tile_cols, t.cols},
            {"quant_group", offsetof(TileHeader, quant_group), th.quant_group, quant_group},
        };
        for (const Field& f : fields) {
            if (f.actual == f.wanted) continue;
            std::string note;
            if (std::string_view(f.name) == "matrix_id") note = std::string(" (") + segment_shapes::matrix_name(matrix) + ")";
            return located(ctx, label + " tile " + u(tile_index0 + i) + " TileHeader." + f.name, at + f.offset,
                           "is " + u(f.actual) + ", expected " + u(f.wanted) + note);
        }
        TileRef ref;
        ref.header = reinterpret_cast<const TileHeader*>(base + t.offset);
        ref.payload = base + t.offset + sizeof(TileHeader);
        ref.row_offset = t.row_offset;
        ref.col_offset = t.col_offset;
        ref.rows = t.rows;
        ref.cols = t.cols;
        ref.part = t.part;
        ref.dtype = parts[t.part].dtype;
        tiles->push_back(ref);
    }
    // Stripes: consecutive tiles of one part and one output stripe.
    for (size_t i = first_ref; i < tiles->size(); ++i) {
        const TileRef& ref = (*tiles)[i];
        if (!stripes->empty()) {
            StripeRef& last = stripes->back();
            if (last.part == ref.part && last.row_offset == ref.row_offset && last.first_tile + last.n_tiles == i) {
                ++last.n_tiles;
                continue;
            }
        }
        stripes->push_back(StripeRef{static_cast<uint32_t>(i), 1, ref.part, ref.row_offset, ref.rows});
    }
    return {};
}

struct EntryField {
    const FileContext& ctx;
    std::string label;  // "layer 2 segment 3 (Qkv)"
    uint64_t entry_offset;
    Error operator()(const char* field, size_t field_offset, const std::string& problem) const {
        return located(ctx, label + " SegmentEntry." + field, entry_offset + field_offset, problem);
    }
};

// Validates one SegmentEntry against its role's shape and its region, and builds its view.
Status read_segment(const FileContext& ctx, uint32_t region_index, const RegionEntry& region, uint64_t data_start,
                    const SegmentEntry& e, uint64_t entry_offset, uint32_t seg_index, SegmentView* view) {
    const bool vocab = region_index == ctx.header.n_layers;
    const std::string where = region_label(ctx, region_index) + " segment " + u(seg_index);
    EntryField fail{ctx, where, entry_offset};
    if (e.role >= static_cast<uint8_t>(SegmentRole::Count_))
        return fail("role", offsetof(SegmentEntry, role), "unknown segment role " + u(e.role));
    const auto role = static_cast<SegmentRole>(e.role);
    if (segment_shapes::is_vocab_role(role) != vocab)
        return fail("role", offsetof(SegmentEntry, role),
                    std::string("segment role ") + role_name(role) + " does not belong in the " +
                        (vocab ? "vocabulary region" : "layer regions"));
    fail.label = where + " (" + role_name(role) + ")";
    if (e.reserved0 != 0 || e.reserved1 != 0)
        return e.reserved0 != 0 ? fail("reserved0", offsetof(SegmentEntry, reserved0), "must be 0")
                                : fail("reserved1", offsetof(SegmentEntry, reserved1), "must be 0");
    if (const auto at = first_nonzero(e.reserved2, sizeof e.reserved2))
        return fail("reserved2", offsetof(SegmentEntry, reserved2) + *at, "must be 0");
    if (!is_tile_dtype(static_cast<DType>(e.dtype)) || (ctx.header.version < 6 && is_ggml_tile(static_cast<DType>(e.dtype))))
        return fail("dtype", offsetof(SegmentEntry, dtype),
                    "unknown dtype " + u(e.dtype) + (ctx.header.version < 6 ? " for a version-5 file" : ""));
    const auto dtype = static_cast<DType>(e.dtype);

    auto shape = segment_shapes::segment_shape(ctx.header, ctx.params, role);
    if (!shape) return fail("role", offsetof(SegmentEntry, role), shape.error());
    // Part dtypes: version 6 names each part's; version 5 had one dtype per segment.
    const size_t n_parts = shape->storage == Storage::Raw ? 0 : shape->parts.size();
    for (size_t p = 0; p < sizeof e.part_dtype; ++p) {
        const std::string field = "part_dtype[" + u(p) + "]";
        const uint8_t value = e.part_dtype[p];
        if (ctx.header.version < 6 || p >= n_parts || e.n_parts != n_parts) {
            if (value != 0) return fail(field.c_str(), offsetof(SegmentEntry, part_dtype) + p, "must be 0");
            continue;
        }
        if (!is_tile_dtype(static_cast<DType>(value)))
            return fail(field.c_str(), offsetof(SegmentEntry, part_dtype) + p, "unknown dtype " + u(value));
        if (p == 0 && value != e.dtype)
            return fail(field.c_str(), offsetof(SegmentEntry, part_dtype), "is " + u(value) + ", but dtype is " + u(e.dtype));
        shape->parts[p].dtype = static_cast<DType>(value);
    }
    if (ctx.header.version < 6) shape->parts = with_dtype(std::move(shape->parts), dtype);
    if (shape->storage == Storage::Raw) {
        if (dtype != DType::F32) return fail("dtype", offsetof(SegmentEntry, dtype), "raw segments must be f32");
        if (e.n_parts != 0) return fail("n_parts", offsetof(SegmentEntry, n_parts), "raw segments have 0 parts");
        if (e.part_rows[0] != shape->raw_rows)
            return fail("part_rows[0]", offsetof(SegmentEntry, part_rows),
                        "is " + u(e.part_rows[0]) + ", expected " + u(shape->raw_rows));
        if (e.cols != shape->cols)
            return fail("cols", offsetof(SegmentEntry, cols), "is " + u(e.cols) + ", expected " + u(shape->cols));
        if (e.offset % 4 != 0)
            return fail("offset", offsetof(SegmentEntry, offset), "raw f32 segment at " + u(e.offset) + " is not 4-byte aligned");
    } else {
        if (e.n_parts != shape->parts.size())
            return fail("n_parts", offsetof(SegmentEntry, n_parts),
                        "is " + u(e.n_parts) + ", expected " + u(shape->parts.size()));
        for (size_t p = 0; p < shape->parts.size(); ++p) {
            const std::string index = "[" + u(p) + "]";
            if (e.part_matrix[p] != static_cast<uint8_t>(shape->parts[p].matrix))
                return fail(("part_matrix" + index).c_str(), offsetof(SegmentEntry, part_matrix) + p,
                            "is " + u(e.part_matrix[p]) + ", expected " + u(static_cast<uint8_t>(shape->parts[p].matrix)));
            if (e.part_rows[p] != shape->parts[p].rows)
                return fail(("part_rows" + index).c_str(), offsetof(SegmentEntry, part_rows) + 4 * p,
                            "is " + u(e.part_rows[p]) + ", expected " + u(shape->parts[p].rows));
        }
        if (e.cols != shape->cols)
            return fail("cols", offsetof(SegmentEntry, cols), "is " + u(e.cols) + ", expected " + u(shape->cols));
    }
    auto size = segment_shapes::segment_bytes(ctx.header, *shape);
    if (!size) return fail("cols", offsetof(SegmentEntry, cols), size.error());
    if (e.bytes != size->bytes)
        return fail("bytes", offsetof(SegmentEntry, bytes),
                    "is " + u(e.bytes) + " but the geometry implies " + u(size->bytes) + " bytes");
    if (e.n_tiles != size->n_tiles)
        return fail("n_tiles", offsetof(SegmentEntry, n_tiles), "is " + u(e.n_tiles) + ", expected " + u(size->n_tiles));
    uint64_t end = 0;
    if (!checked::add(e.offset, e.bytes, &end))
        return fail("offset", offsetof(SegmentEntry, offset), "offset " + u(e.offset) + " + bytes overflows 64 bits");
    // .cflow: inside the region after its directory. .vflow layer directories hold no data:
    // their segments lie in their stage of the streaming region or in the expert bank.
    const DataSpan span = ctx.vflow && !vocab ? ctx.vflow->span(region_index, role)
                                              : DataSpan{data_start, region.offset + region.bytes,  // checked by the caller
                                                         "its region's data"};
    if (e.offset < span.begin || end > span.end)
        return fail("offset", offsetof(SegmentEntry, offset),
                    "segment [" + u(e.offset) + ", " + u(end) + ") lies outside " + span.name + " [" + u(span.begin) +
                        ", " + u(span.end) + ")");

    view->role = role;
    view->dtype = dtype;
    view->cols = e.cols;
    view->offset = e.offset;
    view->bytes = e.bytes;
    view->data = ctx.data + e.offset;
    if (shape->storage == Storage::Raw) {
        view->raw_rows = e.part_rows[0];
        return {};
    }
    view->parts = shape->parts;
    if (shape->storage == Storage::ExpertBank) return {};  // expert tiles are checked per expert (read_expert)
    auto plan = plan_tiles(shape->parts, shape->cols);
    if (!plan) return fail("cols", offsetof(SegmentEntry, cols), plan.error());
    const auto layer_id = static_cast<uint16_t>(region_index);
    view->tiles.reserve(plan->size());
    return check_tiles(ctx, fail.label, *plan, shape->parts, view->data, e.offset, layer_id, kNoExpert, 0,
                       &view->tiles, &view->stripes, nullptr);
}

// Reads the ExpertEntry of expert `e` and checks it points at a whole expert inside the bank.
Result<ExpertEntry> expert_entry(const FileContext& ctx, uint32_t layer, const SegmentView& table, const SegmentView& bank,
                                 uint32_t e) {
    ExpertEntry entry;
    const uint64_t at = table.offset + uint64_t{e} * sizeof(ExpertEntry);
    std::memcpy(&entry, table.data + uint64_t{e} * sizeof(ExpertEntry), sizeof(entry));
    auto size = segment_shapes::segment_bytes(ctx.header, {Storage::ExpertBank, bank.parts, bank.cols, 0});
    if (!size) return size.take_error();
    const std::string field = "layer " + u(layer) + " ExpertTable[" + u(e) + "]";
    if (entry.length != size->expert_bytes)
        return located(ctx, field + ".length", at + offsetof(ExpertEntry, length),
                       "is " + u(entry.length) + ", expected " + u(size->expert_bytes) + " bytes per expert");
    uint64_t end = 0;
    if (!checked::add(entry.offset, entry.length, &end) || entry.offset < bank.offset || end > bank.offset + bank.bytes)
        return located(ctx, field + ".offset", at + offsetof(ExpertEntry, offset),
                       "expert bytes [" + u(entry.offset) + ", +" + u(entry.length) + ") lie outside the expert bank [" +
                           u(bank.offset) + ", " + u(bank.offset + bank.bytes) + ")");
    return entry;
}

Status check_required(const FileContext& ctx, uint32_t index, const RegionView& r) {
    const GlobalHeader& h = ctx.header;
    const bool vocab = index == h.n_layers;
    auto need = [&](SegmentRole role, bool wanted, const std::string& why) -> Status {
        const bool present = r.find(role) != nullptr;
        if (present == wanted) return {};
        return make_error(ctx.path + ": " + region_label(ctx, index) + " at offset " + u(r.offset) + ": segment " +
                          role_name(role) + (wanted ? " is missing" : " must not be present") + " (" + why + ")");
    };
    std::vector<Status> checks;
    if (vocab) {
        const bool tied = (h.feature_flags & kFeatureTiedEmbeddings) != 0;
        checks = {need(SegmentRole::OutputNorm, true, "always required"),
                  need(SegmentRole::TokenEmbd, true, "always required"),
                  need(SegmentRole::LmHead, !tied, tied ? "embeddings are tied" : "embeddings are not tied")};
    } else {
        const bool dense = h.d_ff > 0, moe = h.n_experts > 0, shared = ctx.params.shared_expert_d_ff > 0;
        const bool qk_norm = (h.feature_flags & kFeatureQkNorm) != 0, bias = (h.feature_flags & kFeatureQkvBias) != 0;
        const bool post_norms = (ctx.params.extended_features & kExtPostNorms) != 0;
        const std::string pn = post_norms ? "extended feature PostNorms" : "no extended feature PostNorms";
        const std::string d_ff = dense ? "d_ff > 0" : "d_ff is 0", e = moe ? "n_experts > 0" : "n_experts is 0";
        const std::string s = shared ? "shared_expert_d_ff > 0" : "shared_expert_d_ff is 0";
        const bool sinks = (ctx.params.extended_features & kExtAttnSinks) != 0;
        const bool out_bias = (ctx.params.extended_features & kExtAttnOutBias) != 0;
        const bool moe_biases = moe && (ctx.params.extended_features & kExtMoeBiases) != 0;
        const std::string mb = moe_biases ? "extended feature MoeBiases" : "no extended feature MoeBiases with experts";
        checks = {need(SegmentRole::AttnSinks, sinks, sinks ? "extended feature AttnSinks" : "no extended feature AttnSinks"),
                  need(SegmentRole::AttnOutBias, out_bias,
                       out_bias ? "extended feature AttnOutBias" : "no extended feature AttnOutBias"),
                  need(SegmentRole::RouterBias, moe_biases, mb), need(SegmentRole::ExpertBias, moe_biases, mb),
                  need(SegmentRole::AttnNorm, true, "always required"), need(SegmentRole::Qkv, true, "always required"),
                  need(SegmentRole::AttnOut, true, "always required"),
                  need(SegmentRole::QNorm, qk_norm, "feature flag QkNorm"), need(SegmentRole::KNorm, qk_norm, "feature flag QkNorm"),
                  need(SegmentRole::QkvBias, bias, "feature flag QkvBias"), need(SegmentRole::FfnNorm, dense, d_ff),
                  need(SegmentRole::GateUp, dense, d_ff), need(SegmentRole::Down, dense, d_ff),
                  need(SegmentRole::MoeNorm, moe, e), need(SegmentRole::Router, moe, e),
                  need(SegmentRole::ExpertTable, moe, e), need(SegmentRole::ExpertBank, moe, e),
                  need(SegmentRole::SharedGateUp, shared, s), need(SegmentRole::SharedDown, shared, s),
                  need(SegmentRole::SharedGate, shared, s), need(SegmentRole::AttnPostNorm, post_norms, pn),
                  need(SegmentRole::FfnPostNorm, post_norms && dense, post_norms ? d_ff : pn)};
    }
    for (Status& s : checks)
        if (!s) return s;
    return {};
}

} // namespace

Result<RegionView> read_region(const FileContext& ctx, uint32_t index) {
    const uint64_t entry_offset = ctx.header.layer_table_offset + uint64_t{index} * sizeof(RegionEntry);  // table checked
    RegionEntry entry;
    std::memcpy(&entry, ctx.data + entry_offset, sizeof(entry));
    const std::string table_field = "LayerTable[" + u(index) + "]";
    uint64_t end = 0;
    if (!checked::add(entry.offset, entry.bytes, &end))
        return located(ctx, table_field + ".offset", entry_offset, "offset + bytes overflows 64 bits");
    if (end > ctx.size)
        return located(ctx, table_field + ".offset", entry_offset,
                       "region [" + u(entry.offset) + ", " + u(end) + ") past end of file (" + u(ctx.size) + " bytes)");
    if (entry.bytes < sizeof(RegionHeader))
        return located(ctx, table_field + ".bytes", entry_offset + offsetof(RegionEntry, bytes),
                       "region of " + u(entry.bytes) + " bytes cannot hold its 16-byte header");

    RegionHeader rh;
    std::memcpy(&rh, ctx.data + entry.offset, sizeof(rh));
    const bool vocab = index == ctx.header.n_layers;
    const char* magic = vocab ? kVocabRegionMagic : kLayerRegionMagic;
    const std::string label = region_label(ctx, index);
    if (std::memcmp(rh.magic, magic, 4) != 0)
        return located(ctx, label + " RegionHeader.magic", entry.offset,
                       std::string("bad region magic, expected \"") + std::string(magic, 4) + "\"");
    if (rh.layer_index != index)
        return located(ctx, label + " RegionHeader.layer_index", entry.offset + offsetof(RegionHeader, layer_index),
                       "is " + u(rh.layer_index) + ", expected " + u(index));
    if (rh.reserved != 0)  // reserved fields gain meaning only with a version bump
        return located(ctx, label + " RegionHeader.reserved", entry.offset + offsetof(RegionHeader, reserved),
                       "is " + u(rh.reserved) + ", must be 0");
    const uint64_t directory_room = (entry.bytes - sizeof(RegionHeader)) / sizeof(SegmentEntry);
    if (rh.n_segments > directory_room || rh.n_segments > static_cast<uint32_t>(SegmentRole::Count_))
        return located(ctx, label + " RegionHeader.n_segments", entry.offset + offsetof(RegionHeader, n_segments),
                       u(rh.n_segments) + " segment entries do not fit the region (" + u(entry.bytes) +
                           " bytes, at most one segment per role)");

    // A .vflow layer directory is exactly its header and entries (its data lies elsewhere).
    const uint64_t directory_bytes = sizeof(RegionHeader) + uint64_t{rh.n_segments} * sizeof(SegmentEntry);
    if (ctx.vflow && !vocab && entry.bytes != directory_bytes)
        return located(ctx, table_field + ".bytes", entry_offset + offsetof(RegionEntry, bytes),
                       "is " + u(entry.bytes) + ", but a .vflow layer directory of " + u(rh.n_segments) + " entries is " +
                           u(directory_bytes) + " bytes");

    RegionView view;
    view.index = index;
    view.offset = entry.offset;
    view.bytes = entry.bytes;
    view.by_role.fill(-1);
    view.segments.resize(rh.n_segments);
    const uint64_t directory = entry.offset + sizeof(RegionHeader);
    const uint64_t data_start = directory + uint64_t{rh.n_segments} * sizeof(SegmentEntry);
    for (uint32_t i = 0; i < rh.n_segments; ++i) {
        const uint64_t at = directory + uint64_t{i} * sizeof(SegmentEntry);
        SegmentEntry se;
        std::memcpy(&se, ctx.data + at, sizeof(se));
        if (Status s = read_segment(ctx, index, entry, data_start, se, at, i, &view.segments[i]); !s)
            return s.take_error();
        auto& slot = view.by_role[se.role];
        if (slot >= 0)
            return located(ctx, label + " segment " + u(i) + " SegmentEntry.role", at,
                           std::string("duplicate segment role ") + role_name(static_cast<SegmentRole>(se.role)));
        slot = static_cast<int16_t>(i);
    }
    // Segments must not overlap each other.
    std::vector<const SegmentView*> by_offset;
    for (const SegmentView& s : view.segments) by_offset.push_back(&s);
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i)
        if (by_offset[i]->offset < by_offset[i - 1]->offset + by_offset[i - 1]->bytes)
            return located(ctx, label + " segment " + role_name(by_offset[i]->role), by_offset[i]->offset,
                           std::string("overlaps segment ") + role_name(by_offset[i - 1]->role));
    if (Status s = check_required(ctx, index, view); !s) return s.take_error();

    if (const SegmentView* table = view.find(SegmentRole::ExpertTable)) {
        const SegmentView* bank = view.find(SegmentRole::ExpertBank);
        for (uint32_t e = 0; e < ctx.header.n_experts; ++e) {
            auto entry_e = expert_entry(ctx, index, *table, *bank, e);
            if (!entry_e) return entry_e.take_error();
        }
    }
    return view;
}

Result<ExpertLocation> read_expert_location(const FileContext& ctx, const RegionView& layer, uint32_t expert) {
    const SegmentView* table = layer.find(SegmentRole::ExpertTable);
    const SegmentView* bank = layer.find(SegmentRole::ExpertBank);
    if (!table || !bank)
        return make_error(ctx.path + ": layer " + u(layer.index) + " has no expert table/bank (dense layer)");
    auto entry = expert_entry(ctx, layer.index, *table, *bank, expert);
    if (!entry) return entry.take_error();
    return ExpertLocation{entry->offset, entry->length};
}

Result<ExpertView> read_expert(const FileContext& ctx, const RegionView& layer, uint32_t expert, const uint8_t* expert_bytes) {
    auto entry = read_expert_location(ctx, layer, expert);
    if (!entry) return entry.take_error();
    const SegmentView* bank = layer.find(SegmentRole::ExpertBank);
    const segment_shapes::SegmentShape bank_shape{Storage::ExpertBank, bank->parts, bank->cols, 0};
    auto size = segment_shapes::segment_bytes(ctx.header, bank_shape);
    if (!size) return size.take_error();

    const auto gate_up_parts = segment_shapes::expert_gate_up_parts(bank_shape);
    const auto down_parts = segment_shapes::expert_down_parts(bank_shape);
    auto gate_up_plan = plan_tiles(gate_up_parts, bank_shape.cols);
    auto down_plan = plan_tiles(down_parts, segment_shapes::expert_down_cols(bank_shape));
    if (!gate_up_plan) return gate_up_plan.take_error();
    if (!down_plan) return down_plan.take_error();

    ExpertView view;
    view.offset = entry->offset;
    view.bytes = entry->bytes;
    const std::string label = "layer " + u(layer.index) + " expert " + u(expert);
    const auto layer_id = static_cast<uint16_t>(layer.index);
    const auto expert_id = static_cast<uint8_t>(expert);
    const uint8_t* base = ctx.data + entry->offset;
    view.gate_up.reserve(gate_up_plan->size());
    view.down.reserve(down_plan->size());
    if (Status s = check_tiles(ctx, label + " gate/up", *gate_up_plan, gate_up_parts, base, entry->offset, layer_id, expert_id, 0, &view.gate_up, &view.gate_up_stripes, expert_bytes);
        !s)
        return s.take_error();
    const uint64_t down_offset = entry->offset + size->expert_gate_up_bytes;
    if (Status s = check_tiles(ctx, label + " down", *down_plan, down_parts, ctx.data + down_offset, down_offset, layer_id, expert_id, 0, &view.down, &view.down_stripes,
                               expert_bytes ? expert_bytes + size->expert_gate_up_bytes : nullptr);
        !s)
        return s.take_error();
    return view;
}

} // namespace cflow::reader_detail
