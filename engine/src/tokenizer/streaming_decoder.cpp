// Streaming detokenization: token bytes accumulate until they form complete UTF-8 characters, so a
// character split across byte tokens (<0xE2><0x96><0x81>) or byte-level BPE pieces is emitted once, whole.
#include <cstdint>
#include <string>

#include "cflow/engine/tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_common.h"

namespace cflow {

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
        const size_t len = decode_utf8_at(text, pos, cp);
        if (len > 0) {
            out.append(text.substr(pos, len));
            pos += len;
            continue;
        }
        if (!final_flush && is_incomplete_utf8_prefix(text, pos)) break;  // wait for the rest of the character
        out.append(kUtf8Replacement);
        ++pos;
    }
    pending_.erase(0, pos);
    return out;
}

} // namespace cflow
