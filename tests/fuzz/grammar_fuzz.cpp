// libFuzzer target: the GBNF parser and the grammar matcher (engine/src/generation/grammar_*.cpp).
// Input: [u16 length L][L bytes: a grammar's source][rest: output bytes fed to its matcher]
// (split_input.h). Any source parses or is refused with a message, never crashes; a grammar that
// parses is run on the output in small pieces, and at every step the mask agrees with accepting
// each token on its own (a token the mask allows is accepted; one it refuses is refused), which
// is what constrained sampling relies on. Limits are tightened so that one input stays fast.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/engine/generation/grammar.h"
#include "cflow/engine/generation/grammar_matcher.h"
#include "cflow/engine/generation/grammar_vocabulary.h"
#include "split_input.h"

namespace {

// A small vocabulary of JSON-ish pieces, multi-byte UTF-8 and one special token, so masks are
// checked against every token (the brute force) at each step.
std::shared_ptr<const cflow::GrammarVocabulary> fuzz_vocabulary() {
    static const std::shared_ptr<const cflow::GrammarVocabulary> vocabulary = [] {
        std::vector<std::string> pieces = {"<end>", "{", "}", "[", "]", ",", ":", "\"", " ", "\n", "a", "b", "ab", "ba",
                                           "0", "1", "12", "-", ".", "e", "true", "false", "null", "\"a\"", "{\"",
                                           "\":", "é", "\xe2\x82", "\xac", "😀", "x", "yz", "\\", "\\n", "(", ")"};
        std::vector<bool> special(pieces.size(), false);
        special[0] = true;
        return std::make_shared<const cflow::GrammarVocabulary>(std::move(pieces), std::move(special));
    }();
    return vocabulary;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const cflow::fuzz::SplitInput input = cflow::fuzz::split_input(data, size);
    const std::string_view source(reinterpret_cast<const char*>(input.first), input.first_size);
    const std::string_view output(reinterpret_cast<const char*>(input.second), input.second_size);

    cflow::GrammarLimits limits;
    limits.max_repetition = 64;
    limits.max_elements = size_t(1) << 14;
    limits.max_stacks = 256;
    limits.max_expansion_steps = size_t(1) << 14;
    limits.max_step_work = size_t(1) << 18;
    auto parsed = cflow::parse_grammar(source, limits);
    if (!parsed) {
        if (parsed.error().rfind("grammar:", 0) != 0) std::abort();  // errors say where
        return 0;
    }
    auto grammar = std::make_shared<const cflow::Grammar>(std::move(parsed).value());
    const auto vocabulary = fuzz_vocabulary();
    auto created = cflow::GrammarMatcher::create(grammar, vocabulary);
    if (!created) return 0;  // over the limits at the root: a refusal, not a failure
    cflow::GrammarMatcher matcher = std::move(created).value();

    const int32_t end_ids[] = {0};
    std::vector<uint8_t> allowed;  // [vocab] 1 where the token may come next
    size_t offset = 0;
    for (int step = 0; step < 16; ++step) {
        auto allowed_count = matcher.allowed_tokens(allowed, end_ids);
        if (!allowed_count) return 0;  // over budget: a clean error
        if (allowed.size() != vocabulary->vocab_size()) std::abort();
        if ((allowed[0] != 0) != matcher.is_complete()) std::abort();
        for (int32_t id = 1; id < int32_t(vocabulary->vocab_size()); ++id) {
            cflow::GrammarMatcher probe = matcher;
            const cflow::Status accepted = probe.accept_token(id);
            if (!accepted && accepted.kind() == cflow::ErrorKind::OverBudget) continue;
            if (bool(accepted) != (allowed[size_t(id)] != 0)) std::abort();
        }
        if (offset >= output.size()) break;
        const size_t piece = 1 + size_t(uint8_t(output[offset])) % 3;
        const std::string_view bytes = output.substr(offset, piece);
        offset += piece;
        if (!matcher.accept_bytes(bytes)) break;  // refused or over budget: the state is unchanged
    }
    return 0;
}
