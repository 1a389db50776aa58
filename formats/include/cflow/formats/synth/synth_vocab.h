#pragma once
// The vocabulary of a synth model: a "llama" (SentencePiece) vocab that both cflow's tokenizer and
// llama.cpp load, with byte fallback so any prompt tokenizes and any output detokenizes.
#include <cstdint>
#include <string>
#include <vector>

namespace cflow {

struct SynthVocab {
    std::vector<std::string> tokens;  // unique pieces
    std::vector<float> scores;        // SentencePiece log-probability order: earlier pieces merge first
    std::vector<int32_t> types;       // GGUF token types: 1 normal, 2 unknown, 3 control, 6 byte
};

inline constexpr int32_t kSynthUnk = 0, kSynthBos = 1, kSynthEos = 2;

// <unk>, <s>, </s>, <0x00>..<0xFF>, then word pieces (with and without the U+2581 word-start
// marker: letters, digits, punctuation, common words, all two- and three-letter lowercase pieces),
// then <extra_N> fillers; exactly `size` (>= 259) entries.
SynthVocab make_synth_vocab(uint32_t size);

} // namespace cflow
