// GGUF v2/v3 parsing (read_gguf) and its interpretation as a SourceModel (read_gguf_model).
#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <cmath>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cflow/formats/gguf.h"
#include "cflow/formats/source_model.h"
#include "gguf_format.h"
#include "yarn_rope.h"

namespace cflow {

std::string ggml_type_name(uint32_t ggml_type) {
    // Index == ggml_type code (gguf.md); empty = removed / unused code.
    static constexpr std::array<const char*, 40> kNames = {
        "F32", "F16", "Q4_0", "Q4_1", "", "", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
        "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
        "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M",
        "BF16", "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8",
        "MXFP4"};
    if (ggml_type < kNames.size() && kNames[ggml_type][0] != '\0') return kNames[ggml_type];
    return "type " + std::to_string(ggml_type);
}

namespace {

using gguf::Cursor;

constexpr uint32_t kMaxArrayNesting = 8;

// Payload bytes of a tensor of a type this project reads (0 for other types), or nullopt
// (with why) when the element count overflows or the row is not a whole number of blocks.
std::optional<uint64_t> tensor_payload_bytes(uint32_t type, const std::vector<uint64_t>& ne, std::string& why) {
    uint64_t count = 1;
    for (uint64_t n : ne) {
        if (n != 0 && count > std::numeric_limits<uint64_t>::max() / n) {
            why = "element count overflows 64 bits";
            return std::nullopt;
        }
        count *= n;
    }
    const GgmlBlockType* block = find_ggml_block_type(type);
    if (!block) return uint64_t{0};
    if (ne.empty() || ne[0] % block->block_elements != 0) {
        why = "type " + std::string(block->name) + ": innermost dimension " + std::to_string(ne.empty() ? 0 : ne[0]) +
              " is not a multiple of the " + std::to_string(block->block_elements) + "-weight " +
              std::string(block->name) + " block";
        return std::nullopt;
    }
    const uint64_t blocks = count / block->block_elements;
    if (blocks > std::numeric_limits<uint64_t>::max() / block->block_bytes) {
        why = "byte size overflows 64 bits";
        return std::nullopt;
    }
    return blocks * block->block_bytes;
}

class GgufParser {
public:
    GgufParser(GgufFile& out, const uint8_t* data, uint64_t size) : out_(out), cur_(data, size), size_(size) {}

    Status parse() {
        uint32_t magic = 0;
        if (!cur_.read(magic)) return fail("header magic", 0, "file is " + std::to_string(size_) + " bytes, too short for a GGUF header");
        if (magic != gguf::kMagic) return fail("header magic", 0, "not a GGUF file (magic bytes do not read \"GGUF\")");
        if (!cur_.read(out_.version)) return fail("header version", 4, "truncated header");
        if (out_.version == 1)
            return fail("header version", 4, "GGUF v1 is not supported (only v2 and v3)", ErrorKind::Unsupported);
        if (out_.version != 2 && out_.version != 3) {
            std::string hint = out_.version > 0xFFFF ? " (a big-endian GGUF?)" : "";
            return fail("header version", 4,
                        "unsupported GGUF version " + std::to_string(out_.version) + hint + "; supported: 2, 3",
                        ErrorKind::Unsupported);
        }
        uint64_t tensor_count = 0;
        uint64_t kv_count = 0;
        if (!cur_.read(tensor_count)) return fail("header tensor_count", 8, "truncated header");
        if (!cur_.read(kv_count)) return fail("header metadata_kv_count", 16, "truncated header");
        // Smallest possible records: kv = u64 key len + u32 type + 1 byte value;
        // tensor info = u64 name len + u32 n_dims + u32 type + u64 offset.
        if (kv_count > cur_.remaining() / 13)
            return fail("header metadata_kv_count", 16, "count " + std::to_string(kv_count) + " cannot fit in the " +
                                                            std::to_string(cur_.remaining()) + " bytes that follow");
        if (tensor_count > cur_.remaining() / 24)
            return fail("header tensor_count", 8, "count " + std::to_string(tensor_count) + " cannot fit in the " +
                                                      std::to_string(cur_.remaining()) + " bytes that follow");

        for (uint64_t i = 0; i < kv_count; ++i) {
            Status s = parse_kv(i);
            if (!s) return s;
        }
        if (const MetaValue* value = out_.metadata.find("general.alignment")) {
            // A string or float alignment used to be ignored (32 assumed): every offset was then
            // checked against an alignment the writer may not have used.
            const uint64_t at = out_.metadata_offsets["general.alignment"];
            const auto* align = std::get_if<int64_t>(value);
            if (!align) return fail("metadata 'general.alignment'", at, "is not an integer");
            if (*align <= 0 || *align > (1 << 20) || (*align & (*align - 1)) != 0)
                return fail("metadata 'general.alignment'", at, "alignment " + std::to_string(*align) + " is not a power of two in [1, 1 MiB]");
            out_.alignment = static_cast<uint64_t>(*align);
        }
        out_.tensors.reserve(static_cast<size_t>(tensor_count));
        for (uint64_t i = 0; i < tensor_count; ++i) {
            Status s = parse_tensor_info(i);
            if (!s) return s;
        }
        uint64_t end_of_infos = cur_.pos();
        uint64_t pad = (out_.alignment - end_of_infos % out_.alignment) % out_.alignment;
        if (tensor_count == 0) {
            out_.data_offset = std::min(end_of_infos + pad, size_);
            return Status::success();
        }
        if (pad > size_ - end_of_infos)
            return fail("tensor data section", end_of_infos, "aligned data start " + std::to_string(end_of_infos + pad) + " is past the end of the file (" + std::to_string(size_) + " bytes)");
        out_.data_offset = end_of_infos + pad;
        return check_tensor_ranges();
    }

private:
    // Why a u64-length-prefixed read failed (the cursor is back at the length): the length field
    // itself is cut off, or the bytes it announces run past the end. "length 0 runs past the end"
    // for a file that ends inside the length said neither.
    std::string string_failure(const char* length_name, const std::string& length_prefix, uint64_t length) const {
        if (cur_.remaining() < 8)
            return "truncated: the 8-byte " + std::string(length_name) + " needs 8 bytes, " + std::to_string(cur_.remaining()) +
                   " remain";
        return length_prefix + std::to_string(length) + " runs past the end of the file";
    }

