// convert_to_cflow: validate, lay the whole file out (.cflow or .vflow), then stream it in
// file order through an AtomicFileWriter (temporary file renamed into place only on success).
#include "cflow/formats/converter.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <new>
#include <set>
#include <thread>

#include "cflow/base/utf8_path.h"
#include "converter_internal.h"

namespace cflow {
namespace {

using namespace convert_detail;

class FileWriter {
public:
    FileWriter(AtomicFileWriter& out, const std::string& out_path) : out_(out), path_(out_path) {}

    // Zero-pads up to `offset`, which must not lie behind what was written.
    Status pad_to(uint64_t offset) {
        static constexpr uint8_t kZeros[kSegmentAlignment] = {};
        const uint64_t at = out_.bytes_written();
        if (offset < at || offset - at >= kSegmentAlignment)
            return make_error(ErrorKind::Internal, path_ + ": internal layout error: expected to write byte " +
                                                       std::to_string(offset) + " next, but " + std::to_string(at) +
                                                       " bytes are written");
        return out_.write(kZeros, offset - at);
    }
    Status write(const void* data, uint64_t bytes) { return out_.write(data, bytes); }

private:
    AtomicFileWriter& out_;
    const std::string& path_;
};

Status write_raw_segment(FileWriter& w, const SegmentPlan& seg) {
    if (!seg.raw_bytes.empty()) return w.write(seg.raw_bytes.data(), seg.raw_bytes.size());
    std::vector<float> row, permuted;
    for (const RawPiece& piece : seg.raw) {
        row.resize(piece.source.cols);  // [cols] f32
        for (uint32_t r = 0; r < piece.source.rows; ++r) {
            piece.source.read_rows_f32(r, 1, row.data());
            const std::vector<float>* out = &row;
            if (!piece.element_map.empty()) {
                permuted.resize(row.size());
                for (size_t i = 0; i < row.size(); ++i) permuted[i] = row[piece.element_map[i]];
                out = &permuted;
            }
            if (Status s = w.write(out->data(), out->size() * sizeof(float)); !s) return s;
        }
    }
    return {};
}

SegmentEntry segment_entry(const SegmentPlan& seg) {
    SegmentEntry e{};
    e.role = static_cast<uint8_t>(seg.role);
    e.dtype = static_cast<uint8_t>(seg.dtype);
    e.cols = seg.shape.cols;
    if (seg.shape.storage == segment_shapes::Storage::Raw) {
        e.n_parts = 0;
        e.part_rows[0] = seg.shape.raw_rows;
    } else {
        e.n_parts = static_cast<uint8_t>(seg.shape.parts.size());
        for (size_t p = 0; p < seg.shape.parts.size(); ++p) {
            e.part_matrix[p] = static_cast<uint8_t>(seg.shape.parts[p].matrix);
            e.part_rows[p] = seg.shape.parts[p].rows;
            e.part_dtype[p] = static_cast<uint8_t>(seg.shape.parts[p].dtype);
        }
    }
    e.offset = seg.offset;
    e.bytes = seg.bytes;
    e.n_tiles = static_cast<uint32_t>(seg.n_tiles);
    return e;
}

// Bytes that are not segments: the headers and tables at the front, each region's
// RegionHeader + SegmentEntry directory, the metadata section.
std::vector<uint8_t> front_bytes(const FilePlan& plan) {
    std::vector<uint8_t> out;
    auto append = [&](const void* data, size_t bytes) {
        const auto* b = static_cast<const uint8_t*>(data);
        out.insert(out.end(), b, b + bytes);
    };
    if (plan.format == ContainerFormat::Vflow) append(&plan.vflow, sizeof(plan.vflow));
    append(&plan.header, sizeof(plan.header));
    append(&plan.params, sizeof(plan.params));
    for (const GroupDescriptor& g : plan.groups) append(&g, sizeof(g));
    for (const RegionPlan& region : plan.regions) {
        const RegionEntry entry{region.offset, region.bytes};
        append(&entry, sizeof(entry));
    }
    return out;
}

std::vector<uint8_t> directory_bytes(const FilePlan& plan, const RegionPlan& region) {
    RegionHeader rh{};
    const bool vocab = region.index == plan.header.n_layers;
    std::memcpy(rh.magic, vocab ? kVocabRegionMagic : kLayerRegionMagic, 4);
    rh.layer_index = region.index;
    rh.n_segments = static_cast<uint32_t>(region.segments.size());
    std::vector<uint8_t> out(sizeof(rh) + region.segments.size() * sizeof(SegmentEntry));
    std::memcpy(out.data(), &rh, sizeof(rh));
    for (size_t i = 0; i < region.segments.size(); ++i) {
        const SegmentEntry e = segment_entry(region.segments[i]);
        std::memcpy(out.data() + sizeof(rh) + i * sizeof(e), &e, sizeof(e));
    }
    return out;
}

// One contiguous piece of the output: a byte blob or a segment of a region.
struct WriteItem {
    uint64_t offset = 0;
    std::vector<uint8_t> blob;             // when segment == nullptr
    const SegmentPlan* segment = nullptr;
    uint32_t region_index = 0;             // the segment's layer (tile layer_id), n_layers for vocabulary
};

// Everything the file holds, in file order: the writer streams it front to back, so .cflow
// (region by region) and .vflow (stage by stage across layers) share one sequential writer.
std::vector<WriteItem> write_order(const FilePlan& plan) {
    std::vector<WriteItem> items;
    items.push_back({0, front_bytes(plan), nullptr, 0});
    for (const RegionPlan& region : plan.regions) {
        items.push_back({region.offset, directory_bytes(plan, region), nullptr, region.index});
        for (const SegmentPlan& seg : region.segments) items.push_back({seg.offset, {}, &seg, region.index});
    }
    items.push_back({plan.params.metadata_offset, plan.metadata, nullptr, 0});
    std::stable_sort(items.begin(), items.end(), [](const WriteItem& a, const WriteItem& b) { return a.offset < b.offset; });
    return items;
}

Result<ConvertReport> write_file(const SourceModel& source, const FilePlan& plan, const std::string& out_path,
                                 const ConvertOptions& options,
                                 const ProgressFn& progress, const CancelToken* cancel) {
    AtomicFileWriter out(out_path);
    if (Status s = out.open(); !s) return s.take_error();
    FileWriter w(out, out_path);
    auto cancelled = [&] { return cancel && cancel->is_cancelled(); };

    TileWriteContext tiles;
    tiles.writer = &out;
    tiles.threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    tiles.cancel = cancel;

    ConvertReport report;
    ConvertProgress state;
    state.tensors_total = plan.tensors_total;
    std::set<std::string> exact_tensors, requantised;
    for (const WriteItem& item : write_order(plan)) {
        if (cancelled()) return cancelled_error("conversion");
        if (Status s = w.pad_to(item.offset); !s) return s.take_error();
        if (!item.segment) {
            if (Status s = w.write(item.blob.data(), item.blob.size()); !s) return s.take_error();
            continue;
        }
        const SegmentPlan& seg = *item.segment;
        Status written = seg.shape.storage == segment_shapes::Storage::Raw
                             ? write_raw_segment(w, seg)
                             : write_tiled_segment(tiles, seg, static_cast<uint16_t>(item.region_index));
        if (!written) return written.take_error();
        if (out.bytes_written() != seg.offset + seg.bytes)
            return make_error(ErrorKind::Internal, out_path + ": internal layout error: segment " +
                                                       segment_shapes::role_name(seg.role) + " wrote " +
                                                       std::to_string(out.bytes_written() - seg.offset) +
                                                       " bytes, planned " + std::to_string(seg.bytes));
        report.tiles += seg.n_tiles;
        for (size_t i = 0; i < seg.tensor_names.size(); ++i) {
            // Per-expert bank sources list gate, up, down of each expert in turn: part i % 3.
            const bool exact = !seg.exact_parts.empty() && seg.exact_parts[i % seg.exact_parts.size()];
            if (exact) exact_tensors.insert(seg.tensor_names[i]);
            else note_requantised(source, seg, i, &requantised);
            ++state.tensors_done;
            state.bytes_written = out.bytes_written();
            state.current = seg.tensor_names[i];
            if (progress) progress(state);
        }
        report.tensors += seg.tensor_names.size();
    }
    if (cancelled()) return cancelled_error("conversion");
    if (out.bytes_written() != plan.header.file_bytes)
        return make_error(ErrorKind::Internal, out_path + ": internal layout error: wrote " +
                                                   std::to_string(out.bytes_written()) + " bytes, header says " +
                                                   std::to_string(plan.header.file_bytes));
    // file_bytes was planned up front; re-stamp it from what was actually written.
    const uint64_t file_bytes = out.bytes_written();
    if (Status s = out.write_at(plan.header_offset + offsetof(GlobalHeader, file_bytes), &file_bytes, sizeof(file_bytes)); !s)
        return s.take_error();
    if (Status s = out.commit(options.verify_output); !s) return s.take_error();
    report.file_bytes = file_bytes;
    report.removed_stale_temp_files = out.removed_stale_temp_files();
    report.recent_temp_files = out.recent_temp_files();
    report.retiled_exact_tensors = exact_tensors.size();
    report.requantised_tensors.assign(requantised.begin(), requantised.end());
    report.ignored_tensors = plan.ignored_tensors;
    report.kquant_fallbacks = plan.kquant_fallbacks;
    return report;
}

// `convert X -o X` replaced its own source (and an HF folder's shard is as much the source).
Status refuse_source_as_output(const SourceModel& source, const std::string& out_path) {
    std::error_code ec;
    const std::filesystem::path out = path_from_utf8(out_path);
    if (!std::filesystem::exists(out, ec)) return {};
    auto same = [&](const std::string& path) {
        std::error_code same_ec;
        return !path.empty() && std::filesystem::equivalent(out, path_from_utf8(path), same_ec);
    };
    if (same(source.source_label)) return make_error(out_path + ": the output is the source itself; choose another -o");
    for (const auto& file : source.files)
        if (file && same(file->path()))
            return make_error(out_path + ": the output is one of the source's files; choose another -o");
    for (const std::string& input : source.input_files)
        if (same(input))
            return make_error(out_path + ": the output is the source's input '" + input + "' (the tokenizer, a config or "
                              "another file it reads); choose another -o");
    return {};
}

} // namespace

Result<ConvertReport> convert_to_cflow(const SourceModel& source, const std::string& out_path,
                                       const ConvertOptions& options, const ProgressFn& progress,
                                       const CancelToken* cancel) {
    try {
        if (Status s = validate_source(source, options); !s) return s.take_error();
        const std::filesystem::path parent = std::filesystem::path(out_path).parent_path();
        std::error_code ec;
        if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
            return make_error(ErrorKind::Io, out_path + ": output directory '" + parent.string() + "' does not exist");
        if (Status s = refuse_source_as_output(source, out_path); !s) return s.take_error();
        auto plan = plan_file(source, options);
        if (!plan) return make_error(plan.kind(), source.source_label + ": " + plan.error());
        return write_file(source, *plan, out_path, options, progress, cancel);
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, out_path + ": out of memory during conversion");
    }
}

} // namespace cflow
