#pragma once
// GGUF on-disk constants and a bounds-checked little-endian cursor (internal to formats/).
#include <cstdint>
#include <cstring>
#include <string>

namespace cflow::gguf {

inline constexpr uint32_t kMagic = 0x46554747u;  // "GGUF" read as a little-endian u32
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;          // GGML_MAX_DIMS

// The fixed start of every GGUF file (gguf_header_t before its metadata key/value pairs).
#pragma pack(push, 1)
struct FileHeader {
    uint32_t magic;
    uint32_t version;
    uint64_t tensor_count;
    uint64_t metadata_kv_count;
};
#pragma pack(pop)
static_assert(sizeof(FileHeader) == 24, "GGUF header: u32 magic, u32 version, u64 tensor_count, u64 metadata_kv_count");

// gguf_metadata_value_type
enum ValueType : uint32_t {
    kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
    kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// Byte width of a scalar value type; 0 for string, array and unknown codes.
constexpr uint64_t scalar_bytes(uint32_t type) {
    switch (type) {
        case kU8: case kI8: case kBool: return 1;
        case kU16: case kI16: return 2;
        case kU32: case kI32: case kF32: return 4;
        case kU64: case kI64: case kF64: return 8;
        default: return 0;
    }
}

// Reads little-endian values from [data, data + size); every read is checked and a
// failed read leaves the cursor unchanged and returns false.
class Cursor {
public:
    Cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }
    bool seek(uint64_t pos) {
        if (pos > size_) return false;
        pos_ = pos;
        return true;
    }

    template <class T>
    bool read(T& out) {
        if (sizeof(T) > remaining()) return false;
        std::memcpy(&out, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return true;
    }
    bool skip(uint64_t bytes) {
        if (bytes > remaining()) return false;
        pos_ += bytes;
        return true;
    }
    // u64 length + bytes. On failure length holds the declared length (for messages).
    bool read_string(std::string& out, uint64_t& length) {
        uint64_t start = pos_;
        if (!read(length)) return false;
        if (length > remaining()) {
            pos_ = start;
            return false;
        }
        out.assign(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(length));
        pos_ += length;
        return true;
    }

private:
    const uint8_t* data_;
    uint64_t size_;
    uint64_t pos_ = 0;
};

} // namespace cflow::gguf
