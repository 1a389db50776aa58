// write_gguf: validate the whole request, serialise header + metadata + tensor infos in memory
// (small: the vocabulary is the largest part), then stream the tensor data through an
// AtomicFileWriter, each tensor at the next multiple of the alignment.
#include "cflow/formats/gguf_writer.h"

#include <cstring>
#include <filesystem>
#include <new>
#include <set>
#include <type_traits>

#include "checked_math.h"
#include "gguf_format.h"

namespace cflow {
namespace {

constexpr uint32_t kVersion = 3;
constexpr uint64_t kMaxKeyBytes = 65535;   // gguf.md: keys are at most 2^16 - 1 bytes
constexpr uint64_t kMaxNameBytes = 63;     // GGML_MAX_NAME (64) includes the terminating NUL
constexpr uint64_t kMaxAlignment = 1u << 20;  // what read_gguf accepts
constexpr const char* kAlignmentKey = "general.alignment";

// Little-endian serialisation in host order: like read_gguf, this targets little-endian machines.
class ByteSink {
public:
    template <class T>
    void put(T value) {
        static_assert(std::is_trivially_copyable_v<T>);
        const size_t at = bytes.size();
        bytes.resize(at + sizeof(T));
        std::memcpy(bytes.data() + at, &value, sizeof(T));
    }
    void put_string(const std::string& s) {
        put<uint64_t>(s.size());
        bytes.insert(bytes.end(), s.begin(), s.end());
    }

    std::vector<uint8_t> bytes;
};

template <class T>
constexpr uint32_t scalar_type() {
    if constexpr (std::is_same_v<T, uint8_t>) return gguf::kU8;
    else if constexpr (std::is_same_v<T, int8_t>) return gguf::kI8;
    else if constexpr (std::is_same_v<T, uint16_t>) return gguf::kU16;
    else if constexpr (std::is_same_v<T, int16_t>) return gguf::kI16;
    else if constexpr (std::is_same_v<T, uint32_t>) return gguf::kU32;
    else if constexpr (std::is_same_v<T, int32_t>) return gguf::kI32;
    else if constexpr (std::is_same_v<T, float>) return gguf::kF32;
    else if constexpr (std::is_same_v<T, uint64_t>) return gguf::kU64;
    else if constexpr (std::is_same_v<T, int64_t>) return gguf::kI64;
    else {
        static_assert(std::is_same_v<T, double>, "every GgufValue scalar has a GGUF type");
        return gguf::kF64;
    }
}

template <class T>
void put_array(ByteSink& out, uint32_t element_type, const std::vector<T>& values) {
    out.put<uint32_t>(gguf::kArray);
    out.put<uint32_t>(element_type);
    out.put<uint64_t>(values.size());
    for (const T& v : values) {
        if constexpr (std::is_same_v<T, std::string>) out.put_string(v);
        else out.put(v);
    }
}

// Value type code followed by the value (gguf_metadata_kv_t without its key).
void put_value(ByteSink& out, const GgufValue& value) {
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>) {
                out.put<uint32_t>(gguf::kString);
                out.put_string(v);
            } else if constexpr (std::is_same_v<T, bool>) {
                out.put<uint32_t>(gguf::kBool);
                out.put<uint8_t>(v ? 1 : 0);  // gguf.md: anything but 0/1 is invalid
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                put_array(out, gguf::kString, v);
            } else if constexpr (std::is_same_v<T, std::vector<float>>) {
                put_array(out, gguf::kF32, v);
            } else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
                put_array(out, gguf::kI32, v);
            } else {
                out.put<uint32_t>(scalar_type<T>());
                out.put(v);
            }
        },
        value);
}

// Payload bytes of a tensor of `type` and GGUF dims `ne` (the message is completed by the caller).
Result<uint64_t> tensor_bytes(uint32_t type, const std::vector<uint64_t>& ne) {
    uint64_t count = 1;
    for (uint64_t n : ne)
        if (!checked::mul(count, n, &count)) return make_error("element count overflows 64 bits");
    const GgmlBlockType* block = find_ggml_block_type(type);
    if (!block)
        return make_error(ErrorKind::Unsupported, "type " + ggml_type_name(type) + " is not one this writer handles (" +
                                                      supported_ggml_type_names() + ")");
    if (ne[0] % block->block_elements != 0)
        return make_error("rows of " + std::to_string(ne[0]) + " elements are not a whole number of " +
                          std::to_string(block->block_elements) + "-weight " + ggml_type_name(type) + " blocks");
    uint64_t bytes = 0;
    if (!checked::mul(count / block->block_elements, block->block_bytes, &bytes))
        return make_error("byte size overflows 64 bits");
    return bytes;
}

