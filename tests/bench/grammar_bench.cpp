// cflow_bench_grammar: what a grammar's mask costs per generated token at 32k and 50k
// vocabularies, next to a decode step.
//
// Part 1, per vocabulary (llama-spm 32000 SPM, gpt-2 50257 BPE): the vocabulary's walk order built
// once; then llama.cpp's json.gbnf driven through a JSON document token by token (the document as
// the tokenizer splits it), timing mask() + accept_token() per token; and a permissive grammar
// (printable ASCII, almost every token alive: the walk's worst case).
// Part 2, with a MODEL argument: generate() greedy for 64 tokens without a grammar and with the
// permissive one (so every step masks the whole vocabulary), alternating 5 rounds: decode
// ms/token each and the median per-round ratio.
//
// Usage: cflow_bench_grammar [MODEL.cflow] [shared-assets-dir]   (default: ../shared)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/generation/grammar.h"
#include "cflow/engine/generation/grammar_matcher.h"
#include "cflow/engine/generation/grammar_vocabulary.h"
#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/gguf.h"

namespace {

using BenchClock = std::chrono::steady_clock;
double bench_ms_since(BenchClock::time_point t0) {
    return std::chrono::duration<double, std::milli>(BenchClock::now() - t0).count();
}

// llama.cpp's grammars/json.gbnf.
const char* kJsonGrammar = R"g(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)g";

const char* kJsonDocument =
    "{\"name\": \"Ada Lovelace\", \"born\": 1815, \"fields\": [\"mathematics\", \"computing\"], "
    "\"note\": \"She wrote the first program for the Analytical Engine, in 1843.\", \"alive\": false, "
    "\"ratio\": -0.125e3}";

const char* kPrintableGrammar = "root ::= [ -~]*\n";

std::shared_ptr<const cflow::Grammar> bench_grammar(const char* source) {
    auto parsed = cflow::parse_grammar(source);
    if (!parsed) {
        std::fprintf(stderr, "grammar: %s\n", parsed.error().c_str());
        std::exit(1);
    }
    return std::make_shared<const cflow::Grammar>(std::move(parsed.value()));
}

// Mean and worst mask()+accept_token() over `tokens`, in microseconds.
void time_document(const char* label, const cflow::Tokenizer& tokenizer,
                   const std::shared_ptr<const cflow::GrammarVocabulary>& vocabulary,
                   const std::shared_ptr<const cflow::Grammar>& grammar, const std::vector<int32_t>& tokens) {
    auto matcher = cflow::GrammarMatcher::create(grammar, vocabulary);
    if (!matcher) {
        std::printf("  %-26s failed: %s\n", label, matcher.error().c_str());
        return;
    }
    matcher->set_strip_first_space(tokenizer.strips_first_space());
    std::vector<float> logits(vocabulary->vocab_size(), 0.0f);  // [vocab] f32
    const std::vector<int32_t> end_ids{tokenizer.eos_id()};
    double total_us = 0, worst_us = 0;
    size_t allowed_sum = 0;
    for (const int32_t token : tokens) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        const auto t0 = BenchClock::now();
        auto allowed = matcher->mask(logits, end_ids);
        const double us = bench_ms_since(t0) * 1000.0;
        if (!allowed || logits[size_t(token)] != 0.0f) {
            std::printf("  %-26s the document's token %d was masked: %s\n", label, token,
                        allowed ? "(not allowed)" : allowed.error().c_str());
            return;
        }
        if (auto accepted = matcher->accept_token(token); !accepted) {
            std::printf("  %-26s accept failed: %s\n", label, accepted.error().c_str());
            return;
        }
        allowed_sum += *allowed;
        total_us += us;
        worst_us = std::max(worst_us, us);
    }
    std::printf("  %-26s %6zu tokens  mask mean %8.1f us  worst %8.1f us  allowed mean %8.0f\n", label, tokens.size(),
                total_us / double(tokens.size()), worst_us, double(allowed_sum) / double(tokens.size()));
}