    Error fail(const std::string& field, uint64_t offset, const std::string& what,
               ErrorKind kind = ErrorKind::InvalidInput) const {
        return make_error(kind, out_.path + ": " + field + " at offset " + std::to_string(offset) + ": " + what);
    }

    Status parse_kv(uint64_t index) {
        uint64_t at = cur_.pos();
        std::string key;
        uint64_t key_len = 0;
        if (!cur_.read_string(key, key_len))
            return fail("metadata entry " + std::to_string(index) + " key", at, string_failure("key length", "key length ", key_len));
        // A second entry would silently win (llama.cpp refuses the file): which value is meant is unknowable.
        if (!keys_.insert(key).second) return fail("metadata entry " + std::to_string(index) + " key", at, "'" + key + "' appears twice");
        out_.metadata_offsets[key] = at;
        uint32_t type = 0;
        uint64_t type_at = cur_.pos();
        if (!cur_.read(type)) return fail("metadata '" + key + "' type", type_at, "truncated");
        return parse_value(key, type, type_at);
    }

    Status parse_value(const std::string& key, uint32_t type, uint64_t type_at) {
        const std::string field = "metadata '" + key + "'";
        uint64_t at = cur_.pos();
        if (type == gguf::kString) {
            std::string s;
            uint64_t len = 0;
            if (!cur_.read_string(s, len))
                return fail(field + " string length", at, string_failure("string length", "length ", len));
            out_.metadata.set(key, std::move(s));
            return Status::success();
        }
        if (type == gguf::kArray) return parse_array(key, field);
        uint64_t width = gguf::scalar_bytes(type);
        if (width == 0) return fail(field + " type", type_at, "unknown value type " + std::to_string(type));
        if (width > cur_.remaining()) return fail(field + " value", at, "truncated");
        switch (type) {
            case gguf::kF32: { float v = 0; (void)cur_.read(v); out_.metadata.set(key, static_cast<double>(v)); break; }
            case gguf::kF64: { double v = 0; (void)cur_.read(v); out_.metadata.set(key, v); break; }
            case gguf::kBool: { uint8_t v = 0; (void)cur_.read(v); out_.metadata.set(key, v != 0); break; }
            case gguf::kU64: {
                uint64_t v = 0;
                (void)cur_.read(v);
                if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                    return fail(field + " value", at, "u64 value " + std::to_string(v) + " does not fit int64");
                out_.metadata.set(key, static_cast<int64_t>(v));
                break;
            }
            default: out_.metadata.set(key, read_int_scalar(type)); break;
        }
        return Status::success();
    }

    // Reads an integer scalar whose width was already checked.
    int64_t read_int_scalar(uint32_t type) {
        switch (type) {
            case gguf::kU8: { uint8_t v = 0; (void)cur_.read(v); return v; }
            case gguf::kI8: { int8_t v = 0; (void)cur_.read(v); return v; }
            case gguf::kU16: { uint16_t v = 0; (void)cur_.read(v); return v; }
            case gguf::kI16: { int16_t v = 0; (void)cur_.read(v); return v; }
            case gguf::kU32: { uint32_t v = 0; (void)cur_.read(v); return v; }
            case gguf::kI32: { int32_t v = 0; (void)cur_.read(v); return v; }
            case gguf::kBool: { uint8_t v = 0; (void)cur_.read(v); return v != 0; }
            case gguf::kU64: { uint64_t v = 0; (void)cur_.read(v); return static_cast<int64_t>(v); }
            default: { int64_t v = 0; (void)cur_.read(v); return v; }
        }
    }

    Status parse_array(const std::string& key, const std::string& field) {
        uint64_t at = cur_.pos();
        uint32_t elem_type = 0;
        uint64_t n = 0;
        if (!cur_.read(elem_type) || !cur_.read(n)) return fail(field + " array header", at, "truncated");
        if (elem_type == gguf::kString) {
            if (n > cur_.remaining() / 8)
                return fail(field + " array length", at + 4, std::to_string(n) + " strings cannot fit in the " + std::to_string(cur_.remaining()) + " bytes that follow");
            std::vector<std::string> values(static_cast<size_t>(n));
            for (uint64_t i = 0; i < n; ++i) {
                uint64_t s_at = cur_.pos();
                uint64_t len = 0;
                if (!cur_.read_string(values[static_cast<size_t>(i)], len))
                    return fail(field + " element " + std::to_string(i) + " string length", s_at,
                                string_failure("string length", "length ", len));
            }
            out_.metadata.set(key, std::move(values));
            return Status::success();
        }
        if (elem_type == gguf::kArray) {
            Status s = skip_nested(field, n, 1);
            if (s) out_.skipped_keys.push_back(key + " (nested array)");
            return s;
        }
        uint64_t width = gguf::scalar_bytes(elem_type);
        if (width == 0) return fail(field + " array element type", at, "unknown value type " + std::to_string(elem_type));
        if (n > cur_.remaining() / width)
            return fail(field + " array length", at + 4, std::to_string(n) + " elements of " + std::to_string(width) +
                                                             " bytes run past the end of the file");
        if (elem_type == gguf::kF32 || elem_type == gguf::kF64) {
            std::vector<float> values(static_cast<size_t>(n));
            for (auto& v : values) {
                if (elem_type == gguf::kF32) {
                    (void)cur_.read(v);
                } else {
                    double d = 0;
                    (void)cur_.read(d);
                    v = static_cast<float>(d);
                }
            }
            out_.metadata.set(key, std::move(values));
            return Status::success();
        }
        std::vector<int32_t> values(static_cast<size_t>(n));
        bool fits = true;
        for (auto& v : values) {
            int64_t x = 0;
            if (elem_type == gguf::kU64) {
                uint64_t u = 0;
                (void)cur_.read(u);
                if (u > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) fits = false;
                x = fits ? static_cast<int64_t>(u) : 0;
            } else {
                x = read_int_scalar(elem_type);
            }
            if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) fits = false;
            v = fits ? static_cast<int32_t>(x) : 0;
        }
        if (!fits) {
            // The metadata model stores integer arrays as int32; a wider array is not one
            // this project reads (token types, ids), so it is recorded rather than truncated.
            out_.skipped_keys.push_back(key + " (integer array with values outside int32)");
            return Status::success();
        }
        out_.metadata.set(key, std::move(values));
        return Status::success();
    }

