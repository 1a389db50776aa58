// gpt-oss expert banks from a Hugging Face folder (hf_gpt_oss_experts.h): the layouts are those
// transformers reads (integrations/mxfp4.py convert_moe_packed_tensors; modeling_gpt_oss.py
// GptOssExperts) and the repacking is llama.cpp's converter's (GptOssModel), so a folder and the
// GGUF made from it convert to the same .cflow.
#include "hf_gpt_oss_experts.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <new>
#include <set>

#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/memory_file.h"

namespace cflow::hf {
namespace {

constexpr uint64_t kMxfp4Block = 32;       // weights per block
constexpr uint64_t kMxfp4HfBytes = 16;     // packed nibbles per block in *_blocks
constexpr uint64_t kMxfp4GgmlBytes = 17;   // ggml block_mxfp4: e, qs[16]

const std::set<std::string> kMxfp4Parts = {"gate_up_proj_blocks", "gate_up_proj_scales", "down_proj_blocks",
                                           "down_proj_scales"};
const std::set<std::string> kFloatParts = {"gate_up_proj", "down_proj"};
const std::set<std::string> kBiasParts = {"gate_up_proj_bias", "down_proj_bias"};

std::string shape_text(const std::vector<uint64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

struct Part {
    const uint8_t* data = nullptr;  // raw little-endian elements, row-major
    std::string dtype;              // safetensors dtype
    uint64_t element_bytes = 0;
    std::string origin;             // "model.safetensors: tensor '...'"
};

class LayerParts {
public:
    LayerParts(uint32_t layer, const std::map<std::string, const SafetensorsFile*>& files) : layer_(layer), files_(files) {}

    std::string hf_name(const std::string& part) const {
        return "model.layers." + std::to_string(layer_) + ".mlp.experts." + part;
    }
    bool has(const std::string& part) const { return files_.count(part) != 0; }

    // The part with exactly `shape`, in one of `dtypes`.
    Result<Part> get(const std::string& part, const std::vector<uint64_t>& shape, const std::set<std::string>& dtypes) const {
        auto it = files_.find(part);
        if (it == files_.end()) return make_error("gpt-oss layer " + std::to_string(layer_) + ": tensor '" + hf_name(part) + "' is missing");
        const SafetensorsFile& f = *it->second;
        const std::string name = hf_name(part);
        const SafetensorsEntry& e = f.entries.at(name);
        Part p;
        p.origin = std::filesystem::path(f.path).filename().string() + ": tensor '" + name + "'";
        if (!dtypes.count(e.dtype)) {
            std::string want;
            for (const std::string& d : dtypes) want += (want.empty() ? "" : ", ") + d;
            return make_error(ErrorKind::Unsupported, p.origin + " has dtype " + e.dtype + "; expected " + want);
        }
        if (e.shape != shape) return make_error(p.origin + " has shape " + shape_text(e.shape) + "; expected " + shape_text(shape));
        p.dtype = e.dtype;
        p.element_bytes = e.dtype == "F32" ? 4 : e.dtype == "U8" ? 1 : 2;
        uint64_t elements = 1;
        for (uint64_t d : shape) elements *= d;  // dims bounded by the config (u32) and the file size check
        if (e.end - e.begin != elements * p.element_bytes)
            return make_error(p.origin + ": " + std::to_string(e.end - e.begin) + " bytes for " + std::to_string(elements) + " elements");
        p.data = f.file->data() + f.data_offset + e.begin;
        return p;
    }

private:
    uint32_t layer_;
    const std::map<std::string, const SafetensorsFile*>& files_;
};

DType float_dtype(const std::string& dtype) {
    return dtype == "F32" ? DType::F32 : dtype == "F16" ? DType::F16 : DType::BF16;
}

Result<std::shared_ptr<MemoryFile>> allocate(SourceModel& model, const std::string& label, uint64_t bytes) {
    auto file = MemoryFile::allocate(label, bytes);
    if (!file) return file.take_error();
    model.files.push_back(*file);
    return file;
}

Status add_tensor(SourceModel& model, const std::string& name, DType dtype, uint32_t ggml_type, std::vector<uint64_t> shape,
                  const uint8_t* data, uint64_t bytes, std::string origin) {
    TensorView v;
    v.name = name;
    v.dtype = dtype;
    v.ggml_type = ggml_type;
    v.shape = std::move(shape);
    v.data = data;
    v.bytes = bytes;
    v.origin = std::move(origin);
    if (!model.tensors.emplace(name, std::move(v)).second)
        return make_error("gpt-oss: tensor '" + name + "' is provided twice");
    return Status::success();
}

// *_blocks [E, rows, nb, 16] + *_scales [E, rows, nb] -> ggml MXFP4 [E, out_rows, nb * 32], output
// row r of expert e from source row first + stride * r.
void repack_mxfp4(const uint8_t* blocks, const uint8_t* scales, uint64_t experts, uint64_t src_rows, uint64_t nb,
                  uint64_t out_rows, uint64_t first, uint64_t stride, uint8_t* out) {
    for (uint64_t e = 0; e < experts; ++e) {
        for (uint64_t r = 0; r < out_rows; ++r) {
            const uint64_t src_row = e * src_rows + first + stride * r;
            const uint8_t* b = blocks + src_row * nb * kMxfp4HfBytes;
            const uint8_t* s = scales + src_row * nb;
            uint8_t* o = out + (e * out_rows + r) * nb * kMxfp4GgmlBytes;
            for (uint64_t k = 0; k < nb; ++k, b += kMxfp4HfBytes, o += kMxfp4GgmlBytes) {
                uint8_t codes[kMxfp4Block];  // in weight order
                for (uint64_t i = 0; i < kMxfp4HfBytes; ++i) {
                    codes[2 * i] = b[i] & 0x0F;
                    codes[2 * i + 1] = b[i] >> 4;
                }
                o[0] = s[k];
                for (uint64_t j = 0; j < kMxfp4HfBytes; ++j) o[1 + j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
            }
        }
    }
}

// in [E, n_in, n_cols_in] (elements of `size` bytes) -> out [E, out_rows, n_in] with
// out[e][r][i] = in[e][i][first + stride * r]: a transpose that also picks every stride-th column.
void transpose_columns(const uint8_t* in, uint64_t experts, uint64_t n_in, uint64_t n_cols_in, uint64_t out_rows,
                       uint64_t first, uint64_t stride, uint64_t size, uint8_t* out) {
    constexpr uint64_t kTile = 32;  // input rows per pass: their columns stay in cache
    for (uint64_t e = 0; e < experts; ++e) {
        const uint8_t* src = in + e * n_in * n_cols_in * size;
        uint8_t* dst = out + e * out_rows * n_in * size;
        for (uint64_t i0 = 0; i0 < n_in; i0 += kTile) {
            const uint64_t i1 = std::min(n_in, i0 + kTile);
            for (uint64_t r = 0; r < out_rows; ++r) {
                const uint64_t col = first + stride * r;
                for (uint64_t i = i0; i < i1; ++i)
                    std::memcpy(dst + (r * n_in + i) * size, src + (i * n_cols_in + col) * size, size);
            }
        }
    }
}

Status add_layer(uint32_t l, const LayerParts& parts, const ModelConfig& c, SourceModel& model) {
    const uint64_t E = c.n_experts, ff = c.expert_d_ff, d = c.d_model;
    const std::string blk = "blk." + std::to_string(l) + ".";
    const std::set<std::string> floats = {"F32", "F16", "BF16"};

    // Biases: gate / up interleaved in gate_up_proj_bias, down_proj_bias as it is.
    auto gub = parts.get("gate_up_proj_bias", {E, 2 * ff}, floats);
    if (!gub) return gub.take_error();
    auto db = parts.get("down_proj_bias", {E, d}, floats);
    if (!db) return db.take_error();
    const uint64_t bias_bytes = E * ff * gub->element_bytes;
    for (uint64_t which = 0; which < 2; ++which) {
        const std::string name = blk + (which == 0 ? "ffn_gate_exps.bias" : "ffn_up_exps.bias");
        auto mem = allocate(model, "gpt-oss " + name, bias_bytes);
        if (!mem) return mem.take_error();
        // Each expert's bias row as a [1 x 2 ff] matrix: its columns which, which + 2, ... -> [ff].
        transpose_columns(gub->data, E, 1, 2 * ff, ff, which, 2, gub->element_bytes, (*mem)->mutable_data());
        if (Status s = add_tensor(model, name, float_dtype(gub->dtype), 0, {E, ff}, (*mem)->data(), bias_bytes,
                                  gub->origin + (which == 0 ? " (even columns)" : " (odd columns)"));
            !s)
            return s;
    }
    if (Status s = add_tensor(model, blk + "ffn_down_exps.bias", float_dtype(db->dtype), 0, {E, d}, db->data,
                              E * d * db->element_bytes, db->origin);
        !s)
        return s;

    const bool mxfp4 = parts.has("gate_up_proj_blocks") || parts.has("down_proj_blocks");
    if (mxfp4) {
        if (d % kMxfp4Block != 0 || ff % kMxfp4Block != 0)
            return make_error("gpt-oss layer " + std::to_string(l) + ": MXFP4 experts need hidden_size (" + std::to_string(d) +
                              ") and intermediate_size (" + std::to_string(ff) + ") to be multiples of 32");
        for (const std::string& p : kFloatParts)
            if (parts.has(p))
                return make_error("gpt-oss layer " + std::to_string(l) + ": tensor '" + parts.hf_name(p) +
                                  "' beside MXFP4 blocks: a layer holds one form of its experts");
        const uint64_t nb_in = d / kMxfp4Block, nb_ff = ff / kMxfp4Block;
        auto gu_b = parts.get("gate_up_proj_blocks", {E, 2 * ff, nb_in, kMxfp4HfBytes}, {"U8"});
        if (!gu_b) return gu_b.take_error();
        auto gu_s = parts.get("gate_up_proj_scales", {E, 2 * ff, nb_in}, {"U8"});
        if (!gu_s) return gu_s.take_error();
        auto dn_b = parts.get("down_proj_blocks", {E, d, nb_ff, kMxfp4HfBytes}, {"U8"});
        if (!dn_b) return dn_b.take_error();
        auto dn_s = parts.get("down_proj_scales", {E, d, nb_ff}, {"U8"});
        if (!dn_s) return dn_s.take_error();
        struct Out {
            const char* name;
            const Part* blocks;
            const Part* scales;
            uint64_t src_rows, nb, rows, first, stride;
        };
        const Out outs[] = {{"ffn_gate_exps.weight", &*gu_b, &*gu_s, 2 * ff, nb_in, ff, 0, 2},
                            {"ffn_up_exps.weight", &*gu_b, &*gu_s, 2 * ff, nb_in, ff, 1, 2},
                            {"ffn_down_exps.weight", &*dn_b, &*dn_s, d, nb_ff, d, 0, 1}};
        for (const Out& o : outs) {
            const uint64_t bytes = E * o.rows * o.nb * kMxfp4GgmlBytes;
            auto mem = allocate(model, "gpt-oss " + blk + o.name, bytes);
            if (!mem) return mem.take_error();
            repack_mxfp4(o.blocks->data, o.scales->data, E, o.src_rows, o.nb, o.rows, o.first, o.stride, (*mem)->mutable_data());
            if (Status s = add_tensor(model, blk + o.name, DType::GgmlBlock, kGgmlMXFP4, {E, o.rows, o.nb * kMxfp4Block},
                                      (*mem)->data(), bytes, o.blocks->origin + " (MXFP4 repacked)");
                !s)
                return s;
        }
        return Status::success();
    }

    auto gu = parts.get("gate_up_proj", {E, d, 2 * ff}, floats);
    if (!gu) return gu.take_error();
    auto dn = parts.get("down_proj", {E, ff, d}, floats);
    if (!dn) return dn.take_error();
    struct Out {
        const char* name;
        const Part* in;
        uint64_t n_in, n_cols, rows, first, stride;
    };
    const Out outs[] = {{"ffn_gate_exps.weight", &*gu, d, 2 * ff, ff, 0, 2},
                        {"ffn_up_exps.weight", &*gu, d, 2 * ff, ff, 1, 2},
                        {"ffn_down_exps.weight", &*dn, ff, d, d, 0, 1}};
    for (const Out& o : outs) {
        const uint64_t bytes = E * o.rows * o.n_in * o.in->element_bytes;
        auto mem = allocate(model, "gpt-oss " + blk + o.name, bytes);
        if (!mem) return mem.take_error();
        transpose_columns(o.in->data, E, o.n_in, o.n_cols, o.rows, o.first, o.stride, o.in->element_bytes, (*mem)->mutable_data());
        if (Status s = add_tensor(model, blk + o.name, float_dtype(o.in->dtype), 0, {E, o.rows, o.n_in}, (*mem)->data(), bytes,
                                  o.in->origin + " (transposed)");
            !s)
            return s;
    }
    return Status::success();
}

} // namespace

Status add_gpt_oss_experts(const GptOssExpertParts& parts, const ModelConfig& config, SourceModel& model) {
    try {
        for (const auto& [layer, files] : parts) {
            if (layer >= config.n_layers)
                return make_error("gpt-oss: tensor 'model.layers." + std::to_string(layer) + ".mlp.experts." + files.begin()->first +
                                  "' is past num_hidden_layers " + std::to_string(config.n_layers));
            for (const auto& [part, file] : files)
                if (!kMxfp4Parts.count(part) && !kFloatParts.count(part) && !kBiasParts.count(part))
                    return make_error(ErrorKind::Unsupported, file->path + ": tensor 'model.layers." + std::to_string(layer) +
                                                                  ".mlp.experts." + part + "' is not a gpt-oss expert tensor");
        }
        static const std::map<std::string, const SafetensorsFile*> kNone;
        for (uint32_t l = 0; l < config.n_layers; ++l) {
            auto it = parts.find(l);
            if (Status s = add_layer(l, LayerParts(l, it == parts.end() ? kNone : it->second), config, model); !s) return s;
        }
        return Status::success();
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, "gpt-oss: out of memory while repacking the experts");
    }
}

} // namespace cflow::hf
