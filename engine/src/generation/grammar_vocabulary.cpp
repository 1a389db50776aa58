// The implicit byte trie of a vocabulary: text tokens sorted by their bytes, with neighbour
// common-prefix lengths.
#include "cflow/engine/generation/grammar_vocabulary.h"

#include <algorithm>

#include "cflow/engine/tokenizer/tokenizer.h"

namespace cflow {

GrammarVocabulary::GrammarVocabulary(std::vector<std::string> token_bytes, std::vector<bool> special)
    : bytes_(std::move(token_bytes)), special_(std::move(special)) {
    special_.resize(bytes_.size(), false);
    for (size_t id = 0; id < bytes_.size(); ++id)
        if (!special_[id] && !bytes_[id].empty()) sorted_.push_back(int32_t(id));
    std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
        return bytes_[size_t(a)] < bytes_[size_t(b)] || (bytes_[size_t(a)] == bytes_[size_t(b)] && a < b);
    });
    sorted_offset_.push_back(0);
    for (const int32_t id : sorted_) {
        sorted_blob_ += bytes_[size_t(id)];
        sorted_offset_.push_back(sorted_blob_.size());
    }
    shared_prefix_.resize(sorted_.size(), 0);
    for (size_t i = 1; i < sorted_.size(); ++i) {
        const std::string& a = bytes_[size_t(sorted_[i - 1])];
        const std::string& b = bytes_[size_t(sorted_[i])];
        const size_t limit = std::min(a.size(), b.size());
        size_t k = 0;
        while (k < limit && a[k] == b[k]) ++k;
        shared_prefix_[i] = uint32_t(k);
    }
}

std::shared_ptr<const GrammarVocabulary> GrammarVocabulary::from_tokenizer(const Tokenizer& tokenizer) {
    const size_t n = tokenizer.vocab_size();
    std::vector<std::string> bytes(n);  // [vocab]
    std::vector<bool> special(n);       // [vocab]
    for (size_t id = 0; id < n; ++id) {
        special[id] = tokenizer.is_control(int32_t(id));
        if (!special[id]) bytes[id] = tokenizer.token_bytes(int32_t(id));
    }
    return std::make_shared<const GrammarVocabulary>(std::move(bytes), std::move(special));
}

std::string_view GrammarVocabulary::bytes(int32_t id) const {
    return id >= 0 && size_t(id) < bytes_.size() ? std::string_view(bytes_[size_t(id)]) : std::string_view();
}

bool GrammarVocabulary::is_special(int32_t id) const {
    return id < 0 || size_t(id) >= bytes_.size() || special_[size_t(id)];
}

} // namespace cflow