    // Walks over the elements of a nested array without storing them.
    Status skip_nested(const std::string& field, uint64_t n, uint32_t depth) {
        if (depth > kMaxArrayNesting) return fail(field, cur_.pos(), "arrays nested deeper than " + std::to_string(kMaxArrayNesting));
        for (uint64_t i = 0; i < n; ++i) {
            uint64_t at = cur_.pos();
            uint32_t elem_type = 0;
            uint64_t m = 0;
            if (!cur_.read(elem_type) || !cur_.read(m)) return fail(field + " nested array header", at, "truncated");
            if (elem_type == gguf::kArray) {
                if (m > cur_.remaining() / 12) return fail(field + " nested array length", at + 4, "runs past the end of the file");
                Status s = skip_nested(field, m, depth + 1);
                if (!s) return s;
            } else if (elem_type == gguf::kString) {
                if (m > cur_.remaining() / 8) return fail(field + " nested array length", at + 4, "runs past the end of the file");
                for (uint64_t j = 0; j < m; ++j) {
                    uint64_t len = 0;
                    uint64_t s_at = cur_.pos();
                    if (!cur_.read(len) || !cur_.skip(len))
                        return fail(field + " nested string length", s_at, "runs past the end of the file");
                }
            } else {
                uint64_t width = gguf::scalar_bytes(elem_type);
                if (width == 0) return fail(field + " nested array element type", at, "unknown value type " + std::to_string(elem_type));
                if (m > cur_.remaining() / width || !cur_.skip(m * width))
                    return fail(field + " nested array length", at + 4, "runs past the end of the file");
            }
        }
        return Status::success();
    }

    Status parse_tensor_info(uint64_t index) {
        GgufTensorInfo info;
        info.info_offset = cur_.pos();
        uint64_t name_len = 0;
        if (!cur_.read_string(info.name, name_len))
            return fail("tensor info " + std::to_string(index) + " name length", info.info_offset,
                        string_failure("name length", "length ", name_len));
        const std::string field = "tensor '" + info.name + "'";
        uint64_t at = cur_.pos();
        uint32_t n_dims = 0;
        if (!cur_.read(n_dims)) return fail(field + " n_dims", at, "truncated");
        if (n_dims == 0 || n_dims > gguf::kMaxDims)
            return fail(field + " n_dims", at, std::to_string(n_dims) + " dimensions (must be 1.." + std::to_string(gguf::kMaxDims) + ")");
        info.ne.resize(n_dims);
        for (uint32_t d = 0; d < n_dims; ++d) {
            uint64_t d_at = cur_.pos();
            if (!cur_.read(info.ne[d])) return fail(field + " ne[" + std::to_string(d) + "]", d_at, "truncated");
            if (info.ne[d] == 0) return fail(field + " ne[" + std::to_string(d) + "]", d_at, "dimension is 0");
        }
        at = cur_.pos();
        if (!cur_.read(info.ggml_type)) return fail(field + " type", at, "truncated");
        at = cur_.pos();
        if (!cur_.read(info.offset)) return fail(field + " offset", at, "truncated");
        if (info.offset % out_.alignment != 0)
            return fail(field + " offset", at, "offset " + std::to_string(info.offset) + " is not a multiple of general.alignment " + std::to_string(out_.alignment));
        std::string why;
        auto bytes = tensor_payload_bytes(info.ggml_type, info.ne, why);
        if (!bytes) return fail(field + " shape", info.info_offset, why);
        info.bytes = *bytes;
        out_.tensors.push_back(std::move(info));
        return Status::success();
    }

    Status check_tensor_ranges() {
        uint64_t data_bytes = size_ - out_.data_offset;
        for (const auto& t : out_.tensors) {
            // The offset field sits 8 bytes before the end of the info record; report the record start.
            const std::string field = "tensor '" + t.name + "' offset";
            if (t.offset > data_bytes || t.bytes > data_bytes - t.offset)
                return fail(field, t.info_offset,
                            "data [" + std::to_string(out_.data_offset) + " + " + std::to_string(t.offset) + ", +" +
                                std::to_string(t.bytes) + " bytes) runs past the end of the file (" + std::to_string(size_) + " bytes)");
        }
        // No two tensors share a byte (llama.cpp even requires them packed in order): two
        // tensor infos pointing at one payload were accepted, so writing one weight changed another.
        std::vector<const GgufTensorInfo*> by_offset;
        for (const auto& t : out_.tensors)
            if (t.bytes > 0) by_offset.push_back(&t);
        std::stable_sort(by_offset.begin(), by_offset.end(),
                         [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
        for (size_t i = 1; i < by_offset.size(); ++i) {
            const GgufTensorInfo& prev = *by_offset[i - 1];
            const GgufTensorInfo& t = *by_offset[i];
            if (t.offset < prev.offset + prev.bytes)
                return fail("tensor '" + t.name + "' offset", t.info_offset,
                            "data [" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.bytes) + ") overlaps tensor '" +
                                prev.name + "' [" + std::to_string(prev.offset) + ", " + std::to_string(prev.offset + prev.bytes) +
                                ") (offsets relative to the data section at " + std::to_string(out_.data_offset) + ")");
        }
        return Status::success();
    }

    GgufFile& out_;
    Cursor cur_;
    uint64_t size_;
    std::unordered_set<std::string> keys_;  // metadata keys seen so far
};

// --- read_gguf_model -------------------------------------------------------------------

// Q4_0 / Q8_0 keep their own DType (they can be re-tiled block for block); every other
// block type read_gguf sized is GgmlBlock, dequantised by the converter.
std::optional<DType> dtype_of(uint32_t ggml_type) {
    switch (ggml_type) {
        case kGgmlF32: return DType::F32;
        case kGgmlF16: return DType::F16;
        case kGgmlQ4_0: return DType::Q4_0;
        case kGgmlQ8_0: return DType::Q8_0;
        case kGgmlBF16: return DType::BF16;
        default: return find_ggml_block_type(ggml_type) ? std::optional<DType>(DType::GgmlBlock) : std::nullopt;
    }
}

class GgufModelBuilder {
public:
    GgufModelBuilder(const GgufFile& g) : g_(g) {}

