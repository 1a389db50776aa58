#pragma once
// Tiny writers for source-checkpoint fixtures (GGUF, safetensors, HF folders) used by the
// source-reader tests. They write exactly what the format specs say, nothing smarter.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cflow::test {

inline void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <class T>
void put(std::vector<uint8_t>& out, T value) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &value, sizeof(T));
}

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> out(v.size() * 4);
    if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
    return out;
}

// Deterministic pseudo-random floats in [-1, 1) (no <random> engine differences across platforms).
inline std::vector<float> test_floats(size_t n, uint32_t seed) {
    std::vector<float> out(n);
    uint32_t s = seed * 2654435761u + 1;
    for (auto& x : out) {
        s = s * 1664525u + 1013904223u;
        x = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
    }
    return out;
}

// GGUF v2/v3 writer: metadata in insertion order, tensors aligned to `alignment`.
class GgufWriter {
public:
    explicit GgufWriter(uint32_t version = 3, uint64_t alignment = 32) : version_(version), alignment_(alignment) {}

    void str(const std::string& key, const std::string& v) { key_(key, 8); string_(kv_, v); ++n_kv_; }
    void u32(const std::string& key, uint32_t v) { key_(key, 4); put(kv_, v); ++n_kv_; }
    void f32(const std::string& key, float v) { key_(key, 6); put(kv_, v); ++n_kv_; }
    void boolean(const std::string& key, bool v) { key_(key, 7); put<uint8_t>(kv_, v ? 1 : 0); ++n_kv_; }
    // Any scalar type code with raw little-endian bytes.
    void raw(const std::string& key, uint32_t type, const std::vector<uint8_t>& bytes) {
        key_(key, type);
        kv_.insert(kv_.end(), bytes.begin(), bytes.end());
        ++n_kv_;
    }
    void strings(const std::string& key, const std::vector<std::string>& v) {
        key_(key, 9);
        put<uint32_t>(kv_, 8);
        put<uint64_t>(kv_, v.size());
        for (const auto& s : v) string_(kv_, s);
        ++n_kv_;
    }
    void floats(const std::string& key, const std::vector<float>& v) {
        key_(key, 9);
        put<uint32_t>(kv_, 6);
        put<uint64_t>(kv_, v.size());
        for (float f : v) put(kv_, f);
        ++n_kv_;
    }
    void ints(const std::string& key, const std::vector<int32_t>& v) {
        key_(key, 9);
        put<uint32_t>(kv_, 5);
        put<uint64_t>(kv_, v.size());
        for (int32_t i : v) put(kv_, i);
        ++n_kv_;
    }
    // ne in GGUF order (innermost first); data must already have the type's byte size.
    void tensor(const std::string& name, uint32_t type, const std::vector<uint64_t>& ne, const std::vector<uint8_t>& data) {
        string_(infos_, name);
        put<uint32_t>(infos_, static_cast<uint32_t>(ne.size()));
        for (uint64_t n : ne) put(infos_, n);
        put(infos_, type);
        while (data_.size() % alignment_ != 0) data_.push_back(0);
        put<uint64_t>(infos_, data_.size());
        data_.insert(data_.end(), data.begin(), data.end());
        ++n_tensors_;
    }

    std::vector<uint8_t> bytes() const {
        std::vector<uint8_t> out;
        put<uint32_t>(out, 0x46554747u);
        put(out, version_);
        put(out, n_tensors_);
        put(out, n_kv_);
        out.insert(out.end(), kv_.begin(), kv_.end());
        out.insert(out.end(), infos_.begin(), infos_.end());
        if (n_tensors_ > 0)
            while (out.size() % alignment_ != 0) out.push_back(0);
        out.insert(out.end(), data_.begin(), data_.end());
        return out;
    }

private:
    static void string_(std::vector<uint8_t>& out, const std::string& s) {
        put<uint64_t>(out, s.size());
        out.insert(out.end(), s.begin(), s.end());
    }
    void key_(const std::string& key, uint32_t type) {
        string_(kv_, key);
        put(kv_, type);
    }

    uint32_t version_;
    uint64_t alignment_;
    uint64_t n_kv_ = 0;
    uint64_t n_tensors_ = 0;
    std::vector<uint8_t> kv_, infos_, data_;
};

struct StTensor {
    std::string name;
    std::string dtype;            // "F32", "F16", "BF16", ...
    std::vector<uint64_t> shape;  // outermost first
    std::vector<uint8_t> data;
};

// safetensors file: u64 header length, JSON header padded with spaces to 8 bytes, data.
inline std::vector<uint8_t> safetensors_bytes(const std::vector<StTensor>& tensors) {
    nlohmann::json header = nlohmann::json::object();
    header["__metadata__"] = {{"format", "pt"}};
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
        offset += t.data.size();
    }
    std::string text = header.dump();
    while (text.size() % 8 != 0) text.push_back(' ');
    // Sized up front and filled with memcpy: GCC 12 -O3 misreads growing inserts here (-Warray-bounds).
    std::vector<uint8_t> out(8 + text.size() + offset);
    const uint64_t header_bytes = text.size();
    std::memcpy(out.data(), &header_bytes, 8);
    std::memcpy(out.data() + 8, text.data(), text.size());
    size_t at = 8 + text.size();
    for (const auto& t : tensors) {
        if (!t.data.empty()) std::memcpy(out.data() + at, t.data.data(), t.data.size());
        at += t.data.size();
    }
    return out;
}

} // namespace cflow::test
