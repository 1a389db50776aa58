#include "cflow/base/utf8.h"

namespace cflow {

void append_utf8(std::string& out, uint32_t cp) {
    if (cp > 0x10FFFF) cp = 0xFFFD;
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

namespace {

// Allowed range of the second byte after lead b0 (excludes overlongs, surrogates and > U+10FFFF),
// and the sequence length; 0 for a byte that cannot start a sequence.
struct LeadRule {
    size_t length;
    uint8_t second_lo;
    uint8_t second_hi;
};

LeadRule lead_rule(uint8_t b0) {
    if (b0 < 0x80) return {1, 0, 0};
    if (b0 >= 0xC2 && b0 <= 0xDF) return {2, 0x80, 0xBF};
    if (b0 >= 0xE0 && b0 <= 0xEF) return {3, uint8_t(b0 == 0xE0 ? 0xA0 : 0x80), uint8_t(b0 == 0xED ? 0x9F : 0xBF)};
    if (b0 >= 0xF0 && b0 <= 0xF4) return {4, uint8_t(b0 == 0xF0 ? 0x90 : 0x80), uint8_t(b0 == 0xF4 ? 0x8F : 0xBF)};
    return {0, 0, 0};
}

bool byte_fits(const LeadRule& rule, size_t index, uint8_t byte) {
    return index == 1 ? byte >= rule.second_lo && byte <= rule.second_hi : (byte & 0xC0) == 0x80;
}

} // namespace

size_t decode_utf8_at(std::string_view text, size_t pos, uint32_t& cp) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
    const LeadRule rule = lead_rule(byte(0));
    if (rule.length == 0 || text.size() - pos < rule.length) return 0;
    for (size_t i = 1; i < rule.length; ++i)
        if (!byte_fits(rule, i, byte(i))) return 0;
    static constexpr uint32_t kLeadMask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    cp = byte(0) & kLeadMask[rule.length];
    for (size_t i = 1; i < rule.length; ++i) cp = (cp << 6) | (byte(i) & 0x3Fu);
    return rule.length;
}

size_t utf8_char_length(std::string_view text, size_t pos) {
    uint32_t cp = 0;
    const size_t len = decode_utf8_at(text, pos, cp);
    return len ? len : 1;
}

bool is_valid_utf8(std::string_view text) {
    uint32_t cp = 0;
    for (size_t pos = 0; pos < text.size();) {
        const size_t len = decode_utf8_at(text, pos, cp);
        if (len == 0) return false;
        pos += len;
    }
    return true;
}

bool is_incomplete_utf8_prefix(std::string_view text, size_t pos) {
    const LeadRule rule = lead_rule(static_cast<uint8_t>(text[pos]));
    const size_t avail = text.size() - pos;
    if (rule.length < 2 || avail >= rule.length) return false;
    for (size_t i = 1; i < avail; ++i)
        if (!byte_fits(rule, i, static_cast<uint8_t>(text[pos + i]))) return false;
    return true;
}

std::vector<uint32_t> utf8_to_cpts(std::string_view text) {
    std::vector<uint32_t> cpts;
    cpts.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        uint32_t cp = 0;
        const size_t len = decode_utf8_at(text, pos, cp);
        cpts.push_back(len ? cp : 0xFFFDu);
        pos += len ? len : 1;
    }
    return cpts;
}

std::string sanitize_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        uint32_t cp = 0;
        const size_t len = decode_utf8_at(text, pos, cp);
        if (len) {
            out.append(text.substr(pos, len));
            pos += len;
        } else {
            out.append(kUtf8Replacement);
            ++pos;
        }
    }
    return out;
}

} // namespace cflow
