#pragma once
// UTF-8: the one set of rules every layer uses (tokenizers, the streaming decoder, the Jinja
// interpreter, the chat core). "Well-formed" is Unicode's definition (Table 3-7): no overlongs,
// no surrogates, nothing past U+10FFFF. All functions are pure and thread-safe.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cflow {

inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";  // U+FFFD

// Sequence length announced by a lead byte (llama.cpp's unicode_len_utf8: continuation and invalid
// lead bytes count 1). The tokenizers split text into "characters" by this rule to match llama.cpp.
inline size_t utf8_lead_length(uint8_t lead) {
    static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLengths[lead >> 4];
}

// Appends code point cp; values past U+10FFFF become U+FFFD.
void append_utf8(std::string& out, uint32_t cp);

// Decodes one well-formed sequence at text[pos] (pos < text.size()); returns its length in bytes,
// or 0 when the bytes there are not a complete well-formed sequence.
size_t decode_utf8_at(std::string_view text, size_t pos, uint32_t& cp);

// Length of the character at text[pos] for counting and slicing: a well-formed sequence's length,
// else 1 (each ill-formed byte is a character of its own, as U+FFFD would be).
size_t utf8_char_length(std::string_view text, size_t pos);

bool is_valid_utf8(std::string_view text);

// True when text[pos..] is a proper prefix of some well-formed sequence: more bytes could complete it.
bool is_incomplete_utf8_prefix(std::string_view text, size_t pos);

// Code points of text; each ill-formed byte becomes U+FFFD.
std::vector<uint32_t> utf8_to_cpts(std::string_view text);

// text with every ill-formed byte replaced by U+FFFD (unchanged when valid).
std::string sanitize_utf8(std::string_view text);

} // namespace cflow
