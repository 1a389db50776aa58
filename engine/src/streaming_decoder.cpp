// Streaming detokenization: token bytes accumulate until they form complete UTF-8 characters, so a
// character split across byte tokens (<0xE2><0x96><0x81>) or byte-level BPE pieces is emitted once, whole.
#include <cstdint>
#include <string>

#include "cflow/engine/tokenizer.h"
#include "tokenizer_common.h"

namespace cflow {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// True when text[pos..] is a proper prefix of some well-formed UTF-8 sequence (more bytes could complete it).
bool is_incomplete_prefix(std::string_view text, size_t pos) {
    const auto b0 = static_cast<uint8_t>(text[pos]);
    size_t need = 0;
    uint8_t lo1 = 0x80, hi1 = 0xBF;  // allowed range of the second byte (excludes overlongs and surrogates)
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 3;
        if (b0 == 0xE0) lo1 = 0xA0;
        if (b0 == 0xED) hi1 = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 4;
        if (b0 == 0xF0) lo1 = 0x90;
        if (b0 == 0xF4) hi1 = 0x8F;
    } else {
        return false;
    }
    const size_t avail = text.size() - pos;
    if (avail >= need) return false;
    for (size_t i = 1; i < avail; ++i) {
        const auto b = static_cast<uint8_t>(text[pos + i]);
        if (i == 1 ? (b < lo1 || b > hi1) : (b & 0xC0) != 0x80) return false;
    }
    return true;
}

} // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_control)
    : tokenizer_(&tokenizer), skip_control_(skip_control) {}

void StreamingDecoder::set_context(const std::vector<int32_t>& ids) {
    pending_.clear();
    seen_content_ = false;
    for (int32_t id : ids) {
        if (!tokenizer_->is_control(id)) {
            seen_content_ = true;
            break;
        }
    }
}

std::string StreamingDecoder::push(int32_t id) {
    if (id < 0 || static_cast<size_t>(id) >= tokenizer_->vocab_size()) return drain(false);
    const bool control = tokenizer_->is_control(id);
    if (control && skip_control_) return drain(false);
    std::string bytes = tokenizer_->token_bytes(id);
    if (!control) {
        // Same rule as Tokenizer::decode: the first content token of the sequence loses its dummy-prefix space.
        if (!seen_content_ && tokenizer_->strips_first_space() && !bytes.empty() && bytes.front() == ' ')
            bytes.erase(0, 1);
        seen_content_ = true;
    }
    pending_ += bytes;
    return drain(false);
}

std::string StreamingDecoder::flush() { return drain(true); }

std::string StreamingDecoder::drain(bool final_flush) {
    std::string out;
    const std::string_view text = pending_;
    size_t pos = 0;
    while (pos < text.size()) {
        uint32_t cp = 0;
        const size_t len = tok::decode_utf8_at(text, pos, cp);
        if (len > 0) {
            out.append(text.substr(pos, len));
            pos += len;
            continue;
        }
        if (!final_flush && is_incomplete_prefix(text, pos)) break;  // wait for the rest of the character
        out.append(kReplacement);
        ++pos;
    }
    pending_.erase(0, pos);
    return out;
}

} // namespace cflow