    Result<SourceModel> build() {
        SourceModel model;
        model.source_label = g_.path;
        model.metadata = g_.metadata;
        model.files.push_back(g_.file);
        if (g_.tensors.empty())
            return make_error(g_.path + ": has no tensors (vocab-only GGUF); it can supply a tokenizer but not a model");
        auto arch = g_.metadata.get_string("general.architecture");
        if (!arch && g_.metadata.contains("general.architecture")) return make_error(entry("general.architecture") + " is not a string");
        if (!arch) return make_error(g_.path + ": metadata key 'general.architecture' is missing");
        arch_ = *arch;
        static const std::set<std::string> kSupported = {"llama", "qwen2",   "qwen2moe", "qwen3", "qwen3moe", "olmoe",
                                                          "smollm3", "gemma", "gemma2", "gemma3", "phi3", "gpt-oss"};
        if (!kSupported.count(arch_))
            return make_error(ErrorKind::Unsupported, g_.path + ": unsupported architecture '" + arch_ +
                                                          "' (general.architecture); supported: llama (also "
                                                          "Mistral/Mixtral), qwen2, qwen2moe, qwen3, qwen3moe, olmoe, "
                                                          "smollm3, gemma, gemma2, gemma3, phi3, gpt-oss");

        for (const auto& t : g_.tensors) {
            auto dtype = dtype_of(t.ggml_type);
            if (!dtype)
                return make_error(ErrorKind::Unsupported,
                                  g_.path + ": tensor '" + t.name + "' has type " + ggml_type_name(t.ggml_type) +
                                      ", which is not supported; supported types: " + supported_ggml_type_names());
            TensorView v;
            v.name = t.name;
            v.dtype = *dtype;
            v.ggml_type = t.ggml_type;
            v.shape.assign(t.ne.rbegin(), t.ne.rend());  // outermost first
            v.data = g_.file->data() + g_.data_offset + t.offset;
            v.bytes = t.bytes;
            v.origin = g_.path + ": tensor '" + t.name + "'";
            if (!model.tensors.emplace(t.name, std::move(v)).second)
                return make_error(g_.path + ": tensor '" + t.name + "' appears twice (tensor info at offset " + std::to_string(t.info_offset) + ")");
        }
        Status s = read_config(model);
        if (!s) return s.take_error();
        return model;
    }

private:
    std::string key(const std::string& suffix) const { return arch_ + "." + suffix; }
    // "path: metadata key 'K' (entry at offset N)": where a present key of the wrong type or range sits.
    std::string entry(const std::string& k) const {
        auto it = g_.metadata_offsets.find(k);
        return g_.path + ": metadata key '" + k + "'" +
               (it == g_.metadata_offsets.end() ? std::string() : " (entry at offset " + std::to_string(it->second) + ")");
    }
    // A float hyperparameter: absent -> fallback; present but not a number is an error (a string
    // epsilon or RoPE base used to be replaced silently by the default).
    Result<double> get_float(const std::string& k, double fallback) const {
        if (!g_.metadata.contains(k)) return fallback;
        auto v = g_.metadata.get_float(k);
        if (!v || std::holds_alternative<bool>(*g_.metadata.find(k))) return make_error(entry(k) + " is not a number");
        return *v;
    }

    Result<uint32_t> get_u32(const std::string& suffix, std::optional<uint32_t> fallback) const {
        const std::string k = key(suffix);
        const MetaValue* v = g_.metadata.find(k);
        if (!v) {
            if (fallback) return *fallback;
            return make_error(g_.path + ": metadata key '" + k + "' is missing");
        }
        int64_t x = 0;
        if (const auto* i = std::get_if<int64_t>(v)) {
            x = *i;
        } else if (const auto* arr = std::get_if<std::vector<int32_t>>(v)) {
            // Per-layer arrays (e.g. head_count_kv): only the uniform case is representable.
            if (arr->empty()) return make_error(entry(k) + " is an empty array");
            if (std::any_of(arr->begin(), arr->end(), [&](int32_t e) { return e != arr->front(); }))
                return make_error(ErrorKind::Unsupported, entry(k) + " differs between layers, which is not supported");
            x = arr->front();
        } else {
            return make_error(entry(k) + " is not an integer");
        }
        if (x < 0 || x > std::numeric_limits<uint32_t>::max())
            return make_error(entry(k) + " value " + std::to_string(x) + " is out of range");
        return static_cast<uint32_t>(x);
    }

