// cflow perplexity MODEL -f TEXT [--ctx N] [--stride N | --llama-chunks] [--max-tokens N] [--threads N] [--load auto|map|read|lanes] [--json]
// prints perplexity (per token) and bits per byte (per byte of the scored text: comparable across tokenizers)
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/generation/perplexity.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/whole_file.h"
#include "commands.h"
#include "interrupt.h"
#include "load_args.h"

namespace cflow::cli {

int run_perplexity(const PerplexityArgs& args) {
    if (args.positionals.size() != 1) return fail("perplexity", "expected exactly one MODEL.cflow (and -f TEXT)");
    const auto& text_path = args.file;
    if (!text_path) return fail("perplexity", "missing -f TEXT (the text file to score)");
    auto load = parse_load_arg(args.session.load, args.positionals[0], false);
    if (!load) return fail("perplexity", load.error());

    auto read = read_whole_file(*text_path, kMaxTextInputBytes, "a text to score");
    if (!read) return fail("perplexity", read.error());
    const std::string text = std::move(read).value();

    auto model = load_model(args.positionals[0], *load);
    if (!model) return fail("perplexity", model.error());
    const uint32_t trained = (*model)->header().max_seq_len;
    const uint32_t ctx = args.session.ctx;
    if (trained > 0 && uint64_t(ctx) > trained)
        return fail("perplexity", "--ctx " + std::to_string(ctx) + " exceeds the model's trained context of " +
                                      std::to_string(trained) + " positions");
    const SessionOptions session_options = session_options_from(args.session);  // --ctx 0 = the model's
    auto session = Session::create(model.value(), session_options);
    if (!session) return fail("perplexity", session.error());

    if (args.llama_chunks && args.stride)
        return fail("perplexity", "--stride has no meaning with --llama-chunks (chunks never overlap)");
    const auto documents = split_documents(text);
    if (documents.empty()) return fail("perplexity", *text_path + ": no text to score (the file is empty or blank)");
    const Tokenizer& tokenizer = (*model)->tokenizer();
    // llama-perplexity tokenizes the file as it is, with the vocabulary's BOS in front.
    const auto ids = args.llama_chunks ? tokenizer.encode(text, /*add_special=*/true) : tokenize_documents(tokenizer, documents);
    const int32_t chunk_bos = !ids.empty() && tokenizer.bos_id() >= 0 && ids[0] == tokenizer.bos_id() ? tokenizer.bos_id() : -1;

    PerplexityOptions options;
    options.context_tokens = ctx;
    options.stride_tokens = args.stride;
    options.max_scored_tokens = uint64_t(args.max_tokens);
    const bool show_progress = args.progress;
    CancelToken cancel;
    InterruptGuard guard(cancel);
    const PerplexityProgress report = [&](uint64_t done, uint64_t total) {
        if (show_progress) std::fprintf(stderr, "\rperplexity: %llu / %llu tokens", (unsigned long long)done, (unsigned long long)total);
        return true;
    };
    auto stats = args.llama_chunks
                     ? perplexity_llama_chunks(**session, ids, ctx ? ctx : (*session)->context_length(), chunk_bos,
                                               options.max_scored_tokens, report, &cancel)
                     : perplexity(**session, ids, options, report, &cancel);
    if (show_progress) std::fputc('\n', stderr);
    if (!stats) return fail("perplexity", stats.error());

    const uint32_t window = stats->context_tokens, step = stats->stride_tokens;
    const double tok_per_s = stats->elapsed_ms > 0 ? stats->evaluated_tokens * 1000.0 / stats->elapsed_ms : 0;
    if (args.json) {
        nlohmann::json j{{"model", args.positionals[0]}, {"text", *text_path}, {"documents", documents.size()},
                         {"stream_tokens", ids.size()}, {"scored_tokens", stats->scored_tokens},
                         {"evaluated_tokens", stats->evaluated_tokens}, {"windows", stats->windows}, {"ctx", window},
                         {"stride", step}, {"recipe", args.llama_chunks ? "llama-chunks" : "documents"},
                         {"mean_nll", stats->mean_nll()}, {"perplexity", stats->perplexity()},
                         {"scored_bytes", stats->scored_bytes}, {"bits_per_byte", stats->bits_per_byte()},
                         {"elapsed_ms", stats->elapsed_ms}, {"tokens_per_s", tok_per_s},
                         {"kv_cache", std::string(kv_cache_type_name((*session)->kv_cache_type()))}};
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        // Bits per byte compares models whose tokenizers differ (perplexity is per token).
        std::printf("perplexity %.4f, %.4f bits per byte (%llu bytes scored)\n"
                    "mean NLL %.6f nats over %llu scored tokens (%s, %zu stream tokens), %u %s of %u, stride %u\n"
                    "%llu forward steps in %.1f s (%.1f tok/s, %s, %u threads)\n",
                    stats->perplexity(), stats->bits_per_byte(), (unsigned long long)stats->scored_bytes, stats->mean_nll(),
                    (unsigned long long)stats->scored_tokens,
                    args.llama_chunks ? "the text as one stream" : (std::to_string(documents.size()) + " documents").c_str(),
                    ids.size(), stats->windows, args.llama_chunks ? "llama-perplexity chunks" : "windows", window, step,
                    (unsigned long long)stats->evaluated_tokens,
                    stats->elapsed_ms / 1000.0, tok_per_s, std::string(isa_name((*session)->isa())).c_str(),
                    (*session)->threads());
    }
    return 0;
}

} // namespace cflow::cli
