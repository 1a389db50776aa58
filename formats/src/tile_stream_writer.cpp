// Tile encoding for one tiled segment: work is split into units (the column tiles of
// one part in one output stripe), units are grouped into chunks of bounded size, the
// units of a chunk are encoded by a pool of threads into one buffer, and the buffer is
// appended to the output. Memory stays bounded by chunk_bytes plus one f32 stripe per
// thread, whatever the vocabulary size; cancellation is checked between chunks.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <system_error>
#include <thread>

#include "cflow/formats/tile_codec.h"
#include "converter_internal.h"

namespace cflow::convert_detail {
namespace {

struct TileUnit {
    const std::vector<PlannedTile>* plan;
    uint32_t first_tile;
    uint32_t n_tiles;
    const MatrixSource* source;
    MatrixId matrix;
    DType dtype;  // of the part's tiles
    uint8_t expert_id;
    bool exact;
    uint64_t offset;  // of the unit's first tile header, relative to the segment
    uint64_t bytes;
};

void append_units(const std::vector<PlannedTile>& plan, const std::vector<TilePart>& parts,
                  const std::vector<const MatrixSource*>& sources, const std::vector<bool>& exact, uint8_t expert_id,
                  uint64_t base, std::vector<TileUnit>* units) {
    for (uint32_t i = 0; i < plan.size();) {
        uint32_t j = i + 1;
        while (j < plan.size() && plan[j].part == plan[i].part && plan[j].row_offset == plan[i].row_offset) ++j;
        const uint8_t part = plan[i].part;
        const uint64_t end = plan[j - 1].offset + plan[j - 1].bytes;
        units->push_back(TileUnit{&plan, i, j - i, sources[part], parts[part].matrix, parts[part].dtype, expert_id, exact[part],
                                  base + plan[i].offset, end - plan[i].offset});
        i = j;
    }
}

// Copies the ggml blocks of one tile into its payload. ggml-block tiles: each tile row is the
// row's blocks over the tile's columns (one super-block, or cols / 32 blocks), byte for byte.
// Q4_0 / Q8_0: scales first, then quants.
void copy_blocks(DType dtype, const MatrixSource& src, const PlannedTile& t, uint8_t* payload) {
    if (is_ggml_tile(dtype)) {
        const uint64_t row_bytes = tile_payload_bytes(dtype, 1, t.cols);  // whole blocks (plan_tiles)
        for (uint32_t r = 0; r < t.rows; ++r)
            std::memcpy(payload + r * row_bytes, src.row_blocks(t.row_offset + r, t.col_offset), row_bytes);
        return;
    }
    const uint32_t groups = t.cols / kQuantGroup;  // exact re-tiling needs cols % 32 == 0 (checked by the caller)
    const uint64_t block_data = ggml_block_bytes(dtype) - 2;
    uint8_t* scales = payload;
    uint8_t* data = payload + uint64_t{t.rows} * groups * 2;
    for (uint32_t r = 0; r < t.rows; ++r) {
        const uint8_t* blocks = src.row_blocks(t.row_offset + r, t.col_offset);
        for (uint32_t g = 0; g < groups; ++g) {
            const uint64_t b = uint64_t{r} * groups + g;
            std::memcpy(scales + b * 2, blocks + g * (block_data + 2), 2);
            std::memcpy(data + b * block_data, blocks + g * (block_data + 2) + 2, block_data);
        }
    }
}

// Q4_0 and Q8_0 tiles straight from source rows (F16/BF16 for Q4_0; F32/F16/BF16 for Q8_0): no
// f32 stripe (on a 1B-parameter F16 checkpoint the f32 stripe's write and re-read were a fifth of
// the conversion's CPU time). Each source row is quantised whole, front to back (the Q4_0 path
// takes 16 blocks at a time, more than a 256-column tile row holds), and its blocks are then
// copied into the unit's tiles.
bool has_direct_path(DType dtype, DType src) {
    if (dtype == DType::Q4_0) return has_direct_q4_0_from(src);
    if (dtype == DType::Q8_0) return has_direct_q8_0_from(src);
    return false;
}

void encode_direct(const TileUnit& unit, DType dtype, const MatrixSource& src, std::vector<uint8_t>& row_blocks,
                   uint8_t* out) {
    const PlannedTile& first = (*unit.plan)[unit.first_tile];
    const uint32_t row_groups = src.cols / kQuantGroup;
    const uint64_t block_data = dtype == DType::Q4_0 ? 16 : 32;
    row_blocks.resize(uint64_t{row_groups} * (2 + block_data));  // f16 scales [row_groups], then quants [row_groups x block_data]
    uint8_t* row_scales = row_blocks.data();
    uint8_t* row_quants = row_blocks.data() + uint64_t{row_groups} * 2;
    for (uint32_t r = 0; r < first.rows; ++r) {
        const uint8_t* values = src.row_blocks(first.row_offset + r, 0);
        if (dtype == DType::Q4_0)
            quantize_row_q4_0_from(src.tensor->dtype, values, src.cols, row_scales, row_quants);
        else
            quantize_row_q8_0_from(src.tensor->dtype, values, src.cols, row_scales, reinterpret_cast<int8_t*>(row_quants));
        for (uint32_t i = 0; i < unit.n_tiles; ++i) {
            const PlannedTile& t = (*unit.plan)[unit.first_tile + i];
            const uint32_t groups = t.cols / kQuantGroup, group0 = t.col_offset / kQuantGroup;
            uint8_t* payload = out + (t.offset - first.offset) + sizeof(TileHeader);
            uint8_t* scales = payload;                                   // f16 [rows x groups]
            uint8_t* quants = payload + uint64_t{t.rows} * groups * 2;  // [rows x groups x block_data]
            std::memcpy(scales + uint64_t{r} * groups * 2, row_scales + uint64_t{group0} * 2, uint64_t{groups} * 2);
            std::memcpy(quants + uint64_t{r} * groups * block_data, row_quants + group0 * block_data,
                        groups * block_data);
        }
    }
}

void encode_unit(const TileUnit& unit, uint16_t layer_id, std::vector<float>& stripe, std::vector<uint8_t>& row_blocks,
                 uint8_t* out) {
    const DType dtype = unit.dtype;
    const PlannedTile& first = (*unit.plan)[unit.first_tile];
    const MatrixSource& src = *unit.source;
    // Exact copies need whole 32-blocks in every tile; cols % 32 == 0 guarantees it (tiles start at multiples of 256).
    const bool exact = unit.exact && src.cols % kQuantGroup == 0;
    bool direct = !exact && src.tensor && src.cols % kQuantGroup == 0 && has_direct_path(dtype, src.tensor->dtype);
    for (uint32_t i = 1; direct && i < unit.n_tiles; ++i) direct = (*unit.plan)[unit.first_tile + i].rows == first.rows;
    if (!exact && !direct) {
        stripe.resize(uint64_t{first.rows} * src.cols);  // [rows x cols] f32 of this stripe
        src.read_rows_f32(first.row_offset, first.rows, stripe.data());
    }
    for (uint32_t i = 0; i < unit.n_tiles; ++i) {
        const PlannedTile& t = (*unit.plan)[unit.first_tile + i];
        uint8_t* tile = out + (t.offset - first.offset);
        TileHeader h{};
        h.layer_id = layer_id;
        h.matrix_id = static_cast<uint8_t>(unit.matrix);
        h.expert_id = unit.expert_id;
        h.row_offset = t.row_offset;
        h.col_offset = static_cast<uint16_t>(t.col_offset);
        h.tile_rows = t.rows;
        h.tile_cols = t.cols;
        h.quant_group = tile_quant_group(dtype);
        std::memcpy(tile, &h, sizeof(h));
        if (exact)
            copy_blocks(dtype, src, t, tile + sizeof(h));
        else if (!direct)
            encode_tile(dtype, stripe.data() + t.col_offset, src.cols, t.rows, t.cols, tile + sizeof(h));
    }
    if (direct) encode_direct(unit, dtype, src, row_blocks, out);
}

} // namespace

Status write_tiled_segment(const TileWriteContext& ctx, const SegmentPlan& seg, uint16_t layer_id) {
    std::vector<TileUnit> units;
    std::vector<PlannedTile> plan, down_plan;
    if (seg.shape.storage == segment_shapes::Storage::Tiled) {
        auto p = plan_tiles(seg.shape.parts, seg.shape.cols);
        if (!p) return p.take_error();
        plan = std::move(*p);
        std::vector<const MatrixSource*> sources;
        for (const MatrixSource& m : seg.parts) sources.push_back(&m);
        append_units(plan, seg.shape.parts, sources, seg.exact_parts, kNoExpert, 0, &units);
    } else {
        // ExpertBank: per expert, gate/up interleaved by stripe, then down.
        const std::vector<TilePart> gate_up_parts = segment_shapes::expert_gate_up_parts(seg.shape);
        const std::vector<TilePart> down_parts = segment_shapes::expert_down_parts(seg.shape);
        auto gu = plan_tiles(gate_up_parts, seg.shape.cols);
        auto dn = plan_tiles(down_parts, segment_shapes::expert_down_cols(seg.shape));
        if (!gu) return gu.take_error();
        if (!dn) return dn.take_error();
        plan = std::move(*gu);
        down_plan = std::move(*dn);
        const std::vector<bool> gate_up_exact(seg.exact_parts.begin(), seg.exact_parts.begin() + 2);
        const std::vector<bool> down_exact(seg.exact_parts.begin() + 2, seg.exact_parts.end());
        for (size_t e = 0; e < seg.experts.size(); ++e) {
            const uint64_t base = e * seg.expert_bytes;
            const auto id = static_cast<uint8_t>(e);
            append_units(plan, gate_up_parts, {&seg.experts[e][0], &seg.experts[e][1]}, gate_up_exact, id, base, &units);
            append_units(down_plan, down_parts, {&seg.experts[e][2]}, down_exact, id, base + seg.expert_gate_up_bytes,
                         &units);
        }
    }

    // Two buffers: chunk k is written (copied into the page cache, a serial cost) by a writer
    // thread while chunk k + 1 is encoded. The guard joins that thread on every return.
    std::vector<uint8_t> buffers[2];
    struct PendingWrite {
        std::thread thread;
        Status status;
        Status finish() {
            if (thread.joinable()) thread.join();
            return std::move(status);
        }
        ~PendingWrite() {
            if (thread.joinable()) thread.join();
        }
    } pending;
    int slot = 0;
    for (size_t first = 0; first < units.size();) {
        if (ctx.cancel && ctx.cancel->is_cancelled()) return cancelled_error("conversion");
        size_t last = first;
        uint64_t chunk = 0;
        while (last < units.size() && (last == first || chunk + units[last].bytes <= ctx.chunk_bytes))
            chunk += units[last++].bytes;
        const uint64_t chunk_offset = units[first].offset;
        std::vector<uint8_t>& buffer = buffers[slot];
        try {
            buffer.resize(chunk);
        } catch (const std::bad_alloc&) {
            return make_error(ErrorKind::OutOfMemory,
                              "out of memory allocating a " + std::to_string(chunk) + "-byte tile chunk");
        }

        std::atomic<size_t> next{first};
        std::atomic<bool> failed{false};
        auto worker = [&] {
            try {
                std::vector<float> stripe;
                std::vector<uint8_t> row_blocks;
                for (size_t u = next++; u < last; u = next++)
                    encode_unit(units[u], layer_id, stripe, row_blocks,
                                buffer.data() + (units[u].offset - chunk_offset));
            } catch (const std::bad_alloc&) {
                failed = true;
            }
        };
        const size_t n_threads = std::min<size_t>(ctx.threads, last - first);
        std::vector<std::thread> pool;
        for (size_t i = 1; i < n_threads; ++i) {
            try {
                pool.emplace_back(worker);
            } catch (const std::system_error&) {
                break;  // the OS refused another thread: the ones we have (at least this one) finish the chunk
            }
        }
        worker();
        for (std::thread& th : pool) th.join();
        if (failed) return make_error(ErrorKind::OutOfMemory, "out of memory while encoding tiles");
        if (Status s = pending.finish(); !s) return s;  // the previous chunk is on its way to the file
        try {
            pending.thread = std::thread([&pending, &ctx, &buffer, chunk] { pending.status = ctx.writer->write(buffer.data(), chunk); });
        } catch (const std::system_error&) {
            if (Status s = ctx.writer->write(buffer.data(), chunk); !s) return s;  // no thread: write it here
        }
        slot ^= 1;
        first = last;
    }
    return pending.finish();
}

} // namespace cflow::convert_detail