    Status read_config(SourceModel& model) {
        ModelConfig& c = model.config;
        c.architecture = arch_;
        const bool moe_arch = arch_ == "qwen2moe" || arch_ == "qwen3moe" || arch_ == "olmoe" || arch_ == "gpt-oss";
        auto need = [&](const char* suffix, std::optional<uint32_t> fallback, uint32_t& dst) -> Status {
            auto r = get_u32(suffix, fallback);
            if (!r) return r.take_error();
            dst = *r;
            return Status::success();
        };
        Status s;
        if (!(s = need("embedding_length", std::nullopt, c.d_model))) return s;
        if (!(s = need("block_count", std::nullopt, c.n_layers))) return s;
        if (!(s = need("attention.head_count", std::nullopt, c.n_heads))) return s;
        if (!(s = need("attention.head_count_kv", c.n_heads, c.n_kv_heads))) return s;
        if (!(s = need("context_length", uint32_t{0}, c.max_seq_len))) return s;
        if (!(s = need("expert_count", uint32_t{0}, c.n_experts))) return s;
        if (!(s = need("expert_used_count", uint32_t{0}, c.top_k))) return s;
        if (!(s = need("attention.sliding_window", uint32_t{0}, c.sliding_window))) return s;
        if (c.n_heads == 0 || c.d_model == 0 || c.n_layers == 0)
            return make_error(g_.path + ": embedding_length, block_count and attention.head_count must be non-zero");
        if (c.n_kv_heads == 0 || c.n_heads % c.n_kv_heads != 0)
            return make_error(g_.path + ": attention.head_count " + std::to_string(c.n_heads) + " is not a multiple of attention.head_count_kv " + std::to_string(c.n_kv_heads));
        if (!(s = need("attention.key_length", c.d_model / c.n_heads, c.head_dim))) return s;
        if (c.head_dim == 0) return make_error(g_.path + ": head dimension is 0");
        uint32_t rope_dims = 0;
        if (!(s = need("rope.dimension_count", c.head_dim, rope_dims))) return s;
        c.rope_fraction = static_cast<float>(rope_dims) / static_cast<float>(c.head_dim);
        auto eps = get_float(key("attention.layer_norm_rms_epsilon"), 1e-5);
        if (!eps) return eps.take_error();
        c.norm_eps = static_cast<float>(*eps);
        auto theta = get_float(key("rope.freq_base"), 10000.0);
        if (!theta) return theta.take_error();
        c.rope_theta = static_cast<float>(*theta);
        if (!std::isfinite(c.rope_theta) || !(c.rope_theta > 0.0f))
            return make_error(entry(key("rope.freq_base")) + " is " + std::to_string(*theta) + ", must be finite and > 0");
        float linear_factor = 1.0f;
        std::optional<yarn::Params> yarn_scaling;
        if (g_.metadata.contains(key("rope.scaling.type"))) {
            auto scaling = g_.metadata.get_string(key("rope.scaling.type"));
            if (!scaling) return make_error(entry(key("rope.scaling.type")) + " is not a string");
            const std::string type = *scaling;
            if (type == "linear") {
                auto factor = get_float(key("rope.scaling.factor"), 1.0);
                if (!factor) return factor.take_error();
                if (!std::isfinite(*factor) || !(*factor > 0.0))
                    return make_error(entry(key("rope.scaling.factor")) + " is " + std::to_string(*factor) + ", must be finite and > 0");
                linear_factor = static_cast<float>(*factor);
            } else if (type == "yarn") {
                auto p = read_yarn(c);
                if (!p) return p.take_error();
                yarn_scaling = *p;
            } else if (type != "none") {
                return make_error(ErrorKind::Unsupported, g_.path + ": RoPE scaling '" + type + "' (" +
                                                              key("rope.scaling.type") + ") is not supported (none, linear, yarn)");
            }
        }
        for (const char* cap : {"attn_logit_softcapping", "final_logit_softcapping"}) {
            auto value = get_float(key(cap), 0.0);
            if (!value) return value.take_error();
            if (!std::isfinite(*value) || *value < 0.0)
                return make_error(entry(key(cap)) + " is " + std::to_string(*value) + ", must be finite and >= 0");
            (cap[0] == 'a' ? c.attn_logit_softcap : c.final_logit_softcap) = static_cast<float>(*value);
        }

        if (c.n_experts > 0) {
            if (c.top_k == 0 || c.top_k > c.n_experts)
                return make_error(g_.path + ": " + key("expert_used_count") + " " + std::to_string(c.top_k) + " is not in 1.." + std::to_string(c.n_experts));
            c.d_ff = 0;
            // Mixtral-style llama GGUFs put the expert width in feed_forward_length.
            uint32_t ff = 0;
            if (!(s = need("feed_forward_length", uint32_t{0}, ff))) return s;
            if (!(s = need("expert_feed_forward_length", ff, c.expert_d_ff))) return s;
            if (!(s = need("expert_shared_feed_forward_length", uint32_t{0}, c.shared_expert_d_ff))) return s;
            if (const TensorView* gate = model.find("blk.0.ffn_gate_exps.weight"); gate && gate->shape.size() == 3)
                c.expert_d_ff = static_cast<uint32_t>(gate->shape[1]);
            if (c.shared_expert_d_ff == 0)
                if (const TensorView* sh = model.find("blk.0.ffn_gate_shexp.weight"); sh && sh->shape.size() == 2)
                    c.shared_expert_d_ff = static_cast<uint32_t>(sh->shape[0]);
            // Mixtral renormalises over the k selected, and so does llama.cpp for every qwen3moe
            // (Qwen3-MoE checkpoints set norm_topk_prob); expert_weights_norm overrides either.
            bool renorm = arch_ == "llama" || arch_ == "qwen3moe";
            if (g_.metadata.contains(key("expert_weights_norm"))) {
                auto norm = g_.metadata.get_bool(key("expert_weights_norm"));
                if (!norm) return make_error(entry(key("expert_weights_norm")) + " is not a boolean");
                renorm = *norm;
            }
            c.router_mode = renorm ? RouterMode::SoftmaxTopK : RouterMode::SoftmaxAllNoRenorm;
        } else {
            if (moe_arch) return make_error(g_.path + ": architecture '" + arch_ + "' without " + key("expert_count"));
            if (!(s = need("feed_forward_length", std::nullopt, c.d_ff))) return s;
        }

        const TensorView* embd = model.find("token_embd.weight");
        if (!embd || embd->shape.size() != 2)
            return make_error(g_.path + ": tensor 'token_embd.weight' is missing or not 2-D");
        if (embd->shape[1] != c.d_model)
            return make_error(g_.path + ": tensor 'token_embd.weight' has " + std::to_string(embd->shape[1]) +
                              " columns but embedding_length is " + std::to_string(c.d_model));
        if (const auto* tokens = g_.metadata.get_strings("tokenizer.ggml.tokens"))
            c.vocab_size = static_cast<uint32_t>(tokens->size());
        else
            c.vocab_size = static_cast<uint32_t>(embd->shape[0]);
        if (!model.find("output.weight")) c.feature_flags |= kFeatureTiedEmbeddings;
        if (model.find("blk.0.attn_q.bias")) c.feature_flags |= kFeatureQkvBias;
        if (const TensorView* qn = model.find("blk.0.attn_q_norm.weight"); qn && qn->shape.size() == 1 && qn->shape[0] == c.head_dim)
            c.feature_flags |= kFeatureQkNorm;
        // Llama 3.x: llama.cpp's converter stores the rope-scaling factors as a tensor, one
        // divisor per rotary frequency; they belong to the config, not to any layer.
        if (const TensorView* rf = model.find("rope_freqs.weight")) {
            const uint32_t want = rotary_dim_count(c.head_dim, c.rope_fraction) / 2;
            if (rf->dtype != DType::F32 || rf->shape.size() != 1 || rf->shape[0] != want || rf->bytes != uint64_t{want} * 4)
                return make_error(rf->origin + ": expected " + std::to_string(want) +
                                  " f32 rope frequency factors (half the rotary dims), got shape [" +
                                  (rf->shape.empty() ? std::string() : std::to_string(rf->shape[0])) +
                                  (rf->shape.size() > 1 ? ", ...]" : "]") + " of " + std::string(dtype_name(rf->dtype)));
            c.rope_freq_factors.resize(want);
            std::memcpy(c.rope_freq_factors.data(), rf->data, size_t{want} * 4);
            for (uint32_t i = 0; i < want; ++i)
                if (!std::isfinite(c.rope_freq_factors[i]) || !(c.rope_freq_factors[i] > 0.0f))
                    return make_error(rf->origin + ": factor " + std::to_string(i) + " is " +
                                      std::to_string(c.rope_freq_factors[i]) + ", must be finite and > 0");
            model.config_tensors.insert("rope_freqs.weight");
        }
        if (yarn_scaling) {
            if (!c.rope_freq_factors.empty())
                return make_error(ErrorKind::Unsupported, g_.path + ": YaRN scaling together with rope_freqs.weight is not supported");
            c.rope_freq_factors = yarn::freq_divisors(*yarn_scaling);
            auto attn = get_float(key("rope.scaling.attn_factor"), 1.0);
            if (!attn) return attn.take_error();
            if (!std::isfinite(*attn) || !(*attn > 0.0))
                return make_error(entry(key("rope.scaling.attn_factor")) + " is " + std::to_string(*attn) + ", must be finite and > 0");
            c.rope_attn_factor = yarn::attention_factor(yarn_scaling->factor) * static_cast<float>(*attn);
        }
        if (linear_factor != 1.0f) {
            // Linear scaling (position interpolation) divides every frequency by the factor, on
            // top of any per-frequency divisors.
            c.rope_freq_factors.resize(rotary_dim_count(c.head_dim, c.rope_fraction) / 2, 1.0f);
            for (float& f : c.rope_freq_factors) f *= linear_factor;
        }
        // llama.cpp's HF converter permutes llama Q/K rows to the adjacent-pair convention;
        // qwen2/qwen2moe/qwen3/qwen3moe/olmoe are stored in the HF split-half convention (NEOX).
        c.rope_interleaved = arch_ == "llama" || arch_ == "smollm3";  // SmolLM3's converter is llama's
        if (arch_ == "smollm3") {
            // NoPE on every fourth layer. The GGUF has no key for it: llama.cpp hard-codes the
            // step (n_no_rope_layer_step = 4), as SmolLM3's config does (no_rope_layer_interval).
            c.rope_skip_layers.assign(c.n_layers, 0);
            for (uint32_t l = 0; l < c.n_layers; ++l) c.rope_skip_layers[l] = (l + 1) % 4 == 0 ? 1 : 0;
        }
        c.ffn_activation = FfnActivation::SwiGLU;
        c.combine_style = CombineStyle::Sequential;
        if (arch_ == "gemma" || arch_ == "gemma2" || arch_ == "gemma3") return read_gemma(c);
        if (arch_ == "phi3") return read_phi3(model);
        if (arch_ == "gpt-oss") return read_gpt_oss(model);
        return Status::success();
    }