struct PlannedTensor {
    const GgufTensorData* tensor;
    std::vector<uint64_t> ne;  // innermost first
    uint64_t offset = 0;       // relative to the data section
};

class GgufPlan {
public:
    GgufPlan(const std::string& path, const GgufWriteOptions& options) : path_(path), options_(options) {}

    Status check_and_build(const std::vector<GgufKeyValue>& metadata, const std::vector<GgufTensorData>& tensors) {
        const uint64_t a = options_.alignment;
        if (a < 8 || a > kMaxAlignment || (a & (a - 1)) != 0 || a % 8 != 0)
            return fail("alignment " + std::to_string(a) + " is not a power of two in [8, 1 MiB]");
        if (Status s = check_metadata(metadata); !s) return s;
        if (Status s = plan_tensors(tensors); !s) return s;
        serialise(metadata);
        return {};
    }

    const std::vector<uint8_t>& head() const { return head_.bytes; }
    const std::vector<PlannedTensor>& tensors() const { return planned_; }

private:
    Error fail(const std::string& what, ErrorKind kind = ErrorKind::InvalidInput) const {
        return make_error(kind, path_ + ": " + what);
    }

    Status check_metadata(const std::vector<GgufKeyValue>& metadata) {
        std::set<std::string> seen;
        for (const GgufKeyValue& kv : metadata) {
            if (kv.key.empty()) return fail("a metadata key is empty");
            if (kv.key.size() > kMaxKeyBytes)
                return fail("metadata key '" + kv.key.substr(0, 64) + "...' is longer than 65535 bytes");
            if (!seen.insert(kv.key).second) return fail("metadata key '" + kv.key + "' appears twice");
            if (kv.key == kAlignmentKey) {
                // Readers take the alignment from this key: it must agree with the layout written.
                const auto* value = std::get_if<uint32_t>(&kv.value);
                if (!value) return fail("metadata key 'general.alignment' must be a u32 (llama.cpp reads it as one)");
                if (*value != options_.alignment)
                    return fail("metadata key 'general.alignment' is " + std::to_string(*value) +
                                " but the tensors are aligned to " + std::to_string(options_.alignment));
            }
        }
        add_alignment_key_ = seen.count(kAlignmentKey) == 0;
        n_keys_ = metadata.size() + (add_alignment_key_ ? 1 : 0);
        return {};
    }

    Status plan_tensors(const std::vector<GgufTensorData>& tensors) {
        std::set<std::string> names;
        uint64_t offset = 0;
        for (const GgufTensorData& t : tensors) {
            const std::string where = "tensor '" + t.name + "'";
            if (t.name.empty()) return fail("a tensor name is empty");
            if (t.name.size() > kMaxNameBytes)
                return fail(where + ": name is " + std::to_string(t.name.size()) + " bytes, more than ggml's 63");
            if (!names.insert(t.name).second) return fail(where + " appears twice");
            if (t.shape.empty() || t.shape.size() > gguf::kMaxDims)
                return fail(where + ": " + std::to_string(t.shape.size()) + " dimensions (must be 1..4)");
            PlannedTensor p{&t, std::vector<uint64_t>(t.shape.rbegin(), t.shape.rend()), 0};
            for (size_t d = 0; d < p.ne.size(); ++d)
                if (p.ne[d] == 0) return fail(where + ": dimension ne[" + std::to_string(d) + "] is 0");
            auto size = tensor_bytes(t.ggml_type, p.ne);
            if (!size) return fail(where + ": " + size.error(), size.kind());
            const uint64_t bytes = *size;
            if (bytes != t.bytes)
                return fail(where + ": holds " + std::to_string(t.bytes) + " bytes, but its shape and type " +
                            ggml_type_name(t.ggml_type) + " need " + std::to_string(bytes));
            if (bytes > 0 && t.data == nullptr) return fail(where + ": has no data");
            p.offset = offset;
            // Each tensor starts at a multiple of the alignment, and ggml expects the next one
            // exactly at the padded end of this one (gguf.cpp checks offsets in info order).
            if (!checked::add(offset, bytes, &offset) || !checked::align_up(offset, options_.alignment, &offset))
                return fail(where + ": the data section overflows 64 bits");
            planned_.push_back(std::move(p));
        }
        data_bytes_ = offset;
        return {};
    }

