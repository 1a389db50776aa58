// LoadOptions::lanes: a second, anonymous copy of the model file in which every Q4_0/Q8_0 matrix
// whose tiles all fit the lanes layout (kernels/lanes_layout.h) is rearranged, tile by tile at
// the same offsets, while the copy is still writable (MappedFile's ReadAnon transform). The
// session reads those matrices from the copy and everything else from the file as before.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "forward/lanes_arena.h"

#include "cflow/engine/forward/model.h"
#include "cflow/engine/kernels/lanes_layout.h"
#include "cflow/formats/tile_plan.h"

namespace cflow {

struct LanesArenaBuilder {
    struct Tile {
        uint64_t offset;  // of the payload in the file
        uint32_t rows, cols;
        DType dtype;
    };

    static bool supported(const std::vector<TileRef>& tiles) {
        return !tiles.empty() && std::all_of(tiles.begin(), tiles.end(), [&](const TileRef& t) {
            return lanes_layout_supported(t.dtype, t.rows, t.cols);
        });
    }

    static void add(std::vector<Tile>& out, const uint8_t* fileBase, const std::vector<TileRef>& tiles) {
        for (const TileRef& t : tiles) out.push_back({uint64_t(t.payload - fileBase), t.rows, t.cols, t.dtype});
    }

    static Status build(Model& model, const std::string& path) {
        const CflowFile& f = *model.file_;
        const uint8_t* fileBase = f.file().data();
        std::vector<Tile> tiles;
        std::vector<const SegmentView*> segments;
        auto consider = [&](const SegmentView* s) {
            if (!s || s == model.token_embd_ || !supported(s->tiles)) return;
            if (std::find(segments.begin(), segments.end(), s) != segments.end()) return;
            segments.push_back(s);
            add(tiles, fileBase, s->tiles);
        };
        const GlobalHeader& h = f.header();
        model.lanes_expert_banks_.assign(h.n_layers, 0);
        for (uint32_t l = 0; l < h.n_layers; ++l) {
            const LayerWeights& w = model.layers_[l];
            for (const SegmentView* s : {w.qkv, w.attn_out, w.gate_up, w.down, w.shared_gate_up, w.shared_down}) consider(s);
            if (!w.expert_bank) continue;
            std::vector<Tile> bank;
            bool all = true;
            for (uint32_t e = 0; e < h.n_experts && all; ++e) {
                auto view = f.expert(l, e);
                if (!view) return view.take_error();
                all = supported(view->gate_up) && supported(view->down);
                add(bank, fileBase, view->gate_up);
                add(bank, fileBase, view->down);
            }
            if (!all) continue;
            tiles.insert(tiles.end(), bank.begin(), bank.end());
            model.lanes_expert_banks_[l] = 1;
        }
        consider(model.lm_head_);  // not when tied: token_embd rows are decoded from the file layout

        // The copy holds the whole file: worth it only when most of what a token reads is in
        // the lanes layout. A K-quant model (no lanes layout) would hold its weights twice for nothing.
        uint64_t lanesBytes = 0;
        for (const Tile& t : tiles) lanesBytes += tile_payload_bytes(t.dtype, t.rows, t.cols);
        if (lanesBytes * 2 < f.file().size()) {
            std::fill(model.lanes_expert_banks_.begin(), model.lanes_expert_banks_.end(), 0);
            return {};
        }

        // The session reads these matrices from the copy only: let the mapping's pages of them
        // leave the resident set first (validating the file touched them), so that the process
        // holds one copy of the weights at its peak, not two.
        for (const SegmentView* s : segments) f.file().advise_unneeded(s->offset, s->bytes);
        for (uint32_t l = 0; l < h.n_layers; ++l)
            if (model.lanes_expert_banks_[l]) f.file().advise_unneeded(model.layers_[l].expert_bank->offset, model.layers_[l].expert_bank->bytes);

        const uint64_t fileBytes = f.file().size();
        bool changed = false;
        auto rearrange = [&](uint8_t* bytes, uint64_t size) {
            if (size != fileBytes) {
                changed = true;
                return;
            }
            std::vector<uint8_t> original;  // [one tile's payload]
            for (const Tile& t : tiles) {
                const uint64_t n = tile_payload_bytes(t.dtype, t.rows, t.cols);
                if (t.offset > size || n > size - t.offset) {
                    changed = true;
                    return;
                }
                original.assign(bytes + t.offset, bytes + t.offset + n);
                repack_tile_lanes(t.dtype, original.data(), t.rows, t.cols, bytes + t.offset);
            }
        };
        auto copy = MappedFile::open(path, LoadMode::ReadAnon, rearrange);
        if (!copy) return copy.take_error();
        if (changed) return make_error(ErrorKind::Io, path + ": the file changed while it was read for the lanes layout");
        if (std::memcmp(copy.value()->data(), fileBase, std::min<uint64_t>(fileBytes, 64)) != 0)
            return make_error(ErrorKind::Io, path + ": the file changed while it was read for the lanes layout");
        std::sort(segments.begin(), segments.end());
        model.lanes_segments_ = std::move(segments);
        model.lanes_ = std::move(copy.value());
        return {};
    }
};

Status build_lanes_arena(Model& model, const std::string& path) {
    try {
        return LanesArenaBuilder::build(model, path);
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, path + ": out of memory while rearranging tiles for the lanes layout");
    }
}

const uint8_t* unpack_lanes_for_kernel(DType dtype, const uint8_t* lanes, uint32_t rows, uint32_t cols) {
    thread_local std::vector<uint8_t> buffer;  // [tile_payload_bytes] the file layout
    const size_t n = tile_payload_bytes(dtype, rows, cols);
    if (buffer.size() < n) buffer.resize(n);
    unpack_tile_lanes(dtype, lanes, rows, cols, buffer.data());
    return buffer.data();
}

const uint8_t* Model::lanes_base() const { return lanes_ ? lanes_->data() : nullptr; }

bool Model::in_lanes(const SegmentView& segment) const {
    return lanes_ && std::binary_search(lanes_segments_.begin(), lanes_segments_.end(), &segment);
}

bool Model::expert_bank_in_lanes(uint32_t layer) const {
    return lanes_ && layer < lanes_expert_banks_.size() && lanes_expert_banks_[layer] != 0;
}

} // namespace cflow