void bench_vocabulary(const char* label, const std::filesystem::path& path) {
    auto gguf = cflow::read_gguf(path.string());
    if (!gguf) {
        std::printf("%s: skipped: %s\n", label, gguf.error().c_str());
        return;
    }
    auto tokenizer = cflow::Tokenizer::from_metadata(gguf->metadata);
    if (!tokenizer) {
        std::printf("%s: skipped: %s\n", label, tokenizer.error().c_str());
        return;
    }
    const auto t0 = BenchClock::now();
    auto vocabulary = cflow::GrammarVocabulary::from_tokenizer(**tokenizer);
    std::printf("%s: %zu tokens, walk order built in %.1f ms\n", label, vocabulary->vocab_size(), bench_ms_since(t0));
    const auto document = (*tokenizer)->encode(kJsonDocument, false);
    time_document("json.gbnf, a JSON document", **tokenizer, vocabulary, bench_grammar(kJsonGrammar), document);
    std::string prose;
    for (int i = 0; i < 4; ++i) prose += "The quick brown fox jumps over the lazy dog; 12 + 30 = 42. ";
    time_document("[ -~]*, English prose", **tokenizer, vocabulary, bench_grammar(kPrintableGrammar),
                  (*tokenizer)->encode(prose, false));
}

// Decode ms per token of a greedy 64-token generate(), with an optional grammar.
double decode_ms_per_token(const std::shared_ptr<const cflow::Model>& model, std::shared_ptr<const cflow::Grammar> grammar,
                           std::shared_ptr<const cflow::GrammarVocabulary> vocabulary) {
    cflow::SessionOptions options;
    auto session = cflow::Session::create(model, options);
    if (!session) return -1;
    cflow::GenerateRequest request;
    request.prompt = model->tokenizer().encode("Once upon a time", true);
    request.sampling.temperature = 0.0f;
    request.max_tokens = 64;
    request.stop_at_end_of_generation = false;
    request.grammar = std::move(grammar);
    request.grammar_vocabulary = std::move(vocabulary);
    auto stats = cflow::generate(**session, request, {});
    if (!stats) {
        std::printf("generate failed: %s\n", stats.error().c_str());
        return -1;
    }
    return stats->generated_tokens > 1 ? stats->decode_ms / double(stats->generated_tokens - 1) : -1;
}

} // namespace

int main(int argc, char** argv) {
    const std::string model_path = argc > 1 ? argv[1] : "";
    const std::filesystem::path shared = argc > 2 ? std::filesystem::path(argv[2]) : std::filesystem::path(CFLOW_SHARED_DIR);
    bench_vocabulary("llama-spm (SPM)", shared / "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-llama-spm.gguf");
    bench_vocabulary("gpt-2 (BPE)", shared / "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-gpt-2.gguf");
    if (model_path.empty()) return 0;

    auto model = cflow::Model::load(model_path);
    if (!model) {
        std::fprintf(stderr, "%s: %s\n", model_path.c_str(), model.error().c_str());
        return 1;
    }
    auto vocabulary = cflow::GrammarVocabulary::from_tokenizer((*model)->tokenizer());
    auto printable = bench_grammar(kPrintableGrammar);
    std::string prose;
    for (int i = 0; i < 4; ++i) prose += "The quick brown fox jumps over the lazy dog; 12 + 30 = 42. ";
    std::printf("%s's own vocabulary:\n", model_path.c_str());
    time_document("[ -~]*, English prose", (*model)->tokenizer(), vocabulary, printable,
                  (*model)->tokenizer().encode(prose, false));
    // Alternate so drift (other load, frequency) hits both arms alike; the median per-round ratio.
    double plain = 0, masked = 0;
    std::vector<double> ratios;
    const int rounds = 5;
    for (int round = 0; round < rounds; ++round) {
        const double p = decode_ms_per_token(*model, nullptr, nullptr);
        const double m = decode_ms_per_token(*model, printable, vocabulary);
        plain += p;
        masked += m;
        ratios.push_back(m / p);
    }
    std::sort(ratios.begin(), ratios.end());
    plain /= rounds;
    masked /= rounds;
    std::printf("%s (%zu tokens): decode %.2f ms/token, with [ -~]* %.2f ms/token; median per-round ratio %.3f "
                "(min %.3f, max %.3f)\n",
                model_path.c_str(), vocabulary->vocab_size(), plain, masked, ratios[rounds / 2], ratios.front(),
                ratios.back());
    return 0;
}
