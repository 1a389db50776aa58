// libFuzzer target: the byte-level BPE tokenizer (engine/src/tokenizer, PCRE2 pre-tokenizer) on
// a real vocabulary, the bundled default model's. Any bytes encode without crashing, every id
// is in the vocabulary, and for valid UTF-8 decode(encode(text)) gives the text back exactly.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "cflow/base/utf8.h"
#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/cflow_reader.h"

namespace {

std::unique_ptr<cflow::Tokenizer> load(const char* path) {
    auto file = cflow::CflowFile::open(path);
    if (!file) return nullptr;
    auto tokenizer = cflow::Tokenizer::from_metadata((*file)->metadata());
    return tokenizer ? std::move(tokenizer).value() : nullptr;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::unique_ptr<cflow::Tokenizer> bpe = load(CFLOW_FUZZ_DEFAULT_MODEL);
    if (!bpe) std::abort();  // the fuzzer's own set-up failed
    if (size == 0) return 0;
    const bool add_special = data[0] & 1, parse_special = data[0] & 2;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    const auto ids = bpe->encode(text, add_special, parse_special);
    for (int32_t id : ids)
        if (id < 0 || size_t(id) >= bpe->vocab_size()) std::abort();
    const std::string back = bpe->decode(ids);
    if (!add_special && !parse_special && cflow::is_valid_utf8(text) && back != text) std::abort();
    return 0;
}