    // YaRN as llama.cpp reads it: rope.scaling.factor, .original_context_length (context_length
    // when absent), .yarn_beta_fast / .yarn_beta_slow (32 / 1), and ggml's correction range rounded
    // outward (ggml_rope_yarn_corr_dims). The attention factor llama.cpp ends with is
    // 0.1 ln(factor) + 1 times rope.scaling.attn_factor, when the file has one.
    Result<yarn::Params> read_yarn(const ModelConfig& c) const {
        yarn::Params p;
        p.rotary_dims = rotary_dim_count(c.head_dim, c.rope_fraction);
        p.base = c.rope_theta;
        auto factor = get_float(key("rope.scaling.factor"), 1.0);
        if (!factor) return factor.take_error();
        if (!std::isfinite(*factor) || !(*factor >= 1.0))
            return make_error(entry(key("rope.scaling.factor")) + " is " + std::to_string(*factor) + ", YaRN needs a finite factor >= 1");
        p.factor = static_cast<float>(*factor);
        auto original = get_u32("rope.scaling.original_context_length", c.max_seq_len);
        if (!original) return original.take_error();
        if (*original == 0)
            return make_error(g_.path + ": " + key("rope.scaling.original_context_length") + " (or context_length) must be > 0 for YaRN");
        p.original_context = *original;
        for (auto [suffix, dst] : {std::pair{"rope.scaling.yarn_beta_fast", &p.beta_fast}, std::pair{"rope.scaling.yarn_beta_slow", &p.beta_slow}}) {
            auto v = get_float(key(suffix), *dst);
            if (!v) return v.take_error();
            if (!std::isfinite(*v) || !(*v > 0.0)) return make_error(entry(key(suffix)) + " is " + std::to_string(*v) + ", must be finite and > 0");
            *dst = static_cast<float>(*v);
        }
        // Variants llama.cpp special-cases (DeepSeek's log multiplier, a partial ramp): refused
        // unless they hold the plain YaRN value.
        for (auto [suffix, plain] : {std::pair{"rope.scaling.yarn_ext_factor", 1.0}, std::pair{"rope.scaling.yarn_log_multiplier", 0.0}}) {
            auto v = get_float(key(suffix), plain);
            if (!v) return v.take_error();
            if (*v != plain)
                return make_error(ErrorKind::Unsupported, entry(key(suffix)) + " is " + std::to_string(*v) +
                                                              ": only plain YaRN (" + std::to_string(plain) + ") is supported");
        }
        p.truncate = true;
        return p;
    }

