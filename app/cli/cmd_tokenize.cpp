// cflow tokenize / detokenize: the tokenizer of a model or vocabulary file over stdin, for
// inspecting how text splits into tokens and for round-trip checks against other tools.
#include <cstdlib>
#include <string>
#include <vector>

#include "cflow/formats/whole_file.h"
#include "commands.h"
#include "console.h"
#include "vocab_source.h"

namespace cflow::cli {
namespace {

// Whitespace-separated decimal ids; an error names the offending word and its byte offset.
Result<std::vector<int32_t>> parse_ids(const std::string& text, size_t vocab_size) {
    std::vector<int32_t> ids;
    size_t at = 0;
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    while (at < text.size()) {
        while (at < text.size() && is_space(text[at])) ++at;
        if (at >= text.size()) break;
        const size_t start = at;
        while (at < text.size() && !is_space(text[at])) ++at;
        const std::string word = text.substr(start, at - start);
        bool digits = word.size() <= 18;
        for (char c : word) digits = digits && c >= '0' && c <= '9';
        if (!digits) return make_error("stdin: '" + word + "' at byte " + std::to_string(start) + " is not a token id");
        const unsigned long long id = std::strtoull(word.c_str(), nullptr, 10);
        if (id >= vocab_size)
            return make_error("stdin: token id " + word + " at byte " + std::to_string(start) +
                              " is out of range (the vocabulary has " + std::to_string(vocab_size) + " tokens)");
        ids.push_back(static_cast<int32_t>(id));
    }
    return ids;
}

} // namespace

int run_tokenize(const TokenizeArgs& args) {
    if (args.positionals.size() != 1)
        return fail("tokenize", "expected exactly one MODEL_OR_VOCAB (.cflow, .vflow, .gguf or tokenizer.json)");
    if (args.ids && args.pieces) return fail("tokenize", "--ids and --pieces exclude each other");
    set_binary_stdio();
    auto vocab = load_vocab_source(args.positionals[0]);
    if (!vocab) return fail("tokenize", vocab.error());
    auto text = read_all_stdin(kMaxTextInputBytes);
    if (!text) return fail("tokenize", text.error());

    const auto ids = vocab->tokenizer->encode(*text, args.add_special, args.parse_special);
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) line += ' ';
        line += args.pieces ? vocab->tokenizer->piece(ids[i]) : std::to_string(ids[i]);
    }
    line += '\n';
    if (!write_stdout(line)) return fail("tokenize", "cannot write stdout");
    return 0;
}

int run_detokenize(const DetokenizeArgs& args) {
    if (args.positionals.size() != 1)
        return fail("detokenize", "expected exactly one MODEL_OR_VOCAB (.cflow, .vflow, .gguf or tokenizer.json)");
    set_binary_stdio();
    auto vocab = load_vocab_source(args.positionals[0]);
    if (!vocab) return fail("detokenize", vocab.error());
    auto text = read_all_stdin(kMaxTextInputBytes);
    if (!text) return fail("detokenize", text.error());
    auto ids = parse_ids(*text, vocab->tokenizer->vocab_size());
    if (!ids) return fail("detokenize", ids.error());
    if (!write_stdout(vocab->tokenizer->decode(*ids))) return fail("detokenize", "cannot write stdout");
    return 0;
}

} // namespace cflow::cli
