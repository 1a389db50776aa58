// cflow logits MODEL -p PROMPT [--top N] [--json] [--out FILE.f32] [--isa NAME] [--threads T]
// The next-token logits after a prompt: what a person needs to compare two engines or two
// conversions of one checkpoint number by number (the whole vector with --out).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include <nlohmann/json.hpp>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/mapped_file.h"
#include "cflow/formats/whole_file.h"
#include "commands.h"
#include "file_identity.h"
#include "console.h"
#include "default_model.h"
#include "load_args.h"

namespace cflow::cli {
namespace {

// The vector as raw little-endian float32, nothing else: every x86 target of this project is
// little-endian, so the in-memory floats are the file's bytes.
Status write_raw_f32(const std::string& path, std::span<const float> logits /* [vocab] */) {
    AtomicFileWriter out(path);
    if (Status s = out.open(); !s) return s;
    if (Status s = out.write(logits.data(), logits.size_bytes()); !s) return s;
    return out.commit();
}

// Ids of the n largest logits, largest first; ties by the smaller id (as greedy sampling picks).
std::vector<int32_t> top_ids(std::span<const float> logits, size_t n) {
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    n = std::min(n, ids.size());
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), [&](int32_t a, int32_t b) {
        return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
    });
    ids.resize(n);
    return ids;
}

// log of the softmax denominator, computed stably (the max taken out first).
double log_sum_exp(std::span<const float> logits) {
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v) - max_logit);
    return max_logit + std::log(sum);
}

// Whitespace-separated decimal ids, each below vocab_size; the error names the bad word.
Result<std::vector<int32_t>> parse_token_ids(const std::string& text, size_t vocab_size, const std::string& what) {
    std::vector<int32_t> ids;
    size_t at = 0;
    while (at < text.size()) {
        while (at < text.size() && (text[at] == ' ' || text[at] == ',' || text[at] == '\t' || text[at] == '\n')) ++at;
        if (at >= text.size()) break;
        const size_t start = at;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
        if (at == start || at - start > 9 || (at < text.size() && text[at] != ' ' && text[at] != ',' && text[at] != '\t' && text[at] != '\n'))
            return make_error(what + ": '" + text.substr(start, 12) + "' at character " + std::to_string(start) + " is not a token id");
        const long id = std::stol(text.substr(start, at - start));
        if (size_t(id) >= vocab_size)
            return make_error(what + ": token id " + std::to_string(id) + " is out of range (the vocabulary has " +
                              std::to_string(vocab_size) + " tokens)");
        ids.push_back(int32_t(id));
    }
    return ids;
}

} // namespace

int run_logits(const LogitsArgs& args) {
    auto model_path = model_argument_or_default(args.positionals);
    if (!model_path) return fail("logits", model_path.error());
    std::string prompt = args.prompt.value_or("");
    if (args.prompt_file) {
        if (args.prompt) return fail("logits", "-p and --prompt-file exclude each other");
        auto text = read_whole_file(*args.prompt_file, kMaxTextInputBytes, "a prompt");
        if (!text) return fail("logits", text.error());
        prompt = std::move(text).value();
    }
    auto load = parse_load_arg(args.session.load, *model_path, false);
    if (!load) return fail("logits", load.error());
    SessionOptions session_options = session_options_from(args.session);
    if (args.isa) {
        const auto isa = parse_isa(*args.isa);  // a name the parser has checked
        if (!isa_supported(*isa))
            return fail("logits", "--isa " + *args.isa + ": this CPU (or its operating system) lacks that instruction set");
        session_options.isa = *isa;
    }

    auto model = load_model(*model_path, *load);
    if (!model) return fail("logits", model.error());
    std::vector<int32_t> ids;
    if (const auto& id_text = args.ids) {
        if (args.prompt || args.prompt_file)
            return fail("logits", "--ids and a prompt text exclude each other");
        auto parsed = parse_token_ids(*id_text, (*model)->tokenizer().vocab_size(), "--ids");
        if (!parsed) return fail("logits", parsed.error());
        ids = std::move(parsed).value();
        if (ids.empty()) return fail("logits", "--ids lists no token id");
    } else {
        ids = (*model)->tokenizer().encode(prompt, /*add_special=*/true);
    }
    if (ids.empty())
        return fail("logits", "the prompt is empty and the model's tokenizer adds no BOS token: give a prompt with -p");
    auto session = Session::create(model.value(), session_options);
    if (!session) return fail("logits", session.error());
    if (ids.size() > (*session)->context_length())
        return fail("logits", "the prompt is " + std::to_string(ids.size()) + " tokens, longer than the context of " +
                                  std::to_string((*session)->context_length()) + " positions (--ctx)");
    auto logits = (*session)->prefill(ids);
    if (!logits) return fail("logits", logits.error());
    const std::span<const float> vector = *logits;  // [vocab]

    for (size_t i = 0; i < vector.size(); ++i)
        if (!std::isfinite(vector[i]))
            return fail("logits", "the logit of token " + std::to_string(i) + " is not finite (" +
                                      std::to_string(vector[i]) + "): the model's weights or the prompt overflow");
    if (const auto& out = args.out) {
        if (is_same_file(*out, *model_path))
            return fail("logits", *out + ": --out names the model itself; choose another file");
        if (Status s = write_raw_f32(*out, vector); !s) return fail("logits", s.error());
    }

    const double lse = log_sum_exp(vector);
    const auto best = top_ids(vector, size_t(args.top));
    const Tokenizer& tokenizer = (*model)->tokenizer();
    std::string text;
    if (args.json) {
        nlohmann::json top_json = nlohmann::json::array();
        for (int32_t id : best)
            top_json.push_back({{"id", id},
                                {"piece", tokenizer.piece(id)},
                                {"logit", vector[size_t(id)]},
                                {"probability", std::exp(double(vector[size_t(id)]) - lse)}});
        nlohmann::json j{{"model", *model_path},
                         {"prompt_tokens", ids},
                         {"vocab_size", vector.size()},
                         {"position", ids.size() - 1},
                         {"isa", std::string(isa_name((*session)->isa()))},
                         {"log_sum_exp", lse},
                         {"top", top_json}};
        text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    } else {
        text = "prompt: " + std::to_string(ids.size()) + " tokens; vocabulary " + std::to_string(vector.size()) +
               "; kernel path " + std::string(isa_name((*session)->isa())) + "\n";
        char line[160];
        for (int32_t id : best) {
            std::snprintf(line, sizeof line, "%8d  %12.6f  p=%.6f  ", id, double(vector[size_t(id)]),
                          std::exp(double(vector[size_t(id)]) - lse));
            text += line + terminal_safe(tokenizer.piece(id)) + "\n";
        }
    }
    if (!write_stdout(text)) return fail("logits", "cannot write stdout");
    return 0;
}

} // namespace cflow::cli