    // gpt-oss as llama.cpp's converter writes it and llama.cpp runs it (models/openai-moe.cpp):
    // q/k/v/o biases, a sink logit per head, every other layer sliding (period 2 unless
    // attention.sliding_window_pattern says otherwise; layer 0 slides), NEOX RoPE with YaRN, the
    // pre-MoE norm stored as post_attention_norm, a biased router whose top-k logits are
    // softmaxed, experts with biases and the clamped SwiGLU (llama.cpp's constants alpha 1.702,
    // limit 7).
    Status read_gpt_oss(SourceModel& model) {
        ModelConfig& c = model.config;
        c.router_mode = RouterMode::SoftmaxTopK;
        c.ffn_activation = FfnActivation::ClampedSwiGLU;
        c.ffn_alpha = 1.702f;
        c.ffn_limit = 7.0f;
        for (uint32_t l = 0; l < c.n_layers; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            auto it = model.tensors.find(p + "post_attention_norm.weight");
            if (it == model.tensors.end()) continue;  // validate_source names the missing norm
            TensorView norm = std::move(it->second);
            model.tensors.erase(it);
            norm.name = p + "ffn_norm.weight";
            model.tensors.emplace(norm.name, std::move(norm));
        }
        if (c.sliding_window > 0) {
            uint32_t period = 2;
            if (g_.metadata.contains(key("attention.sliding_window_pattern"))) {
                auto p = get_u32("attention.sliding_window_pattern", std::nullopt);
                if (!p) return p.take_error();
                period = *p;
            }
            if (period == 0) return make_error(entry(key("attention.sliding_window_pattern")) + " is 0");
            c.sliding_layers.assign(c.n_layers, 0);
            for (uint32_t l = 0; l < c.n_layers; ++l) c.sliding_layers[l] = l % period < period - 1 ? 1 : 0;
        }
        return Status::success();
    }

    // Phi-3 / Phi-3.5 / Phi-4-mini as llama.cpp's converter writes them: fused attn_qkv (Q, K, V
    // rows) and ffn_up holding gate and up (2 d_ff rows), NEOX RoPE over rope.dimension_count dims,
    // LongRoPE as rope_factors_short / rope_factors_long tensors with rope.scaling.attn_factor and
    // rope.scaling.original_context_length (the context above which llama.cpp takes the long
    // factors; context_length when absent). A sliding window as long as the context or longer
    // (Phi-3.5's 262144) masks nothing and is dropped.
    Status read_phi3(SourceModel& model) {
        ModelConfig& c = model.config;
        for (uint32_t l = 0; l < c.n_layers; ++l) {
            const std::string up = "blk." + std::to_string(l) + ".ffn_up.weight";
            auto it = model.tensors.find(up);
            if (it == model.tensors.end() || model.find("blk." + std::to_string(l) + ".ffn_gate.weight")) continue;
            if (it->second.shape.size() != 2 || it->second.shape[0] != 2ull * c.d_ff)
                return make_error(it->second.origin + ": a phi3 ffn_up holds gate and up, " + std::to_string(2ull * c.d_ff) +
                                  " rows (2 x feed_forward_length), not " +
                                  (it->second.shape.empty() ? std::string("none") : std::to_string(it->second.shape[0])));
            TensorView fused = std::move(it->second);
            model.tensors.erase(it);
            fused.name = "blk." + std::to_string(l) + ".ffn_gate_up.weight";
            model.tensors.emplace(fused.name, std::move(fused));
        }
        if (c.max_seq_len > 0 && c.sliding_window >= c.max_seq_len) c.sliding_window = 0;
        const TensorView* short_factors = model.find("rope_factors_short.weight");
        const TensorView* long_factors = model.find("rope_factors_long.weight");
        if (!short_factors && !long_factors) return Status::success();
        if (!short_factors || !long_factors)
            return make_error(g_.path + ": LongRoPE needs both rope_factors_short.weight and rope_factors_long.weight, the file has only " +
                              (short_factors ? "the short" : "the long") + " factors");
        const uint32_t want = rotary_dim_count(c.head_dim, c.rope_fraction) / 2;
        auto read_factors = [&](const TensorView& t, std::vector<float>& out) -> Status {
            if (t.dtype != DType::F32 || t.shape.size() != 1 || t.shape[0] != want || t.bytes != uint64_t{want} * 4)
                return make_error(t.origin + ": expected " + std::to_string(want) + " f32 LongRoPE factors (half the rotary dims)");
            out.resize(want);
            std::memcpy(out.data(), t.data, size_t{want} * 4);
            for (uint32_t i = 0; i < want; ++i)
                if (!std::isfinite(out[i]) || !(out[i] > 0.0f))
                    return make_error(t.origin + ": factor " + std::to_string(i) + " is " + std::to_string(out[i]) +
                                      ", must be finite and > 0");
            model.config_tensors.insert(t.name);
            return Status::success();
        };
        if (!c.rope_freq_factors.empty())
            return make_error(g_.path + ": LongRoPE factors together with rope_freqs.weight or linear scaling are not supported");
        if (Status s = read_factors(*short_factors, c.rope_freq_factors); !s) return s;
        if (Status s = read_factors(*long_factors, c.rope_freq_factors_long); !s) return s;
        auto attn = get_float(key("rope.scaling.attn_factor"), 1.0);
        if (!attn) return attn.take_error();
        if (!std::isfinite(*attn) || !(*attn > 0.0))
            return make_error(entry(key("rope.scaling.attn_factor")) + " is " + std::to_string(*attn) + ", must be finite and > 0");
        c.rope_attn_factor = static_cast<float>(*attn);
        auto original = get_u32("rope.scaling.original_context_length", c.max_seq_len);
        if (!original) return original.take_error();
        c.rope_original_context = *original;
        if (c.rope_original_context == 0)
            return make_error(g_.path + ": " + key("rope.scaling.original_context_length") + " (or context_length) must be > 0 for LongRoPE");
        return Status::success();
    }

