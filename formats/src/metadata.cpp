// Metadata: typed key/value getters and the .cflow metadata section codec
// (layout in metadata.h). parse() treats its input as hostile: every length and
// count is checked against the bytes that remain before anything is allocated.
#include "cflow/formats/metadata.h"

#include <cstring>
#include <new>
#include <stdexcept>

namespace cflow {

const MetaValue* Metadata::find(const std::string& key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
}

std::optional<std::string> Metadata::get_string(const std::string& key) const {
    const MetaValue* v = find(key);
    if (v && std::holds_alternative<std::string>(*v)) return std::get<std::string>(*v);
    return std::nullopt;
}

std::optional<int64_t> Metadata::get_int(const std::string& key) const {
    const MetaValue* v = find(key);
    if (!v) return std::nullopt;
    if (std::holds_alternative<int64_t>(*v)) return std::get<int64_t>(*v);
    if (std::holds_alternative<bool>(*v)) return std::get<bool>(*v) ? 1 : 0;
    return std::nullopt;
}

std::optional<double> Metadata::get_float(const std::string& key) const {
    const MetaValue* v = find(key);
    if (!v) return std::nullopt;
    if (std::holds_alternative<double>(*v)) return std::get<double>(*v);
    if (std::holds_alternative<int64_t>(*v)) return static_cast<double>(std::get<int64_t>(*v));
    return std::nullopt;
}

std::optional<bool> Metadata::get_bool(const std::string& key) const {
    const MetaValue* v = find(key);
    if (!v) return std::nullopt;
    if (std::holds_alternative<bool>(*v)) return std::get<bool>(*v);
    if (std::holds_alternative<int64_t>(*v)) return std::get<int64_t>(*v) != 0;
    return std::nullopt;
}

const std::vector<std::string>* Metadata::get_strings(const std::string& key) const {
    const MetaValue* v = find(key);
    return v ? std::get_if<std::vector<std::string>>(v) : nullptr;
}

const std::vector<float>* Metadata::get_floats(const std::string& key) const {
    const MetaValue* v = find(key);
    return v ? std::get_if<std::vector<float>>(v) : nullptr;
}

const std::vector<int32_t>* Metadata::get_ints(const std::string& key) const {
    const MetaValue* v = find(key);
    return v ? std::get_if<std::vector<int32_t>>(v) : nullptr;
}

namespace {

constexpr char kMetaMagic[4] = {'M', 'E', 'T', 'A'};

class Writer {
public:
    explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
    template <class T>
    void pod(T v) {
        bytes(&v, sizeof(T));
    }
    void bytes(const void* data, size_t n) {
        if (n == 0) return;
        const size_t at = out_.size();
        out_.resize(at + n);  // resize + memcpy: GCC 12 misreports vector::insert of small spans (-Wstringop-overflow)
        std::memcpy(out_.data() + at, data, n);
    }
    void string(const std::string& s) {
        pod<uint64_t>(s.size());
        bytes(s.data(), s.size());
    }

private:
    std::vector<uint8_t>& out_;
};

} // namespace

std::vector<uint8_t> Metadata::serialize() const {
    std::vector<uint8_t> out;
    Writer w(out);
    w.bytes(kMetaMagic, 4);
    w.pod<uint32_t>(static_cast<uint32_t>(entries_.size()));
    for (const auto& [key, value] : entries_) {
        w.pod<uint32_t>(static_cast<uint32_t>(key.size()));
        w.bytes(key.data(), key.size());
        w.pod<uint8_t>(static_cast<uint8_t>(value.index()));
        switch (static_cast<MetaKind>(value.index())) {
            case MetaKind::String: w.string(std::get<std::string>(value)); break;
            case MetaKind::Int: w.pod<int64_t>(std::get<int64_t>(value)); break;
            case MetaKind::Float: w.pod<double>(std::get<double>(value)); break;
            case MetaKind::Bool: w.pod<uint8_t>(std::get<bool>(value) ? 1 : 0); break;
            case MetaKind::StringArray: {
                const auto& list = std::get<std::vector<std::string>>(value);
                w.pod<uint64_t>(list.size());
                for (const std::string& s : list) w.string(s);
                break;
            }
            case MetaKind::FloatArray: {
                const auto& list = std::get<std::vector<float>>(value);
                w.pod<uint64_t>(list.size());
                w.bytes(list.data(), list.size() * sizeof(float));
                break;
            }
            case MetaKind::IntArray: {
                const auto& list = std::get<std::vector<int32_t>>(value);
                w.pod<uint64_t>(list.size());
                w.bytes(list.data(), list.size() * sizeof(int32_t));
                break;
            }
        }
    }
    return out;
}

namespace {

// Bounds-checked cursor over the section; failures carry the absolute offset.
class Reader {
public:
    Reader(const uint8_t* data, uint64_t bytes, uint64_t base) : data_(data), bytes_(bytes), base_(base) {}
    uint64_t remaining() const { return bytes_ - pos_; }
    uint64_t absolute() const { return base_ + pos_; }
    bool can_read(uint64_t n) const { return n <= remaining(); }
    template <class T>
    T pod() {  // caller checked can_read(sizeof(T))
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::string string(uint64_t n) {  // caller checked can_read(n)
        std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(n));
        pos_ += n;
        return s;
    }
    void copy(void* out, uint64_t n) {
        if (n) std::memcpy(out, data_ + pos_, static_cast<size_t>(n));
        pos_ += n;
    }

private:
    const uint8_t* data_;
    uint64_t bytes_;
    uint64_t base_;
    uint64_t pos_ = 0;
};

// Parses one value of `kind`; returns "" on success or the problem (without location).
std::string parse_value(Reader& r, MetaKind kind, MetaValue* out) {
    switch (kind) {
        case MetaKind::String: {
            if (!r.can_read(8)) return "string length past end of section";
            const auto n = r.pod<uint64_t>();
            if (!r.can_read(n))
                return "string length " + std::to_string(n) + " past end of section (" + std::to_string(r.remaining()) +
                       " bytes left)";
            *out = r.string(n);
            return "";
        }
        case MetaKind::Int:
            if (!r.can_read(8)) return "int64 value past end of section";
            *out = r.pod<int64_t>();
            return "";
        case MetaKind::Float:
            if (!r.can_read(8)) return "float64 value past end of section";
            *out = r.pod<double>();
            return "";
        case MetaKind::Bool: {
            if (!r.can_read(1)) return "bool value past end of section";
            const auto b = r.pod<uint8_t>();
            if (b > 1) return "bool value " + std::to_string(b) + " is neither 0 nor 1";
            *out = b != 0;
            return "";
        }
        case MetaKind::StringArray: {
            if (!r.can_read(8)) return "string array count past end of section";
            const auto n = r.pod<uint64_t>();
            if (n > r.remaining() / 8)  // every element needs at least its u64 length
                return "string array count " + std::to_string(n) + " cannot fit in the " + std::to_string(r.remaining()) +
                       " bytes left";
            std::vector<std::string> list;
            list.reserve(static_cast<size_t>(n));
            for (uint64_t i = 0; i < n; ++i) {
                if (!r.can_read(8)) return "string array element " + std::to_string(i) + " length past end of section";
                const auto len = r.pod<uint64_t>();
                if (!r.can_read(len))
                    return "string array element " + std::to_string(i) + " length " + std::to_string(len) +
                           " past end of section";
                list.push_back(r.string(len));
            }
            *out = std::move(list);
            return "";
        }
        case MetaKind::FloatArray:
        case MetaKind::IntArray: {
            const char* what = kind == MetaKind::FloatArray ? "float array" : "int array";
            if (!r.can_read(8)) return std::string(what) + " count past end of section";
            const auto n = r.pod<uint64_t>();
            if (n > r.remaining() / 4)
                return std::string(what) + " count " + std::to_string(n) + " cannot fit in the " +
                       std::to_string(r.remaining()) + " bytes left";
            if (kind == MetaKind::FloatArray) {
                std::vector<float> list(static_cast<size_t>(n));
                r.copy(list.data(), n * 4);
                *out = std::move(list);
            } else {
                std::vector<int32_t> list(static_cast<size_t>(n));
                r.copy(list.data(), n * 4);
                *out = std::move(list);
            }
            return "";
        }
    }
    return "unknown value kind";
}

} // namespace

Result<Metadata> Metadata::parse(const uint8_t* data, uint64_t bytes, const std::string& file_label,
                                 uint64_t base_offset) {
    auto fail = [&](uint64_t offset, const std::string& what, ErrorKind kind = ErrorKind::InvalidInput) {
        return make_error(kind, file_label + ": metadata section at offset " + std::to_string(offset) + ": " + what);
    };
    if (bytes < 8 || data == nullptr)
        return fail(base_offset, "section is " + std::to_string(bytes) + " bytes, smaller than its 8-byte header");
    if (std::memcmp(data, kMetaMagic, 4) != 0) return fail(base_offset, "bad magic (expected \"META\")");
    Reader r(data, bytes, base_offset);
    r.pod<uint32_t>();  // magic, checked above
    const auto count = r.pod<uint32_t>();
    // Smallest entry: u32 key length + empty key + u8 kind + 1-byte bool.
    constexpr uint64_t kMinEntryBytes = 6;
    if (count > r.remaining() / kMinEntryBytes)
        return fail(base_offset + 4, "entry count " + std::to_string(count) + " cannot fit in the " +
                                         std::to_string(r.remaining()) + " bytes of the section");
    try {
        Metadata meta;
        for (uint32_t i = 0; i < count; ++i) {
            const uint64_t entry_offset = r.absolute();
            const std::string entry = "metadata entry " + std::to_string(i);
            if (!r.can_read(4))
                return make_error(file_label + ": " + entry + " at offset " + std::to_string(entry_offset) +
                                  ": key length past end of section");
            const auto key_len = r.pod<uint32_t>();
            if (!r.can_read(uint64_t{key_len} + 1))
                return make_error(file_label + ": " + entry + " at offset " + std::to_string(entry_offset) +
                                  ": key length " + std::to_string(key_len) + " past end of section");
            std::string key = r.string(key_len);
            const std::string where = file_label + ": " + entry + " (key '" + key + "') at offset ";
            const uint64_t kind_offset = r.absolute();
            const auto kind_byte = r.pod<uint8_t>();
            if (kind_byte > static_cast<uint8_t>(MetaKind::IntArray))
                return make_error(where + std::to_string(kind_offset) + ": unknown value kind " + std::to_string(kind_byte));
            const uint64_t value_offset = r.absolute();
            MetaValue value;
            std::string problem = parse_value(r, static_cast<MetaKind>(kind_byte), &value);
            if (!problem.empty()) return make_error(where + std::to_string(value_offset) + ": " + problem);
            if (meta.contains(key)) return make_error(where + std::to_string(entry_offset) + ": duplicate key");
            meta.set(key, std::move(value));
        }
        if (r.remaining() != 0)
            return fail(r.absolute(), std::to_string(r.remaining()) + " trailing bytes after the last entry");
        return meta;
    } catch (const std::bad_alloc&) {
        return fail(base_offset, "out of memory while parsing", ErrorKind::OutOfMemory);
    } catch (const std::length_error&) {
        // A length the file may legally hold but a 32-bit size_t cannot.
        return fail(base_offset, "value too large for this platform", ErrorKind::Unsupported);
    }
}

} // namespace cflow
