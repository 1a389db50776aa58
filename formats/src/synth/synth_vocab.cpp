// The synth vocabulary (synth_vocab.h). llama.cpp requires unique pieces (it maps piece -> id)
// and the byte tokens (it finds "\n" as <0x0A>), so both are guaranteed here.
#include "cflow/formats/synth/synth_vocab.h"

#include <unordered_set>

namespace cflow {
namespace {

constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6;

class VocabBuilder {
public:
    explicit VocabBuilder(uint32_t size) : size_(size) {}

    bool full() const { return v_.tokens.size() >= size_; }

    // Adds a piece unless the vocabulary is full or already holds it.
    void add(const std::string& piece, int32_t type = kNormal) {
        if (full() || !seen_.insert(piece).second) return;
        // Special and byte tokens score 0 like SentencePiece's; pieces rank by position.
        v_.scores.push_back(type == kNormal ? -static_cast<float>(v_.tokens.size()) : 0.0f);
        v_.tokens.push_back(piece);
        v_.types.push_back(type);
    }

    SynthVocab take() { return std::move(v_); }

private:
    uint32_t size_;
    SynthVocab v_;
    std::unordered_set<std::string> seen_;
};

const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's word-start marker

void add_words(VocabBuilder& b) {
    for (const char* w : {"the", "and", "of", "to", "in", "is", "it", "that", "was", "for", "on", "with", "as", "hello",
                          "world", "model", "weights", "random", "token", "flow", "tile", "pipe", "line", "fast", "bench"})
        b.add(kSpace + w);
    b.add(kSpace);
    for (char c = 'a'; c <= 'z'; ++c) b.add(std::string(1, c));
    for (char c = 'a'; c <= 'z'; ++c) b.add(kSpace + std::string(1, c));
    for (char c = 'A'; c <= 'Z'; ++c) b.add(std::string(1, c));
    for (char c = 'A'; c <= 'Z'; ++c) b.add(kSpace + std::string(1, c));
    for (char c = '0'; c <= '9'; ++c) b.add(std::string(1, c));
    for (const char* p : {".", ",", "!", "?", ";", ":", "'", "\"", "-", "(", ")"}) b.add(p);
}

// All lowercase pieces of `letters` letters, bare then with the word-start marker.
void add_letter_pieces(VocabBuilder& b, int letters) {
    int count = 1;
    for (int i = 0; i < letters; ++i) count *= 26;
    for (const bool marker : {false, true})
        for (int i = 0; i < count && !b.full(); ++i) {
            std::string piece(static_cast<size_t>(letters), 'a');
            for (int k = letters - 1, x = i; k >= 0; --k, x /= 26) piece[static_cast<size_t>(k)] = static_cast<char>('a' + x % 26);
            b.add(marker ? kSpace + piece : piece);
        }
}

} // namespace

SynthVocab make_synth_vocab(uint32_t size) {
    VocabBuilder b(size);
    b.add("<unk>", kUnknown);
    b.add("<s>", kControl);
    b.add("</s>", kControl);
    static const char* kHex = "0123456789ABCDEF";
    for (int byte = 0; byte < 256; ++byte) b.add(std::string("<0x") + kHex[byte >> 4] + kHex[byte & 15] + ">", kByte);
    add_words(b);
    add_letter_pieces(b, 2);
    add_letter_pieces(b, 3);
    for (uint32_t i = 0; !b.full(); ++i) b.add("<extra_" + std::to_string(i) + ">");
    return b.take();
}

} // namespace cflow