    // Gemma, Gemma 2, Gemma 3 as llama.cpp runs them (llama-model.cpp): embeddings times
    // sqrt(d), the tanh GELU gate, tied LM head, norms stored as 1 + w by its converter (so
    // plain RMSNorm weights here), NEOX RoPE. Gemma 2/3 slide every layer but every 2nd / 6th
    // (attention.sliding_window_pattern overrides the period, or lists the layers), Gemma 3's
    // sliding layers rotate with base rope.freq_base_swa (10000 when absent) unscaled, and the
    // scores are scaled by 1/sqrt(head_dim) except for the 27B models, which use
    // 1/sqrt(d / heads) (llama.cpp recognises them by their layer count: 46 for Gemma 2, 62 for 3).
    Status read_gemma(ModelConfig& c) {
        c.feature_flags |= kFeatureEmbedScaleSqrtD;
        c.ffn_activation = FfnActivation::GeGLUTanh;
        if (arch_ == "gemma") return Status::success();
        const bool is_27b = (arch_ == "gemma2" && c.n_layers == 46) || (arch_ == "gemma3" && c.n_layers == 62);
        if (is_27b && c.d_model / c.n_heads != c.head_dim)
            c.query_scale = 1.0f / std::sqrt(float(c.d_model / c.n_heads));
        if (c.sliding_window == 0) {
            if (arch_ == "gemma2")
                return make_error(g_.path + ": metadata key '" + key("attention.sliding_window") + "' is missing or 0");
            return Status::success();  // a Gemma 3 without a window attends globally everywhere (llama.cpp)
        }
        uint32_t period = arch_ == "gemma2" ? 2 : 6;
        c.sliding_layers.assign(c.n_layers, 0);
        const std::string pattern_key = key("attention.sliding_window_pattern");
        const MetaValue* pattern = g_.metadata.find(pattern_key);
        if (const auto* list = pattern ? std::get_if<std::vector<int32_t>>(pattern) : nullptr) {
            if (list->size() != c.n_layers)
                return make_error(entry(pattern_key) + " lists " + std::to_string(list->size()) + " layers, the model has " +
                                  std::to_string(c.n_layers));
            for (uint32_t l = 0; l < c.n_layers; ++l) c.sliding_layers[l] = (*list)[l] != 0 ? 1 : 0;
        } else {
            if (pattern) {
                auto p = get_u32("attention.sliding_window_pattern", std::nullopt);
                if (!p) return p.take_error();
                period = *p;
            }
            if (period == 0) return make_error(entry(pattern_key) + " is 0");
            for (uint32_t l = 0; l < c.n_layers; ++l) c.sliding_layers[l] = l % period < period - 1 ? 1 : 0;
        }
        if (arch_ == "gemma3") {
            auto local = get_float(key("rope.freq_base_swa"), 10000.0);
            if (!local) return local.take_error();
            if (!std::isfinite(*local) || !(*local > 0.0))
                return make_error(entry(key("rope.freq_base_swa")) + " is " + std::to_string(*local) + ", must be finite and > 0");
            c.rope_local_theta = static_cast<float>(*local);
        }
        return Status::success();
    }

    const GgufFile& g_;
    std::string arch_;
};

} // namespace

Result<GgufFile> read_gguf(const std::string& path) {
    try {
        auto mapped = MappedFile::open(path);
        if (!mapped) return mapped.take_error();
        GgufFile out;
        out.path = path;
        out.file = std::move(mapped.value());
        GgufParser parser(out, out.file->data(), out.file->size());
        Status s = parser.parse();
        if (!s) return s.take_error();
        return out;
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, path + ": out of memory while reading GGUF metadata");
    }
}

Result<SourceModel> read_gguf_model(const std::string& path) {
    auto g = read_gguf(path);
    if (!g) return g.take_error();
    try {
        return GgufModelBuilder(*g).build();
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, path + ": out of memory while building the model view");
    }
}

} // namespace cflow
