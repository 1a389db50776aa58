#pragma once
// Typed key/value metadata: the .cflow metadata section and the in-memory form of
// GGUF metadata. Keys follow GGUF naming ("general.name", "tokenizer.ggml.tokens",
// "tokenizer.chat_template", ...) so the tokenizer loads from either source alike.
//
// On disk (.cflow): u32 magic "META", u32 entry count, then per entry:
//   u32 key_len, key bytes (UTF-8), u8 kind (MetaKind), value:
//     String: u64 len + bytes | Int: i64 | Float: f64 | Bool: u8
//     StringArray: u64 n, then n x (u64 len + bytes) | FloatArray: u64 n + n x f32 | IntArray: u64 n + n x i32
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cflow/base/result.h"

namespace cflow {

enum class MetaKind : uint8_t { String = 0, Int = 1, Float = 2, Bool = 3, StringArray = 4, FloatArray = 5, IntArray = 6 };

using MetaValue = std::variant<std::string, int64_t, double, bool, std::vector<std::string>, std::vector<float>,
                               std::vector<int32_t>>;  // index == MetaKind

class Metadata {
public:
    void set(const std::string& key, MetaValue value) { entries_[key] = std::move(value); }
    bool contains(const std::string& key) const { return entries_.count(key) != 0; }
    const MetaValue* find(const std::string& key) const;
    void erase(const std::string& key) { entries_.erase(key); }

    std::optional<std::string> get_string(const std::string& key) const;
    std::optional<int64_t> get_int(const std::string& key) const;     // Int or Bool
    std::optional<double> get_float(const std::string& key) const;    // Float or Int
    std::optional<bool> get_bool(const std::string& key) const;       // Bool or Int
    const std::vector<std::string>* get_strings(const std::string& key) const;
    const std::vector<float>* get_floats(const std::string& key) const;
    const std::vector<int32_t>* get_ints(const std::string& key) const;

    const std::map<std::string, MetaValue>& entries() const { return entries_; }

    std::vector<uint8_t> serialize() const;
    // Parses a serialized section. file_label and base_offset only shape error messages
    // ("model.cflow: metadata entry 3 (key 'x') at offset 1234: string length 99999 past end").
    static Result<Metadata> parse(const uint8_t* data, uint64_t bytes, const std::string& file_label,
                                  uint64_t base_offset);

private:
    std::map<std::string, MetaValue> entries_;
};

} // namespace cflow