    void serialise(const std::vector<GgufKeyValue>& metadata) {
        gguf::FileHeader header{gguf::kMagic, kVersion, planned_.size(), n_keys_};
        head_.put(header);
        for (const GgufKeyValue& kv : metadata) {
            head_.put_string(kv.key);
            put_value(head_, kv.value);
        }
        if (add_alignment_key_) {
            head_.put_string(kAlignmentKey);
            put_value(head_, static_cast<uint32_t>(options_.alignment));
        }
        for (const PlannedTensor& p : planned_) {
            head_.put_string(p.tensor->name);
            head_.put<uint32_t>(static_cast<uint32_t>(p.ne.size()));
            for (uint64_t n : p.ne) head_.put(n);
            head_.put<uint32_t>(p.tensor->ggml_type);
            head_.put<uint64_t>(p.offset);
        }
        while (head_.bytes.size() % options_.alignment != 0) head_.put<uint8_t>(0);  // the data section is aligned
    }

    const std::string& path_;
    const GgufWriteOptions& options_;
    ByteSink head_;
    std::vector<PlannedTensor> planned_;
    uint64_t n_keys_ = 0;
    uint64_t data_bytes_ = 0;
    bool add_alignment_key_ = false;
};

// Zero bytes up to the next multiple of `alignment` of what `out` holds.
Status pad(AtomicFileWriter& out, uint64_t alignment) {
    static constexpr uint8_t kZeros[4096] = {};
    uint64_t missing = (alignment - out.bytes_written() % alignment) % alignment;
    while (missing > 0) {
        const uint64_t n = missing < sizeof(kZeros) ? missing : sizeof(kZeros);
        if (Status s = out.write(kZeros, n); !s) return s;
        missing -= n;
    }
    return {};
}

Status write_planned(const std::string& path, const GgufPlan& plan, uint64_t alignment, const CancelToken* cancel) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
        return make_error(ErrorKind::Io, path + ": output directory '" + parent.string() + "' does not exist");
    AtomicFileWriter out(path);
    if (Status s = out.open(); !s) return s;
    if (Status s = out.write(plan.head().data(), plan.head().size()); !s) return s;
    const uint64_t data_start = plan.head().size();
    for (const PlannedTensor& p : plan.tensors()) {
        if (cancel && cancel->is_cancelled()) return cancelled_error(path + ": writing GGUF");
        if (out.bytes_written() != data_start + p.offset)
            return make_error(ErrorKind::Internal, path + ": internal layout error: tensor '" + p.tensor->name +
                                                       "' planned at data offset " + std::to_string(p.offset) +
                                                       ", the file is at " + std::to_string(out.bytes_written()));
        if (Status s = out.write(p.tensor->data, p.tensor->bytes); !s) return s;
        if (Status s = pad(out, alignment); !s) return s;  // also after the last: ggml sums padded sizes
    }
    return out.commit();
}

} // namespace

Status write_gguf(const std::string& path, const std::vector<GgufKeyValue>& metadata,
                  const std::vector<GgufTensorData>& tensors, const GgufWriteOptions& options,
                  const CancelToken* cancel) {
    try {
        GgufPlan plan(path, options);
        if (Status s = plan.check_and_build(metadata, tensors); !s) return s;
        return write_planned(path, plan, options.alignment, cancel);
    } catch (const std::bad_alloc&) {
        return out_of_memory_error(path + ": writing GGUF");
    }
}

uint32_t ggml_type_of(DType dtype) {
    switch (dtype) {
        case DType::F32: return kGgmlF32;
        case DType::F16: return kGgmlF16;
        case DType::Q8_0: return kGgmlQ8_0;
        case DType::Q4_0: return kGgmlQ4_0;
        case DType::BF16: return kGgmlBF16;
        case DType::GgmlBlock: break;  // no single code: TensorView::ggml_type holds it
        default:
            if (is_ggml_tile(dtype)) return ggml_tile_ggml_type(dtype);
            break;
    }
    return kGgmlNoType;
}

GgufTensorData gguf_tensor(const TensorView& view) {
    const uint32_t type = view.dtype == DType::GgmlBlock ? view.ggml_type : ggml_type_of(view.dtype);
    return GgufTensorData{view.name, type, view.shape, view.data, view.bytes};
}

Metadata gguf_metadata_view(const std::vector<GgufKeyValue>& metadata) {
    Metadata out;
    for (const GgufKeyValue& kv : metadata) {
        std::visit(
            [&](const auto& v) {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
                    out.set(kv.key, static_cast<double>(v));
                else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string> ||
                                   std::is_same_v<T, std::vector<std::string>> ||
                                   std::is_same_v<T, std::vector<float>> || std::is_same_v<T, std::vector<int32_t>>)
                    out.set(kv.key, v);
                else
                    out.set(kv.key, static_cast<int64_t>(v));
            },
            kv.value);
    }
    return out;
}

} // namespace cflow
